/**
 * Owns the scheduling queue, as kube-scheduler's: an active queue ordered by priority (higher first),
 * then by when the pod was created; a backoff queue for pods that failed, each waiting
 * initialBackoff·2^(attempts−1) capped at maxBackoff; and the unschedulable pods, which a cluster
 * event that could make them fit (node added or changed, pod deleted) moves back, to the active queue
 * or, while their backoff lasts, to the backoff queue.
 */

export interface SchedulingQueueOptions {
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  now?: () => number;
}

interface Entry {
  key: string;
  priority: number;
  /** creation time in ms, the tie-breaker after priority */
  created: number;
  attempts: number;
  backoffUntil: number;
  /** the move-request count when the pod was last popped */
  poppedAtMove: number;
}

export class SchedulingQueue {
  private readonly entries = new Map<string, Entry>();
  private active: Entry[] = [];
  private readonly inActive = new Set<string>();
  private readonly backoff = new Set<string>();
  private readonly unschedulable = new Set<string>();
  private readonly processing = new Set<string>();
  /** pods changed while being processed: back to the active queue when done */
  private readonly dirty = new Set<string>();
  private moveRequests = 0;
  private waiters: ((key: string | undefined) => void)[] = [];
  private timer?: NodeJS.Timeout;
  private closed = false;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly now: () => number;

  constructor(opts: SchedulingQueueOptions = {}) {
    this.initialBackoffMs = opts.initialBackoffMs ?? 1000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10_000;
    this.now = opts.now ?? Date.now;
  }

  get length(): number {
    return this.active.length;
  }

  /** A pod that needs scheduling was added or changed. */
  add(key: string, priority: number, created: number): void {
    if (this.closed) return;
    let e = this.entries.get(key);
    if (!e) {
      e = { key, priority, created, attempts: 0, backoffUntil: 0, poppedAtMove: -1 };
      this.entries.set(key, e);
    } else {
      e.priority = priority;
    }
    if (this.processing.has(key)) return void this.dirty.add(key);
    if (this.inActive.has(key)) return;
    this.backoff.delete(key);
    this.unschedulable.delete(key);
    this.pushActive(e);
  }

  /** The pod is gone or bound: forget it. */
  delete(key: string): void {
    this.entries.delete(key);
    this.backoff.delete(key);
    this.unschedulable.delete(key);
    this.dirty.delete(key);
    if (this.inActive.delete(key)) this.active = this.active.filter((e) => e.key !== key);
  }

  /** The next pod to schedule, in order; waits while the active queue is empty; undefined once closed. */
  pop(): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const e = this.shift();
    if (e) return Promise.resolve(e);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private shift(): string | undefined {
    const e = this.active.shift();
    if (!e) return undefined;
    this.inActive.delete(e.key);
    this.processing.add(e.key);
    e.poppedAtMove = this.moveRequests;
    return e.key;
  }

  /** The attempt ended with the pod bound (or not needing scheduling any more). */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) {
      const e = this.entries.get(key);
      if (e) return void this.pushActive(e);
    }
    this.entries.delete(key);
  }

  /**
   * The attempt found no node. The pod waits for a cluster event, or, when one came while it was
   * being scheduled (it might fit now), only for its backoff.
   */
  unschedulableAttempt(key: string): void {
    this.processing.delete(key);
    const e = this.entries.get(key);
    if (!e) return;
    e.attempts++;
    e.backoffUntil = this.now() + this.backoffMs(e.attempts);
    if (this.dirty.delete(key) || e.poppedAtMove < this.moveRequests) this.toBackoff(e);
    else this.unschedulable.add(key);
  }

  /** An error (not a verdict) ended the attempt: retry after the backoff. */
  errorAttempt(key: string): void {
    this.processing.delete(key);
    this.dirty.delete(key);
    const e = this.entries.get(key);
    if (!e) return;
    e.attempts++;
    e.backoffUntil = this.now() + this.backoffMs(e.attempts);
    this.toBackoff(e);
  }

  /**
   * A pod whose binding failed after its attempt had ended (bindings run on while the next pods are
   * scheduled): back to the queue after its backoff, unless an attempt for it is already under way.
   */
  retryAfterError(key: string, priority: number, created: number): void {
    if (this.closed || this.processing.has(key) || this.inActive.has(key) || this.backoff.has(key)) return;
    let e = this.entries.get(key);
    if (!e) {
      e = { key, priority, created, attempts: 0, backoffUntil: 0, poppedAtMove: -1 };
      this.entries.set(key, e);
    }
    e.attempts++;
    e.backoffUntil = this.now() + this.backoffMs(e.attempts);
    this.unschedulable.delete(key);
    this.toBackoff(e);
  }

  backoffMs(attempts: number): number {
    return Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** Math.max(0, attempts - 1));
  }

  /** A cluster event that may make unschedulable pods fit: move them all back. */
  moveAllToActiveOrBackoff(): void {
    this.moveRequests++;
    for (const key of this.unschedulable) {
      const e = this.entries.get(key);
      if (e) this.toBackoff(e);
    }
    this.unschedulable.clear();
  }

  isUnschedulable(key: string): boolean {
    return this.unschedulable.has(key);
  }

  private toBackoff(e: Entry): void {
    if (e.backoffUntil <= this.now()) return void this.pushActive(e);
    this.backoff.add(e.key);
    this.armTimer();
  }

  private armTimer(): void {
    if (this.timer || this.closed) return;
    let next = Infinity;
    for (const key of this.backoff) next = Math.min(next, this.entries.get(key)?.backoffUntil ?? Infinity);
    if (next === Infinity) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushBackoff();
    }, Math.max(0, next - this.now()));
    this.timer.unref?.();
  }

  /** Backed-off pods whose time has come go to the active queue. */
  flushBackoff(): void {
    const now = this.now();
    for (const key of [...this.backoff]) {
      const e = this.entries.get(key);
      if (!e) this.backoff.delete(key);
      else if (e.backoffUntil <= now) {
        this.backoff.delete(key);
        this.pushActive(e);
      }
    }
    this.armTimer();
  }

  private pushActive(e: Entry): void {
    // Binary search for the place: higher priority first, then older first.
    let lo = 0, hi = this.active.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const m = this.active[mid]!;
      if (m.priority > e.priority || (m.priority === e.priority && m.created <= e.created)) lo = mid + 1;
      else hi = mid;
    }
    this.active.splice(lo, 0, e);
    this.inActive.add(e.key);
    const waiter = this.waiters.shift();
    if (waiter) waiter(this.shift());
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
