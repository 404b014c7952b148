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
 */
import { BlockList, isIP } from 'node:net';
import type { FieldError } from '../../api/errors.js';
import type { Endpoints, KubeObject, Service, ServicePort } from '../../api/types.js';
import { CLUSTER_IP_NONE, DEFAULT_CLIENT_IP_AFFINITY_SECONDS } from '../../api/services.js';
import {
  child,
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  expectArray,
  expectObject,
  fieldErrors,
  index,
  invalidEach,
  isRecord,
  portNameErrors,
  portNumberErrors,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../../api/validation.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { DEFAULT_SERVICE_ALLOCATION, serviceAllocationHooks, type ServiceAllocationConfig } from '../service-allocation.js';
import { cidrContains, parseCidr } from '../../api/cidr.js';
import { DEFAULT_CLUSTER_CIDR } from '../../api/cluster-cidr.js';
import { ENDPOINTS, type ResourceInfo, resourceInfo, SERVICES } from '../../api/identities.js';

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

export const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'] as const;
export const SERVICE_PROTOCOLS = ['SCTP', 'TCP', 'UDP'] as const;
const SESSION_AFFINITIES = ['ClientIP', 'None'] as const;
const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const;
const IP_FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'] as const;
/** The most a ClientIP affinity may last (a day), as upstream's MaxClientIPServiceAffinitySeconds. */
export const MAX_CLIENT_IP_AFFINITY_SECONDS = 86400;

// ---------- type predicates shared by allocation, the LB controller and the table ----------

export function serviceType(svc: Service): string {
  return svc.spec?.type ?? 'ClusterIP';
}

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

// ---------- validation ----------

const isSet = (v: unknown) => v !== undefined && v !== null;

function validateTargetPort(path: string, v: unknown): FieldError[] {
  if (typeof v === 'number') return invalidEach(path, v, portNumberErrors(v));
  if (typeof v === 'string') return invalidEach(path, v, portNameErrors(v));
  return [fieldErrors.typeInvalid(path, v, 'must be an integer or a port name')];
}

function validateServicePort(port: unknown, requireName: boolean, names: Set<string>, path: string): FieldError[] {
  if (!isRecord(port)) return [fieldErrors.typeInvalid(path, port, 'must be an object')];
  const errs: FieldError[] = [];
  const name = port.name;
  if (typeof name === 'string' && name !== '') {
    errs.push(...invalidEach(child(path, 'name'), name, dns1123LabelErrors(name)));
    if (names.has(name)) errs.push(fieldErrors.duplicate(child(path, 'name'), name));
    names.add(name);
  } else if (requireName) {
    errs.push(fieldErrors.required(child(path, 'name')));
  }
  if (typeof port.port !== 'number') errs.push(fieldErrors.required(child(path, 'port')));
  else errs.push(...invalidEach(child(path, 'port'), port.port, portNumberErrors(port.port)));
  if (!port.protocol) errs.push(fieldErrors.required(child(path, 'protocol')));
  else if (!(SERVICE_PROTOCOLS as readonly unknown[]).includes(port.protocol)) errs.push(fieldErrors.notSupported(child(path, 'protocol'), port.protocol, SERVICE_PROTOCOLS));
  if (isSet(port.targetPort)) errs.push(...validateTargetPort(child(path, 'targetPort'), port.targetPort));
  if (isSet(port.nodePort)) {
    if (typeof port.nodePort !== 'number' || !Number.isInteger(port.nodePort)) errs.push(fieldErrors.typeInvalid(child(path, 'nodePort'), port.nodePort, 'must be an integer'));
    else if (port.nodePort !== 0) errs.push(...invalidEach(child(path, 'nodePort'), port.nodePort, portNumberErrors(port.nodePort)));
  }
  return errs;
}

function validateClusterIPs(spec: Record<string, unknown>, type: string): FieldError[] {
  const errs: FieldError[] = [];
  const ipsPath = 'spec.clusterIPs';
  const clusterIP = spec.clusterIP;
  const clusterIPs = Array.isArray(spec.clusterIPs) ? (spec.clusterIPs as unknown[]) : [];
  if (type === 'ExternalName') {
    if (isSet(clusterIP) && clusterIP !== '') errs.push(fieldErrors.forbidden('spec.clusterIP', 'may not be set for ExternalName services'));
    if (clusterIPs.length) errs.push(fieldErrors.forbidden(ipsPath, 'may not be set for ExternalName services'));
    return errs;
  }
  if (isSet(clusterIP) && typeof clusterIP !== 'string') return [fieldErrors.typeInvalid('spec.clusterIP', clusterIP, 'must be a string')];
  if (clusterIP && clusterIPs.length && clusterIPs[0] !== clusterIP) errs.push(fieldErrors.invalid(ipsPath, clusterIPs, 'first value must match `clusterIP`'));
  if (clusterIPs.length > 1) errs.push(fieldErrors.invalid(ipsPath, clusterIPs, 'may only hold one IPv4 address: this cluster is single-stack'));
  clusterIPs.forEach((ip, i) => {
    const path = index(ipsPath, i);
    if (ip === CLUSTER_IP_NONE) {
      if (clusterIPs.length > 1) errs.push(fieldErrors.invalid(path, ip, "'None' must be the first and only value"));
      return;
    }
    if (typeof ip !== 'string' || isIP(ip) === 0) errs.push(fieldErrors.invalid(path, ip, "must be empty, 'None', or a valid IP address"));
    else if (isIP(ip) !== 4) errs.push(fieldErrors.invalid(path, ip, 'expected an IPv4 value as indicated by `ipFamilies[0]`'));
  });
  if ((type === 'NodePort' || type === 'LoadBalancer') && clusterIP === CLUSTER_IP_NONE) {
    errs.push(fieldErrors.invalid('spec.clusterIP', clusterIP, `may not be set to 'None' for ${type} services`));
  }
  return errs;
}

function validateServiceSpec(svc: Service, ranges?: ClusterRanges): FieldError[] {
  const spec = svc.spec as unknown;
  if (!isRecord(spec)) return [fieldErrors.required('spec')];
  const errs: FieldError[] = [];
  for (const f of ['ports', 'clusterIPs', 'externalIPs', 'ipFamilies', 'loadBalancerSourceRanges']) errs.push(...expectArray(child('spec', f), spec[f]));
  errs.push(...expectObject('spec.sessionAffinityConfig', spec.sessionAffinityConfig));
  if (errs.length) return errs;
  const type = typeof spec.type === 'string' ? spec.type : '';
  if (!type) errs.push(fieldErrors.required('spec.type'));
  else if (!(SERVICE_TYPES as readonly string[]).includes(type)) errs.push(fieldErrors.notSupported('spec.type', type, SERVICE_TYPES));
  const ports = (spec.ports as unknown[] | undefined) ?? [];
  const headless = spec.clusterIP === CLUSTER_IP_NONE;
  if (ports.length === 0 && !headless && type !== 'ExternalName') errs.push(fieldErrors.required('spec.ports'));
  const names = new Set<string>();
  ports.forEach((p, i) => errs.push(...validateServicePort(p, ports.length > 1, names, index('spec.ports', i))));

  // (port, protocol) and (nodePort, protocol) pairs are unique within a Service.
  const seenPorts = new Set<string>();
  const seenNodePorts = new Set<string>();
  ports.forEach((p, i) => {
    if (!isRecord(p)) return;
    const path = index('spec.ports', i);
    const portKey = `${String(p.protocol)}/${String(p.port)}`;
    if (seenPorts.has(portKey)) errs.push(fieldErrors.duplicate(path, { port: p.port, protocol: p.protocol }));
    seenPorts.add(portKey);
    if (typeof p.nodePort === 'number' && p.nodePort !== 0) {
      const nodeKey = `${String(p.protocol)}/${p.nodePort}`;
      if (seenNodePorts.has(nodeKey)) errs.push(fieldErrors.duplicate(child(path, 'nodePort'), p.nodePort));
      seenNodePorts.add(nodeKey);
      if (type === 'ClusterIP') errs.push(fieldErrors.forbidden(child(path, 'nodePort'), "may not be used when `type` is 'ClusterIP'"));
      if (type === 'ExternalName') errs.push(fieldErrors.forbidden(child(path, 'nodePort'), "may not be used when `type` is 'ExternalName'"));
    }
  });

  errs.push(...validateClusterIPs(spec, type));

  if (type === 'ExternalName') {
    const externalName = typeof spec.externalName === 'string' ? spec.externalName.replace(/\.$/, '') : '';
    if (!externalName) errs.push(fieldErrors.required('spec.externalName'));
    else errs.push(...invalidEach('spec.externalName', spec.externalName, dns1123SubdomainErrors(externalName)));
  }

  if (isSet(spec.selector)) errs.push(...validateLabels(spec.selector, 'spec.selector'));

  const affinity = spec.sessionAffinity;
  if (!affinity) errs.push(fieldErrors.required('spec.sessionAffinity'));
  else if (!(SESSION_AFFINITIES as readonly unknown[]).includes(affinity)) errs.push(fieldErrors.notSupported('spec.sessionAffinity', affinity, SESSION_AFFINITIES));
  else if (affinity === 'ClientIP') errs.push(...validateClientIPAffinity(spec.sessionAffinityConfig));
  else if (isSet(spec.sessionAffinityConfig)) errs.push(fieldErrors.forbidden('spec.sessionAffinityConfig', 'must not be set when session affinity is None'));

  ((spec.externalIPs as unknown[] | undefined) ?? []).forEach((ip, i) => {
    const path = index('spec.externalIPs', i);
    if (typeof ip !== 'string' || isIP(ip) === 0) errs.push(fieldErrors.invalid(path, ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    else errs.push(...specialIPErrors(path, ip), ...(ranges?.kept?.has(ip) ? [] : clusterRangeErrors(path, ip, ranges)));
  });

  if (isSet(spec.internalTrafficPolicy) || type !== 'ExternalName') {
    const itp = spec.internalTrafficPolicy;
    if (type === 'ExternalName') errs.push(fieldErrors.forbidden('spec.internalTrafficPolicy', 'may not be set for ExternalName services'));
    else if (!isSet(itp)) errs.push(fieldErrors.required('spec.internalTrafficPolicy'));
    else if (!(TRAFFIC_POLICIES as readonly unknown[]).includes(itp)) errs.push(fieldErrors.notSupported('spec.internalTrafficPolicy', itp, TRAFFIC_POLICIES));
  }
  const external = type === 'NodePort' || type === 'LoadBalancer';
  const etp = spec.externalTrafficPolicy;
  if (external) {
    if (!isSet(etp) || etp === '') errs.push(fieldErrors.required('spec.externalTrafficPolicy'));
    else if (!(TRAFFIC_POLICIES as readonly unknown[]).includes(etp)) errs.push(fieldErrors.notSupported('spec.externalTrafficPolicy', etp, TRAFFIC_POLICIES));
  } else if (isSet(etp) && etp !== '' && !((spec.externalIPs as unknown[] | undefined)?.length)) {
    errs.push(fieldErrors.invalid('spec.externalTrafficPolicy', etp, 'may only be set when `type` is \'NodePort\' or \'LoadBalancer\''));
  }
  if (isSet(spec.healthCheckNodePort) && spec.healthCheckNodePort !== 0 && !(type === 'LoadBalancer' && etp === 'Local')) {
    errs.push(fieldErrors.invalid('spec.healthCheckNodePort', spec.healthCheckNodePort, 'may only be set when `type` is \'LoadBalancer\' and `externalTrafficPolicy` is \'Local\''));
  }

  if (type === 'LoadBalancer') {
    if (!isSet(spec.allocateLoadBalancerNodePorts)) errs.push(fieldErrors.required('spec.allocateLoadBalancerNodePorts'));
  } else if (isSet(spec.allocateLoadBalancerNodePorts)) {
    errs.push(fieldErrors.forbidden('spec.allocateLoadBalancerNodePorts', "may only be used when `type` is 'LoadBalancer'"));
  }
  if (type !== 'LoadBalancer') {
    if (isSet(spec.loadBalancerClass)) errs.push(fieldErrors.forbidden('spec.loadBalancerClass', "may only be used when `type` is 'LoadBalancer'"));
    if (((spec.loadBalancerSourceRanges as unknown[] | undefined) ?? []).length) errs.push(fieldErrors.forbidden('spec.loadBalancerSourceRanges', "may only be used when `type` is 'LoadBalancer'"));
  }

  if (type !== 'ExternalName') {
    const policy = spec.ipFamilyPolicy;
    if (isSet(policy) && !(IP_FAMILY_POLICIES as readonly unknown[]).includes(policy)) errs.push(fieldErrors.notSupported('spec.ipFamilyPolicy', policy, IP_FAMILY_POLICIES));
    else if (policy === 'RequireDualStack') errs.push(fieldErrors.invalid('spec.ipFamilyPolicy', policy, 'this cluster is not configured for dual-stack services'));
    ((spec.ipFamilies as unknown[] | undefined) ?? []).forEach((family, i) => {
      if (family !== 'IPv4' && family !== 'IPv6') errs.push(fieldErrors.notSupported(index('spec.ipFamilies', i), family, ['IPv4', 'IPv6']));
      else if (family !== 'IPv4') errs.push(fieldErrors.invalid(index('spec.ipFamilies', i), family, 'not configured on this cluster'));
    });
  }
  return errs;
}

function validateClientIPAffinity(config: unknown): FieldError[] {
  const path = 'spec.sessionAffinityConfig';
  if (!isRecord(config)) return [fieldErrors.required(path, 'when session affinity type is ClientIP')];
  if (!isRecord(config.clientIP)) return [fieldErrors.required(child(path, 'clientIP'), 'when session affinity type is ClientIP')];
  const timeout = config.clientIP.timeoutSeconds;
  const timeoutPath = child(child(path, 'clientIP'), 'timeoutSeconds');
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_CLIENT_IP_AFFINITY_SECONDS) {
    return [fieldErrors.invalid(timeoutPath, timeout, `must be greater than 0 and less than ${MAX_CLIENT_IP_AFFINITY_SECONDS}`)];
  }
  return [];
}

function validateLoadBalancerStatus(status: unknown): FieldError[] {
  if (!isRecord(status) || !isRecord(status.loadBalancer)) return [];
  const ingress = status.loadBalancer.ingress;
  if (!Array.isArray(ingress)) return expectArray('status.loadBalancer.ingress', ingress);
  const errs: FieldError[] = [];
  ingress.forEach((entry, i) => {
    const path = index('status.loadBalancer.ingress', i);
    if (!isRecord(entry)) return;
    if (typeof entry.ip === 'string' && entry.ip && isIP(entry.ip) === 0) errs.push(fieldErrors.invalid(child(path, 'ip'), entry.ip, 'must be a valid IP address'));
    if (typeof entry.hostname === 'string' && entry.hostname) {
      errs.push(...invalidEach(child(path, 'hostname'), entry.hostname, dns1123SubdomainErrors(entry.hostname)));
      if (isIP(entry.hostname) !== 0) errs.push(fieldErrors.invalid(child(path, 'hostname'), entry.hostname, 'must be a DNS name, not an IP address'));
    }
    if (isSet(entry.ipMode)) {
      if (!entry.ip) errs.push(fieldErrors.forbidden(child(path, 'ipMode'), 'may not be specified when `ip` is not set'));
      else if (entry.ipMode !== 'VIP' && entry.ipMode !== 'Proxy') errs.push(fieldErrors.notSupported(child(path, 'ipMode'), entry.ipMode, ['Proxy', 'VIP']));
    } else if (entry.ip) {
      errs.push(fieldErrors.required(child(path, 'ipMode'), 'must be specified when `ip` is set'));
    }
  });
  return errs;
}

/**
 * The cluster's own address ranges, which no externalIP may claim: the node proxy answers for an
 * externalIP on every node, so one inside the service range (the cluster DNS address included) or the
 * pod range would take that traffic over (the CVE-2020-8554 class). This check is Berth's own;
 * kube-apiserver leaves it to the DenyServiceExternalIPs plugin or a policy engine.
 */
export interface ClusterRanges {
  /** --service-cluster-ip-range */
  serviceClusterIPRange: string;
  /** --cluster-cidr: every node's pod range is cut from it */
  clusterCidr: string;
  /**
   * externalIPs the stored Service already has (on update): kept as they are, so a Service stored
   * before this check (or before a range changed) can still be written, as long as it adds none.
   */
  kept?: ReadonlySet<string>;
}

/** upstream's ValidateNonSpecialIP: the ranges no externalIP may be in, each with its message */
const SPECIAL_RANGES: Array<{ ranges: BlockList; message: string }> = [
  { subnets: [['0.0.0.0', 32, 'ipv4'], ['::', 128, 'ipv6']], message: 'may not be unspecified (0.0.0.0)' },
  { subnets: [['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']], message: 'may not be in the loopback range (127.0.0.0/8, ::1/128)' },
  { subnets: [['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']], message: 'may not be in the link-local range (169.254.0.0/16, fe80::/10)' },
  { subnets: [['224.0.0.0', 24, 'ipv4'], ['ff02::', 10, 'ipv6']], message: 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)' },
].map(({ subnets, message }) => {
  const ranges = new BlockList();
  for (const [address, prefix, family] of subnets as Array<[string, number, 'ipv4' | 'ipv6']>) ranges.addSubnet(address, prefix, family);
  return { ranges, message };
});

function specialIPErrors(path: string, ip: string): FieldError[] {
  const family = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
  const hit = SPECIAL_RANGES.find((r) => r.ranges.check(ip, family));
  if (!hit) return [];
  // Upstream words the unspecified address by family.
  const message = hit === SPECIAL_RANGES[0] && family === 'ipv6' ? 'may not be unspecified (::)' : hit.message;
  return [fieldErrors.invalid(path, ip, message)];
}

function clusterRangeErrors(path: string, ip: string, ranges: ClusterRanges | undefined): FieldError[] {
  if (!ranges || isIP(ip) !== 4) return [];
  if (cidrContains(parseCidr(ranges.serviceClusterIPRange), ip)) return [fieldErrors.invalid(path, ip, `may not be in the service range (${ranges.serviceClusterIPRange}), where the cluster's ClusterIPs and DNS address are`)];
  if (cidrContains(parseCidr(ranges.clusterCidr), ip)) return [fieldErrors.invalid(path, ip, `may not be in the pod range (${ranges.clusterCidr})`)];
  return [];
}

export function validateService(svc: Service, ranges?: ClusterRanges): FieldError[] {
  return [...validateObjectMeta(svc.metadata, { namespaced: true, nameRule: 'dns1035' }), ...validateServiceSpec(svc, ranges)];
}

/**
 * ValidateServiceUpdate: the ClusterIP may not change once set (a change to or from ExternalName
 * excepted), on top of everything a new Service must satisfy.
 */
export function validateServiceUpdate(svc: Service, old: Service, ranges?: ClusterRanges): FieldError[] {
  const kept = ranges ? { ...ranges, kept: new Set(old.spec?.externalIPs ?? []) } : undefined;
  const errs = [...validateObjectMetaUpdate(svc.metadata, old.metadata), ...validateService(svc, kept), ...validateLoadBalancerStatus(svc.status)];
  const oldIP = old.spec?.clusterIP ?? '';
  if (serviceType(svc) !== 'ExternalName' && serviceType(old) !== 'ExternalName' && oldIP !== '') {
    const ips = svc.spec?.clusterIPs ?? [];
    const oldIPs = old.spec?.clusterIPs ?? [];
    if (ips.length && oldIPs.length && ips[0] !== oldIPs[0]) errs.push(fieldErrors.invalid('spec.clusterIPs[0]', ips, 'may not change once set'));
    if ((svc.spec?.clusterIP ?? '') !== oldIP) errs.push(fieldErrors.invalid('spec.clusterIP', svc.spec?.clusterIP ?? '', 'field is immutable'));
  }
  return errs;
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

// ---------- Endpoints validation (ValidateEndpoints) ----------

function validateEndpointAddress(address: unknown, path: string): FieldError[] {
  if (!isRecord(address)) return [fieldErrors.typeInvalid(path, address, 'must be an object')];
  const errs: FieldError[] = [];
  if (typeof address.ip !== 'string' || isIP(address.ip) === 0) errs.push(fieldErrors.invalid(child(path, 'ip'), address.ip ?? '', 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
  if (typeof address.hostname === 'string' && address.hostname) errs.push(...invalidEach(child(path, 'hostname'), address.hostname, dns1123LabelErrors(address.hostname)));
  if (typeof address.nodeName === 'string' && address.nodeName) errs.push(...invalidEach(child(path, 'nodeName'), address.nodeName, dns1123SubdomainErrors(address.nodeName)));
  return errs;
}

export function validateEndpoints(ep: Endpoints): FieldError[] {
  const errs = validateObjectMeta(ep.metadata, { namespaced: true, nameRule: 'subdomain' });
  const subsets = (ep as { subsets?: unknown }).subsets;
  errs.push(...expectArray('subsets', subsets));
  if (!Array.isArray(subsets)) return errs;
  subsets.forEach((subset: unknown, i) => {
    const path = index('subsets', i);
    if (!isRecord(subset)) return errs.push(fieldErrors.typeInvalid(path, subset, 'must be an object'));
    const addresses = Array.isArray(subset.addresses) ? subset.addresses : [];
    const notReady = Array.isArray(subset.notReadyAddresses) ? subset.notReadyAddresses : [];
    if (addresses.length === 0 && notReady.length === 0) errs.push(fieldErrors.required(path, 'must specify `addresses` or `notReadyAddresses`'));
    addresses.forEach((a, j) => errs.push(...validateEndpointAddress(a, index(child(path, 'addresses'), j))));
    notReady.forEach((a, j) => errs.push(...validateEndpointAddress(a, index(child(path, 'notReadyAddresses'), j))));
    const ports = Array.isArray(subset.ports) ? subset.ports : [];
    const names = new Set<string>();
    ports.forEach((port: unknown, j) => {
      const portPath = index(child(path, 'ports'), j);
      if (!isRecord(port)) return errs.push(fieldErrors.typeInvalid(portPath, port, 'must be an object'));
      if (typeof port.name === 'string' && port.name) {
        errs.push(...invalidEach(child(portPath, 'name'), port.name, dns1123LabelErrors(port.name)));
        if (names.has(port.name)) errs.push(fieldErrors.duplicate(child(portPath, 'name'), port.name));
        names.add(port.name);
      } else if (ports.length > 1) {
        errs.push(fieldErrors.required(child(portPath, 'name')));
      }
      if (typeof port.port !== 'number') errs.push(fieldErrors.required(child(portPath, 'port')));
      else errs.push(...invalidEach(child(portPath, 'port'), port.port, portNumberErrors(port.port)));
      if (!port.protocol) errs.push(fieldErrors.required(child(portPath, 'protocol')));
      else if (!(SERVICE_PROTOCOLS as readonly unknown[]).includes(port.protocol)) errs.push(fieldErrors.notSupported(child(portPath, 'protocol'), port.protocol, SERVICE_PROTOCOLS));
      return undefined;
    });
    return undefined;
  });
  return errs;
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
