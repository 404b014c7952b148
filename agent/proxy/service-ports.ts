/**
 * What the service proxy forwards, worked out from a Service and its EndpointSlices (pure, no I/O): one
 * ServicePortPlan per port of a Service that the proxy serves, with the addresses traffic arrives on
 * (ClusterIP, NodePort, LoadBalancer ingress and external IPs) and the endpoints each kind of traffic may
 * go to. Follows kube-proxy's rules: Services labelled service.kubernetes.io/service-proxy-name, headless
 * Services and ExternalName Services get nothing; endpoints are the ready ones, or, when none is ready,
 * the serving-and-terminating ones; a Local traffic policy keeps only the endpoints on this node.
 */
import { CLUSTER_IP_NONE, DEFAULT_CLIENT_IP_AFFINITY_SECONDS, SERVICE_NAME_LABEL, SERVICE_PROXY_NAME_LABEL } from '../../src/api/services.js';
import type { EndpointSlice, Service } from '../../src/api/types.js';

export interface ProxyEndpoint {
  ip: string;
  port: number;
  /** the endpoint runs on this node */
  local: boolean;
}

export interface ServicePortPlan {
  /** `namespace/name/protocol/port-name-or-number`, unique per Service port */
  key: string;
  /** `namespace/name`, what an informer event names */
  service: string;
  protocol: 'tcp' | 'udp' | 'sctp';
  clusterIP: string;
  port: number;
  /** 0 when the Service has none */
  nodePort: number;
  /** LoadBalancer ingress IPs and spec.externalIPs: traffic to them on `port` is external traffic */
  externalIPs: string[];
  /** ClientIP affinity timeout in seconds; 0 when affinity is off */
  affinitySeconds: number;
  internalLocal: boolean;
  externalLocal: boolean;
  /** endpoints cluster traffic (ClusterIP, and external traffic under the Cluster policy) may reach */
  clusterEndpoints: ProxyEndpoint[];
  /** the same, on this node only (the Local policies) */
  localEndpoints: ProxyEndpoint[];
}

/** Whether the service proxy handles this Service at all. */
export function isProxied(svc: Service): boolean {
  if (svc.metadata.labels?.[SERVICE_PROXY_NAME_LABEL] !== undefined) return false;
  const spec = svc.spec ?? {};
  if (spec.type === 'ExternalName') return false;
  const ip = spec.clusterIP;
  return !!ip && ip !== CLUSTER_IP_NONE && /^\d+\.\d+\.\d+\.\d+$/.test(ip);
}

/** The Service (`namespace/name`) an EndpointSlice belongs to, or undefined when it names none. */
export function sliceService(slice: EndpointSlice): string | undefined {
  const name = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return name ? `${slice.metadata.namespace ?? ''}/${name}` : undefined;
}

const PROTOCOLS: Record<string, ServicePortPlan['protocol'] | undefined> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

interface Candidate extends ProxyEndpoint {
  ready: boolean;
  serving: boolean;
  terminating: boolean;
}

/**
 * Ready endpoints; when none is ready, the ones still serving while terminating (kube-proxy's fallback, so
 * a rollout's last old pods keep answering until their replacements are ready).
 */
function usable(cands: Candidate[]): ProxyEndpoint[] {
  const ready = cands.filter((c) => c.ready);
  const chosen = ready.length > 0 ? ready : cands.filter((c) => c.serving && c.terminating);
  return chosen.map(({ ip, port, local }) => ({ ip, port, local }));
}

/** The plans of one Service's ports; empty when the proxy does not serve the Service. */
export function planServicePorts(svc: Service, slices: EndpointSlice[], nodeName: string): ServicePortPlan[] {
  if (!isProxied(svc)) return [];
  const spec = svc.spec ?? {};
  const ns = svc.metadata.namespace ?? '';
  const service = `${ns}/${svc.metadata.name}`;
  const externalIPs = [...new Set([...(spec.externalIPs ?? []), ...(svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? '').filter((ip) => ip && i4(ip))])];
  const affinitySeconds =
    spec.sessionAffinity === 'ClientIP' ? spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_CLIENT_IP_AFFINITY_SECONDS : 0;
  const plans: ServicePortPlan[] = [];
  for (const p of spec.ports ?? []) {
    const protocol = p.protocol ?? 'TCP';
    const portName = p.name ?? '';
    const seen = new Set<string>();
    const cands: Candidate[] = [];
    for (const slice of slices) {
      if (slice.addressType !== 'IPv4') continue;
      const sp = (slice.ports ?? []).find((x) => (x.name ?? '') === portName && (x.protocol ?? 'TCP') === protocol);
      if (!sp?.port) continue;
      for (const ep of slice.endpoints ?? []) {
        const ip = ep.addresses?.[0];
        if (!ip || !i4(ip)) continue;
        const id = `${ip}:${sp.port}`;
        if (seen.has(id)) continue;
        seen.add(id);
        const c = ep.conditions ?? {};
        // Kubernetes: a nil ready condition means ready; nil serving means the value of ready.
        const ready = c.ready ?? true;
        cands.push({ ip, port: sp.port, local: ep.nodeName === nodeName, ready, serving: c.serving ?? ready, terminating: c.terminating ?? false });
      }
    }
    cands.sort((a, b) => (a.ip === b.ip ? a.port - b.port : a.ip < b.ip ? -1 : 1));
    plans.push({
      key: `${service}/${PROTOCOLS[protocol] ?? 'tcp'}/${portName || p.port}`,
      service,
      protocol: PROTOCOLS[protocol] ?? 'tcp',
      clusterIP: spec.clusterIP!,
      port: p.port,
      nodePort: spec.type === 'NodePort' || spec.type === 'LoadBalancer' ? p.nodePort ?? 0 : 0,
      externalIPs,
      affinitySeconds,
      internalLocal: spec.internalTrafficPolicy === 'Local',
      externalLocal: spec.externalTrafficPolicy === 'Local' && (spec.type === 'NodePort' || spec.type === 'LoadBalancer'),
      clusterEndpoints: usable(cands),
      localEndpoints: usable(cands.filter((c) => c.local)),
    });
  }
  return plans;
}

function i4(ip: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(ip);
}
