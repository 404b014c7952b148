/**
 * core/v1 Service and Endpoints: REST identity, defaults, validation, protobuf messages and
 * `kubectl get` columns — everything hand-written about the two kinds. ClusterIPs and NodePorts
 * are allocated by the registry through the Service strategy's store hook
 * (src/registry/service-allocation.ts); the Endpoints objects are written by the EndpointSlice
 * controller's mirroring and, for `default/kubernetes`, by the control plane itself.
 *
 * Semantics follow kube-apiserver's ValidateService / SetDefaults_Service: names are RFC 1035
 * labels, ports need unique names when there are several, `clusterIP` is immutable once set,
 * ExternalName Services have no ClusterIP, and the traffic-policy fields exist only where they mean
 * something.
 * Validation rules live in src/api/validation/services.ts.
 */
import type { Endpoints, KubeObject, Service, ServicePort } from '../../api/types.js';
import { CLUSTER_IP_NONE, DEFAULT_CLIENT_IP_AFFINITY_SECONDS, serviceType } from '../../api/services.js';
import { isRecord,
  validateObjectMetaUpdate
} from '../../api/validation.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { DEFAULT_SERVICE_ALLOCATION, serviceAllocationHooks, type ServiceAllocationConfig } from '../service-allocation.js';
import { DEFAULT_CLUSTER_CIDR } from '../../api/cluster-cidr.js';
import { ENDPOINTS, type ResourceInfo, resourceInfo, SERVICES } from '../../api/identities.js';

import { type ClusterRanges, validateEndpoints, validateService, validateServiceUpdate } from '../../api/validation/services.js';
const CRUD_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const SERVICE_INFO: ResourceInfo = resourceInfo(SERVICES, {
  listKind: 'ServiceList',
  singular: 'service',
  shortNames: ['svc'],
  verbs: CRUD_VERBS,
  subresources: ['status'],
  categories: ['all'],
});

export const ENDPOINTS_INFO: ResourceInfo = resourceInfo(ENDPOINTS, {
  listKind: 'EndpointsList',
  singular: 'endpoints',
  shortNames: ['ep'],
  verbs: CRUD_VERBS,
  subresources: [],
  categories: [],
});


// ---------- type predicates shared by allocation, the LB controller and the table ----------


/** Whether the Service gets a ClusterIP (every type but ExternalName, unless headless). */
export function wantsClusterIP(svc: Service): boolean {
  return serviceType(svc) !== 'ExternalName' && svc.spec?.clusterIP !== CLUSTER_IP_NONE;
}

/** Whether the Service's ports get NodePorts: NodePort, and LoadBalancer unless allocateLoadBalancerNodePorts is false. */
export function wantsNodePorts(svc: Service): boolean {
  const type = serviceType(svc);
  return type === 'NodePort' || (type === 'LoadBalancer' && svc.spec?.allocateLoadBalancerNodePorts !== false);
}

// ---------- defaults (SetDefaults_Service and the registry's type-dependent defaults) ----------

