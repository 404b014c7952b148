/**
 * The agent's time helpers: Kubernetes timestamps and a manual clock for tests. The Clock every agent timer
 * (heartbeats, backoff, resyncs) goes through is src/client/clock.ts, shared with the control plane.
 */

import type { Clock, TimerHandle } from '../src/client/clock.js';

export { systemClock, type Clock, type TimerHandle } from '../src/client/clock.js';

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
