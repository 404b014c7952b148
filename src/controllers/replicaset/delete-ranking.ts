/**
 * Which pods a shrinking ReplicaSet deletes first: the least valuable ones. In order of the
 * criteria (the first that differs decides):
 *  1. not yet scheduled before scheduled;
 *  2. Pending before Unknown before Running;
 *  3. not Ready before Ready;
 *  4. on a node crowded with related pods (same owner family) before a node with fewer;
 *  5. Ready for a shorter time before Ready for longer;
 *  6. more container restarts before fewer;
 *  7. newer before older.
 */
import type { Pod } from '../../api/types.js';
import { isPodReady, podReadySince, podRestarts } from '../runtime/pod-util.js';

const PHASE_ORDER: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

function createdAt(pod: Pod): number {
  const t = pod.metadata.creationTimestamp ? Date.parse(pod.metadata.creationTimestamp) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

/**
 * Negative when `a` should be deleted before `b`. `rank` is how many related pods share each
 * pod's node (higher = delete first, spreading what stays across nodes).
 */
export function compareForDeletion(a: Pod, b: Pod, rank: (p: Pod) => number): number {
  const aBound = a.spec.nodeName ? 1 : 0;
  const bBound = b.spec.nodeName ? 1 : 0;
  if (aBound !== bBound) return aBound - bBound;
  const aPhase = PHASE_ORDER[a.status?.phase ?? 'Pending'] ?? 0;
  const bPhase = PHASE_ORDER[b.status?.phase ?? 'Pending'] ?? 0;
  if (aPhase !== bPhase) return aPhase - bPhase;
  const aReady = isPodReady(a) ? 1 : 0;
  const bReady = isPodReady(b) ? 1 : 0;
  if (aReady !== bReady) return aReady - bReady;
  const aRank = rank(a);
  const bRank = rank(b);
  if (aRank !== bRank) return bRank - aRank;
  if (aReady && bReady) {
    const aSince = podReadySince(a) ?? 0;
    const bSince = podReadySince(b) ?? 0;
    if (aSince !== bSince) return bSince - aSince;
  }
  const aRestarts = podRestarts(a);
  const bRestarts = podRestarts(b);
  if (aRestarts !== bRestarts) return bRestarts - aRestarts;
  const aCreated = createdAt(a);
  const bCreated = createdAt(b);
  if (aCreated !== bCreated) return bCreated - aCreated;
  return (b.metadata.name ?? '').localeCompare(a.metadata.name ?? '');
}

/**
 * The `count` pods of `pods` to delete. `related` are the pods of the whole owner family (for a
 * Deployment's ReplicaSet: every ReplicaSet of that Deployment), used for the node-crowding rank.
 */
export function podsToDelete(opts: { pods: readonly Pod[]; related: readonly Pod[]; count: number }): Pod[] {
  if (opts.count >= opts.pods.length) return [...opts.pods];
  const perNode = new Map<string, number>();
  for (const p of opts.related) {
    const node = p.spec.nodeName;
    if (node) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  }
  const rank = (p: Pod) => (p.spec.nodeName ? perNode.get(p.spec.nodeName) ?? 0 : 0);
  return [...opts.pods].sort((a, b) => compareForDeletion(a, b, rank)).slice(0, opts.count);
}
