/**
 * Field numbers of the meta.k8s.io/v1 messages that appear inside objects (Kubernetes 1.32), in the
 * notation of schema.ts. Time, MicroTime, Duration, Quantity, IntOrString and FieldsV1 are decoded
 * by decode.ts itself because their JSON form differs from their message shape.
 */
import type { MessageTable } from './schema.js';

/** meta/v1 messages by name. */
export const META_MESSAGES: MessageTable = {
  /** meta/v1 Condition, as the status of several kinds carries it. */
  Condition: {
    type: [1, 'string'],
    status: [2, 'string'],
    observedGeneration: [3, 'int64'],
    lastTransitionTime: [4, 'Time'],
    reason: [5, 'string'],
    message: [6, 'string'],
  },
  ObjectMeta: {
    name: [1, 'string'],
    generateName: [2, 'string'],
    namespace: [3, 'string'],
    selfLink: [4, 'string'],
    uid: [5, 'string'],
    resourceVersion: [6, 'string'],
    generation: [7, 'int64'],
    creationTimestamp: [8, 'Time'],
    deletionTimestamp: [9, 'Time'],
    deletionGracePeriodSeconds: [10, 'int64', 'pointer'],
    labels: [11, 'map<string>'],
    annotations: [12, 'map<string>'],
    ownerReferences: [13, '[]OwnerReference'],
    finalizers: [14, '[]string'],
    managedFields: [17, '[]ManagedFieldsEntry'],
  },
  OwnerReference: {
    apiVersion: [5, 'string'],
    kind: [1, 'string'],
    name: [3, 'string'],
    uid: [4, 'string'],
    controller: [6, 'bool', 'pointer'],
    blockOwnerDeletion: [7, 'bool', 'pointer'],
  },
  ManagedFieldsEntry: {
    manager: [1, 'string'],
    operation: [2, 'string'],
    apiVersion: [3, 'string'],
    time: [4, 'Time'],
    fieldsType: [6, 'string'],
    fieldsV1: [7, 'FieldsV1'],
    subresource: [8, 'string'],
  },
  LabelSelector: {
    matchLabels: [1, 'map<string>'],
    matchExpressions: [2, '[]LabelSelectorRequirement'],
  },
  LabelSelectorRequirement: {
    key: [1, 'string'],
    operator: [2, 'string'],
    values: [3, '[]string'],
  },
  DeleteOptions: {
    gracePeriodSeconds: [1, 'int64', 'pointer'],
    preconditions: [2, 'Preconditions'],
    orphanDependents: [3, 'bool', 'pointer'],
    propagationPolicy: [4, 'string', 'pointer'],
    dryRun: [5, '[]string'],
    ignoreStoreReadErrorWithClusterBreakingPotential: [6, 'bool', 'pointer'],
  },
  Preconditions: {
    uid: [1, 'string', 'pointer'],
    resourceVersion: [2, 'string', 'pointer'],
  },
};

/**
 * runtime.Unknown, the envelope around every protobuf-encoded object, and its runtime.TypeMeta
 * (note: apiVersion is field 1 here, unlike meta/v1 TypeMeta). Decoded directly by index.ts.
 */
export const UNKNOWN_FIELDS = { typeMeta: 1, raw: 2, contentEncoding: 3, contentType: 4 } as const;
export const RUNTIME_TYPE_META_FIELDS = { apiVersion: 1, kind: 2 } as const;

/** Field numbers inside the special messages decode.ts converts by hand. */
export const SPECIAL_FIELDS = {
  /** meta/v1 Time and MicroTime (google.protobuf.Timestamp layout) */
  time: { seconds: 1, nanos: 2 },
  /** meta/v1 Duration: nanoseconds */
  duration: { duration: 1 },
  /** resource.Quantity: its canonical string */
  quantity: { string: 1 },
  /** intstr.IntOrString: type 0 = int, 1 = string */
  intOrString: { type: 1, intVal: 2, strVal: 3 },
  /** meta/v1 FieldsV1: raw JSON */
  fieldsV1: { raw: 1 },
} as const;