export function defaultService(svc: Service): void {
  const spec = (svc.spec ??= {});
  if (typeof spec !== 'object' || Array.isArray(spec)) return;
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  if (spec.sessionAffinity === 'ClientIP') {
    const clientIP = ((spec.sessionAffinityConfig ??= {}).clientIP ??= {});
    clientIP.timeoutSeconds ??= DEFAULT_CLIENT_IP_AFFINITY_SECONDS;
  }
  if (Array.isArray(spec.ports)) {
    for (const port of spec.ports) {
      if (!isRecord(port)) continue;
      port.protocol ??= 'TCP';
      // An unset (or zero / empty) targetPort means "the same as port".
      if (port.targetPort === undefined || port.targetPort === null || port.targetPort === 0 || port.targetPort === '') port.targetPort = port.port;
    }
  }
  const type = spec.type;
  if (type === 'ExternalName') {
    // ExternalName Services carry no IPs or families: they are a DNS CNAME only.
    return;
  }
  spec.internalTrafficPolicy ??= 'Cluster';
  if (type === 'NodePort' || type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
  if (type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
  // clusterIP and clusterIPs name the same address; whichever the client set fills the other.
  if (spec.clusterIP && !(Array.isArray(spec.clusterIPs) && spec.clusterIPs.length)) spec.clusterIPs = [spec.clusterIP];
  else if (!spec.clusterIP && Array.isArray(spec.clusterIPs) && typeof spec.clusterIPs[0] === 'string' && spec.clusterIPs[0]) spec.clusterIP = spec.clusterIPs[0];
  spec.ipFamilyPolicy ??= 'SingleStack';
  if (!(Array.isArray(spec.ipFamilies) && spec.ipFamilies.length)) spec.ipFamilies = ['IPv4'];
}


/**
 * What upstream's patchAllocatedValues does before an update: a client that leaves out the
 * allocated ClusterIP or NodePorts (`kubectl apply` of a manifest without them, a PUT of an edited
 * copy) keeps the ones it has, instead of changing them.
 */
export function keepAllocatedValues(svc: Service, old: Service): void {
  const spec = svc.spec;
  const oldSpec = old.spec;
  if (!isRecord(spec) || !oldSpec) return;
  if (wantsClusterIP(svc) && wantsClusterIP(old)) {
    if (!spec.clusterIP && oldSpec.clusterIP) spec.clusterIP = oldSpec.clusterIP;
    if (!(Array.isArray(spec.clusterIPs) && spec.clusterIPs.length) && oldSpec.clusterIPs?.length) spec.clusterIPs = [...oldSpec.clusterIPs];
  }
  if (wantsNodePorts(svc) && wantsNodePorts(old) && Array.isArray(spec.ports)) {
    const oldPorts = oldSpec.ports ?? [];
    for (const port of spec.ports as ServicePort[]) {
      if (!isRecord(port) || (port.nodePort !== undefined && port.nodePort !== 0)) continue;
      // Same port and protocol: the same service port, so the same node port.
      const match = oldPorts.find((p) => p.port === port.port && (p.protocol ?? 'TCP') === (port.protocol ?? 'TCP'));
      if (match?.nodePort) port.nodePort = match.nodePort;
    }
  }
  if (spec.type === 'LoadBalancer' && spec.externalTrafficPolicy === 'Local' && !spec.healthCheckNodePort && oldSpec.healthCheckNodePort) {
    spec.healthCheckNodePort = oldSpec.healthCheckNodePort;
  }
}

/**
 * What a type change leaves behind, dropped as upstream's dropTypeDependentFields does: NodePorts
 * when the new type has none, a ClusterIP when moving to ExternalName, LoadBalancer-only fields
 * when moving away from LoadBalancer — but only where the client did not change them itself.
 */
export function dropTypeDependentFields(svc: Service, old: Service): void {
  const spec = svc.spec;
  const oldSpec = old.spec;
  if (!isRecord(spec) || !oldSpec || serviceType(svc) === serviceType(old)) return;
  if (serviceType(svc) === 'ExternalName') {
    if (spec.clusterIP === oldSpec.clusterIP) delete spec.clusterIP;
    if (JSON.stringify(spec.clusterIPs) === JSON.stringify(oldSpec.clusterIPs)) delete spec.clusterIPs;
    if (JSON.stringify(spec.ipFamilies) === JSON.stringify(oldSpec.ipFamilies)) delete spec.ipFamilies;
    if (spec.ipFamilyPolicy === oldSpec.ipFamilyPolicy) delete spec.ipFamilyPolicy;
    if (spec.internalTrafficPolicy === oldSpec.internalTrafficPolicy) delete spec.internalTrafficPolicy;
  }
  if (!wantsNodePorts(svc) && Array.isArray(spec.ports)) {
    for (const port of spec.ports as ServicePort[]) {
      if (!isRecord(port) || !port.nodePort) continue;
      const before = oldSpec.ports?.find((p) => p.port === port.port && (p.protocol ?? 'TCP') === (port.protocol ?? 'TCP'));
      if (before?.nodePort === port.nodePort) delete port.nodePort;
    }
  }
  const external = (t: string) => t === 'NodePort' || t === 'LoadBalancer';
  if (!external(serviceType(svc)) && spec.externalTrafficPolicy === oldSpec.externalTrafficPolicy) delete spec.externalTrafficPolicy;
  if (serviceType(svc) !== 'LoadBalancer') {
    if (spec.allocateLoadBalancerNodePorts === oldSpec.allocateLoadBalancerNodePorts) delete spec.allocateLoadBalancerNodePorts;
    if (spec.loadBalancerClass === oldSpec.loadBalancerClass) delete spec.loadBalancerClass;
    if (spec.healthCheckNodePort === oldSpec.healthCheckNodePort) delete spec.healthCheckNodePort;
  }
}

function defaultEndpoints(ep: Endpoints): void {
  if (!Array.isArray(ep.subsets)) return;
  for (const subset of ep.subsets) {
    if (!isRecord(subset) || !Array.isArray(subset.ports)) continue;
    for (const port of subset.ports) if (isRecord(port)) port.protocol ??= 'TCP';
  }
}

// ---------- protobuf (generated from Kubernetes' core/v1 generated.proto) ----------

/** What `kubectl create service` sends: client-go's typed clients speak protobuf. */
const SERVICE_PROTOBUF = protobufMessagesOf('v1', 'Service');

const ENDPOINTS_PROTOBUF = protobufMessagesOf('v1', 'Endpoints');

// ---------- tables (kubectl's service and endpoints printers) ----------

const NONE = '<none>';

function portsCell(svc: Service): string {
  const ports = svc.spec?.ports ?? [];
  if (!ports.length) return NONE;
  return ports.map((p) => (p.nodePort ? `${p.port}:${p.nodePort}/${p.protocol ?? 'TCP'}` : `${p.port}/${p.protocol ?? 'TCP'}`)).join(',');
}

/** kubectl's loadBalancerStatusStringer: ingress IPs or hostnames, shortened unless wide. */
function loadBalancerCell(svc: Service, wide: boolean): string {
  const text = (svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip || i.hostname || '').filter(Boolean).join(',');
  return !wide && text.length > 16 ? `${text.slice(0, 13)}...` : text;
}

/** kubectl's getServiceExternalIP. */
export function externalIPCell(svc: Service, wide = false): string {
  const externalIPs = svc.spec?.externalIPs ?? [];
  switch (serviceType(svc)) {
    case 'ClusterIP':
    case 'NodePort':
      return externalIPs.length ? externalIPs.join(',') : NONE;
    case 'LoadBalancer': {
      const lb = loadBalancerCell(svc, wide);
      const all = [...externalIPs, ...(lb ? [lb] : [])];
      return all.length ? all.join(',') : '<pending>';
    }
    case 'ExternalName':
      return svc.spec?.externalName ?? NONE;
    default:
      return '<unknown>';
  }
}

function selectorCell(selector: Record<string, string> | undefined): string {
  const entries = Object.entries(selector ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(',') : NONE;
}

const SERVICE_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Type', 'The type of the Service: ClusterIP, NodePort, LoadBalancer or ExternalName.'),
    column('Cluster-IP', 'The IP address the Service is reached at inside the cluster.'),
    column('External-IP', 'Addresses the Service is reached at from outside the cluster.'),
    column('Port(s)', 'The ports the Service exposes.'),
    AGE_COLUMN,
    column('Selector', 'The labels of the pods the Service routes to.', 1),
  ],
  cells: (obj, { now }) => {
    const svc = obj as Service;
    const clusterIP = svc.spec?.clusterIPs?.length ? svc.spec.clusterIPs.join(',') : svc.spec?.clusterIP || NONE;
    return [obj.metadata.name ?? '', serviceType(svc), clusterIP, externalIPCell(svc), portsCell(svc), ageSince(obj.metadata.creationTimestamp, now), selectorCell(svc.spec?.selector)];
  },
};

/** kubectl's formatEndpoints: up to three ip:port pairs, then "+ N more...". */
export function endpointsCell(ep: Endpoints): string {
  const subsets = ep.subsets ?? [];
  if (!subsets.length) return NONE;
  const max = 3;
  const list: string[] = [];
  let count = 0;
  let more = false;
  for (const subset of subsets) {
    const addresses = subset.addresses ?? [];
    const ports = subset.ports ?? [];
    if (!ports.length) {
      count += addresses.length;
      for (const a of addresses) {
        if (list.length === max) { more = true; break; }
        list.push(a.ip);
      }
      continue;
    }
    for (const port of ports) {
      count += addresses.length;
      for (const a of addresses) {
        if (list.length === max) { more = true; break; }
        list.push(a.ip.includes(':') ? `[${a.ip}]:${port.port}` : `${a.ip}:${port.port}`);
      }
    }
  }
  const text = list.join(',');
  if (more) return `${text} + ${count - max} more...`;
  return text || NONE;
}

const ENDPOINTS_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, column('Endpoints', 'The addresses and ports of the ready endpoints.'), AGE_COLUMN],
  cells: (obj, { now }) => [obj.metadata.name ?? '', endpointsCell(obj as Endpoints), ageSince(obj.metadata.creationTimestamp, now)],
};

