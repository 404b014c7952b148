/**
 * The service environment variables the kubelet gives every container: for `default/kubernetes`
 * always, and for each Service of the pod's namespace when the pod's enableServiceLinks is true
 * (the default), `<NAME>_SERVICE_HOST`, `<NAME>_SERVICE_PORT`, `<NAME>_SERVICE_PORT_<PORT NAME>`
 * and the Docker link variables (`<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>`, `…_PROTO`, `…_PORT`,
 * `…_ADDR`), names upper-cased with dashes turned to underscores. Services without a cluster IP
 * (headless, ExternalName) give none. A Service of the pod's own namespace named `kubernetes`
 * takes the place of the default one when links are enabled, as upstream. Pure.
 */
import { CLUSTER_IP_NONE } from '../../src/api/services.js';
import type { Service } from '../../src/api/types.js';

/** The Services of `default` every pod gets variables for, whatever enableServiceLinks says. */
const MASTER_SERVICES = new Set(['kubernetes']);

function envName(s: string): string {
  return s.replace(/-/g, '_').toUpperCase();
}

function hasClusterIP(s: Service): boolean {
  const ip = s.spec?.clusterIP;
  return !!ip && ip !== CLUSTER_IP_NONE;
}

/** The variables of one Service, in the kubelet's order. */
export function serviceVariables(service: Service): Array<[string, string]> {
  const ip = service.spec?.clusterIP ?? '';
  const ports = service.spec?.ports ?? [];
  const prefix = envName(service.metadata.name ?? '');
  const out: Array<[string, string]> = [[`${prefix}_SERVICE_HOST`, ip]];
  if (ports.length === 0) return out;
  out.push([`${prefix}_SERVICE_PORT`, String(ports[0]!.port)]);
  for (const p of ports) if (p.name) out.push([`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port)]);
  const hostPort = ip.includes(':') ? `[${ip}]` : ip;
  ports.forEach((p, i) => {
    const protocol = p.protocol ?? 'TCP';
    const url = `${protocol.toLowerCase()}://${hostPort}:${p.port}`;
    // Docker gives the first port the unqualified name too.
    if (i === 0) out.push([`${prefix}_PORT`, url]);
    const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
    out.push([portPrefix, url], [`${portPrefix}_PROTO`, protocol.toLowerCase()], [`${portPrefix}_PORT`, String(p.port)], [`${portPrefix}_ADDR`, ip]);
  });
  return out;
}

/** The service variables for a pod of `namespace`, from every Service known. */
export function serviceEnvironment(services: Service[], namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const chosen = new Map<string, Service>();
  for (const s of services) {
    if (!hasClusterIP(s)) continue;
    const name = s.metadata.name ?? '';
    if (s.metadata.namespace === 'default' && MASTER_SERVICES.has(name)) {
      if (!chosen.has(name)) chosen.set(name, s);
    } else if (s.metadata.namespace === namespace && enableServiceLinks) {
      chosen.set(name, s);
    }
  }
  const env = new Map<string, string>();
  const names = [...chosen.keys()].sort();
  for (const name of names) for (const [k, v] of serviceVariables(chosen.get(name)!)) env.set(k, v);
  return env;
}
