/**
 * Owns what the PodDisruptionBudget kind, the disruption controller and the eviction subresource
 * share: the DisruptionAllowed condition and its reasons (upstream's names), which pods a budget
 * selects, how an int-or-percent scales, and how the condition is set. Pure.
 */
import { labelSelectorFromObject, matchesLabels } from './selectors.js';
import type { Condition, IntOrString, Pod, PodDisruptionBudget, PodDisruptionBudgetStatus } from './types.js';

export type UnhealthyPodEvictionPolicy = 'IfHealthyBudget' | 'AlwaysAllow';

export const UNHEALTHY_POD_EVICTION_POLICIES: readonly UnhealthyPodEvictionPolicy[] = ['IfHealthyBudget', 'AlwaysAllow'];

/** The condition the controller keeps, and its reasons (upstream's names). */
export const DISRUPTION_ALLOWED_CONDITION = 'DisruptionAllowed';

export const SUFFICIENT_PODS_REASON = 'SufficientPods';

export const INSUFFICIENT_PODS_REASON = 'InsufficientPods';

export const SYNC_FAILED_REASON = 'SyncFailed';

/** The StatusCause type of a refused eviction. */
export const DISRUPTION_BUDGET_CAUSE = 'DisruptionBudget';

/** A percentage as an int-or-percent writes it: `50%`. */
export const PERCENT = /^[0-9]+%$/;

/**
 * The count an int-or-percent stands for out of `total`: an integer as is, a percentage of `total`
 * rounded up or down (intstr.GetScaledValueFromIntOrPercent).
 */
export function scaledIntOrPercent(value: IntOrString, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  if (!PERCENT.test(value)) throw new Error(`invalid value for IntOrString: invalid value ${JSON.stringify(value)}`);
  const scaled = (Number(value.slice(0, -1)) * total) / 100;
  return roundUp ? Math.ceil(scaled) : Math.floor(scaled);
}

/** RFC 3339 at whole seconds, as metav1.Time is written. */
export function metaTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Whether the budget selects the pod: same namespace and the selector matches. In policy/v1 a null
 * selector selects nothing and an empty one everything; a selector that does not parse selects nothing.
 */
export function pdbSelectsPod(pdb: PodDisruptionBudget, pod: Pod): boolean {
  if (pdb.metadata.namespace !== pod.metadata.namespace) return false;
  try {
    return matchesLabels(labelSelectorFromObject(pdb.spec?.selector), pod.metadata.labels);
  } catch {
    return false;
  }
}

/**
 * Sets the DisruptionAllowed condition from status.disruptionsAllowed (True/SufficientPods when
 * positive, else False/InsufficientPods), as meta.SetStatusCondition does: the transition time
 * changes only when the status does.
 */
export function setDisruptionAllowedCondition(status: PodDisruptionBudgetStatus, now: number): void {
  const allowed = (status.disruptionsAllowed ?? 0) > 0;
  setCondition(status, {
    type: DISRUPTION_ALLOWED_CONDITION,
    status: allowed ? 'True' : 'False',
    reason: allowed ? SUFFICIENT_PODS_REASON : INSUFFICIENT_PODS_REASON,
    message: '',
    ...(status.observedGeneration !== undefined ? { observedGeneration: status.observedGeneration } : {}),
  }, now);
}

/** meta.SetStatusCondition: replace the condition of that type, keeping its transition time unless the status changed. */
export function setCondition(status: PodDisruptionBudgetStatus, next: Omit<Condition, 'lastTransitionTime'>, now: number): void {
  const conditions = (status.conditions ??= []);
  const i = conditions.findIndex((c) => c.type === next.type);
  const current = i >= 0 ? conditions[i] : undefined;
  const lastTransitionTime = current && current.status === next.status ? current.lastTransitionTime : metaTime(now);
  const merged: Condition = { type: next.type, status: next.status, ...(next.observedGeneration !== undefined ? { observedGeneration: next.observedGeneration } : {}), lastTransitionTime, reason: next.reason, message: next.message };
  if (i >= 0) conditions[i] = merged;
  else conditions.push(merged);
}
