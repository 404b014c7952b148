/**
 * Counting finished pods without finalizers.
 *
 * Kubernetes holds every Job pod with a tracking finalizer so none can vanish uncounted. Berth
 * instead keeps the cumulative counts in the Job's status and a per-Job tally in memory:
 *  - the tally starts from the status and the finished pods in the cache, taking the larger of
 *    the two (finished pods are never deleted by this controller while the Job lives, so after a
 *    control-plane restart they are all still there to be counted again);
 *  - every finished pod is added once (by uid); a pod that vanishes while still running counts
 *    as failed, unless this controller deleted it (excess parallelism, suspend, Job finished);
 *  - Indexed Jobs count distinct succeeded indexes, which a set union makes exact.
 * The tally is ahead of the stored status between a reconcile and its status write, and the
 * status is always written from the tally — never from a cache that may lag the last write.
 * What it cannot see: a finished pod deleted while the control plane was down and a new one
 * finished in the same window (the counts then stay one short).
 */
import type { Job, Pod } from '../../api/types.js';
import { isPodTerminal, parseIndexes, podCompletionIndex } from './job-util.js';

export class JobTally {
  succeeded: number;
  failed: number;
  readonly completedIndexes: Set<number>;
  /** pods already in the counts */
  private readonly counted = new Set<string>();
  /** pods this controller deleted: their end is not a failure */
  private readonly deletedByUs = new Set<string>();

  constructor(
    readonly jobUid: string,
    private readonly indexed: boolean,
    private readonly completions: number,
    job: Job,
    pods: readonly Pod[],
  ) {
    this.completedIndexes = indexed ? parseIndexes(job.status?.completedIndexes, completions) : new Set();
    let succeededPods = 0;
    let failedPods = 0;
    for (const p of pods) {
      if (!isPodTerminal(p) || !p.metadata.uid) continue;
      this.counted.add(p.metadata.uid);
      if (p.status?.phase === 'Succeeded') {
        succeededPods++;
        this.addIndex(p);
      } else {
        failedPods++;
      }
    }
    this.succeeded = indexed ? this.completedIndexes.size : Math.max(job.status?.succeeded ?? 0, succeededPods);
    this.failed = Math.max(job.status?.failed ?? 0, failedPods);
  }

  private addIndex(pod: Pod): void {
    if (!this.indexed) return;
    const i = podCompletionIndex(pod);
    if (i !== undefined && i < this.completions) this.completedIndexes.add(i);
  }

  /** Remember that this controller is deleting `pod`, so its end is not counted as a failure. */
  markDeleted(pod: Pod): void {
    if (pod.metadata.uid) this.deletedByUs.add(pod.metadata.uid);
  }

  /** Count a pod seen finished (once per uid). Returns true when the counts changed. */
  observeFinished(pod: Pod): boolean {
    const uid = pod.metadata.uid;
    if (!uid || !isPodTerminal(pod) || this.counted.has(uid)) return false;
    this.counted.add(uid);
    if (this.deletedByUs.has(uid)) return false;
    if (pod.status?.phase === 'Succeeded') {
      if (this.indexed) {
        this.addIndex(pod);
        this.succeeded = this.completedIndexes.size;
      } else {
        this.succeeded++;
      }
    } else {
      this.failed++;
    }
    return true;
  }

  /**
   * A pod of this Job was removed. Finished: counted as it ended (if not already). Still running
   * and not deleted by us: it failed (someone deleted it, or its node was lost).
   */
  observeGone(pod: Pod): boolean {
    const uid = pod.metadata.uid;
    if (!uid || this.counted.has(uid)) return false;
    if (isPodTerminal(pod)) return this.observeFinished(pod);
    this.counted.add(uid);
    if (this.deletedByUs.has(uid)) return false;
    this.failed++;
    return true;
  }
}
