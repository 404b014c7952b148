/**
 * Stale UDP flows: the conntrack entries the service proxy deletes after a rule change, as kube-proxy does.
 * A UDP "connection" has no end, so conntrack keeps an entry for as long as packets keep coming, and every
 * packet of that flow follows the entry's NAT, not the rules. Two cases break a flow for good:
 *  - an endpoint leaves a Service port: its flows keep going to the gone address. Deleted by frontend and
 *    NAT target (`--orig-dst <frontend> --dst-nat <endpoint>`, and by NodePort);
 *  - a Service port gets its first endpoint: packets sent while it had none made entries with no NAT,
 *    which the new rules never see. Deleted by frontend and port.
 * Planning is pure (which deletions a change needs); the command runs the conntrack tool.
 */
import { spawn } from 'node:child_process';
import type { ServicePortPlan } from './service-ports.js';

/** One `conntrack -D` filter, as arguments after `-D -p udp`. */
export type ConntrackFilter = string[];

/** What the proxy remembers of a UDP Service port between syncs. */
export interface UdpPortView {
  frontends: string[];
  port: number;
  nodePort: number;
  endpoints: string[];
}

/** The UDP ports of a Service's plans, keyed by plan key. */
export function udpPorts(plans: ServicePortPlan[]): Map<string, UdpPortView> {
  const out = new Map<string, UdpPortView>();
  for (const p of plans) {
    if (p.protocol !== 'udp') continue;
    const endpoints = new Set([...p.clusterEndpoints, ...p.localEndpoints].map((e) => e.ip));
    out.set(p.key, { frontends: [p.clusterIP, ...p.externalIPs], port: p.port, nodePort: p.nodePort, endpoints: [...endpoints].sort() });
  }
  return out;
}

/** The deletions that going from `before` to `after` (one Service's UDP ports) calls for. */
export function staleUdpFilters(before: Map<string, UdpPortView> | undefined, after: Map<string, UdpPortView> | undefined): ConntrackFilter[] {
  const filters: ConntrackFilter[] = [];
  const keys = new Set([...(before?.keys() ?? []), ...(after?.keys() ?? [])]);
  for (const key of keys) {
    const old = before?.get(key);
    const now = after?.get(key);
    const kept = new Set(now?.endpoints ?? []);
    for (const ip of old?.endpoints ?? []) {
      if (kept.has(ip)) continue;
      for (const frontend of old!.frontends) filters.push(['--orig-dst', frontend, '--dst-nat', ip]);
      if (old!.nodePort) filters.push(['--orig-port-dst', String(old!.nodePort), '--dst-nat', ip]);
    }
    if (now && now.endpoints.length > 0 && (old?.endpoints.length ?? 0) === 0) {
      for (const frontend of now.frontends) filters.push(['--orig-dst', frontend, '--orig-port-dst', String(now.port)]);
      if (now.nodePort) filters.push(['--orig-port-dst', String(now.nodePort)]);
    }
  }
  return filters;
}

export interface ConntrackExecutor {
  /** Deletes the UDP entries matching each filter; a filter that matches nothing is not an error. */
  deleteUdp(filters: ConntrackFilter[]): Promise<void>;
}

/** Runs the real conntrack tool (Debian's `conntrack` package), one process per filter. */
export class ConntrackCommand implements ConntrackExecutor {
  constructor(private readonly bin = 'conntrack') {}

  async deleteUdp(filters: ConntrackFilter[]): Promise<void> {
    for (const f of filters) await this.run(['-D', '-p', 'udp', ...f]);
  }

  private run(args: string[]): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => {
        if (stderr.length < 4096) stderr += d;
      });
      child.on('error', (err) => reject(new Error(`cannot run ${this.bin}: ${err.message}`)));
      child.on('close', (code) => {
        // conntrack exits 1 with "0 flow entries have been deleted" when nothing matched.
        if (code === 0 || (code === 1 && /0 flow entries/.test(stderr))) resolve();
        else reject(new Error(`${this.bin} ${args.join(' ')} failed (${code}): ${stderr.trim()}`));
      });
    });
  }
}
