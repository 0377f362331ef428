// Requests a server answers to itself before it says it listens, over in-process connections
// (a pair of streams, no network): V8 then has compiled the whole path of an answer (the
// request parser, the handler, the body's pipeline into a chunked response) before the first
// client pays for it. The server knows these connections by their socket, which no client can
// hand it, so they are kept out of the access log and may be given narrower rights, never wider.
import { type IncomingMessage, request, type Server } from 'node:http';
import { Duplex } from 'node:stream';

/** A warm-up request gives up after this long (a page of a healthy archive takes milliseconds). */
const WARM_UP_REQUEST_MS = 10_000;
/** The bytes kept of a warm-up answer's end (where a list's resumptionToken is); the rest is read and dropped. */
const WARM_UP_TAIL_BYTES = 64 * 1024;

export interface WarmUpAnswer {
  status: number;
  /** The answer's last WARM_UP_TAIL_BYTES, as Latin-1 (a token is ASCII). */
  tail: string;
}

export class WarmUpSockets<Grant> {
  private readonly grants = new WeakMap<object, Grant>();

  /** True for a request that came over a warm-up connection. */
  isWarmUp(req: IncomingMessage): boolean {
    return this.grants.has(req.socket);
  }

  /** What the warm-up that sent `req` was given (a payload budget), or undefined for a client. */
  grantOf(req: IncomingMessage): Grant | undefined {
    return this.grants.get(req.socket);
  }

  /** GETs `path` (with its query) from `server` over a new in-process connection; rejects after `timeoutMs`. */
  get(server: Server, path: string, grant: Grant, timeoutMs = WARM_UP_REQUEST_MS): Promise<WarmUpAnswer> {
    const [client, served] = streamPair();
    this.grants.set(served, grant);
    server.emit('connection', served);
    let timer: NodeJS.Timeout | undefined;
    return new Promise<WarmUpAnswer>((resolve, reject) => {
      let tail = '';
      const outgoing = request({ path, headers: { host: 'warm-up', connection: 'close' }, createConnection: () => client as never }, (response) => {
        response.on('data', (chunk: Buffer) => {
          tail = (tail + chunk.toString('latin1')).slice(-WARM_UP_TAIL_BYTES);
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, tail }));
        response.on('error', reject);
      });
      // Not outgoing.setTimeout: it asks the connection for socket timers a stream has not.
      timer = setTimeout(() => outgoing.destroy(new Error('the warm-up request took too long')), timeoutMs);
      outgoing.on('error', reject);
      outgoing.end();
    }).finally(() => {
      clearTimeout(timer);
      client.destroy();
      served.destroy();
    });
  }
}

/** Two streams joined crosswise: what one is written, the other gives to its reader. */
function streamPair(): [Duplex, Duplex] {
  const sides: Duplex[] = [];
  const side = (other: () => Duplex) =>
    new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, done) {
        other().push(chunk);
        done();
      },
      final(done) {
        other().push(null);
        done();
      },
    });
  sides.push(
    side(() => sides[1]!),
    side(() => sides[0]!),
  );
  return [sides[0]!, sides[1]!];
}
