/**
 * The shapes of core/v1 Service and Endpoints and discovery.k8s.io/v1 EndpointSlice, with the
 * constants Kubernetes fixes for them (labels, ranges, defaults). Pure types shared by the control
 * plane (the kinds' strategies, the allocators, the EndpointSlice controller) and the agent (the
 * service proxy, cluster DNS, service environment variables).
 */
import { formatIpv4, parseCidr } from './cidr.js';
import type { Service } from './types.js';

export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
export type ServiceProtocol = 'TCP' | 'UDP' | 'SCTP';
export type TrafficPolicy = 'Cluster' | 'Local';
export type SessionAffinity = 'None' | 'ClientIP';

// ---------- constants Kubernetes fixes ----------

/** Label on an EndpointSlice naming its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Label on an EndpointSlice naming the controller that manages it. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/** The value of MANAGED_BY_LABEL on slices the EndpointSlice controller keeps. */
export const ENDPOINTSLICE_CONTROLLER_NAME = 'endpointslice-controller.k8s.io';
/** Label on a Service (or its slices) that keeps the service proxy away from it. */
export const SERVICE_PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
/** Label on a Service marking it headless, copied to its EndpointSlices. */
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';
/** At most this many endpoints per EndpointSlice (the controller's default --max-endpoints-per-slice). */
export const MAX_ENDPOINTS_PER_SLICE = 100;
/** Endpoints objects keep at most this many addresses, marked truncated beyond it. */
export const MAX_ENDPOINTS_PER_ENDPOINTS_OBJECT = 1000;

/** kube-apiserver's default --service-cluster-ip-range. */
export const DEFAULT_SERVICE_CLUSTER_IP_RANGE = '10.96.0.0/12';
/** kube-apiserver's default --service-node-port-range. */
export const DEFAULT_SERVICE_NODE_PORT_RANGE = '30000-32767';
/** The default --cluster-domain. */
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';
/** ClientIP session affinity's default timeout (3 hours). */
export const DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10800;
/** The headless marker in spec.clusterIP. */
export const CLUSTER_IP_NONE = 'None';

/** The addresses a service CIDR hands out: all but its network and broadcast addresses. */
export function serviceIPRange(cidrText: string): { first: number; size: number; cidr: string } {
  const cidr = parseCidr(cidrText);
  if (cidr.prefix > 30) throw new Error(`service cluster IP range ${cidrText} is too small: it needs at least 2 usable addresses`);
  return { first: cidr.base + 1, size: 2 ** (32 - cidr.prefix) - 2, cidr: `${formatIpv4(cidr.base)}/${cidr.prefix}` };
}

/** The Nth usable address of the range (index 0 is the `kubernetes` Service's). */
export function serviceIPAt(cidrText: string, indexInRange: number): string {
  const range = serviceIPRange(cidrText);
  if (indexInRange < 0 || indexInRange >= range.size) throw new Error(`index ${indexInRange} is outside ${cidrText}`);
  return formatIpv4(range.first + indexInRange);
}

/** A Service's type, ClusterIP when unset. */
export function serviceType(svc: Service): string {
  return svc.spec?.type ?? 'ClusterIP';
}