// ---------- strategies ----------

export interface ServiceStrategyOptions {
  /** where ClusterIPs and NodePorts come from (--service-cluster-ip-range, --service-node-port-range) */
  allocation?: ServiceAllocationConfig;
  /** the pod range externalIPs may not fall in (--cluster-cidr; default 10.244.0.0/16) */
  clusterCidr?: string;
}

export function serviceStrategy(opts: ServiceStrategyOptions = {}): KindStrategy<Service> {
  const allocation = opts.allocation ?? DEFAULT_SERVICE_ALLOCATION;
  const ranges: ClusterRanges = { serviceClusterIPRange: allocation.serviceClusterIPRange, clusterCidr: opts.clusterCidr ?? DEFAULT_CLUSTER_CIDR };
  return {
    info: SERVICE_INFO,
    table: SERVICE_COLUMNS,
    protobuf: SERVICE_PROTOBUF,
    hasStatus: true,
    applyDefaults: defaultService,
    prepareForUpdate: (svc, old) => {
      dropTypeDependentFields(svc, old);
      keepAllocatedValues(svc, old);
    },
    storeHooks: serviceAllocationHooks(allocation),
    // A create cannot set a load balancer's status: the LoadBalancer controller does.
    initialStatus: () => ({ loadBalancer: {} }),
    validate: (svc) => validateService(svc, ranges),
    validateUpdate: (svc, old) => validateServiceUpdate(svc, old, ranges),
  };
}

export const endpointsStrategy: KindStrategy<Endpoints> = {
  info: ENDPOINTS_INFO,
  table: ENDPOINTS_COLUMNS,
  protobuf: ENDPOINTS_PROTOBUF,
  hasStatus: false,
  applyDefaults: defaultEndpoints,
  validate: validateEndpoints,
  validateUpdate: (ep, old) => [...validateObjectMetaUpdate(ep.metadata, old.metadata), ...validateEndpoints(ep)],
};

export function serviceStrategies(opts: ServiceStrategyOptions = {}): KindStrategy<KubeObject>[] {
  return [serviceStrategy(opts), endpointsStrategy];
}

/** The Service kinds allocating from the default ranges. */
export const SERVICE_STRATEGIES: KindStrategy<KubeObject>[] = serviceStrategies();
