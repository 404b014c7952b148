/**
 * Owns the pod predicates workload controllers share: Ready, Ready since when, available after
 * minReadySeconds, active (counted toward replicas), and total restarts for ranking. Pure.
 */
import type { Pod } from '../../api/types.js';

/** The pod's Ready condition is True (the agent sets it; readiness probes refine it). */
export function isPodReady(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** When the pod last became Ready (ms since epoch), or undefined when it is not Ready. */
export function podReadySince(pod: Pod): number | undefined {
  const c = (pod.status?.conditions ?? []).find((x) => x.type === 'Ready' && x.status === 'True');
  if (!c) return undefined;
  const t = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

/** Ready for at least `minReadySeconds` (0: ready is available). */
export function isPodAvailable(pod: Pod, minReadySeconds: number, now: number): boolean {
  const since = podReadySince(pod);
  if (since === undefined) return false;
  return minReadySeconds <= 0 || since + minReadySeconds * 1000 <= now;
}

/** Neither finished (Succeeded/Failed) nor being deleted: it counts toward a replica count. */
export function isPodActive(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed' && !pod.metadata.deletionTimestamp;
}

/** Sum of container restarts, for ranking which pod to delete. */
export function podRestarts(pod: Pod): number {
  return (pod.status?.containerStatuses ?? []).reduce((n, s) => n + (s.restartCount ?? 0), 0);
}
