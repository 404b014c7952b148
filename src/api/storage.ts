/**
 * Owns the storage vocabulary the API server, the PV controller, the scheduler and the agent share,
 * pure: Kubernetes' annotation and finalizer names for binding and protection, Berth's local-path
 * provisioner's names, which StorageClass is the default, and whether a PersistentVolume can serve a
 * claim (class, volume mode, access modes, size, selector, pre-binding, node) as kube-controller-
 * manager's PV controller and kube-scheduler's VolumeBinding plugin decide it.
 */
import { compare, parseQuantity, tryParseQuantity } from './quantity.js';
import { labelSelectorFromObject, matchesLabels } from './selectors.js';
import { nodeSelectorTermsMatch } from './node-selector.js';
import type { Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from './types.js';

/** Set on a claim once the controller has finished binding it (both halves written). */
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
/** Set on whichever half the controller (not the user) bound. */
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
/** On a provisioned volume: the provisioner that made it (its deleter). */
export const ANN_PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';
/** On a claim: the provisioner expected to make its volume. */
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';
/** On a claim of a WaitForFirstConsumer class: the node the scheduler chose for its first pod. */
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** The class annotation older manifests use instead of spec.storageClassName. */
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
export const ANN_DEFAULT_CLASS = 'storageclass.kubernetes.io/is-default-class';
export const ANN_BETA_DEFAULT_CLASS = 'storageclass.beta.kubernetes.io/is-default-class';

/** Held on a claim while a pod uses it. */
export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
/** Held on a volume while it is bound to a claim. */
export const PV_PROTECTION_FINALIZER = 'kubernetes.io/pv-protection';

/** Berth's built-in provisioner and the default class it is installed under. */
export const LOCAL_PATH_PROVISIONER = 'berth.dev/local-path';
export const LOCAL_PATH_CLASS = 'local-path';
/**
 * Held on a local-path volume whose reclaim policy is Delete until the agent of its node has removed
 * its directory (the server cannot reach other hosts' disks); as external-provisioner's finalizer.
 */
export const LOCAL_PATH_FINALIZER = 'berth.dev/local-path-cleanup';
/** On a Node: the directory its agent keeps local-path volumes in (set by the agent). */
export const LOCAL_PATH_DIR_ANNOTATION = 'storage.berth.dev/local-path-dir';
/** Where the provisioner puts volumes of a node whose agent did not say (an installed agent's default). */
export const DEFAULT_LOCAL_PATH_DIR = '/var/lib/berth/agent/storage';
/**
 * The CSI driver name of volumes adopted from earlier Berth releases, whose claims were Docker
 * named volumes: volumeHandle is the Docker volume's name. No CSI driver runs; the agent knows it.
 */
export const DOCKER_VOLUME_DRIVER = 'berth.dev/docker-volume';

export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const;
export const ACCESS_MODE_SHORT: Record<string, string> = { ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' };

/** The class a claim or volume asks for: spec.storageClassName, else the beta annotation, else "" (no class). */
export function storageClassOf(obj: PersistentVolumeClaim | PersistentVolume): string {
  const ann = obj.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (ann !== undefined) return ann;
  return obj.spec?.storageClassName ?? '';
}

export function isDefaultClass(sc: StorageClass): boolean {
  const a = sc.metadata.annotations ?? {};
  return a[ANN_DEFAULT_CLASS] === 'true' || a[ANN_BETA_DEFAULT_CLASS] === 'true';
}

/** The default class: of several marked default, the newest (then the first by name), as since Kubernetes 1.26. */
export function defaultStorageClass(classes: readonly StorageClass[]): StorageClass | undefined {
  const marked = classes.filter((c) => isDefaultClass(c) && !c.metadata.deletionTimestamp);
  marked.sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  return marked[0];
}

/** The node a volume's required node affinity pins it to (kubernetes.io/hostname In [one name]), if any. */
export function pinnedNodeOf(pv: PersistentVolume): string | undefined {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  if (terms.length !== 1) return undefined;
  const exprs = terms[0]?.matchExpressions ?? [];
  const host = exprs.find((e) => e.key === HOSTNAME_LABEL && e.operator === 'In' && e.values?.length === 1);
  return host?.values?.[0];
}

/** Whether the volume may be used on the node: no required node affinity, or one that matches. */
export function volumeFitsNode(pv: PersistentVolume, node: Node): boolean {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (!terms) return true;
  return nodeSelectorTermsMatch(terms, node);
}

/** The size a claim asks for (its storage request), 0 when unset or unreadable. */
export function requestedStorage(pvc: PersistentVolumeClaim): string {
  const raw = pvc.spec?.resources?.requests?.storage;
  return raw !== undefined && tryParseQuantity(raw) ? String(raw) : '0';
}

/** Whether the volume's claimRef names this claim (by namespace and name, and uid when it has one). */
export function claimRefMatches(pv: PersistentVolume, pvc: PersistentVolumeClaim): boolean {
  const ref = pv.spec?.claimRef;
  if (!ref) return false;
  if (ref.namespace !== pvc.metadata.namespace || ref.name !== pvc.metadata.name) return false;
  return !ref.uid || ref.uid === pvc.metadata.uid;
}

/**
 * Whether the volume can serve the claim on its own terms: same class and volume mode, every access
 * mode the claim asks for, at least its size, and its selector. Binding state is the caller's.
 */
export function volumeSatisfiesClaim(pv: PersistentVolume, pvc: PersistentVolumeClaim): boolean {
  if (storageClassOf(pv) !== storageClassOf(pvc)) return false;
  if ((pv.spec?.volumeMode ?? 'Filesystem') !== (pvc.spec?.volumeMode ?? 'Filesystem')) return false;
  const modes = pv.spec?.accessModes ?? [];
  if (!(pvc.spec?.accessModes ?? []).every((m) => modes.includes(m))) return false;
  const have = tryParseQuantity(pv.spec?.capacity?.storage ?? '0');
  if (!have || compare(have, parseQuantity(requestedStorage(pvc))) < 0) return false;
  if (pvc.spec?.selector && !matchesLabels(labelSelectorFromObject(pvc.spec.selector), pv.metadata.labels ?? {})) return false;
  return true;
}

/**
 * The volume the claim should bind to, as the PV controller's findMatchingVolume: the one its
 * spec.volumeName names, or one pre-bound to it by claimRef, else the smallest Available unclaimed
 * volume that satisfies it (and fits `node`, when the claim's pod has one). Volumes being deleted
 * never match.
 */
export function findMatchingVolume(pvc: PersistentVolumeClaim, volumes: readonly PersistentVolume[], node?: Node): PersistentVolume | undefined {
  let best: PersistentVolume | undefined;
  for (const pv of volumes) {
    if (pv.metadata.deletionTimestamp) continue;
    if (pvc.spec?.volumeName && pv.metadata.name !== pvc.spec.volumeName) continue;
    if (!volumeSatisfiesClaim(pv, pvc)) continue;
    if (node && !volumeFitsNode(pv, node)) continue;
    if (claimRefMatches(pv, pvc)) return pv;
    if (pv.spec?.claimRef) continue;
    if (pvc.spec?.volumeName) return pv;
    if ((pv.status?.phase ?? 'Available') !== 'Available') continue;
    const size = parseQuantity(pv.spec?.capacity?.storage ?? '0');
    if (!best || compare(size, parseQuantity(best.spec?.capacity?.storage ?? '0')) < 0) best = pv;
  }
  return best;
}
