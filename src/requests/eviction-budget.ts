/**
 * What an eviction does once its request is decoded: the PodDisruptionBudget check, then the delete
 * (pkg/registry/core/pod/storage/eviction.go upstream).
 *
 *  - A pod that is Succeeded, Failed, Pending or already being deleted is deleted without looking at
 *    budgets: its disruption has already happened (or has not begun). A Pending pod is deleted only
 *    at the resourceVersion read, so it cannot turn Ready in between unnoticed.
 *  - More than one budget selecting the pod: 500, which the eviction subresource does not support.
 *  - A pod that is not Ready does not spend the budget when its budget's unhealthyPodEvictionPolicy
 *    is AlwaysAllow, or (IfHealthyBudget, the default) when the budget is currently met
 *    (currentHealthy ≥ desiredHealthy > 0); it is then deleted at the resourceVersion read, and a
 *    conflict there (it changed, maybe became Ready) answers 429 so the client retries.
 *  - Otherwise the budget is spent: a budget whose status lags its spec (observedGeneration behind),
 *    or with no disruption left, answers 429 TooManyRequests "Cannot evict pod as it would violate
 *    the pod's disruption budget." with a DisruptionBudget cause; else disruptionsAllowed goes down
 *    by one and the pod is recorded in status.disruptedPods, in a status write conditioned on the
 *    budget's resourceVersion (a conflict re-reads the budget and tries again), and then the pod is
 *    deleted. The disruption controller drops the record when the pod goes, or after 2 minutes.
 */
import { ApiError, isApiError } from '../api/errors.js';
import type { KubeObject, Pod, PodDisruptionBudget, Status } from '../api/types.js';
import type { DeleteOptions, Registry } from '../registry/registry.js';
import type { HandlerResult } from './request.js';
import type { ResourceInfo } from '../api/identities.js';
import { DISRUPTION_BUDGET_CAUSE, metaTime, pdbSelectsPod, setDisruptionAllowedCondition } from '../api/disruption-budget.js';

/** Upstream's limit on status.disruptedPods: past it, evictions are refused until the controller catches up. */
export const MAX_DISRUPTED_POD_SIZE = 2000;
export const VIOLATES_BUDGET_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget.";
export const MULTIPLE_BUDGETS_MESSAGE = 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.';

export interface EvictPodOptions {
  registry: Registry;
  podInfo: ResourceInfo;
  namespace: string | undefined;
  name: string;
  /** the Eviction's deleteOptions (grace period, preconditions, dry run), applied to the delete */
  deleteOptions: DeleteOptions;
  /** when an admitted eviction is recorded in status.disruptedPods (default Date.now) */
  now?: () => number;
  /** conflicting writes are tried this many times (upstream: 20, 500 ms apart) */
  retry?: { attempts: number; delayMs: number };
}

const DEFAULT_RETRY = { attempts: 20, delayMs: 500 };

