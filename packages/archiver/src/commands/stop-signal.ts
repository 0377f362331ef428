/**
 * How long a stopped command may take to finish what is in flight (commit the batch, close the
 * catalog) before it exits anyway. Exiting then is as safe as a kill -9 at any instant: the
 * archive stays valid and the next run resumes. A service manager's stop timeout (systemd's is
 * 90 s) is never what ends oaibag.
 */
export const STOP_GRACE_MS = 10_000;

/**
 * An AbortSignal fired by the first SIGINT or SIGTERM, so a long command (harvest, mirror) can
 * end cleanly: what is stored is committed and the next run resumes. A second signal exits at
 * once, and so does the end of the grace time (status 130 either way): the archive stays valid
 * after any kill, only the in-flight records are lost.
 */
export function stopSignal(onStop: (signal: NodeJS.Signals) => void, graceMs = STOP_GRACE_MS): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const handler = (name: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(130);
    onStop(name);
    setTimeout(() => {
      process.stderr.write(`oaibag: still finishing after ${graceMs / 1000} s; exiting now (the archive is valid, the next run resumes)\n`);
      process.exit(130);
    }, graceMs).unref();
    controller.abort(); // the reason is an AbortError: what the command reports as "stopped"
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
