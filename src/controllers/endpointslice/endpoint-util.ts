/**
 * Pure helpers shared by the EndpointSlice controller and the Endpoints controller: which pods
 * belong in a Service's endpoints, the ports a Service resolves to on one pod (a named targetPort
 * looks up the pod's container port by name), the endpoint a pod becomes with its conditions, and
 * the identity and equality rules the reconciler uses to keep slices stable. Mirrors upstream's
 * k8s.io/endpointslice/util and pkg/api/v1/pod FindPort; no I/O.
 */
import type { DiscoveryEndpointPort, Endpoint, Node, Pod, Service, ServicePort } from '../../api/types.js';
import { CLUSTER_IP_NONE, type ServiceProtocol } from '../../api/services.js';
import { isPodReady } from '../runtime/pod-util.js';

/** The node label upstream copies into an endpoint's zone. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** A Service the controllers keep endpoints for: it has a selector and is not ExternalName. */
export function selectsPods(service: Service): boolean {
  return service.spec?.type !== 'ExternalName' && service.spec?.selector !== undefined && service.spec?.selector !== null;
}

/** clusterIP None. */
export function isHeadless(service: Service): boolean {
  return service.spec?.clusterIP === CLUSTER_IP_NONE;
}

/** Every label of the selector is on the pod (a Service selector is a plain map; empty selects all). */
export function serviceSelectsPod(service: Service, pod: Pod): boolean {
  if (pod.metadata.namespace !== service.metadata.namespace) return false;
  const labels = pod.metadata.labels ?? {};
  return Object.entries(service.spec?.selector ?? {}).every(([k, v]) => labels[k] === v);
}

/** The pod's IPv4 address, if it has one. */
export function podIPv4(pod: Pod): string | undefined {
  const ips = [pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((p) => p.ip)].filter((ip): ip is string => !!ip);
  return ips.find((ip) => !ip.includes(':'));
}

/** Succeeded or Failed: its containers will not run again. */
function isPodTerminal(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Failed' || phase === 'Succeeded';
}

/**
 * Whether the pod belongs in endpoints at all: it has an IP and has not finished; a pod being
 * deleted stays only when `includeTerminating` (the EndpointSlice controller always; the Endpoints
 * controller only for publishNotReadyAddresses).
 */
export function shouldPodBeInEndpoints(pod: Pod, includeTerminating: boolean): boolean {
  if (!pod.status?.podIP && !(pod.status?.podIPs ?? []).length) return false;
  if (!includeTerminating && pod.metadata.deletionTimestamp) return false;
  return !isPodTerminal(pod);
}

/** A pod's hostname is published when it has one and its subdomain names the Service. */
export function shouldSetHostname(pod: Pod, service: Service): boolean {
  return !!pod.spec.hostname && pod.spec.subdomain === service.metadata.name && pod.metadata.namespace === service.metadata.namespace;
}

/**
 * The pod's port for a Service port: a numeric targetPort as given (the port itself when unset); a
 * named one is the container port of that name and protocol, or undefined when the pod has none.
 */
export function findPort(pod: Pod, servicePort: ServicePort): number | undefined {
  const target = servicePort.targetPort ?? servicePort.port;
  if (typeof target === 'number') return target;
  if (/^\d+$/.test(target)) return Number(target);
  const protocol = servicePort.protocol ?? 'TCP';
  for (const c of pod.spec.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === target && (p.protocol ?? 'TCP') === protocol) return p.containerPort;
  }
  return undefined;
}

/** The Service's ports as they resolve on this pod; a named targetPort the pod lacks is left out. */
export function endpointPorts(service: Service, pod: Pod): DiscoveryEndpointPort[] {
  const out: DiscoveryEndpointPort[] = [];
  for (const sp of service.spec?.ports ?? []) {
    const port = findPort(pod, sp);
    if (port === undefined) continue;
    out.push({ name: sp.name ?? '', port, protocol: sp.protocol ?? 'TCP', ...(sp.appProtocol ? { appProtocol: sp.appProtocol } : {}) });
  }
  return out;
}

/** One key per distinct port set, whatever the order: slices group endpoints by it. */
export function portMapKey(ports: DiscoveryEndpointPort[] | undefined): string {
  return JSON.stringify((ports ?? []).map((p) => [p.name ?? '', p.protocol ?? 'TCP', p.port ?? 0, p.appProtocol ?? '']).sort());
}

/**
 * The endpoint a pod becomes: ready = Ready and not terminating (or every endpoint with
 * publishNotReadyAddresses), serving = Ready whatever the deletion, terminating = being deleted.
 */
export function podToEndpoint(pod: Pod, node: Node | undefined, service: Service): Endpoint {
  const ip = podIPv4(pod);
  const terminating = !!pod.metadata.deletionTimestamp;
  const podReady = isPodReady(pod);
  const zone = node?.metadata.labels?.[ZONE_LABEL];
  return {
    addresses: ip ? [ip] : [],
    conditions: { ready: service.spec?.publishNotReadyAddresses === true || (podReady && !terminating), serving: podReady, terminating },
    ...(shouldSetHostname(pod, service) ? { hostname: pod.spec.hostname } : {}),
    targetRef: { kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
    ...(pod.spec.nodeName ? { nodeName: pod.spec.nodeName } : {}),
    ...(zone ? { zone } : {}),
  };
}

/** An endpoint's identity in a set: its addresses, hostname and pod (not its conditions). */
export function endpointKey(ep: Endpoint): string {
  return JSON.stringify([[...ep.addresses].sort(), ep.hostname ?? '', ep.targetRef?.namespace ?? '', ep.targetRef?.name ?? '']);
}

/** Equal beyond the identity: conditions, node, zone and the pod's uid. */
export function endpointsEqualBeyondKey(a: Endpoint, b: Endpoint): boolean {
  const ca = a.conditions ?? {};
  const cb = b.conditions ?? {};
  return (
    (ca.ready ?? undefined) === (cb.ready ?? undefined) &&
    (ca.serving ?? undefined) === (cb.serving ?? undefined) &&
    (ca.terminating ?? undefined) === (cb.terminating ?? undefined) &&
    (a.nodeName ?? '') === (b.nodeName ?? '') &&
    (a.zone ?? '') === (b.zone ?? '') &&
    (a.targetRef?.uid ?? '') === (b.targetRef?.uid ?? '') &&
    (a.targetRef?.kind ?? '') === (b.targetRef?.kind ?? '')
  );
}

/** Protocol of a Service port, defaulted. */
export function protocolOf(p: { protocol?: ServiceProtocol }): ServiceProtocol {
  return p.protocol ?? 'TCP';
}
