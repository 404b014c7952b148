/**
 * What the API server knows about each served resource: its REST identity, used for routing,
 * discovery, OpenAPI and tables. Behaviour (defaults, validation) lives in the kind's strategy.
 */
export interface ResourceInfo {
  /** '' for the core group */
  group: string;
  /** the storage (and preferred) version */
  version: string;
  /** every version served, when more than one (CRDs); objects are stored at `version` */
  servedVersions?: string[];
  kind: string;
  listKind: string;
  /** lower-case plural used in paths: `pods` */
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  verbs: string[];
  /** every served subresource, e.g. ['status']; discovery lists exactly these */
  subresources: string[];
  categories: string[];
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** Whether a request for `version` of this resource is served. */
export function servesVersion(info: ResourceInfo, version: string): boolean {
  return (info.servedVersions ?? [info.version]).includes(version);
}

export function apiVersionOf(info: Pick<ResourceInfo, 'group' | 'version'>): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** The built-in resources. Later kinds (ConfigMap, Deployment, …) are added here. */
export const BUILTIN_RESOURCES: ResourceInfo[] = [
  {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    listKind: 'NamespaceList',
    plural: 'namespaces',
    singular: 'namespace',
    namespaced: false,
    shortNames: ['ns'],
    verbs: ALL_VERBS.filter((v) => v !== 'deletecollection'),
    subresources: ['status'],
    categories: [],
  },
  {
    group: '',
    version: 'v1',
    kind: 'Node',
    listKind: 'NodeList',
    plural: 'nodes',
    singular: 'node',
    namespaced: false,
    shortNames: ['no'],
    verbs: ALL_VERBS,
    subresources: ['status'],
    categories: [],
  },
  {
    group: '',
    version: 'v1',
    kind: 'Pod',
    listKind: 'PodList',
    plural: 'pods',
    singular: 'pod',
    namespaced: true,
    shortNames: ['po'],
    verbs: ALL_VERBS,
    // Every subresource served for pods, streaming ones included: clients (kubernetes.core's
    // k8s_log, client-python's dynamic client) look a subresource up in discovery before using it.
    subresources: ['attach', 'binding', 'eviction', 'exec', 'log', 'portforward', 'status'],
    categories: ['all'],
  },
  {
    group: '',
    version: 'v1',
    kind: 'Event',
    listKind: 'EventList',
    plural: 'events',
    singular: 'event',
    namespaced: true,
    shortNames: ['ev'],
    verbs: ALL_VERBS,
    subresources: [],
    categories: [],
  },
];