/** Evict one pod as the apiserver does, honouring the budget that selects it; answers the eviction's Status. */
export async function evictPod(opts: EvictPodOptions): Promise<HandlerResult> {
  const { registry, podInfo, namespace, name } = opts;
  const original = opts.deleteOptions;
  const retry = opts.retry ?? DEFAULT_RETRY;
  const callerPinnedVersion = original.preconditions?.resourceVersion !== undefined;

  // 1. Pods whose budget does not matter go at once (a conflict re-reads, unless the caller pinned a version).
  let pod: Pod | undefined;
  for (let attempt = 1; ; attempt++) {
    pod = (await registry.get(podInfo, namespace, name)) as Pod;
    if (!budgetIgnorable(pod)) break;
    const options = pinVersionFor(pod) && !callerPinnedVersion ? withResourceVersion(original, pod) : original;
    try {
      await registry.delete(podInfo, namespace, name, options);
      return success();
    } catch (e) {
      if (!isConflict(e) || callerPinnedVersion || attempt >= retry.attempts) throw e;
      await pause(retry.delayMs);
    }
  }

  // 2. The budget that selects the pod.
  const pdbInfo = registry.lookup('policy', 'poddisruptionbudgets')?.info;
  const budgets = pdbInfo
    ? ((await registry.list(pdbInfo, pod.metadata.namespace)).items as PodDisruptionBudget[]).filter((pdb) => pdbSelectsPod(pdb, pod))
    : [];
  if (budgets.length > 1) {
    const body: Status = { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', message: MULTIPLE_BUDGETS_MESSAGE, code: 500 };
    return { code: 500, body };
  }
  let deleteAtReadVersion = false;
  if (budgets.length === 1 && pdbInfo) {
    const pdb = budgets[0]!;
    if (!podIsReady(pod) && unhealthyPodMayGo(pdb)) deleteAtReadVersion = true;
    else await spendBudget({ registry, pdbInfo, pdb, podName: name, dryRun: !!original.dryRun, now: opts.now ?? Date.now, retry });
  }

  // 3. The delete. An unready pod let through without spending the budget must still be the pod read.
  const options = deleteAtReadVersion ? withResourceVersion(original, pod) : original;
  try {
    await registry.delete(podInfo, namespace, name, options);
  } catch (e) {
    if (isConflict(e) && deleteAtReadVersion && !callerPinnedVersion) throw tooManyRequests(budgets[0]!.metadata.name ?? '');
    throw e;
  }
  return success();
}

/** Spend one disruption of the budget, re-reading it after a conflict (checkAndDecrement upstream). */
async function spendBudget(a: {
  registry: Registry;
  pdbInfo: ResourceInfo;
  pdb: PodDisruptionBudget;
  podName: string;
  dryRun: boolean;
  now: () => number;
  retry: { attempts: number; delayMs: number };
}): Promise<void> {
  let pdb = a.pdb;
  for (let attempt = 1; ; attempt++) {
    const status = pdb.status ?? { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 };
    const pdbName = pdb.metadata.name ?? '';
    if ((status.observedGeneration ?? 0) < (pdb.metadata.generation ?? 0)) throw tooManyRequests(pdbName);
    const disruptionsAllowed = status.disruptionsAllowed ?? 0;
    if (disruptionsAllowed < 0) throw forbidden(pdbName, 'pdb disruptions allowed is negative');
    if (Object.keys(status.disruptedPods ?? {}).length > MAX_DISRUPTED_POD_SIZE) {
      throw forbidden(pdbName, 'DisruptedPods map too big - too many evictions not confirmed by PDB controller');
    }
    if (disruptionsAllowed === 0) {
      throw new ApiError('TooManyRequests', VIOLATES_BUDGET_MESSAGE, {
        causes: [{ reason: DISRUPTION_BUDGET_CAUSE, message: `The disruption budget ${pdbName} needs ${status.desiredHealthy ?? 0} healthy pods and has ${status.currentHealthy ?? 0} currently` }],
      });
    }
    const next: PodDisruptionBudget = structuredClone(pdb);
    const nextStatus = (next.status = structuredClone(status));
    nextStatus.disruptionsAllowed = disruptionsAllowed - 1;
    if (nextStatus.disruptionsAllowed === 0) setDisruptionAllowedCondition(nextStatus, a.now());
    if (a.dryRun) return;
    nextStatus.disruptedPods = { ...(nextStatus.disruptedPods ?? {}), [a.podName]: metaTime(a.now()) };
    try {
      // Conditioned on the resourceVersion read: two evictions never spend the same disruption.
      await a.registry.update(a.pdbInfo, pdb.metadata.namespace, pdbName, next, { subresource: 'status' });
      return;
    } catch (e) {
      if (!isConflict(e)) throw e;
      if (attempt >= a.retry.attempts) throw new ApiError('Timeout', `couldn't update PodDisruptionBudget "${pdbName}" due to conflicts`, { retryAfterSeconds: 10 });
      await pause(a.retry.delayMs);
      pdb = (await a.registry.get(a.pdbInfo, pdb.metadata.namespace, pdbName)) as PodDisruptionBudget;
    }
  }
}

/** Terminal, not yet started, or already going: evicting it disrupts nothing more (canIgnorePDB upstream). */
function budgetIgnorable(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || !!pod.metadata.deletionTimestamp;
}

/** A Pending pod is deleted only as read, so it cannot have become Ready meanwhile (shouldEnforceResourceVersion). */
function pinVersionFor(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return !(phase === 'Succeeded' || phase === 'Failed' || pod.metadata.deletionTimestamp);
}

/** Whether a pod that is not Ready may go without spending the budget. */
function unhealthyPodMayGo(pdb: PodDisruptionBudget): boolean {
  if (pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow') return true;
  const status = pdb.status;
  const desiredHealthy = status?.desiredHealthy ?? 0;
  return (status?.currentHealthy ?? 0) >= desiredHealthy && desiredHealthy > 0;
}

function podIsReady(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function withResourceVersion(options: DeleteOptions, obj: KubeObject): DeleteOptions {
  return { ...options, preconditions: { ...(options.preconditions ?? {}), resourceVersion: obj.metadata.resourceVersion! } };
}

function tooManyRequests(pdbName: string): ApiError {
  return new ApiError('TooManyRequests', VIOLATES_BUDGET_MESSAGE, {
    causes: [{ reason: DISRUPTION_BUDGET_CAUSE, message: `The disruption budget ${pdbName} is still being processed by the server.` }],
  });
}

function forbidden(pdbName: string, why: string): ApiError {
  return new ApiError('Forbidden', `poddisruptionbudgets.policy "${pdbName}" is forbidden: ${why}`, { name: pdbName, group: 'policy', kind: 'poddisruptionbudgets' });
}

function isConflict(e: unknown): boolean {
  return isApiError(e) && e.reason === 'Conflict';
}

function success(): HandlerResult {
  return { code: 201, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 } };
}

function pause(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
