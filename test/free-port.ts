// A free TCP port on 127.0.0.1, for servers a test starts as other programs (Virtuoso, Ceph)
// that cannot be told to listen on port 0 and report it.
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
