/**
 * Owns what a list or a watch's initial events cost before they start, and the budget those costs
 * are charged against: objects in flight, server-wide and per user. A request that does not fit is
 * refused (429 with Retry-After) before it reads anything, so many readers of a large collection
 * cannot together hold more of it in memory than the budget allows.
 *
 * This follows kube-apiserver's API Priority and Fairness: its list work estimator charges a list
 * by the number of objects stored under the requested collection (a `limit` caps that when no
 * selector makes every object to be read anyway), and a watch that begins with the current state
 * is charged as the list it sends. APF turns objects into seats (one per 100, at most 10) out of a
 * server-wide concurrency; Berth keeps the object count itself as the charge, because what a
 * reader holds while its answer is built and sent grows with it. A watch is charged only until its
 * initial events have been written out; a watch that only follows changes is not charged at all.
 *
 * Object counts come from the store, cached for a moment per collection: counting costs about as
 * much as reading keys, and a crowd of refused clients retrying must not make the store count for
 * each of them.
 */

export interface ObjectBudgetLimits {
  /** objects all lists and initial watch events may have in flight together; 0 = no limit */
  maxObjectsInFlight: number;
  /** objects one user's lists and initial watch events may have in flight together; 0 = no limit */
  maxObjectsInFlightPerUser: number;
}

/**
 * Sized for a 2-core lab VM with a few GB: two 10,000-object collections in flight per user and
 * four server-wide. What one in-flight object holds (its stored value read from the store and its
 * share of the response being written) is about 1 KB for typical objects, so the server-wide
 * budget stands for roughly 40 MB.
 */
export const DEFAULT_OBJECT_BUDGET: Readonly<ObjectBudgetLimits> = Object.freeze({
  maxObjectsInFlight: 40_000,
  maxObjectsInFlightPerUser: 20_000,
});

export function resolveObjectBudget(partial: Partial<ObjectBudgetLimits> = {}): ObjectBudgetLimits {
  return {
    maxObjectsInFlight: partial.maxObjectsInFlight ?? DEFAULT_OBJECT_BUDGET.maxObjectsInFlight,
    maxObjectsInFlightPerUser: partial.maxObjectsInFlightPerUser ?? DEFAULT_OBJECT_BUDGET.maxObjectsInFlightPerUser,
  };
}

/** What a read asks for, as far as its cost is concerned. */
export interface ReadRequest {
  verb: 'list' | 'watch';
  /** list only: the page size asked for (unset or ≤ 0: everything) */
  limit?: number;
  /** a label or field selector: every stored object is read to filter, so `limit` does not cap the cost */
  filtered: boolean;
  /** one named object (a name in the path, or a metadata.name field selector): it costs one */
  singleObject: boolean;
  /** watch only: whether it begins with the current state as ADDED events */
  sendsInitialEvents: boolean;
}

/**
 * Objects a read will carry, given how many are stored under its collection; 0 for a watch that
 * only follows changes. Every list costs at least 1, as every APF request takes at least one seat.
 * A selector that names one object still makes Berth's store read the collection, but what the
 * reader holds is that object.
 */
export function estimateObjects(req: ReadRequest, stored: number): number {
  if (req.verb === 'watch' && !req.sendsInitialEvents) return 0;
  if (req.singleObject) return 1;
  const limited = req.verb === 'list' && !req.filtered && req.limit !== undefined && req.limit > 0 ? Math.min(req.limit, stored) : stored;
  return Math.max(1, limited);
}

export interface ObjectBudgetQueueOptions {
  /**
   * Requests that may wait for the budget at once, server-wide; beyond it a request that does not
   * fit is refused at once (default 200). Waiting costs only the pending request: nothing has been
   * read for it yet.
   */
  maxWaiting?: number;
  /** how long a request waits for the budget before it is refused (default 5 s) */
  maxWaitMs?: number;
  /** injected in tests */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

export const DEFAULT_MAX_WAITING = 200;
export const DEFAULT_MAX_WAIT_MS = 5000;

interface Waiter {
  user: string;
  charge: number;
  admit: (release: (() => void) | undefined) => void;
  timer: unknown;
}

/**
 * Objects in flight, server-wide and per user. A charge fits when it stays within both limits; one
 * larger than a whole limit is charged that limit, so it runs when its user (or the server) has
 * nothing else in flight instead of never.
 *
 * A charge that does not fit waits, as APF queues a request until seats are free, for at most
 * `maxWaitMs` and among at most `maxWaiting` others; waiting requests are admitted in arrival order
 * as soon as they fit (one user's waiting request never holds up another user's that fits). Without
 * the wait a slot freed just after its readers were refused would sit idle until they retried.
 */
export class ObjectBudget {
  private server = 0;
  private readonly users = new Map<string, number>();
  private readonly waiting: Waiter[] = [];
  private readonly maxWaiting: number;
  private readonly maxWaitMs: number;
  private readonly setTimer: (fn: () => void, ms: number) => unknown;
  private readonly clearTimer: (timer: unknown) => void;

