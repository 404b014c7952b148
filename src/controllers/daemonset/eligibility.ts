/**
 * Which nodes a DaemonSet runs on: nodeSelector, required node affinity and taints against the
 * pod's tolerations plus the ones every daemon pod gets (so daemons keep running on not-ready,
 * unreachable, cordoned or pressured nodes, as in Kubernetes).
 */
import { nodeSelectorTermMatches } from '../../api/node-selector.js';
import type { Node, NodeSelectorTerm, PodSpec, Toleration } from '../../api/types.js';
import { tolerates } from '../scheduler/fit.js';

/** Tolerations added to every DaemonSet pod (Kubernetes' defaults, without tolerationSeconds: forever). */
export const DAEMON_TOLERATIONS: readonly Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

/** The pod's tolerations with the daemon defaults merged in (no duplicates). */
export function withDaemonTolerations(tolerations: readonly Toleration[] | undefined): Toleration[] {
  const out = [...(tolerations ?? [])];
  for (const t of DAEMON_TOLERATIONS) {
    if (!out.some((o) => o.key === t.key && o.effect === t.effect && o.operator === t.operator)) out.push({ ...t });
  }
  return out;
}

/** nodeSelector and requiredDuringSchedulingIgnoredDuringExecution node affinity (terms are ORed). */
export function nodeMatchesPlacement(spec: PodSpec, node: Node): boolean {
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) if (node.metadata.labels?.[k] !== v) return false;
  const affinity = spec.affinity as { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } } | undefined;
  const terms = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && !terms.some((t) => nodeSelectorTermMatches(t, node))) return false;
  return true;
}

/**
 * Whether a daemon pod with this spec should run on the node: placement matches and every
 * NoSchedule/NoExecute taint of the node is tolerated (with the daemon defaults).
 */
export function shouldRunOnNode(spec: PodSpec, node: Node): boolean {
  if (node.metadata.deletionTimestamp) return false;
  if (!nodeMatchesPlacement(spec, node)) return false;
  const tolerations = withDaemonTolerations(spec.tolerations);
  return (node.spec?.taints ?? []).every((t) => t.effect === 'PreferNoSchedule' || tolerates(tolerations, t));
}
