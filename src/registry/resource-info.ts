/**
 * What the API server knows about each served resource: its REST identity, used for routing,
 * discovery, OpenAPI and tables. Behaviour (defaults, validation) lives in the kind's strategy.
 */
import { EVENTS, NAMESPACES, NODES, PODS, resourceInfo, type ResourceInfo } from '../api/identities.js';

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** The built-in resources. Later kinds (ConfigMap, Deployment, …) are added here. */
export const BUILTIN_RESOURCES: ResourceInfo[] = [
  resourceInfo(NAMESPACES, {
    listKind: 'NamespaceList',
    singular: 'namespace',
    shortNames: ['ns'],
    verbs: ALL_VERBS.filter((v) => v !== 'deletecollection'),
    subresources: ['status'],
    categories: [],
  }),
  resourceInfo(NODES, {
    listKind: 'NodeList',
    singular: 'node',
    shortNames: ['no'],
    verbs: ALL_VERBS,
    subresources: ['status'],
    categories: [],
  }),
  resourceInfo(PODS, {
    listKind: 'PodList',
    singular: 'pod',
    shortNames: ['po'],
    verbs: ALL_VERBS,
    // Every subresource served for pods, streaming ones included: clients (kubernetes.core's
    // k8s_log, client-python's dynamic client) look a subresource up in discovery before using it.
    subresources: ['attach', 'binding', 'eviction', 'exec', 'log', 'portforward', 'status'],
    categories: ['all'],
  }),
  resourceInfo(EVENTS, {
    listKind: 'EventList',
    singular: 'event',
    shortNames: ['ev'],
    verbs: ALL_VERBS,
    subresources: [],
    categories: [],
  }),
];
