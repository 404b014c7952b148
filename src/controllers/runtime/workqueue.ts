/**
 * A queue of keys (`namespace/name`), never objects, with the guarantees controllers rely on:
 * a key queued twice before it is processed is processed once; a key is never handed to two
 * workers at once (re-adds during processing are deferred until `done`); failures come back
 * after a per-key exponential backoff, successes `forget` it.
 */
import type { Clock, TimerHandle } from '../../client/clock.js';
import { controllerClock } from './clock.js';
import { controllerMetricsInScope, type QueueMetrics } from './metrics.js';

export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** instruments for this queue; by default those of the controller metrics in scope (see metrics.ts), under `name` */
  metrics?: QueueMetrics;
  /** the queue's name in metrics (the controller's name) */
  name?: string;
  /** time for delayed adds and backoff (default: the controllers' clock in scope, see clock.ts) */
  clock?: Clock;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { timer: TimerHandle; at: number }>();
  private readonly clock: Clock;
  private waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly metrics: QueueMetrics | undefined;
  /** with metrics: when each waiting key was added, and when each key in processing was taken */
  private readonly addedAt = new Map<string, number>();
  private readonly takenAt = new Map<string, number>();

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 1000_000;
    this.clock = opts.clock ?? controllerClock();
    this.metrics = opts.metrics ?? (opts.name !== undefined ? controllerMetricsInScope()?.queue(opts.name) : undefined);
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.metrics) {
      this.metrics.added();
      if (!this.addedAt.has(key)) this.addedAt.set(key, performance.now());
      this.metrics.depth(this.dirty.size);
    }
    if (this.processing.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.taken(key);
      waiter(key);
    } else {
      this.queue.push(key);
    }
  }

  /** Add after a delay; of several pending delayed adds for a key, the earliest wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const at = this.clock.now() + delayMs;
    const existing = this.timers.get(key);
    if (existing) {
      if (existing.at <= at) return;
      this.clock.clearTimeout(existing.timer);
    }
    // The clock's timers never keep the process alive on their own (systemClock unrefs them).
    const timer = this.clock.setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    this.timers.set(key, { timer, at });
  }

  /** Retry with backoff: base × 2^failures, capped. */
  addRateLimited(key: string): void {
    this.metrics?.retried();
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.addAfter(key, Math.min(this.baseDelayMs * 2 ** n, this.maxDelayMs));
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Next key to process, or undefined once shut down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.taken(key);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    this.processing.delete(key);
    const takenAt = this.takenAt.get(key);
    if (takenAt !== undefined) {
      this.takenAt.delete(key);
      this.metrics?.worked((performance.now() - takenAt) / 1000);
    }
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  private taken(key: string): void {
    if (!this.metrics) return;
    const now = performance.now();
    const addedAt = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (addedAt !== undefined) this.metrics.queued((now - addedAt) / 1000);
    this.takenAt.set(key, now);
    this.metrics.depth(this.dirty.size);
  }

  len(): number {
    return this.queue.length;
  }

  shutdown(): void {
    this.shuttingDown = true;
    for (const t of this.timers.values()) this.clock.clearTimeout(t.timer);
    this.timers.clear();
    for (const w of this.waiters) w(undefined);
    this.waiters = [];
  }
}
