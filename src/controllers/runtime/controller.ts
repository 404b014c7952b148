/**
 * Owns the controller worker loop: N workers taking keys off a WorkQueue and calling reconcile, and
 * what its outcome means (done, look again after a time, retry with backoff, or give up on a
 * TerminalError). Queue semantics are workqueue.ts's; caches are the informers'.
 */
import type { Logger } from 'pino';
import { WorkQueue } from './workqueue.js';

/**
 * What a reconcile returns: nothing (done), or `{requeueAfterMs}` (look again after a time).
 * Throwing means "retry with backoff"; throwing a TerminalError means "give up on this key until
 * something changes it again" (logged, not retried).
 */
export type ReconcileResult = void | { requeueAfterMs: number };

/** An error retrying cannot fix (an invalid object, say): logged once, the key is not requeued. */
export class TerminalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TerminalError';
  }
}

export interface ControllerOptions {
  name: string;
  reconcile: (key: string) => Promise<ReconcileResult>;
  workers?: number;
  log: Logger;
  queue?: WorkQueue;
}

/**
 * Runs `reconcile(key)` for queued keys on N workers. The queue guarantees one worker per key;
 * reconcile re-reads from its informers' caches, so it only ever needs the key.
 */
export class Controller {
  readonly queue: WorkQueue;
  private running = false;
  private readonly loops: Promise<void>[] = [];

  constructor(private readonly opts: ControllerOptions) {
    this.queue = opts.queue ?? new WorkQueue({ name: opts.name });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (let i = 0; i < (this.opts.workers ?? 1); i++) this.loops.push(this.worker());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.queue.shutdown();
    await Promise.all(this.loops);
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        const result = await this.opts.reconcile(key);
        this.queue.forget(key);
        if (result && result.requeueAfterMs >= 0) this.queue.addAfter(key, result.requeueAfterMs);
      } catch (err) {
        if (err instanceof TerminalError) {
          this.queue.forget(key);
          this.opts.log.error({ controller: this.opts.name, key, err: err.message }, 'reconcile failed; not retrying');
          continue;
        }
        this.opts.log.warn({ controller: this.opts.name, key, err: (err as Error).message }, 'reconcile failed; will retry');
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }
}
