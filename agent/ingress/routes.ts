/**
 * Owns the ingress routing table: from the Ingresses this node serves, their Services, EndpointSlices
 * and TLS Secrets, what the proxy must do — virtual hosts (exact, wildcard, and the catch-all for rules
 * without a host), their paths in the API's precedence, the pod endpoints behind each backend, the
 * certificate each TLS host is served with — and, per Ingress, what was wrong with it. Pure: the
 * controller (ingress-controller.ts) feeds it from informers and nginx-config.ts renders it.
 *
 * As the API defines it:
 * - a rule's host is exact, or `*.example.com`, which matches exactly one more label (`a.example.com`,
 *   not `example.com` nor `a.b.example.com`); rules without a host take requests for any host;
 * - Exact matches only the path itself; Prefix matches element-wise (`/foo` matches `/foo` and
 *   `/foo/bar`, not `/foobar`; a trailing slash is ignored); ImplementationSpecific is a plain string
 *   prefix, as ingress-nginx treats it; the longest path wins, Exact before Prefix on a tie;
 * - a request matching no rule goes to the Ingress's defaultBackend, else gets a 404;
 * - backends are the Service's ready endpoints (pod IP and target port), not its ClusterIP.
 * Conflicts between Ingresses (the same host and path twice) go to the oldest Ingress, as ingress-nginx
 * decides them. An Ingress whose backend cannot be resolved (no such Service or port, a resource
 * backend) is left out whole, with a problem the controller turns into an event; the others are served.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { EndpointSlice, Ingress, IngressBackend, Secret, Service } from '../../src/api/types.js';

/** One place requests go: a Service port's ready endpoints. */
export interface Upstream {
  /** a name nginx accepts: `namespace_service_port` */
  name: string;
  /** `ip:port`, sorted; empty when the Service has no ready endpoint (requests get 503) */
  servers: string[];
}

export type RouteMatch = 'Exact' | 'Prefix' | 'ImplementationSpecific';

export interface Route {
  match: RouteMatch;
  /** as written; Prefix paths have their trailing slash dropped (`/` stays `/`) */
  path: string;
  upstream: string;
  /** `namespace/name` of the Ingress it comes from (access logs) */
  ingress: string;
}

export interface VirtualHost {
  /** the host as written (`a.example.com`, `*.example.com`); '' is the catch-all */
  host: string;
  routes: Route[];
  /** where requests matching no route go; undefined: 404 */
  fallback?: { upstream: string; ingress: string };
  /** the certificate file key (`namespace_secret`) when the host is in spec.tls; 'default' for the generated one */
  tls?: string;
  /** redirect plain HTTP to HTTPS (TLS hosts, unless the Ingress turns it off) */
  sslRedirect: boolean;
}

export interface Certificate {
  /** file key: `namespace_secret` */
  key: string;
  cert: string;
  privateKey: string;
}

export interface IngressProblem {
  /** `namespace/name` */
  ingress: string;
  reason: string;
  message: string;
}

export interface RoutingTable {
  hosts: VirtualHost[];
  upstreams: Upstream[];
  certificates: Certificate[];
  problems: IngressProblem[];
}

export interface RoutingInputs {
  /** the Ingresses this node serves (already filtered by class) */
  ingresses: readonly Ingress[];
  services: ReadonlyMap<string, Service>;
  /** by `namespace/service` */
  slices: ReadonlyMap<string, readonly EndpointSlice[]>;
  /** by `namespace/name`; a name missing here could not be read */
  secrets: ReadonlyMap<string, Secret>;
}

/** ingress-nginx's annotation turning the HTTP→HTTPS redirect of TLS hosts off ("false"). */
export const SSL_REDIRECT_ANNOTATION = 'nginx.ingress.kubernetes.io/ssl-redirect';

const keyOf = (o: { metadata: { namespace?: string; name?: string } }) => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;

