/**
 * Which nodes a DaemonSet runs on: nodeSelector, required node affinity and taints against the
 * pod's tolerations plus the ones every daemon pod gets (so daemons keep running on not-ready or
 * unreachable nodes and are placed on cordoned or pressured ones, as in Kubernetes); the node-name
 * affinity that pins each daemon pod to its node for the scheduler, and reading it back.
 */
import type { Affinity, Node, NodeSelectorTerm, Pod, PodSpec, Toleration } from '../../api/types.js';
import { tolerates } from '../scheduler/fit.js';
import { nodeMatchesPlacement, pinnedNodeNames } from '../scheduler/plugins/node-affinity.js';

export { nodeMatchesPlacement };

/**
 * Tolerations added to every DaemonSet pod, as Kubernetes' controller adds them (without
 * tolerationSeconds: forever): daemons stay on nodes that become not-ready or unreachable, and are
 * placed on pressured and cordoned ones.
 */
export const DAEMON_TOLERATIONS: readonly Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

/** Added for hostNetwork daemons only: they are what makes a node's network available. */
export const HOST_NETWORK_TOLERATION: Toleration = { key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' };

/** The pod's tolerations with the daemon defaults merged in (no duplicates). */
export function withDaemonTolerations(tolerations: readonly Toleration[] | undefined, hostNetwork = false): Toleration[] {
  const out = [...(tolerations ?? [])];
  for (const t of hostNetwork ? [...DAEMON_TOLERATIONS, HOST_NETWORK_TOLERATION] : DAEMON_TOLERATIONS) {
    if (!out.some((o) => o.key === t.key && o.effect === t.effect && o.operator === t.operator)) out.push({ ...t });
  }
  return out;
}

/** The node-name affinity the controller gives each daemon pod: its required terms become exactly this node (preferred terms stay). */
export function withNodeNameAffinity(affinity: Affinity | undefined, nodeName: string): Affinity {
  const term: NodeSelectorTerm = { matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] };
  return { ...(affinity ?? {}), nodeAffinity: { ...(affinity?.nodeAffinity ?? {}), requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [term] } } };
}

/** The node a daemon pod belongs to: its nodeName once bound, else the node its node-name affinity pins. */
export function targetNodeOf(pod: Pod): string | undefined {
  if (pod.spec.nodeName) return pod.spec.nodeName;
  const names = pinnedNodeNames(pod.spec);
  return names?.size === 1 ? [...names][0] : undefined;
}

/**
 * Whether a daemon pod with this spec should run on the node: placement matches and every
 * NoSchedule/NoExecute taint of the node is tolerated (with the daemon defaults).
 */
export function shouldRunOnNode(spec: PodSpec, node: Node): boolean {
  if (node.metadata.deletionTimestamp) return false;
  if (!nodeMatchesPlacement(spec, node)) return false;
  const tolerations = withDaemonTolerations(spec.tolerations, spec.hostNetwork);
  return (node.spec?.taints ?? []).every((t) => t.effect === 'PreferNoSchedule' || tolerates(tolerations, t));
}

/** Whether a daemon pod already on the node may stay: placement matches and its NoExecute taints are tolerated. */
export function shouldContinueRunning(spec: PodSpec, node: Node): boolean {
  if (node.metadata.deletionTimestamp) return false;
  if (!nodeMatchesPlacement(spec, node)) return false;
  const tolerations = withDaemonTolerations(spec.tolerations, spec.hostNetwork);
  return (node.spec?.taints ?? []).every((t) => t.effect !== 'NoExecute' || tolerates(tolerations, t));
}
