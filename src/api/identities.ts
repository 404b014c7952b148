/**
 * Owns the REST identity of every built-in kind: its group, version, resource (the plural in paths),
 * kind and scope, and the ResourceInfo shape the registry describes a served resource with. The
 * registry's kind modules build their ResourceInfo from these identities; controllers, the client
 * and tests address resources and stamp owner references with them. Pure data.
 */

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

/** Whether a request for `version` of this resource is served. */
export function servesVersion(info: ResourceInfo, version: string): boolean {
  return (info.servedVersions ?? [info.version]).includes(version);
}

export function apiVersionOf(info: Pick<ResourceInfo, 'group' | 'version'>): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/**
 * A built-in kind's REST identity. It is at once a client's reference to the resource (group,
 * version, plural, namespaced) and its objects' type metadata (apiVersion, kind), so it addresses
 * requests and stamps owner references alike.
 */
export interface KindIdentity {
  readonly group: string;
  /** the version Berth stores (and prefers) */
  readonly version: string;
  /** `group/version`, or the version alone for the core group */
  readonly apiVersion: string;
  readonly kind: string;
  /** the resource: the lower-case plural in paths, `deployments` */
  readonly plural: string;
  /** false for cluster-scoped kinds */
  readonly namespaced: boolean;
}

function identity(group: string, version: string, kind: string, plural: string, scope: 'Namespaced' | 'Cluster'): KindIdentity {
  return { group, version, apiVersion: apiVersionOf({ group, version }), kind, plural, namespaced: scope === 'Namespaced' };
}

// core/v1
export const NAMESPACES = identity('', 'v1', 'Namespace', 'namespaces', 'Cluster');
export const NODES = identity('', 'v1', 'Node', 'nodes', 'Cluster');
export const PODS = identity('', 'v1', 'Pod', 'pods', 'Namespaced');
export const EVENTS = identity('', 'v1', 'Event', 'events', 'Namespaced');
export const CONFIGMAPS = identity('', 'v1', 'ConfigMap', 'configmaps', 'Namespaced');
export const SECRETS = identity('', 'v1', 'Secret', 'secrets', 'Namespaced');
export const SERVICES = identity('', 'v1', 'Service', 'services', 'Namespaced');
export const ENDPOINTS = identity('', 'v1', 'Endpoints', 'endpoints', 'Namespaced');
export const SERVICEACCOUNTS = identity('', 'v1', 'ServiceAccount', 'serviceaccounts', 'Namespaced');
export const PERSISTENTVOLUMECLAIMS = identity('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', 'Namespaced');
export const PERSISTENTVOLUMES = identity('', 'v1', 'PersistentVolume', 'persistentvolumes', 'Cluster');
export const REPLICATIONCONTROLLERS = identity('', 'v1', 'ReplicationController', 'replicationcontrollers', 'Namespaced');
export const PODTEMPLATES = identity('', 'v1', 'PodTemplate', 'podtemplates', 'Namespaced');
export const RESOURCEQUOTAS = identity('', 'v1', 'ResourceQuota', 'resourcequotas', 'Namespaced');
export const LIMITRANGES = identity('', 'v1', 'LimitRange', 'limitranges', 'Namespaced');

// discovery.k8s.io/v1
export const ENDPOINTSLICES = identity('discovery.k8s.io', 'v1', 'EndpointSlice', 'endpointslices', 'Namespaced');

// apps/v1
export const DEPLOYMENTS = identity('apps', 'v1', 'Deployment', 'deployments', 'Namespaced');
export const REPLICASETS = identity('apps', 'v1', 'ReplicaSet', 'replicasets', 'Namespaced');
export const DAEMONSETS = identity('apps', 'v1', 'DaemonSet', 'daemonsets', 'Namespaced');
export const STATEFULSETS = identity('apps', 'v1', 'StatefulSet', 'statefulsets', 'Namespaced');
export const CONTROLLERREVISIONS = identity('apps', 'v1', 'ControllerRevision', 'controllerrevisions', 'Namespaced');

// batch/v1
export const JOBS = identity('batch', 'v1', 'Job', 'jobs', 'Namespaced');
export const CRONJOBS = identity('batch', 'v1', 'CronJob', 'cronjobs', 'Namespaced');

// autoscaling: stored as v2, v1 served too
export const HORIZONTALPODAUTOSCALERS = identity('autoscaling', 'v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', 'Namespaced');

// coordination.k8s.io/v1
export const LEASES = identity('coordination.k8s.io', 'v1', 'Lease', 'leases', 'Namespaced');

