/**
 * Owns the agent's notion of time. Every timer (heartbeats, backoff, resyncs) goes through a Clock so tests
 * can drive minutes of backoff without sleeping.
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
    // Timers never keep the process alive on their own; the agent's lifetime is its watches and stop().
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Kubernetes timestamps: RFC 3339 in UTC with whole seconds. */
export function kubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A manually advanced clock for tests: timers fire, in order, only when advance() passes their time. */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = Date.UTC(2025, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  /** Number of timers still pending. */
  pending(): number {
    return this.timers.size;
  }

  /** Moves time forward, firing due timers in time order (timers they set fire too when due). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId: number | undefined;
      let nextAt = Infinity;
      for (const [id, t] of this.timers) {
        if (t.at <= target && t.at < nextAt) {
          nextAt = t.at;
          nextId = id;
        }
      }
      if (nextId === undefined) break;
      const t = this.timers.get(nextId)!;
      this.timers.delete(nextId);
      this.current = Math.max(this.current, t.at);
      t.fn();
    }
    this.current = target;
  }
}
