/**
 * The cluster zone's answers, computed from cached Services and EndpointSlices — pure: no sockets, no
 * clocks. It follows the Kubernetes DNS specification as CoreDNS's kubernetes plugin implements it:
 *
 *   <svc>.<ns>.svc.<zone>                 A: the ClusterIP; headless: the endpoints' IPs; ExternalName: CNAME
 *   <host>.<svc>.<ns>.svc.<zone>          A: a headless Service's endpoint with that hostname (or dashed IP)
 *   _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV per named port (headless: one per endpoint)
 *   <a-b-c-d>.<ns>.pod.<zone>             A: a.b.c.d (CoreDNS's "pods insecure", its default)
 *   <reversed IP>.in-addr.arpa            PTR: a Service's ClusterIP, or a headless Service's endpoint
 *
 * Headless Services list ready endpoints only, unless publishNotReadyAddresses. A known name asked for a
 * type it has no records of gets NOERROR without answers (NODATA); an unknown name in the zone gets
 * NXDOMAIN; both carry the zone's SOA in the authority section, as CoreDNS sends, so resolvers cache the
 * denial for the SOA's minimum (the 5 s TTL). Reverse names that match nothing are not ours to deny:
 * they go upstream (CoreDNS's `fallthrough in-addr.arpa ip6.arpa`).
 */
import type { Answer } from 'dns-packet';
import { CLUSTER_IP_NONE } from '../../src/api/services.js';
import type { Endpoint, EndpointSlice, Service, ServicePort } from '../../src/api/types.js';

/** CoreDNS's default TTL for cluster records. */
export const CLUSTER_TTL = 5;

/** What the answer logic reads; the resolver's informer caches implement it, tests fill plain maps. */
export interface ClusterView {
  service(namespace: string, name: string): Service | undefined;
  /** the EndpointSlices labelled with this Service's name */
  slicesOf(namespace: string, service: string): EndpointSlice[];
  /** true when some Service lives in this namespace (`<ns>.svc.<zone>` then exists as a name) */
  hasNamespace(namespace: string): boolean;
  /** the Services with this ClusterIP (normally one) */
  servicesByClusterIP(ip: string): Service[];
  /** the headless Services whose slices list this endpoint IP */
  headlessByEndpointIP(ip: string): Service[];
}

export interface ClusterQuestion {
  name: string;
  type: string;
}

export type ClusterAnswer =
  | { kind: 'answer'; rcode: 'NOERROR' | 'NXDOMAIN'; answers: Answer[]; authority: Answer[]; additionals: Answer[]; /** an ExternalName target outside the zone, to be resolved upstream and appended */ chase?: string }
  /** not ours: ask the upstream resolvers */
  | { kind: 'forward' };

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Lower case, no trailing dot: how names are compared. */
export function normalizeName(name: string): string {
  return name.replace(/\.+$/, '').toLowerCase();
}

export function isIPv4(s: string): boolean {
  return IPV4.test(s);
}

export function soaRecord(zone: string): Answer {
  return {
    name: zone,
    type: 'SOA',
    class: 'IN',
    ttl: CLUSTER_TTL,
    data: { mname: `ns.dns.${zone}`, rname: `hostmaster.${zone}`, serial: 1, refresh: 7200, retry: 1800, expire: 86400, minimum: CLUSTER_TTL },
  };
}

/** True when the name is the zone or inside it. */
export function inZone(name: string, zone: string): boolean {
  return name === zone || name.endsWith(`.${zone}`);
}

function isHeadless(svc: Service): boolean {
  return svc.spec?.clusterIP === CLUSTER_IP_NONE;
}

function clusterIPs(svc: Service): string[] {
  const ips = svc.spec?.clusterIPs?.length ? svc.spec.clusterIPs : svc.spec?.clusterIP ? [svc.spec.clusterIP] : [];
  return ips.filter((ip) => ip !== CLUSTER_IP_NONE && ip !== '');
}

/** The name an endpoint of a headless Service goes by: its hostname, else its IP with dashes. */
function endpointLabel(ep: Endpoint, address: string): string {
  return ep.hostname ? ep.hostname.toLowerCase() : address.replace(/[.:]/g, '-');
}

interface PublishedEndpoint {
  label: string;
  address: string;
  slice: EndpointSlice;
}

/** A Service's endpoints DNS publishes: IPv4 addresses, ready ones unless the Service publishes all. */
export function publishedEndpoints(svc: Service, slices: EndpointSlice[]): PublishedEndpoint[] {
  const all = svc.spec?.publishNotReadyAddresses === true;
  const out: PublishedEndpoint[] = [];
  const seen = new Set<string>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4') continue;
    for (const ep of slice.endpoints ?? []) {
      // An absent ready condition means ready, as the EndpointSlice API defines it.
      if (!all && ep.conditions?.ready === false) continue;
      for (const address of ep.addresses ?? []) {
        if (!isIPv4(address) || seen.has(address)) continue;
        seen.add(address);
        out.push({ label: endpointLabel(ep, address), address, slice });
      }
    }
  }
  return out;
}

