// Public API of this package. It is an empty shell until its issue is worked on;
// see the package README for what it will hold.
export {};