  constructor(
    private readonly limits: ObjectBudgetLimits,
    queue: ObjectBudgetQueueOptions = {},
  ) {
    this.maxWaiting = queue.maxWaiting ?? DEFAULT_MAX_WAITING;
    this.maxWaitMs = queue.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    this.setTimer = queue.setTimer ?? ((fn, ms) => setTimeout(fn, ms).unref());
    this.clearTimer = queue.clearTimer ?? ((timer) => clearTimeout(timer as NodeJS.Timeout));
  }

  /** Whether `user` could be charged anything now, or wait for it; a refused request need not be estimated at all. */
  hasRoom(user: string): boolean {
    if (this.waiting.length < this.maxWaiting && this.maxWaitMs > 0) return true;
    const { maxObjectsInFlight: serverMax, maxObjectsInFlightPerUser: userMax } = this.limits;
    return (serverMax <= 0 || this.server < serverMax) && (userMax <= 0 || (this.users.get(user) ?? 0) < userMax);
  }

  /** Charges `objects` to `user` if it fits now; returns the release function, or undefined. */
  tryCharge(user: string, objects: number): (() => void) | undefined {
    const charge = this.capped(objects);
    // Waiting requests are admitted the moment they fit, so any still waiting does not fit now; one
    // that does fit goes ahead rather than leave the room unused.
    return this.fits(user, charge) ? this.take(user, charge) : undefined;
  }

  /**
   * Charges `objects` to `user`, waiting for room if need be; resolves to the release function, or
   * undefined when the wait is full or took too long.
   */
  charge(user: string, objects: number): Promise<(() => void) | undefined> {
    const now = this.tryCharge(user, objects);
    if (now) return Promise.resolve(now);
    if (this.waiting.length >= this.maxWaiting || this.maxWaitMs <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        user,
        charge: this.capped(objects),
        admit: resolve,
        timer: this.setTimer(() => {
          const at = this.waiting.indexOf(waiter);
          if (at < 0) return;
          this.waiting.splice(at, 1);
          resolve(undefined);
          // The head of the line leaving can let those behind it in.
          this.admitWaiting();
        }, this.maxWaitMs),
      };
      this.waiting.push(waiter);
    });
  }

  /** Objects in flight server-wide and for `user`, and requests waiting (for tests and metrics). */
  inFlight(user?: string): { server: number; user: number; waiting: number } {
    return { server: this.server, user: user === undefined ? 0 : (this.users.get(user) ?? 0), waiting: this.waiting.length };
  }

  private capped(objects: number): number {
    const caps = [this.limits.maxObjectsInFlight, this.limits.maxObjectsInFlightPerUser].filter((max) => max > 0);
    return caps.length ? Math.min(objects, ...caps) : objects;
  }

  private fits(user: string, charge: number): boolean {
    const { maxObjectsInFlight: serverMax, maxObjectsInFlightPerUser: userMax } = this.limits;
    if (serverMax > 0 && this.server + charge > serverMax) return false;
    return !(userMax > 0 && (this.users.get(user) ?? 0) + charge > userMax);
  }

  private take(user: string, charge: number): () => void {
    this.server += charge;
    this.users.set(user, (this.users.get(user) ?? 0) + charge);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.server -= charge;
      const left = (this.users.get(user) ?? charge) - charge;
      if (left <= 0) this.users.delete(user);
      else this.users.set(user, left);
      this.admitWaiting();
    };
  }

  /** Admits, in arrival order, every waiting request that fits now. */
  private admitWaiting(): void {
    for (let i = 0; i < this.waiting.length; ) {
      const waiter = this.waiting[i]!;
      if (!this.fits(waiter.user, waiter.charge)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.clearTimer(waiter.timer);
      waiter.admit(this.take(waiter.user, waiter.charge));
    }
  }
}

export interface ObjectCountsOptions {
  /** how long a count is reused (default 1 s) */
  maxAgeMs?: number;
  /** collections remembered at once; beyond it expired ones are dropped, then the oldest (default 1024) */
  maxEntries?: number;
  now?: () => number;
}

/**
 * Object counts per collection, each reused for `maxAgeMs`. Callers asking while a count is under
 * way share it. Collections are named by clients (any namespace), so the map is bounded.
 */
export class ObjectCounts {
  private readonly entries = new Map<string, { at: number; count: Promise<number> }>();
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(opts: ObjectCountsOptions = {}) {
    this.maxAgeMs = opts.maxAgeMs ?? 1000;
    this.maxEntries = opts.maxEntries ?? 1024;
    this.now = opts.now ?? Date.now;
  }

  /** The collection's count, from `count` (the store's count of its key prefix) unless one is fresh enough. */
  get(collection: string, count: () => Promise<number>): Promise<number> {
    const now = this.now();
    const held = this.entries.get(collection);
    if (held && now - held.at < this.maxAgeMs) return held.count;
    const counting = count();
    // A failed count is not remembered: the next reader asks again.
    counting.catch(() => {
      if (this.entries.get(collection)?.count === counting) this.entries.delete(collection);
    });
    this.entries.delete(collection);
    this.entries.set(collection, { at: now, count: counting });
    if (this.entries.size > this.maxEntries) this.prune(now);
    return counting;
  }

  private prune(now: number): void {
    for (const [key, entry] of this.entries) if (now - entry.at >= this.maxAgeMs) this.entries.delete(key);
    // Map order is insertion order: the first entries are the oldest.
    for (const key of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(key);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
