/** How often one source is harvested, and the random delay added to each run. */
export interface MirrorSchedule {
  everyMs: number;
  /** Each run starts up to this many milliseconds late, so many mirrors do not start at once. */
  jitterMs: number;
}

/** The next run of a source: its tick on the schedule's grid, and when it really starts. */
export interface NextRun {
  dueAt: number;
  startAt: number;
}

/**
 * When the next run of a source is due, given the tick of its last run and when that run
 * ended. Runs keep to the grid `first + k × every`: a run that overran its interval, or a
 * source that was down for a while, skips the ticks it missed rather than running several times
 * in a row, and the schedule never drifts by the length of the harvests. The jitter delays the
 * start, never the grid. `random` is in [0, 1).
 */
export function nextRun(lastDueAt: number, endedAt: number, schedule: MirrorSchedule, random: number): NextRun {
  const missed = Math.max(0, Math.floor((endedAt - lastDueAt) / schedule.everyMs));
  const dueAt = lastDueAt + (missed + 1) * schedule.everyMs;
  return { dueAt, startAt: dueAt + Math.floor(random * schedule.jitterMs) };
}
