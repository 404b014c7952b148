/**
 * core/v1 PersistentVolume and PersistentVolumeClaim, and storage.k8s.io/v1 StorageClass: REST
 * identity, defaults, the status each starts with, and `kubectl get` columns. Validation is
 * src/api/validation/storage.ts's; binding, provisioning and reclaiming are the PV controller's
 * (src/controllers/persistentvolume); the default class and the protection finalizers are filled by
 * admission (src/admission/plugins/storage.ts).
 *
 * As upstream: a volume starts Pending (the controller makes it Available), a claim starts Pending
 * until bound; a volume's reclaim policy defaults to Retain, a class's to Delete, and a class binds
 * Immediate unless it says WaitForFirstConsumer.
 */
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../api/types.js';
import { ACCESS_MODE_SHORT, isDefaultClass, storageClassOf } from '../../api/storage.js';
import { isRecord } from '../../api/validation.js';
import {
  validatePersistentVolume,
  validatePersistentVolumeClaim,
  validatePersistentVolumeClaimUpdate,
  validatePersistentVolumeUpdate,
  validateStorageClass,
  validateStorageClassUpdate,
} from '../../api/validation/storage.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, type ResourceInfo, resourceInfo, STORAGECLASSES } from '../../api/identities.js';

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const PVC_INFO: ResourceInfo = resourceInfo(PERSISTENTVOLUMECLAIMS, {
  listKind: 'PersistentVolumeClaimList', singular: 'persistentvolumeclaim', shortNames: ['pvc'], verbs: ALL_VERBS, subresources: ['status'], categories: [],
});

export const PV_INFO: ResourceInfo = resourceInfo(PERSISTENTVOLUMES, {
  listKind: 'PersistentVolumeList', singular: 'persistentvolume', shortNames: ['pv'], verbs: ALL_VERBS, subresources: ['status'], categories: [],
});

export const STORAGECLASS_INFO: ResourceInfo = resourceInfo(STORAGECLASSES, {
  listKind: 'StorageClassList', singular: 'storageclass', shortNames: ['sc'], verbs: ALL_VERBS, subresources: [], categories: [],
});

const modesOf = (modes: readonly string[] | undefined) => (modes ?? []).map((m) => ACCESS_MODE_SHORT[m] ?? m).join(',');
const UNSET = '<unset>';

// ---------- tables (the columns kubectl shows upstream) ----------

const PV_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Capacity', 'capacity is the description of the persistent volume\'s resources and capacity.'),
    column('Access Modes', 'accessModes contains all ways the volume can be mounted.'),
    column('Reclaim Policy', 'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.'),
    column('Status', 'phase indicates if a volume is available, bound to a claim, or released by a claim.'),
    column('Claim', 'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.'),
    column('StorageClass', 'storageClassName is the name of StorageClass to which this persistent volume belongs.'),
    column('VolumeAttributesClass', 'Name of VolumeAttributesClass to which this persistent volume belongs.'),
    column('Reason', 'reason is a brief CamelCase string that describes any failure.'),
    AGE_COLUMN,
    column('VolumeMode', 'volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.', 1),
  ],
  cells: (obj, { now }) => {
    const pv = obj as PersistentVolume;
    const ref = pv.spec?.claimRef;
    return [
      pv.metadata.name ?? '',
      pv.spec?.capacity?.storage ?? '',
      modesOf(pv.spec?.accessModes),
      pv.spec?.persistentVolumeReclaimPolicy ?? '',
      pv.metadata.deletionTimestamp ? 'Terminating' : (pv.status?.phase ?? ''),
      ref ? `${ref.namespace ?? ''}/${ref.name ?? ''}` : '',
      storageClassOf(pv),
      pv.spec?.volumeAttributesClassName || UNSET,
      pv.status?.reason ?? '',
      ageSince(pv.metadata.creationTimestamp, now),
      pv.spec?.volumeMode ?? 'Filesystem',
    ];
  },
};