function aRecord(name: string, ip: string): Answer {
  return { name, type: 'A', class: 'IN', ttl: CLUSTER_TTL, data: ip };
}

export interface ClusterZoneOptions {
  /** the cluster domain, e.g. cluster.local */
  domain: string;
}

/** Answers questions about the cluster zone (and the reverse names of its addresses) from a ClusterView. */
export class ClusterZone {
  readonly domain: string;

  constructor(opts: ClusterZoneOptions) {
    this.domain = normalizeName(opts.domain);
  }

  /** True when the name is answered here rather than upstream (reverse names only when they match). */
  owns(name: string): boolean {
    return inZone(normalizeName(name), this.domain);
  }

  answer(q: ClusterQuestion, view: ClusterView): ClusterAnswer {
    const name = normalizeName(q.name);
    if (name.endsWith('.in-addr.arpa')) return this.reverse(name, q.type, view);
    if (!inZone(name, this.domain)) return { kind: 'forward' };
    const labels = name === this.domain ? [] : name.slice(0, -(this.domain.length + 1)).split('.');
    const zone = this.domain;
    const nodata = (): ClusterAnswer => ({ kind: 'answer', rcode: 'NOERROR', answers: [], authority: [soaRecord(zone)], additionals: [] });
    const nxdomain = (): ClusterAnswer => ({ kind: 'answer', rcode: 'NXDOMAIN', answers: [], authority: [soaRecord(zone)], additionals: [] });
    const found = (answers: Answer[], additionals: Answer[] = [], chase?: string): ClusterAnswer =>
      answers.length ? { kind: 'answer', rcode: 'NOERROR', answers, authority: [], additionals, ...(chase ? { chase } : {}) } : nodata();

    if (labels.length === 0) {
      if (q.type === 'SOA') return found([soaRecord(zone)]);
      if (q.type === 'NS') return found([{ name: zone, type: 'NS', class: 'IN', ttl: CLUSTER_TTL, data: `ns.dns.${zone}` }]);
      return nodata();
    }
    const kind = labels[labels.length - 1];
    const rest = labels.slice(0, -1);
    if (kind === 'pod') {
      // <a-b-c-d>.<ns>.pod: the address spelled in the name, as CoreDNS's "pods insecure" answers.
      if (rest.length === 1) return nodata();
      if (rest.length !== 2) return nxdomain();
      const ip = rest[0]!.replace(/-/g, '.');
      if (!isIPv4(ip)) return nxdomain();
      return q.type === 'A' ? found([aRecord(name, ip)]) : nodata();
    }
    if (kind !== 'svc') return nxdomain();
    if (rest.length === 0) return nodata();
    const namespace = rest[rest.length - 1]!;
    if (rest.length === 1) return view.hasNamespace(namespace) ? nodata() : nxdomain();
    const serviceName = rest[rest.length - 2]!;
    const svc = view.service(namespace, serviceName);
    if (!svc) return nxdomain();
    const svcFqdn = `${serviceName}.${namespace}.svc.${zone}`;
    const prefix = rest.slice(0, -2);

    if (prefix.length === 0) return this.serviceRecords(svc, svcFqdn, q.type, view, nodata, found);
    if (prefix.length === 2 && prefix[0]!.startsWith('_') && prefix[1]!.startsWith('_')) {
      const port = this.namedPort(svc, prefix[0]!.slice(1), prefix[1]!.slice(1));
      if (!port) return nxdomain();
      return q.type === 'SRV' ? found(...this.srvFor(svc, svcFqdn, name, port, view)) : nodata();
    }
    if (prefix.length === 1 && prefix[0]!.startsWith('_')) {
      // `_<proto>.<svc>...` exists as an empty non-terminal when some port uses that protocol.
      const proto = prefix[0]!.slice(1).toUpperCase();
      return (svc.spec?.ports ?? []).some((p) => p.name && (p.protocol ?? 'TCP') === proto) ? nodata() : nxdomain();
    }
    if (prefix.length === 1 && isHeadless(svc)) {
      const matches = publishedEndpoints(svc, view.slicesOf(namespace, serviceName)).filter((e) => e.label === prefix[0]);
      if (!matches.length) return nxdomain();
      return q.type === 'A' ? found(matches.map((e) => aRecord(name, e.address))) : nodata();
    }
    return nxdomain();
  }

