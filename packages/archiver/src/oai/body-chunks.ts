import type { Readable } from 'node:stream';

/** Chunks a body may hold ahead of its reader before it is paused. */
const AHEAD = 4;

/**
 * The chunks of `body` as they were pushed. A Readable's own async iterator asks `read()` for
 * everything buffered, which joins the chunks that came in while the reader was busy into one
 * new buffer: on the benchmark's update that copied most of the 64 MB received once more, into
 * fresh memory the kernel had to map. Ending early (break, throw) destroys the body, as the
 * Readable's iterator does.
 */
export async function* bodyChunks(body: Readable): AsyncGenerator<Buffer> {
  const queue: Buffer[] = [];
  let ended = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const onData = (chunk: Buffer): void => {
    queue.push(chunk);
    if (queue.length >= AHEAD) body.pause();
    wake?.();
  };
  const onEnd = (): void => {
    ended = true;
    wake?.();
  };
  const onError = (error: Error): void => {
    failure ??= error;
    wake?.();
  };
  const onClose = (): void => {
    // Closed without 'end' or 'error' (destroyed by someone else): the body broke off.
    if (!ended) failure ??= new Error('the response body was closed before its end');
    wake?.();
  };
  // A body that failed or was destroyed before this reader came (a prefetched page reset while
  // the page before it was committed) has emitted its last event already: none will come.
  if (body.destroyed) failure = body.errored ?? new Error('the response body was closed before its end');
  body.on('data', onData);
  body.once('end', onEnd);
  body.on('error', onError);
  body.once('close', onClose);
  let finished = false;
  try {
    for (;;) {
      const chunk = queue.shift();
      if (chunk !== undefined) {
        if (queue.length === 0 && body.isPaused()) body.resume();
        yield chunk;
        continue;
      }
      if (failure !== undefined) throw failure;
      if (ended) {
        finished = true;
        return;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  } finally {
    body.off('data', onData);
    body.off('end', onEnd);
    body.off('error', onError);
    body.off('close', onClose);
    if (!finished) body.destroy();
  }
}