const PVC_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Status', 'phase represents the current phase of PersistentVolumeClaim.'),
    column('Volume', 'volumeName is the binding reference to the PersistentVolume backing this claim.'),
    column('Capacity', 'capacity represents the actual resources of the underlying volume.'),
    column('Access Modes', 'accessModes contains the actual access modes the volume backing the PVC has.'),
    column('StorageClass', 'storageClassName is the name of the StorageClass required by the claim.'),
    column('VolumeAttributesClass', 'volumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.'),
    AGE_COLUMN,
    column('VolumeMode', 'volumeMode defines what type of volume is required by the claim.', 1),
  ],
  cells: (obj, { now }) => {
    const pvc = obj as PersistentVolumeClaim;
    const bound = pvc.status?.phase === 'Bound';
    return [
      pvc.metadata.name ?? '',
      pvc.metadata.deletionTimestamp ? 'Terminating' : (pvc.status?.phase ?? 'Pending'),
      pvc.spec?.volumeName ?? '',
      bound ? (pvc.status?.capacity?.storage ?? '') : '',
      bound ? modesOf(pvc.status?.accessModes) : '',
      storageClassOf(pvc),
      pvc.spec?.volumeAttributesClassName || UNSET,
      ageSince(pvc.metadata.creationTimestamp, now),
      pvc.spec?.volumeMode ?? 'Filesystem',
    ];
  },
};

const STORAGECLASS_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Provisioner', 'provisioner indicates the type of the provisioner.'),
    column('ReclaimPolicy', 'reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.'),
    column('VolumeBindingMode', 'volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.'),
    column('AllowVolumeExpansion', 'allowVolumeExpansion shows whether the storage class allow volume expand.'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const sc = obj as StorageClass;
    return [
      `${sc.metadata.name ?? ''}${isDefaultClass(sc) ? ' (default)' : ''}`,
      sc.provisioner ?? '',
      sc.reclaimPolicy ?? 'Delete',
      sc.volumeBindingMode ?? 'Immediate',
      String(sc.allowVolumeExpansion ?? false),
      ageSince(sc.metadata.creationTimestamp, now),
    ];
  },
};

// ---------- strategies ----------

export const pvcStrategy: KindStrategy<PersistentVolumeClaim> = {
  info: PVC_INFO,
  table: PVC_COLUMNS,
  hasStatus: true,
  applyDefaults(pvc) {
    if (!isRecord(pvc.spec)) return;
    pvc.spec.volumeMode ??= 'Filesystem';
  },
  validate: validatePersistentVolumeClaim,
  validateUpdate: (pvc, old, subresource) => (subresource === 'status' ? validatePersistentVolumeClaim(pvc) : validatePersistentVolumeClaimUpdate(pvc, old)),
  initialStatus: () => ({ phase: 'Pending' }),
};

export const pvStrategy: KindStrategy<PersistentVolume> = {
  info: PV_INFO,
  table: PV_COLUMNS,
  hasStatus: true,
  applyDefaults(pv) {
    if (!isRecord(pv.spec)) return;
    pv.spec.persistentVolumeReclaimPolicy ??= 'Retain';
    pv.spec.volumeMode ??= 'Filesystem';
    if (isRecord(pv.spec.hostPath)) pv.spec.hostPath.type ??= '';
  },
  validate: validatePersistentVolume,
  validateUpdate: (pv, old) => validatePersistentVolumeUpdate(pv, old),
  initialStatus: () => ({ phase: 'Pending' }),
};

export const storageClassStrategy: KindStrategy<StorageClass> = {
  info: STORAGECLASS_INFO,
  table: STORAGECLASS_COLUMNS,
  hasStatus: false,
  applyDefaults(sc) {
    sc.reclaimPolicy ??= 'Delete';
    sc.volumeBindingMode ??= 'Immediate';
  },
  validate: validateStorageClass,
  validateUpdate: validateStorageClassUpdate,
};

export const STORAGE_STRATEGIES: KindStrategy<KubeObject>[] = [pvcStrategy, pvStrategy, storageClassStrategy] as KindStrategy<KubeObject>[];
