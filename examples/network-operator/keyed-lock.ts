/**
 * Mutual exclusion per key inside one process. The Network controller (recreating a Docker network)
 * and the pod controller (connecting a pod to it) are separate queues, so the workqueue's
 * one-worker-per-key rule does not keep them apart; this does, per Docker network.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` once every earlier holder of `key` is done; returns what `fn` returns. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
