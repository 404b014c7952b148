/**
 * Strategic-merge-patch metadata for the built-in kinds: which lists merge, and by which key.
 * Mirrors the `patchStrategy` / `patchMergeKey` struct tags of Kubernetes' Go types (core/v1,
 * apps/v1, batch/v1, meta/v1). Lists not listed here are replaced wholesale, as in Kubernetes
 * (e.g. tolerations, args, containerStatuses).
 */

/** Kubernetes' tag values; `retainKeys` only guides clients computing patches (`$retainKeys`). */
export type PatchStrategy = 'merge' | 'replace' | 'retainKeys' | 'merge,retainKeys';

export interface PatchMeta {
  /** field identifying list items, for lists of objects that merge */
  mergeKey?: string;
  strategy?: PatchStrategy;
}

/**
 * Patch metadata by field path: field names from the object root, list items transparent, e.g.
 * `['spec', 'containers', 'env']`. Undefined means: maps merge, lists are replaced.
 */
export type PatchSchema = (path: readonly string[]) => PatchMeta | undefined;

/** One schema entry, also handy for publishing x-kubernetes-patch-* in OpenAPI. */
export interface PatchField {
  path: readonly string[];
  meta: PatchMeta;
}

/** True when a list at this path merges rather than being replaced. */
export function mergesLists(meta: PatchMeta | undefined): boolean {
  return meta?.strategy === 'merge' || meta?.strategy === 'merge,retainKeys';
}

const byKey = (mergeKey: string, strategy: PatchStrategy = 'merge'): PatchMeta => ({ mergeKey, strategy });

const OBJECT_META: Record<string, PatchMeta> = {
  finalizers: { strategy: 'merge' },
  ownerReferences: byKey('uid'),
};

const CONTAINER: Record<string, PatchMeta> = {
  env: byKey('name'),
  ports: byKey('containerPort'),
  volumeMounts: byKey('mountPath'),
  volumeDevices: byKey('devicePath'),
};

const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'];

const POD_SPEC: Record<string, PatchMeta> = {
  volumes: byKey('name', 'merge,retainKeys'),
  containers: byKey('name'),
  initContainers: byKey('name'),
  ephemeralContainers: byKey('name'),
  imagePullSecrets: byKey('name'),
  hostAliases: byKey('ip'),
  topologySpreadConstraints: byKey('topologyKey'),
  schedulingGates: byKey('name'),
  resourceClaims: byKey('name', 'merge,retainKeys'),
};

const CONDITIONS_BY_TYPE: Record<string, PatchMeta> = { conditions: byKey('type') };

function under(prefix: readonly string[], fields: Record<string, PatchMeta>): PatchField[] {
  return Object.entries(fields).map(([name, meta]) => ({ path: [...prefix, name], meta }));
}

function podSpecAt(prefix: readonly string[]): PatchField[] {
  return [
    ...under(prefix, POD_SPEC),
    ...CONTAINER_LISTS.flatMap((list) => under([...prefix, list], CONTAINER)),
  ];
}

/** Pod template (`metadata` + `spec`) found at `prefix` in workload kinds. */
function podTemplateAt(prefix: readonly string[]): PatchField[] {
  return [...under([...prefix, 'metadata'], OBJECT_META), ...podSpecAt([...prefix, 'spec'])];
}

const WORKLOAD_TEMPLATE = ['spec', 'template'];

/** Per-kind fields beyond `metadata`, which every kind has. */
const KIND_FIELDS: Record<string, PatchField[]> = {
  Pod: [
    ...podSpecAt(['spec']),
    ...under(['status'], {
      ...CONDITIONS_BY_TYPE,
      podIPs: byKey('ip'),
      hostIPs: byKey('ip'),
      resourceClaimStatuses: byKey('name', 'merge,retainKeys'),
    }),
  ],
  PodTemplate: podTemplateAt(['template']),
  ReplicationController: [...podTemplateAt(WORKLOAD_TEMPLATE), ...under(['status'], CONDITIONS_BY_TYPE)],
  ReplicaSet: [...podTemplateAt(WORKLOAD_TEMPLATE), ...under(['status'], CONDITIONS_BY_TYPE)],
  Deployment: [
    ...podTemplateAt(WORKLOAD_TEMPLATE),
    ...under(['spec'], { strategy: { strategy: 'retainKeys' } }),
    ...under(['status'], CONDITIONS_BY_TYPE),
  ],
  DaemonSet: [...podTemplateAt(WORKLOAD_TEMPLATE), ...under(['status'], CONDITIONS_BY_TYPE)],
  StatefulSet: [...podTemplateAt(WORKLOAD_TEMPLATE), ...under(['status'], CONDITIONS_BY_TYPE)],
  Job: [...podTemplateAt(WORKLOAD_TEMPLATE), ...under(['status'], CONDITIONS_BY_TYPE)],
  CronJob: [
    ...under(['spec', 'jobTemplate', 'metadata'], OBJECT_META),
    ...podTemplateAt(['spec', 'jobTemplate', 'spec', 'template']),
  ],
  Node: [
    ...under(['spec'], { podCIDRs: { strategy: 'merge' } }),
    ...under(['status'], { ...CONDITIONS_BY_TYPE, addresses: byKey('type') }),
  ],
  Namespace: under(['status'], CONDITIONS_BY_TYPE),
  Service: [...under(['spec'], { ports: byKey('port') }), ...under(['status'], CONDITIONS_BY_TYPE)],
  ServiceAccount: under([], { secrets: byKey('name') }),
  PersistentVolumeClaim: under(['status'], CONDITIONS_BY_TYPE),
};

/** All schema entries for a kind (unknown kinds get ObjectMeta's only). */
export function builtinPatchFields(kind: string): PatchField[] {
  return [...under(['metadata'], OBJECT_META), ...(Object.hasOwn(KIND_FIELDS, kind) ? KIND_FIELDS[kind]! : [])];
}

/** Builds a PatchSchema from explicit entries. */
export function patchSchemaFromFields(fields: readonly PatchField[]): PatchSchema {
  // JSON.stringify keeps segment boundaries exact, whatever characters field names contain.
  const table = new Map(fields.map((f) => [JSON.stringify(f.path), f.meta]));
  return (path) => table.get(JSON.stringify(path));
}

const schemaCache = new Map<string, PatchSchema>();

/** The strategic-merge-patch schema for a built-in kind (by `kind`, e.g. `Deployment`). */
export function builtinPatchSchema(kind: string): PatchSchema {
  let schema = schemaCache.get(kind);
  if (!schema) {
    schema = patchSchemaFromFields(builtinPatchFields(kind));
    schemaCache.set(kind, schema);
  }
  return schema;
}

/** Pod's schema, the one most patches use. */
export const podPatchSchema: PatchSchema = builtinPatchSchema('Pod');
