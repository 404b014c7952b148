/**
 * Validation of the storage kinds in Kubernetes' terms: core/v1 PersistentVolume and
 * PersistentVolumeClaim (create and update), and storage.k8s.io/v1 StorageClass. Messages and field
 * paths follow kube-apiserver's (ValidatePersistentVolume, ValidatePersistentVolumeClaim[Update],
 * ValidateStorageClass[Update]).
 */
import { isDeepStrictEqual } from 'node:util';
import type { FieldError } from '../errors.js';
import { compare, tryParseQuantity } from '../quantity.js';
import { ACCESS_MODES } from '../storage.js';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types.js';
import { child, fieldErrors, index, invalidEach, isRecord, key, listOf } from './field-errors.js';
import { dns1123SubdomainErrors, qualifiedNameErrors } from './names.js';
import { validateObjectMeta, validateObjectMetaUpdate } from './meta.js';
import { validateLabelSelectorObject } from './selector.js';

const RECLAIM_POLICIES = ['Delete', 'Recycle', 'Retain'];
const CLASS_RECLAIM_POLICIES = ['Delete', 'Retain'];
const VOLUME_MODES = ['Block', 'Filesystem'];
const BINDING_MODES = ['Immediate', 'WaitForFirstConsumer'];
/** The volume sources a PersistentVolume may have (exactly one). */
const PV_SOURCES = [
  'gcePersistentDisk', 'awsElasticBlockStore', 'hostPath', 'glusterfs', 'nfs', 'rbd', 'quobyte', 'cinder', 'cephfs', 'iscsi', 'fc', 'flocker',
  'flexVolume', 'azureFile', 'vsphereVolume', 'azureDisk', 'photonPersistentDisk', 'portworxVolume', 'scaleIO', 'local', 'storageos', 'csi',
];

function validateAccessModes(modes: unknown, path: string, required: string): FieldError[] {
  const list = listOf(modes);
  if (!list.length) return [fieldErrors.required(path, required)];
  const errs: FieldError[] = [];
  for (const m of list) if (!(ACCESS_MODES as readonly unknown[]).includes(m)) errs.push(fieldErrors.notSupported(path, m, ACCESS_MODES));
  if (list.includes('ReadWriteOncePod') && list.length > 1) errs.push(fieldErrors.forbidden(path, 'may not use ReadWriteOncePod with other access modes'));
  return errs;
}