// policy/v1
export const PODDISRUPTIONBUDGETS = identity('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', 'Namespaced');

// storage.k8s.io/v1
export const STORAGECLASSES = identity('storage.k8s.io', 'v1', 'StorageClass', 'storageclasses', 'Cluster');
// scheduling.k8s.io/v1
export const PRIORITYCLASSES = identity('scheduling.k8s.io', 'v1', 'PriorityClass', 'priorityclasses', 'Cluster');

// networking.k8s.io/v1
export const NETWORKPOLICIES = identity('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies', 'Namespaced');
export const INGRESSES = identity('networking.k8s.io', 'v1', 'Ingress', 'ingresses', 'Namespaced');
export const INGRESSCLASSES = identity('networking.k8s.io', 'v1', 'IngressClass', 'ingressclasses', 'Cluster');

// certificates.k8s.io/v1
export const CERTIFICATESIGNINGREQUESTS = identity('certificates.k8s.io', 'v1', 'CertificateSigningRequest', 'certificatesigningrequests', 'Cluster');

// rbac.authorization.k8s.io/v1
/** The RBAC API group, which roleRefs and User/Group subjects name. */
export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const ROLES = identity('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', 'Namespaced');
export const CLUSTERROLES = identity('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', 'Cluster');
export const ROLEBINDINGS = identity('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', 'Namespaced');
export const CLUSTERROLEBINDINGS = identity('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', 'Cluster');

// admissionregistration.k8s.io/v1
export const MUTATINGWEBHOOKCONFIGURATIONS = identity('admissionregistration.k8s.io', 'v1', 'MutatingWebhookConfiguration', 'mutatingwebhookconfigurations', 'Cluster');
export const VALIDATINGWEBHOOKCONFIGURATIONS = identity('admissionregistration.k8s.io', 'v1', 'ValidatingWebhookConfiguration', 'validatingwebhookconfigurations', 'Cluster');

// apiextensions.k8s.io/v1
export const CUSTOMRESOURCEDEFINITIONS = identity('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition', 'customresourcedefinitions', 'Cluster');

// apiregistration.k8s.io/v1
export const APISERVICES = identity('apiregistration.k8s.io', 'v1', 'APIService', 'apiservices', 'Cluster');

/** The name an APIService must have: `<version>.<group>` (`v1.` for the core group). */
export function apiServiceName(group: string, version: string): string {
  return `${version}.${group}`;
}

/** Every identity above: the built-in kinds the registry stores. */
export const BUILTIN_KINDS: readonly KindIdentity[] = [
  NAMESPACES,
  NODES,
  PODS,
  EVENTS,
  CONFIGMAPS,
  SECRETS,
  SERVICES,
  ENDPOINTS,
  SERVICEACCOUNTS,
  PERSISTENTVOLUMECLAIMS,
  PERSISTENTVOLUMES,
  REPLICATIONCONTROLLERS,
  PODTEMPLATES,
  RESOURCEQUOTAS,
  LIMITRANGES,
  ENDPOINTSLICES,
  DEPLOYMENTS,
  REPLICASETS,
  DAEMONSETS,
  STATEFULSETS,
  CONTROLLERREVISIONS,
  JOBS,
  CRONJOBS,
  HORIZONTALPODAUTOSCALERS,
  LEASES,
  PODDISRUPTIONBUDGETS,
  STORAGECLASSES,
  PRIORITYCLASSES,
  NETWORKPOLICIES,
  INGRESSES,
  INGRESSCLASSES,
  CERTIFICATESIGNINGREQUESTS,
  ROLES,
  CLUSTERROLES,
  ROLEBINDINGS,
  CLUSTERROLEBINDINGS,
  MUTATINGWEBHOOKCONFIGURATIONS,
  VALIDATINGWEBHOOKCONFIGURATIONS,
  CUSTOMRESOURCEDEFINITIONS,
  APISERVICES,
];

/** What ResourceInfo adds to a kind's identity: how the resource is served and discovered. */
export type ServingDetails = Omit<ResourceInfo, 'group' | 'version' | 'kind' | 'plural' | 'namespaced'>;

/** A kind's ResourceInfo: its identity from here, its serving details from the kind's module. */
export function resourceInfo(id: KindIdentity, details: ServingDetails): ResourceInfo {
  return { group: id.group, version: id.version, kind: id.kind, plural: id.plural, namespaced: id.namespaced, ...details };
}
