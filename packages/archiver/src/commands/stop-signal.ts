/**
 * An AbortSignal fired by the first SIGINT or SIGTERM, so a long command (harvest, mirror) can
 * end cleanly: what is stored is committed and the next run resumes. A second signal exits at
 * once (status 130): the archive stays valid after any kill, only the in-flight record is lost.
 */
export function stopSignal(onStop: (signal: NodeJS.Signals) => void): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const handler = (name: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(130);
    onStop(name);
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
