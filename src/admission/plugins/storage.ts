/**
 * The storage admission plugins of kube-apiserver, by their upstream names:
 * - DefaultStorageClass (mutating): a new claim that names no class gets the default one (the newest
 *   StorageClass annotated `storageclass.kubernetes.io/is-default-class: "true"`); a claim that asks
 *   for no class with `storageClassName: ""` keeps it.
 * - StorageObjectInUseProtection (mutating): every new claim gets `kubernetes.io/pvc-protection` and
 *   every new volume `kubernetes.io/pv-protection`; the PV controller removes them once the claim is
 *   used by no pod, or the volume bound to no claim.
 * - PersistentVolumeClaimResize (validating): a claim may grow only when it is bound and its class
 *   allows volume expansion.
 */
import { errors } from '../../api/errors.js';
import { ANN_BETA_STORAGE_CLASS, PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER, defaultStorageClass, storageClassOf } from '../../api/storage.js';
import { compare, tryParseQuantity } from '../../api/quantity.js';
import type { PersistentVolumeClaim, StorageClass } from '../../api/types.js';
import type { Registry } from '../../registry/registry.js';
import type { AdmissionPlugin } from '../chain.js';

async function storageClasses(registry: Registry): Promise<StorageClass[]> {
  const info = registry.lookup('storage.k8s.io', 'storageclasses')?.info;
  if (!info) return [];
  // Any state, as kube-apiserver's admission reads an informer: no round trip on every claim.
  return (await registry.list(info, undefined, { resourceVersion: '0' })).items as StorageClass[];
}

export function defaultStorageClassAdmission(opts: { registry: Registry }): AdmissionPlugin {
  return {
    name: 'DefaultStorageClass',
    kind: 'mutating',
    async admit(attrs) {
      if (attrs.operation !== 'CREATE' || attrs.info.kind !== 'PersistentVolumeClaim' || attrs.subresource) return;
      const pvc = attrs.object as PersistentVolumeClaim;
      if (!pvc.spec || pvc.spec.storageClassName !== undefined || pvc.metadata.annotations?.[ANN_BETA_STORAGE_CLASS] !== undefined) return;
      const def = defaultStorageClass(await storageClasses(opts.registry));
      if (def) pvc.spec.storageClassName = def.metadata.name;
    },
  };
}

export function storageObjectInUseProtection(): AdmissionPlugin {
  return {
    name: 'StorageObjectInUseProtection',
    kind: 'mutating',
    admit(attrs) {
      if (attrs.operation !== 'CREATE' || attrs.subresource) return;
      const finalizer = attrs.info.kind === 'PersistentVolumeClaim' ? PVC_PROTECTION_FINALIZER : attrs.info.kind === 'PersistentVolume' && attrs.info.group === '' ? PV_PROTECTION_FINALIZER : undefined;
      if (!finalizer) return;
      const meta = attrs.object.metadata;
      if (!(meta.finalizers ?? []).includes(finalizer)) meta.finalizers = [...(meta.finalizers ?? []), finalizer];
    },
  };
}

export function persistentVolumeClaimResize(opts: { registry: Registry }): AdmissionPlugin {
  return {
    name: 'PersistentVolumeClaimResize',
    kind: 'validating',
    completeMessages: true,
    async admit(attrs) {
      if (attrs.operation !== 'UPDATE' || attrs.info.kind !== 'PersistentVolumeClaim' || attrs.subresource || !attrs.oldObject) return;
      const pvc = attrs.object as PersistentVolumeClaim;
      const old = attrs.oldObject as PersistentVolumeClaim;
      const now = tryParseQuantity(pvc.spec?.resources?.requests?.storage ?? '');
      const before = tryParseQuantity(old.spec?.resources?.requests?.storage ?? '');
      if (!now || !before || compare(now, before) <= 0) return;
      const forbidden = (why: string) => errors.forbidden(`persistentvolumeclaims ${JSON.stringify(pvc.metadata.name)} is forbidden: ${why}`, { name: pvc.metadata.name, kind: 'persistentvolumeclaims' });
      if (old.status?.phase !== 'Bound') throw forbidden('Only bound persistent volume claims can be expanded');
      const className = storageClassOf(old);
      const sc = className ? (await storageClasses(opts.registry)).find((c) => c.metadata.name === className) : undefined;
      if (!sc?.allowVolumeExpansion) throw forbidden('only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize');
    },
  };
}
