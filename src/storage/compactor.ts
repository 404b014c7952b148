/**
 * Periodic compaction of any storage Backend (SQLite or etcd): owns when history is dropped, not
 * how a backend drops it.
 */
import type { Backend } from './backend.js';
import type { StorageLogger } from './fanout.js';

export interface CompactorOptions {
  /** how often to compact (default 5 minutes, as kube-apiserver does) */
  intervalMs?: number;
  /** always keep at least this many recent revisions (default 1000) */
  keepRevisions?: number;
  logger?: StorageLogger;
}

/**
 * Compacts `backend` periodically; returns a function that stops it.
 *
 * Each tick compacts up to the revision seen at the previous tick, but never within the last
 * `keepRevisions`. So history is kept for at least one interval (a client-go reflector that lost
 * its watch can resume from its last resourceVersion for ~5 minutes instead of relisting) and,
 * on a busy cluster, at least `keepRevisions` writes back; everything older is bounded away.
 */
export function startCompactor(backend: Backend, opts: CompactorOptions = {}): () => void {
  const intervalMs = opts.intervalMs ?? 5 * 60_000;
  const keepRevisions = opts.keepRevisions ?? 1000;
  let revisionAtPreviousTick: number | undefined;
  let compactedTo = 0;
  let running = false;
  const tick = async (): Promise<void> => {
    // A networked store can take longer than an interval to answer; never stack compactions.
    if (running) return;
    running = true;
    try {
      const current = await backend.currentRevision();
      if (revisionAtPreviousTick !== undefined) {
        const target = Math.min(revisionAtPreviousTick, current - keepRevisions);
        // compact() is a no-op at or below the store's compacted revision; skipping what this
        // compactor already did saves the call.
        if (target > compactedTo) {
          await backend.compact(target);
          compactedTo = target;
        }
      }
      revisionAtPreviousTick = current;
    } catch (err) {
      opts.logger?.warn({ err }, 'storage compaction failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref(); // compaction alone must not keep the process alive
  return () => clearInterval(timer);
}
