/**
 * Owns delivering store events to a backend's in-process watchers (EventFanout), in revision order
 * even when a watcher writes from its handler. Both backends publish into it (SQLite as it commits,
 * etcd from its one feed of etcd's watch); reading the history a watcher starts with is the backend's.
 */
import type { StoreEvent, Watcher } from './backend.js';

/** The slice of a pino logger the storage layer uses. */
export interface StorageLogger {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
}

export interface SubscribeOptions {
  /** deliver only events whose key starts with this */
  prefix: string;
  /** deliver only live events with a revision above this (the watch's fromRevision) */
  afterRevision: number;
  /** history read from the log, delivered before any live event */
  backlog: StoreEvent[];
  onEvent: (ev: StoreEvent) => void;
}

interface Subscription {
  prefix: string;
  afterRevision: number;
  onEvent: (ev: StoreEvent) => void;
  queue: StoreEvent[];
  closed: boolean;
}

/**
 * In-memory fan-out of committed store events to watchers.
 *
 * Delivery is deferred to a microtask and goes through one queue per watcher rather than calling
 * watchers from inside the write. That matters because watchers (controllers) write back into the
 * store from their handlers: a synchronous call would deliver that nested write's event to other
 * watchers before the event that caused it, breaking revision order. With queues, a nested write
 * only appends, so every watcher sees strictly increasing revisions.
 */
export class EventFanout {
  private readonly subscriptions = new Set<Subscription>();
  private drainScheduled = false;
  private readonly logger: StorageLogger | undefined;

  constructor(opts: { logger?: StorageLogger } = {}) {
    this.logger = opts.logger;
  }

  /** number of open watchers (for metrics and tests) */
  get size(): number {
    return this.subscriptions.size;
  }

  /**
   * Registers a watcher. Callers must read `backlog` and call this in the same synchronous step
   * (no await in between), so no commit can fall between history and live events.
   */
  subscribe(opts: SubscribeOptions): Watcher {
    const sub: Subscription = {
      prefix: opts.prefix,
      afterRevision: opts.afterRevision,
      onEvent: opts.onEvent,
      queue: opts.backlog.slice(),
      closed: false,
    };
    this.subscriptions.add(sub);
    if (sub.queue.length > 0) this.scheduleDrain();
    return {
      close: () => {
        sub.closed = true;
        sub.queue = [];
        this.subscriptions.delete(sub);
      },
    };
  }

  /** Queues a committed event for every matching watcher. Call only after the commit succeeded. */
  publish(ev: StoreEvent): void {
    let queued = false;
    for (const sub of this.subscriptions) {
      if (ev.kv.modRevision <= sub.afterRevision || !ev.kv.key.startsWith(sub.prefix)) continue;
      sub.queue.push(ev);
      queued = true;
    }
    if (queued) this.scheduleDrain();
  }

  /** Drops every watcher and anything still queued for them (store shutdown). */
  closeAll(): void {
    for (const sub of this.subscriptions) {
      sub.closed = true;
      sub.queue = [];
    }
    this.subscriptions.clear();
  }

  private scheduleDrain(): void {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    queueMicrotask(() => this.drain());
  }

  private drain(): void {
    this.drainScheduled = false;
    // Handlers may publish more events while we deliver; loop until every queue is empty.
    let deliveredAny = true;
    while (deliveredAny) {
      deliveredAny = false;
      for (const sub of this.subscriptions) {
        if (sub.queue.length === 0) continue;
        // Swap the queue out so events published by handlers land behind this batch, in order.
        const batch = sub.queue;
        sub.queue = [];
        for (const ev of batch) {
          if (sub.closed) break;
          deliveredAny = true;
          try {
            sub.onEvent(ev);
          } catch (err) {
            // One broken watcher must not starve the others; it keeps receiving later events.
            this.logger?.warn({ err, key: ev.kv.key, revision: ev.kv.modRevision }, 'storage watcher handler threw');
          }
        }
      }
    }
  }
}
