/**
 * The disruption controller's arithmetic, free of informers and clients: how many selected pods are
 * healthy, which admitted evictions still hold (status.disruptedPods), and whether the
 * DisruptionAllowed condition is current. Selection and the condition itself live with the kind
 * (src/registry/kinds/policy.ts), since the eviction subresource applies them too.
 */
import type { Pod, PodDisruptionBudget } from '../../api/types.js';
import { isPodReady } from '../runtime/pod-util.js';
import { DISRUPTION_ALLOWED_CONDITION, INSUFFICIENT_PODS_REASON, SUFFICIENT_PODS_REASON } from '../../api/disruption-budget.js';

/**
 * How long an admitted eviction keeps its pod out of the healthy count while the pod is not yet
 * marked for deletion (upstream DeletionTimeout). After it the controller drops the entry and counts
 * the pod again.
 */
export const DELETION_TIMEOUT_MS = 2 * 60 * 1000;

/**
 * The entries of status.disruptedPods that still hold at `now`, and when the earliest of them
 * expires (to look again then). Pods already marked for deletion, gone, or past the timeout drop out;
 * `expired` names the pods whose eviction was admitted but that were never deleted.
 */
export function liveDisruptedPods(
  pdb: PodDisruptionBudget,
  pods: Pod[],
  now: number,
  timeoutMs = DELETION_TIMEOUT_MS,
): { disrupted: Record<string, string>; recheckAt: number | undefined; expired: Pod[] } {
  const recorded = pdb.status?.disruptedPods ?? {};
  const disrupted: Record<string, string> = {};
  const expired: Pod[] = [];
  let recheckAt: number | undefined;
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue;
    const name = pod.metadata.name ?? '';
    const at = recorded[name];
    if (at === undefined || at === null) continue;
    const expectedDeletion = Date.parse(at) + timeoutMs;
    if (Number.isNaN(expectedDeletion) || expectedDeletion < now) {
      expired.push(pod);
      continue;
    }
    disrupted[name] = at;
    if (recheckAt === undefined || expectedDeletion < recheckAt) recheckAt = expectedDeletion;
  }
  return { disrupted, recheckAt, expired };
}

/** Ready pods that are neither being deleted nor about to be (an eviction admitted within the timeout). */
export function countHealthyPods(pods: Pod[], disrupted: Record<string, string>, now: number, timeoutMs = DELETION_TIMEOUT_MS): number {
  let healthy = 0;
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue;
    const at = disrupted[pod.metadata.name ?? ''];
    if (at !== undefined && Date.parse(at) + timeoutMs > now) continue;
    if (isPodReady(pod)) healthy++;
  }
  return healthy;
}

/** Whether the DisruptionAllowed condition already says what the counts say, for the current generation. */
export function conditionsUpToDate(pdb: PodDisruptionBudget): boolean {
  const status = pdb.status;
  const cond = status?.conditions?.find((c) => c.type === DISRUPTION_ALLOWED_CONDITION);
  if (!status || !cond || status.observedGeneration !== pdb.metadata.generation) return false;
  return (status.disruptionsAllowed ?? 0) > 0 ? cond.status === 'True' && cond.reason === SUFFICIENT_PODS_REASON : cond.status === 'False' && cond.reason === INSUFFICIENT_PODS_REASON;
}
