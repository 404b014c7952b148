/**
 * The pure rules of node lifecycle: which condition taints a node should carry for its Ready condition,
 * and when a pod on a NoExecute-tainted node must be evicted given its tolerations. Kept free of I/O so
 * the timing rules are unit-tested directly.
 */
import { TAINT_DISK_PRESSURE, TAINT_MEMORY_PRESSURE, TAINT_NOT_READY, TAINT_PID_PRESSURE, TAINT_UNREACHABLE } from '../../api/taints.js';
import type { Node, Pod, Taint } from '../../api/types.js';
import { tolerates } from '../scheduler/fit.js';

export { TAINT_NOT_READY, TAINT_UNREACHABLE };
const CONDITION_TAINT_KEYS = new Set([TAINT_UNREACHABLE, TAINT_NOT_READY]);
/** Pressure conditions that, while True, keep new pods off the node (NoSchedule only: nothing is evicted by the taint). */
const PRESSURE_TAINTS: ReadonlyArray<readonly [string, string]> = [
  ['DiskPressure', TAINT_DISK_PRESSURE],
  ['MemoryPressure', TAINT_MEMORY_PRESSURE],
  ['PIDPressure', TAINT_PID_PRESSURE],
];

/** The condition taint key a node's Ready status calls for: unreachable (Unknown), not-ready (False), none (True or not yet reported). */
export function conditionTaintKey(node: Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'Unknown') return TAINT_UNREACHABLE;
  if (ready?.status === 'False') return TAINT_NOT_READY;
  return undefined;
}

/**
 * The node's taints with the condition taints brought in line with its Ready status: the wanted key
 * as NoSchedule and NoExecute (an existing entry keeps its timeAdded), the other condition key dropped;
 * and a NoSchedule taint per pressure condition (disk, memory, PID) while it is True.
 * Returns undefined when nothing changes. Taints of other keys (users', cordon's) are never touched.
 */
export function reconcileConditionTaints(node: Node, nowIso: string): Taint[] | undefined {
  const current = node.spec?.taints ?? [];
  const want = conditionTaintKey(node);
  const next: Taint[] = current.filter((t) => !CONDITION_TAINT_KEYS.has(t.key) || t.key === want);
  if (want) {
    for (const effect of ['NoSchedule', 'NoExecute'] as const) {
      if (!next.some((t) => t.key === want && t.effect === effect)) next.push({ key: want, effect, timeAdded: nowIso });
    }
  }
  const pressured = (type: string) => node.status?.conditions?.some((c) => c.type === type && c.status === 'True') === true;
  for (const [type, key] of PRESSURE_TAINTS) {
    const has = next.some((t) => t.key === key && t.effect === 'NoSchedule');
    if (pressured(type) && !has) next.push({ key, effect: 'NoSchedule', timeAdded: nowIso });
    if (!pressured(type) && has) next.splice(next.findIndex((t) => t.key === key && t.effect === 'NoSchedule'), 1);
  }
  const same = next.length === current.length && next.every((t, i) => t === current[i]);
  return same ? undefined : next;
}

/**
 * When a pod on a node with these taints must be evicted (ms since epoch): now-ish (the taint's
 * timeAdded) for an untolerated NoExecute taint, timeAdded + the smallest tolerationSeconds among the
 * tolerations that match otherwise, and undefined when every NoExecute taint is tolerated forever
 * (or there is none).
 */
export function evictionDeadline(pod: Pod, taints: Taint[], fallbackNowMs: number): number | undefined {
  let deadline: number | undefined;
  for (const taint of taints) {
    if (taint.effect !== 'NoExecute') continue;
    const added = taint.timeAdded ? Date.parse(taint.timeAdded) : NaN;
    const since = Number.isNaN(added) ? fallbackNowMs : added;
    const matching = (pod.spec.tolerations ?? []).filter((t) => tolerates([t], taint));
    let at: number | undefined;
    if (matching.length === 0) at = since;
    else {
      const bounded = matching.filter((t) => typeof t.tolerationSeconds === 'number').map((t) => Math.max(0, t.tolerationSeconds!));
      // A matching toleration without tolerationSeconds tolerates the taint forever.
      if (bounded.length === matching.length) at = since + Math.min(...bounded) * 1000;
    }
    if (at !== undefined) deadline = deadline === undefined ? at : Math.min(deadline, at);
  }
  return deadline;
}