  private serviceRecords(
    svc: Service,
    fqdn: string,
    type: string,
    view: ClusterView,
    nodata: () => ClusterAnswer,
    found: (answers: Answer[], additionals?: Answer[], chase?: string) => ClusterAnswer,
  ): ClusterAnswer {
    if (svc.spec?.type === 'ExternalName') {
      const target = normalizeName(svc.spec.externalName ?? '');
      if (!target) return nodata();
      const cname: Answer = { name: fqdn, type: 'CNAME', class: 'IN', ttl: CLUSTER_TTL, data: target };
      return found([cname], [], type === 'CNAME' ? undefined : target);
    }
    if (type === 'SRV') {
      // SRV at the Service name itself: one record per port (CoreDNS does the same).
      const records: Answer[] = [];
      const additionals = new Map<string, Answer>();
      for (const port of svc.spec?.ports ?? []) {
        const [answers, extra] = this.srvFor(svc, fqdn, fqdn, port, view);
        records.push(...answers);
        for (const r of extra) additionals.set(`${r.name} ${String((r as { data?: unknown }).data)}`, r);
      }
      return found(records, [...additionals.values()]);
    }
    if (type !== 'A') return nodata();
    if (isHeadless(svc)) {
      const ns = svc.metadata.namespace ?? 'default';
      return found(publishedEndpoints(svc, view.slicesOf(ns, svc.metadata.name ?? '')).map((e) => aRecord(fqdn, e.address)));
    }
    return found(clusterIPs(svc).filter(isIPv4).map((ip) => aRecord(fqdn, ip)));
  }

  private namedPort(svc: Service, portName: string, proto: string): ServicePort | undefined {
    return (svc.spec?.ports ?? []).find((p) => p.name !== undefined && p.name.toLowerCase() === portName && (p.protocol ?? 'TCP').toLowerCase() === proto);
  }

  /** SRV records for one port: the Service itself, or (headless) one per published endpoint, with their A records. */
  private srvFor(svc: Service, svcFqdn: string, qname: string, port: ServicePort, view: ClusterView): [Answer[], Answer[]] {
    const proto = port.protocol ?? 'TCP';
    if (!isHeadless(svc)) {
      const ips = clusterIPs(svc).filter(isIPv4);
      if (!ips.length) return [[], []];
      return [[{ name: qname, type: 'SRV', class: 'IN', ttl: CLUSTER_TTL, data: { priority: 0, weight: 100, port: port.port, target: svcFqdn } }], ips.map((ip) => aRecord(svcFqdn, ip))];
    }
    const endpoints = publishedEndpoints(svc, view.slicesOf(svc.metadata.namespace ?? 'default', svc.metadata.name ?? ''));
    const answers: Answer[] = [];
    const additionals: Answer[] = [];
    const weight = endpoints.length ? Math.max(1, Math.floor(100 / endpoints.length)) : 100;
    for (const e of endpoints) {
      // The endpoint's own port of that name and protocol (the target port), as its slice lists it.
      const slicePort = (e.slice.ports ?? []).find((p) => (p.name ?? '') === (port.name ?? '') && (p.protocol ?? 'TCP') === proto);
      const target = `${e.label}.${svcFqdn}`;
      answers.push({ name: qname, type: 'SRV', class: 'IN', ttl: CLUSTER_TTL, data: { priority: 0, weight, port: slicePort?.port ?? port.port, target } });
      additionals.push(aRecord(target, e.address));
    }
    return [answers, additionals];
  }

  private reverse(name: string, type: string, view: ClusterView): ClusterAnswer {
    const parts = name.slice(0, -'.in-addr.arpa'.length).split('.');
    if (parts.length !== 4) return { kind: 'forward' };
    const ip = parts.reverse().join('.');
    if (!isIPv4(ip)) return { kind: 'forward' };
    const targets: string[] = [];
    for (const svc of view.servicesByClusterIP(ip)) targets.push(`${svc.metadata.name}.${svc.metadata.namespace ?? 'default'}.svc.${this.domain}`);
    for (const svc of view.headlessByEndpointIP(ip)) {
      const ns = svc.metadata.namespace ?? 'default';
      for (const e of publishedEndpoints(svc, view.slicesOf(ns, svc.metadata.name ?? ''))) {
        if (e.address === ip) targets.push(`${e.label}.${svc.metadata.name}.${ns}.svc.${this.domain}`);
      }
    }
    if (!targets.length) return { kind: 'forward' };
    const answers: Answer[] = type === 'PTR' ? [...new Set(targets)].map((t) => ({ name, type: 'PTR', class: 'IN', ttl: CLUSTER_TTL, data: t })) : [];
    return { kind: 'answer', rcode: 'NOERROR', answers, authority: answers.length ? [] : [soaRecord(this.domain)], additionals: [] };
  }
}
