/**
 * How DaemonSets, StatefulSets, ControllerRevisions and PersistentVolumeClaims look to kubectl:
 * table columns (`kubectl get`) and OpenAPI schemas (so `kubectl apply` computes strategic merge
 * patches with the right list merge keys). Imported once for its registrations.
 */
import { labelSelectorFromObject, labelSelectorToString } from '../../api/selectors.js';
import type { KubeObject } from '../../api/types.js';
import { registerDefinitions, registerKindSchema, type JsonSchema } from '../../server/openapi.js';
import { ageSince, registerTableColumns, type TableColumnDefinition } from '../../server/tables.js';
import type { DaemonSet, PersistentVolumeClaim, StatefulSet } from './apps-sets.js';

const col = (name: string, description: string, type = 'string', priority = 0): TableColumnDefinition => ({ name, type, format: name === 'Name' ? 'name' : '', description, priority });
const NAME = col('Name', 'Name must be unique within a namespace.');
const AGE = col('Age', 'CreationTimestamp is a timestamp representing the server time when this object was created.');

function nodeSelectorText(ds: DaemonSet): string {
  const sel = ds.spec?.template?.spec?.nodeSelector ?? {};
  const text = Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(',');
  return text || '<none>';
}

function selectorText(obj: { spec?: { selector?: unknown } }): string {
  try {
    return labelSelectorToString(labelSelectorFromObject(obj.spec?.selector as never)) || '<none>';
  } catch {
    return '<invalid>';
  }
}

