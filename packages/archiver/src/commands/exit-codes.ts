/** Exit codes of the `oaibag` command (docs/archiver.md and each command's page). */
export const EXIT_OK = 0;
/** Finished, but something was wrong: records failed, damaged bags, unrestorable resources. */
export const EXIT_PROBLEMS = 1;
export const EXIT_USAGE = 2;
/** The source is unreachable, not an OAI-PMH repository, or its list failed. */
export const EXIT_SOURCE = 3;
/** Stopped by SIGINT or SIGTERM before the end (128 + SIGINT, the shell's convention). */
export const EXIT_INTERRUPTED = 130;
