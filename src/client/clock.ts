/**
 * Time and timers for code that waits (agent heartbeats, backoff, resyncs; leader election): one
 * interface, so tests drive minutes of waiting with a manual clock instead of sleeping.
 */

export type TimerHandle = unknown;

export interface Clock {
  /** milliseconds since the epoch */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // Timers never keep the process alive on their own; a process lives by its servers, watches and stop().
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};