registerTableColumns('DaemonSet', {
  columns: [
    NAME,
    col('Desired', 'The total number of nodes that should be running the daemon pod.', 'integer'),
    col('Current', 'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.', 'integer'),
    col('Ready', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.', 'integer'),
    col('Up-to-date', 'The total number of nodes that are running updated daemon pod', 'integer'),
    col('Available', 'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.', 'integer'),
    col('Node Selector', 'NodeSelector is a selector which must be true for the pod to fit on a node.'),
    AGE,
    col('Containers', 'Names of each container in the template.', 'string', 1),
    col('Images', 'Images referenced by each container in the template.', 'string', 1),
    col('Selector', 'A label query over pods that are managed by the daemon set.', 'string', 1),
  ],
  cells: (obj, { now }) => {
    const ds = obj as DaemonSet;
    const containers = ds.spec?.template?.spec?.containers ?? [];
    return [
      ds.metadata.name ?? '',
      ds.status?.desiredNumberScheduled ?? 0,
      ds.status?.currentNumberScheduled ?? 0,
      ds.status?.numberReady ?? 0,
      ds.status?.updatedNumberScheduled ?? 0,
      ds.status?.numberAvailable ?? 0,
      nodeSelectorText(ds),
      ageSince(ds.metadata.creationTimestamp, now),
      containers.map((c) => c.name).join(','),
      containers.map((c) => c.image ?? '').join(','),
      selectorText(ds),
    ];
  },
}, { group: 'apps' });

registerTableColumns('StatefulSet', {
  columns: [
    NAME,
    col('Ready', 'Number of the pod with ready state'),
    AGE,
    col('Containers', 'Names of each container in the template.', 'string', 1),
    col('Images', 'Images referenced by each container in the template.', 'string', 1),
  ],
  cells: (obj, { now }) => {
    const s = obj as StatefulSet;
    const containers = s.spec?.template?.spec?.containers ?? [];
    return [
      s.metadata.name ?? '',
      `${s.status?.readyReplicas ?? 0}/${s.spec?.replicas ?? 0}`,
      ageSince(s.metadata.creationTimestamp, now),
      containers.map((c) => c.name).join(','),
      containers.map((c) => c.image ?? '').join(','),
    ];
  },
}, { group: 'apps' });

registerTableColumns('ControllerRevision', {
  columns: [NAME, col('Controller', 'Controller of the object'), col('Revision', 'Revision', 'integer'), AGE],
  cells: (obj, { now }) => {
    const ref = (obj.metadata.ownerReferences ?? []).find((r) => r.controller);
    const cr = obj as KubeObject & { revision?: number };
    return [obj.metadata.name ?? '', ref ? `${ref.kind.toLowerCase()}.${ref.apiVersion.split('/')[0]}/${ref.name}` : '<none>', cr.revision ?? 0, ageSince(obj.metadata.creationTimestamp, now)];
  },
}, { group: 'apps' });

registerTableColumns('PersistentVolumeClaim', {
  columns: [
    NAME,
    col('Status', 'Phase is the current phase of the claim.'),
    col('Volume', 'VolumeName is the binding reference to the PersistentVolume backing this claim.'),
    col('Capacity', 'Capacity is the actual resources of the underlying volume.'),
    col('Access Modes', 'AccessModes contains the actual access modes the volume backing the PVC has.'),
    col('StorageClass', 'StorageClassName is the name of the StorageClass required by the claim.'),
    AGE,
  ],
  cells: (obj, { now }) => {
    const pvc = obj as PersistentVolumeClaim;
    const modes = (pvc.status?.accessModes ?? pvc.spec?.accessModes ?? []).map((m) => ({ ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' })[m] ?? m);
    return [
      pvc.metadata.name ?? '',
      pvc.status?.phase ?? 'Pending',
      // The backing storage is the Docker named volume of the claim.
      `berth-pvc-${pvc.metadata.namespace}-${pvc.metadata.name}`,
      pvc.status?.capacity?.storage ?? '',
      modes.join(','),
      pvc.spec?.storageClassName ?? '<unset>',
      ageSince(pvc.metadata.creationTimestamp, now),
    ];
  },
});

// ---------- OpenAPI ----------

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const CORE = 'io.k8s.api.core.v1';
const APPS = 'io.k8s.api.apps.v1';
const ref = (name: string): JsonSchema => ({ allOf: [{ $ref: `#/components/schemas/${name}` }] });
const opaque = (): JsonSchema => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
const int32 = (): JsonSchema => ({ type: 'integer', format: 'int32' });
const int64 = (): JsonSchema => ({ type: 'integer', format: 'int64' });
const time = (): JsonSchema => ref(`${META}.Time`);
const str = (): JsonSchema => ({ type: 'string' });
const obj = (properties: Record<string, JsonSchema>, required?: string[]): JsonSchema => ({ type: 'object', properties, ...(required ? { required } : {}) });
const intOrString = (): JsonSchema => ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString');

registerDefinitions({
  [`${APPS}.DaemonSetSpec`]: obj({
    selector: ref(`${META}.LabelSelector`),
    template: ref(`${CORE}.PodTemplateSpec`),
    updateStrategy: obj({ type: str(), rollingUpdate: obj({ maxUnavailable: intOrString(), maxSurge: intOrString() }) }),
    minReadySeconds: int32(),
    revisionHistoryLimit: int32(),
  }, ['selector', 'template']),
  [`${APPS}.StatefulSetSpec`]: obj({
    replicas: int32(),
    selector: ref(`${META}.LabelSelector`),
    template: ref(`${CORE}.PodTemplateSpec`),
    serviceName: str(),
    podManagementPolicy: str(),
    updateStrategy: obj({ type: str(), rollingUpdate: obj({ partition: int32(), maxUnavailable: intOrString() }) }),
    volumeClaimTemplates: { type: 'array', items: ref(`${CORE}.PersistentVolumeClaim`), 'x-kubernetes-list-type': 'atomic' },
    persistentVolumeClaimRetentionPolicy: obj({ whenDeleted: str(), whenScaled: str() }),
    revisionHistoryLimit: int32(),
    minReadySeconds: int32(),
    ordinals: obj({ start: int32() }),
  }, ['selector', 'template']),
  [`${APPS}.DaemonSetStatus`]: obj({
    collisionCount: int32(),
    conditions: { type: 'array', items: ref(`${APPS}.DaemonSetCondition`), 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], 'x-kubernetes-patch-merge-key': 'type', 'x-kubernetes-patch-strategy': 'merge' },
    currentNumberScheduled: int32(),
    desiredNumberScheduled: int32(),
    numberAvailable: int32(),
    numberMisscheduled: int32(),
    numberReady: int32(),
    numberUnavailable: int32(),
    observedGeneration: int64(),
    updatedNumberScheduled: int32(),
  }, ['currentNumberScheduled', 'numberMisscheduled', 'desiredNumberScheduled', 'numberReady']),
  [`${APPS}.DaemonSetCondition`]: obj({ lastTransitionTime: time(), message: str(), reason: str(), status: str(), type: str() }, ['type', 'status']),
  [`${APPS}.StatefulSetStatus`]: obj({
    availableReplicas: int32(),
    collisionCount: int32(),
    conditions: { type: 'array', items: ref(`${APPS}.StatefulSetCondition`), 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], 'x-kubernetes-patch-merge-key': 'type', 'x-kubernetes-patch-strategy': 'merge' },
    currentReplicas: int32(),
    currentRevision: str(),
    observedGeneration: int64(),
    readyReplicas: int32(),
    replicas: int32(),
    updateRevision: str(),
    updatedReplicas: int32(),
  }, ['replicas']),
  [`${APPS}.StatefulSetCondition`]: obj({ lastTransitionTime: time(), message: str(), reason: str(), status: str(), type: str() }, ['type', 'status']),
});

const kind = (group: string, k: string, spec: JsonSchema, status: JsonSchema): void =>
  registerKindSchema({ group, version: 'v1', kind: k, schema: obj({ spec, status }) });
kind('apps', 'DaemonSet', ref(`${APPS}.DaemonSetSpec`), ref(`${APPS}.DaemonSetStatus`));
kind('apps', 'StatefulSet', ref(`${APPS}.StatefulSetSpec`), ref(`${APPS}.StatefulSetStatus`));
// `data` is an embedded object of any kind (a RawExtension), so it is not checked field by field.
registerKindSchema({ group: 'apps', version: 'v1', kind: 'ControllerRevision', schema: obj({ data: opaque(), revision: int64() }, ['revision']) });
kind('', 'PersistentVolumeClaim', ref(`${CORE}.PersistentVolumeClaimSpec`), ref(`${CORE}.PersistentVolumeClaimStatus`));
