/**
 * core/v1 Service and Endpoints validation: ports, cluster IPs (within the cluster's ranges),
 * type-dependent fields, session affinity, load-balancer status.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { BlockList, isIP } from 'node:net';
import type { FieldError } from '../errors.js';
import type { Endpoints, Service } from '../types.js';
import { CLUSTER_IP_NONE, serviceType } from '../services.js';
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
} from '../validation.js';
import { cidrContains, parseCidr } from '../cidr.js';

export const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'] as const;
export const SERVICE_PROTOCOLS = ['SCTP', 'TCP', 'UDP'] as const;
const SESSION_AFFINITIES = ['ClientIP', 'None'] as const;
const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const;
const IP_FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'] as const;
/** The most a ClientIP affinity may last (a day), as upstream's MaxClientIPServiceAffinitySeconds. */
export const MAX_CLIENT_IP_AFFINITY_SECONDS = 86400;

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