/** The path a Prefix route is keyed by: trailing slashes dropped, `/` kept. */
export function prefixKey(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/** Does a wildcard host (`*.example.com`) match `host`? Exactly one label in place of `*`. */
export function wildcardMatches(pattern: string, host: string): boolean {
  const suffix = pattern.slice(1); // `.example.com`
  if (!host.endsWith(suffix)) return false;
  const label = host.slice(0, host.length - suffix.length);
  return label.length > 0 && !label.includes('.');
}

/** Does `route` take the request path `path`? (Used by tests and to document the rules; nginx does the matching.) */
export function routeMatches(route: Pick<Route, 'match' | 'path'>, path: string): boolean {
  if (route.match === 'Exact') return path === route.path;
  if (route.match === 'ImplementationSpecific') return path.startsWith(route.path || '/');
  if (route.path === '/') return true;
  return path === route.path || path.startsWith(`${route.path}/`);
}

/** The certificate and key of a kubernetes.io/tls Secret, or why they cannot be used. */
export function tlsPair(secret: Secret | undefined): { cert: string; privateKey: string } | { error: string } {
  if (!secret) return { error: 'not found' };
  if (secret.type !== 'kubernetes.io/tls') return { error: `has type ${secret.type ?? 'Opaque'}, not kubernetes.io/tls` };
  const data = secret.data ?? {};
  const cert = data['tls.crt'] ? Buffer.from(data['tls.crt'], 'base64').toString('utf8') : '';
  const privateKey = data['tls.key'] ? Buffer.from(data['tls.key'], 'base64').toString('utf8') : '';
  if (!cert || !privateKey) return { error: 'has no tls.crt or tls.key' };
  try {
    const x509 = new X509Certificate(cert);
    if (!x509.checkPrivateKey(createPrivateKey(privateKey))) return { error: 'tls.key does not match tls.crt' };
  } catch (e) {
    return { error: `cannot be read: ${(e as Error).message}` };
  }
  return { cert, privateKey };
}

interface ResolvedBackend {
  upstream?: Upstream;
  problem?: { reason: string; message: string };
}

/** A backend's Service port resolved to the ready endpoints behind it. */
function resolveBackend(ns: string, backend: IngressBackend | undefined, inputs: RoutingInputs): ResolvedBackend {
  if (!backend) return { problem: { reason: 'BadBackend', message: 'a path has no backend' } };
  if (backend.resource) {
    return { problem: { reason: 'UnsupportedBackend', message: `resource backends are not supported by the berth ingress controller (${backend.resource.kind} ${backend.resource.name}); use a Service backend` } };
  }
  const ref = backend.service;
  if (!ref) return { problem: { reason: 'BadBackend', message: 'a backend names no Service' } };
  const svc = inputs.services.get(`${ns}/${ref.name}`);
  if (!svc) return { problem: { reason: 'ServiceNotFound', message: `Service "${ns}/${ref.name}" not found` } };
  if (svc.spec?.type === 'ExternalName') return { problem: { reason: 'UnsupportedBackend', message: `Service "${ns}/${ref.name}" is of type ExternalName, which the berth ingress controller does not proxy to` } };
  const port = (svc.spec?.ports ?? []).find((p) => (ref.port?.name ? p.name === ref.port.name : p.port === ref.port?.number));
  const wanted = ref.port?.name ? `"${ref.port.name}"` : String(ref.port?.number);
  if (!port) return { problem: { reason: 'PortNotFound', message: `Service "${ns}/${ref.name}" has no port ${wanted}` } };
  const servers = new Set<string>();
  for (const slice of inputs.slices.get(`${ns}/${ref.name}`) ?? []) {
    if (slice.addressType !== 'IPv4') continue;
    const slicePort = (slice.ports ?? []).find((p) => (p.name ?? '') === (port.name ?? '') && (p.protocol ?? 'TCP') === (port.protocol ?? 'TCP'));
    if (!slicePort?.port) continue;
    for (const ep of slice.endpoints ?? []) {
      if (ep.conditions?.ready === false) continue;
      for (const address of ep.addresses ?? []) servers.add(`${address}:${slicePort.port}`);
    }
  }
  const name = `${ns}_${ref.name}_${ref.port?.name ?? ref.port?.number}`.replace(/[^A-Za-z0-9_.-]/g, '_');
  return { upstream: { name, servers: [...servers].sort() } };
}

/** Builds the routing table. Ingresses are taken oldest first, so an older Ingress keeps a contested host and path. */
export function buildRoutes(inputs: RoutingInputs): RoutingTable {
  const ingresses = [...inputs.ingresses].sort(
    (a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || keyOf(a).localeCompare(keyOf(b)),
  );
  const hosts = new Map<string, VirtualHost>();
  const upstreams = new Map<string, Upstream>();
  const certificates = new Map<string, Certificate>();
  const problems: IngressProblem[] = [];
  const hostFor = (host: string) => {
    let vh = hosts.get(host);
    if (!vh) hosts.set(host, (vh = { host, routes: [], sslRedirect: false }));
    return vh;
  };

  for (const ing of ingresses) {
    const ns = ing.metadata.namespace ?? 'default';
    const ingressKey = keyOf(ing);
    const spec = ing.spec ?? {};
    // Resolve every backend first: an Ingress with one it cannot serve is left out whole.
    const resolved: Array<{ host: string; route: Route }> = [];
    let fallback: Upstream | undefined;
    let broken: { reason: string; message: string } | undefined;
    const mine: Upstream[] = [];
    const take = (backend: IngressBackend | undefined): Upstream | undefined => {
      const r = resolveBackend(ns, backend, inputs);
      if (r.problem) broken ??= r.problem;
      if (r.upstream) mine.push(r.upstream);
      return r.upstream;
    };
    if (spec.defaultBackend) fallback = take(spec.defaultBackend);
    for (const rule of spec.rules ?? []) {
      for (const p of rule.http?.paths ?? []) {
        const upstream = take(p.backend);
        if (!upstream) continue;
        const match = (p.pathType ?? 'ImplementationSpecific') as RouteMatch;
        const path = match === 'Prefix' ? prefixKey(p.path || '/') : p.path || '/';
        resolved.push({ host: rule.host ?? '', route: { match, path, upstream: upstream.name, ingress: ingressKey } });
      }
    }
    if (broken) {
      problems.push({ ingress: ingressKey, ...broken });
      continue;
    }
    // TLS: each listed host gets the Secret's certificate, or the generated one when it cannot be used.
    const tlsOf = new Map<string, string>();
    for (const t of spec.tls ?? []) {
      let certKey = 'default';
      if (t.secretName) {
        const pair = tlsPair(inputs.secrets.get(`${ns}/${t.secretName}`));
        if ('error' in pair) problems.push({ ingress: ingressKey, reason: 'InvalidTLSSecret', message: `TLS Secret "${ns}/${t.secretName}" ${pair.error}; serving the default certificate instead` });
        else {
          certKey = `${ns}_${t.secretName}`;
          certificates.set(certKey, { key: certKey, ...pair });
        }
      }
      for (const h of t.hosts ?? []) if (!tlsOf.has(h)) tlsOf.set(h, certKey);
    }
    for (const u of mine) upstreams.set(u.name, u);
    const redirect = ing.metadata.annotations?.[SSL_REDIRECT_ANNOTATION] !== 'false';
    const used = new Set<string>();
    for (const { host, route } of resolved) {
      const vh = hostFor(host);
      // An earlier (older) Ingress's route for the same match and path stays.
      if (!vh.routes.some((r) => r.match === route.match && r.path === route.path)) vh.routes.push(route);
      used.add(host);
    }
    if (fallback) {
      for (const host of used) hostFor(host).fallback ??= { upstream: fallback.name, ingress: ingressKey };
      hostFor('').fallback ??= { upstream: fallback.name, ingress: ingressKey };
    }
    for (const host of used) {
      const certKey = tlsOf.get(host);
      const vh = hostFor(host);
      if (certKey !== undefined && vh.tls === undefined) {
        vh.tls = certKey;
        vh.sslRedirect = redirect;
      }
    }
  }
  const order: Record<RouteMatch, number> = { Exact: 0, Prefix: 1, ImplementationSpecific: 2 };
  for (const vh of hosts.values()) vh.routes.sort((a, b) => b.path.length - a.path.length || order[a.match] - order[b.match] || a.path.localeCompare(b.path));
  return {
    hosts: [...hosts.values()].sort((a, b) => a.host.localeCompare(b.host)),
    upstreams: [...upstreams.values()].sort((a, b) => a.name.localeCompare(b.name)),
    certificates: [...certificates.values()].sort((a, b) => a.key.localeCompare(b.key)),
    problems,
  };
}
