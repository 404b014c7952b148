/**
 * Owns volume topology in scheduling, as kube-scheduler's VolumeBinding plugin: which nodes a pod's
 * PersistentVolumeClaims let it run on, and what must happen to its unbound WaitForFirstConsumer
 * claims once a node is chosen. The profile runs it as a plugin (`volumeBindingPlugin`: a preFilter
 * and `volumeBindingFilter` for each node, null: fits, else the reason in kube-scheduler's words)
 * and the scheduler asks, for the chosen node,
 * `claimsToSelectNode` for the claims to annotate with `volume.kubernetes.io/selected-node` before
 * the pod may be bound; the PV controller then binds or provisions them on that node and the pod
 * is scheduled once they are Bound.
 *
 * - a claim bound to a volume with required node affinity fits only the nodes it matches
 *   ("node(s) had volume node affinity conflict");
 * - an unbound WaitForFirstConsumer claim fits a node with an Available matching volume there, or
 *   whose class can provision there ("node(s) didn't find available persistent volumes to bind");
 * - a claim that does not exist, is being deleted, or is unbound with Immediate binding keeps the pod
 *   off every node, with upstream's messages.
 */
import { ANN_SELECTED_NODE, findMatchingVolume, storageClassOf, volumeFitsNode } from '../../api/storage.js';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../api/types.js';
import type { Cycle, NodeInfo, Plugin } from './framework.js';

/** What the plugin reads, from the scheduler's caches. */
export interface VolumeBindingContext {
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  volumes(): PersistentVolume[];
  storageClass(name: string): StorageClass | undefined;
}

export const REASON_NODE_CONFLICT = 'node(s) had volume node affinity conflict';
export const REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
export const REASON_PV_NOT_EXIST = 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';
export const REASON_UNBOUND_IMMEDIATE = 'pod has unbound immediate PersistentVolumeClaims';

/** The claim names the pod mounts (persistentVolumeClaim volumes and generic ephemeral volumes). */
export function podClaimNames(pod: Pod): string[] {
  const names: string[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (v.persistentVolumeClaim?.claimName) names.push(v.persistentVolumeClaim.claimName);
    else if (v.ephemeral) names.push(`${pod.metadata.name}-${v.name}`);
  }
  return names;
}

function delaysBinding(pvc: PersistentVolumeClaim, ctx: VolumeBindingContext): boolean {
  const className = storageClassOf(pvc);
  return !!className && ctx.storageClass(className)?.volumeBindingMode === 'WaitForFirstConsumer';
}

/** Whether the claim's class may provision a volume on the node (a provisioner, and allowedTopologies that admit it). */
function canProvisionOn(pvc: PersistentVolumeClaim, node: Node, ctx: VolumeBindingContext): boolean {
  const sc = ctx.storageClass(storageClassOf(pvc));
  if (!sc || sc.provisioner === 'kubernetes.io/no-provisioner') return false;
  const selected = pvc.metadata.annotations?.[ANN_SELECTED_NODE];
  if (selected && selected !== node.metadata.name) return false;
  const topologies = sc.allowedTopologies ?? [];
  if (!topologies.length) return true;
  const labels = node.metadata.labels ?? {};
  return topologies.some((t) => (t.matchLabelExpressions ?? []).every((e) => e.values.includes(labels[e.key] ?? '')));
}

/** Why the pod's claims keep it off the node, or null when they let it run there. */
export function volumeBindingFilter(pod: Pod, node: Node, ctx: VolumeBindingContext): string | null {
  const namespace = pod.metadata.namespace ?? '';
  for (const name of podClaimNames(pod)) {
    const pvc = ctx.claim(namespace, name);
    if (!pvc) return `persistentvolumeclaim ${JSON.stringify(name)} not found`;
    if (pvc.metadata.deletionTimestamp) return `persistentvolumeclaim ${JSON.stringify(name)} is being deleted`;
    const volumeName = pvc.spec?.volumeName;
    if (volumeName) {
      const pv = ctx.volume(volumeName);
      if (!pv) return REASON_PV_NOT_EXIST;
      if (!volumeFitsNode(pv, node)) return REASON_NODE_CONFLICT;
      continue;
    }
    if (!delaysBinding(pvc, ctx)) return REASON_UNBOUND_IMMEDIATE;
    if (findMatchingVolume(pvc, ctx.volumes(), node)) continue;
    if (!canProvisionOn(pvc, node, ctx)) return REASON_BIND_CONFLICT;
  }
  return null;
}

/**
 * The pod's unbound WaitForFirstConsumer claims, which must carry the chosen node in
 * `volume.kubernetes.io/selected-node` (and be bound) before the pod is bound. Empty: bind the pod now.
 */
export function unboundDelayedClaims(pod: Pod, ctx: VolumeBindingContext): PersistentVolumeClaim[] {
  const namespace = pod.metadata.namespace ?? '';
  const out: PersistentVolumeClaim[] = [];
  for (const name of podClaimNames(pod)) {
    const pvc = ctx.claim(namespace, name);
    if (pvc && !pvc.spec?.volumeName && delaysBinding(pvc, ctx)) out.push(pvc);
  }
  return out;
}

/** Why the pod's claims keep it off every node whatever the node (missing, being deleted, unbound Immediate), or null. */
function podLevelReason(pod: Pod, ctx: VolumeBindingContext): string | null {
  const namespace = pod.metadata.namespace ?? '';
  for (const name of podClaimNames(pod)) {
    const pvc = ctx.claim(namespace, name);
    if (!pvc) return `persistentvolumeclaim ${JSON.stringify(name)} not found`;
    if (pvc.metadata.deletionTimestamp) return `persistentvolumeclaim ${JSON.stringify(name)} is being deleted`;
    if (!pvc.spec?.volumeName && !delaysBinding(pvc, ctx)) return REASON_UNBOUND_IMMEDIATE;
  }
  return null;
}

/**
 * VolumeBinding as a profile plugin: what holds for the pod on any node is a preFilter rejection
 * (reported once, as kube-scheduler does), a node's conflict is its filter reason; both are
 * unresolvable, since evicting pods frees no volume.
 */
export function volumeBindingPlugin(ctx: VolumeBindingContext): Plugin {
  return {
    name: 'VolumeBinding',
    preFilter(cycle: Cycle) {
      const reason = podLevelReason(cycle.pod, ctx);
      return reason ? { reject: { reasons: [reason], unresolvable: true } } : undefined;
    },
    filter(cycle: Cycle, node: NodeInfo) {
      const reason = volumeBindingFilter(cycle.pod, node.node, ctx);
      return reason ? { reasons: [reason], unresolvable: true } : undefined;
    },
  };
}
