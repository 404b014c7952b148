/**
 * The OpenAPI schemas of DaemonSets, StatefulSets, ControllerRevisions and PersistentVolumeClaims
 * (so `kubectl apply` computes strategic merge patches with the right list merge keys). Imported
 * once for its registrations. Their table columns live with their strategies in apps-sets.ts.
 */
import { registerDefinitions, registerKindSchema, type JsonSchema } from '../../server/openapi.js';

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