function validateStorageQuantity(raw: unknown, path: string): FieldError[] {
  const q = typeof raw === 'string' || typeof raw === 'number' ? tryParseQuantity(raw) : undefined;
  if (!q) return [fieldErrors.invalid(path, raw, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")];
  if (q.nanos <= 0n) return [fieldErrors.invalid(path, String(raw), 'must be greater than zero')];
  return [];
}

function validateClassName(name: unknown, path: string): FieldError[] {
  if (name === undefined || name === null || name === '') return [];
  return invalidEach(path, name, dns1123SubdomainErrors(String(name)));
}

// ---------- PersistentVolume ----------

export function validatePersistentVolume(pv: PersistentVolume): FieldError[] {
  const errs = validateObjectMeta(pv.metadata, { namespaced: false, nameRule: 'subdomain' });
  const spec = pv.spec as Record<string, unknown> | undefined;
  if (!isRecord(spec)) return [...errs, fieldErrors.required('spec')];
  errs.push(...validateAccessModes(spec.accessModes, 'spec.accessModes', ''));
  const capacity = spec.capacity;
  if (!isRecord(capacity) || !Object.keys(capacity).length) errs.push(fieldErrors.required('spec.capacity'));
  else {
    for (const [k, v] of Object.entries(capacity)) {
      if (k !== 'storage') errs.push(fieldErrors.notSupported(key('spec.capacity', k), k, ['storage']));
      else errs.push(...validateStorageQuantity(v, key('spec.capacity', k)));
    }
  }
  const policy = spec.persistentVolumeReclaimPolicy;
  if (policy !== undefined && !RECLAIM_POLICIES.includes(policy as string)) errs.push(fieldErrors.notSupported('spec.persistentVolumeReclaimPolicy', policy, RECLAIM_POLICIES));
  if (spec.volumeMode !== undefined && !VOLUME_MODES.includes(spec.volumeMode as string)) errs.push(fieldErrors.notSupported('spec.volumeMode', spec.volumeMode, VOLUME_MODES));
  errs.push(...validateClassName(spec.storageClassName, 'spec.storageClassName'));
  const sources = PV_SOURCES.filter((s) => spec[s] !== undefined && spec[s] !== null);
  if (!sources.length) errs.push(fieldErrors.required('spec', 'must specify a volume type'));
  for (const extra of sources.slice(1)) errs.push(fieldErrors.forbidden(child('spec', extra), 'may not specify more than 1 volume type'));
  const hostPath = spec.hostPath;
  if (isRecord(hostPath)) {
    if (!hostPath.path) errs.push(fieldErrors.required('spec.hostPath.path'));
    else if (String(hostPath.path).split('/').includes('..')) errs.push(fieldErrors.invalid('spec.hostPath.path', hostPath.path, "must not contain '..'"));
  }
  const local = spec.local;
  if (isRecord(local)) {
    if (!local.path) errs.push(fieldErrors.required('spec.local.path'));
    if (!spec.nodeAffinity) errs.push(fieldErrors.required('spec.nodeAffinity', 'Local volume requires node affinity'));
  }
  const csi = spec.csi;
  if (isRecord(csi)) {
    if (!csi.driver) errs.push(fieldErrors.required('spec.csi.driver'));
    if (!csi.volumeHandle) errs.push(fieldErrors.required('spec.csi.volumeHandle'));
  }
  const affinity = spec.nodeAffinity;
  if (isRecord(affinity)) {
    const required = affinity.required;
    if (!isRecord(required)) errs.push(fieldErrors.required('spec.nodeAffinity.required'));
    else if (!listOf(required.nodeSelectorTerms).length) errs.push(fieldErrors.required('spec.nodeAffinity.required.nodeSelectorTerms', 'must have at least one node selector term'));
  }
  return errs;
}

export function validatePersistentVolumeUpdate(pv: PersistentVolume, old: PersistentVolume): FieldError[] {
  const errs = [...validatePersistentVolume(pv), ...validateObjectMetaUpdate(pv.metadata, old.metadata)];
  const sourceOf = (v: PersistentVolume) => Object.fromEntries(PV_SOURCES.map((s) => [s, (v.spec as Record<string, unknown> | undefined)?.[s]]));
  if (!isDeepStrictEqual(sourceOf(pv), sourceOf(old))) errs.push(fieldErrors.forbidden('spec.persistentvolumesource', 'spec.persistentvolumesource is immutable after creation'));
  if ((pv.spec?.volumeMode ?? 'Filesystem') !== (old.spec?.volumeMode ?? 'Filesystem')) errs.push(fieldErrors.invalid('spec.volumeMode', pv.spec?.volumeMode, 'field is immutable'));
  if (old.spec?.nodeAffinity && !isDeepStrictEqual(pv.spec?.nodeAffinity, old.spec.nodeAffinity)) errs.push(fieldErrors.invalid('spec.nodeAffinity', pv.spec?.nodeAffinity, 'field is immutable'));
  return errs;
}

// ---------- PersistentVolumeClaim ----------

export function validatePersistentVolumeClaimSpec(spec: unknown, path: string): FieldError[] {
  if (!isRecord(spec)) return [fieldErrors.required(path)];
  const errs = validateAccessModes(spec.accessModes, child(path, 'accessModes'), 'at least 1 access mode is required');
  if (spec.selector !== undefined && spec.selector !== null) errs.push(...validateLabelSelectorObject(spec.selector, child(path, 'selector')));
  const requests = isRecord(spec.resources) && isRecord(spec.resources.requests) ? spec.resources.requests : undefined;
  const storagePath = key(child(path, 'resources'), 'storage');
  if (requests?.storage === undefined) errs.push(fieldErrors.required(storagePath));
  else errs.push(...validateStorageQuantity(requests.storage, storagePath));
  errs.push(...validateClassName(spec.storageClassName, child(path, 'storageClassName')));
  if (spec.volumeMode !== undefined && !VOLUME_MODES.includes(spec.volumeMode as string)) errs.push(fieldErrors.notSupported(child(path, 'volumeMode'), spec.volumeMode, VOLUME_MODES));
  return errs;
}

export function validatePersistentVolumeClaim(pvc: PersistentVolumeClaim): FieldError[] {
  return [...validateObjectMeta(pvc.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validatePersistentVolumeClaimSpec(pvc.spec, 'spec')];
}

/**
 * A claim's spec is fixed once made, except: binding fills volumeName (and an unset class may be
 * set), and a bound claim may ask for more storage (never less than it has).
 */
export function validatePersistentVolumeClaimUpdate(pvc: PersistentVolumeClaim, old: PersistentVolumeClaim): FieldError[] {
  const errs = [...validatePersistentVolumeClaim(pvc), ...validateObjectMetaUpdate(pvc.metadata, old.metadata)];
  const comparable = (c: PersistentVolumeClaim, from: PersistentVolumeClaim) => {
    const spec = structuredClone(c.spec ?? {}) as Record<string, unknown>;
    if (!from.spec?.volumeName) delete spec.volumeName;
    if (from.spec?.storageClassName === undefined) delete spec.storageClassName;
    if (old.status?.phase === 'Bound') delete spec.resources;
    delete spec.volumeAttributesClassName;
    return spec;
  };
  if (!isDeepStrictEqual(comparable(pvc, old), comparable(old, old))) {
    errs.push(fieldErrors.forbidden('spec', 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims'));
  }
  const now = tryParseQuantity(pvc.spec?.resources?.requests?.storage ?? '');
  const capacity = tryParseQuantity(old.status?.capacity?.storage ?? old.spec?.resources?.requests?.storage ?? '');
  if (old.status?.phase === 'Bound' && now && capacity && compare(now, capacity) < 0) {
    errs.push(fieldErrors.forbidden('spec.resources.requests.storage', 'field can not be less than status.capacity'));
  }
  return errs;
}

// ---------- StorageClass ----------

export function validateStorageClass(sc: StorageClass): FieldError[] {
  const errs = validateObjectMeta(sc.metadata, { namespaced: false, nameRule: 'subdomain' });
  if (!sc.provisioner) errs.push(fieldErrors.required('provisioner'));
  else errs.push(...invalidEach('provisioner', sc.provisioner, qualifiedNameErrors(String(sc.provisioner).toLowerCase())));
  if (sc.reclaimPolicy !== undefined && !CLASS_RECLAIM_POLICIES.includes(sc.reclaimPolicy)) errs.push(fieldErrors.notSupported('reclaimPolicy', sc.reclaimPolicy, CLASS_RECLAIM_POLICIES));
  if (sc.volumeBindingMode !== undefined && !BINDING_MODES.includes(sc.volumeBindingMode)) errs.push(fieldErrors.notSupported('volumeBindingMode', sc.volumeBindingMode, BINDING_MODES));
  listOf(sc.allowedTopologies).forEach((t, i) => {
    if (!isRecord(t) || !listOf(t.matchLabelExpressions).length) errs.push(fieldErrors.required(child(index('allowedTopologies', i), 'matchLabelExpressions'), 'must have at least one label requirement'));
  });
  return errs;
}

export function validateStorageClassUpdate(sc: StorageClass, old: StorageClass): FieldError[] {
  const errs = [...validateStorageClass(sc), ...validateObjectMetaUpdate(sc.metadata, old.metadata)];
  if (!isDeepStrictEqual(sc.parameters ?? {}, old.parameters ?? {})) errs.push(fieldErrors.forbidden('parameters', 'updates to parameters are forbidden.'));
  if (sc.provisioner !== old.provisioner) errs.push(fieldErrors.forbidden('provisioner', 'updates to provisioner are forbidden.'));
  if (sc.reclaimPolicy !== old.reclaimPolicy) errs.push(fieldErrors.forbidden('reclaimPolicy', 'updates to reclaimPolicy are forbidden.'));
  if (sc.volumeBindingMode !== old.volumeBindingMode) errs.push(fieldErrors.invalid('volumeBindingMode', sc.volumeBindingMode, 'field is immutable'));
  return errs;
}
