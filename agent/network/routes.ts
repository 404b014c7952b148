/**
 * Host-gateway routing between nodes: one route per other node, `<its podCIDR> via <its InternalIP>`.
 * The agent's routes carry their own protocol number, so reconciling (add what is missing, change what
 * moved, delete what belongs to nodes that are gone) never touches routes anyone else made.
 */
import os from 'node:os';
import { mustRun, run } from './host-commands.js';

/** rtnetlink protocol number marking Berth's pod routes (`ip route show proto 211`). */
export const BERTH_ROUTE_PROTO = '211';

export interface PodRoute {
  /** the other node's pod subnet */
  cidr: string;
  /** the other node's InternalIP */
  via: string;
}

/** IPv4 addresses of this network namespace (a node whose InternalIP is one of them is this host). */
export function localIpv4Addresses(): Set<string> {
  const out = new Set<string>();
  for (const addrs of Object.values(os.networkInterfaces())) for (const a of addrs ?? []) if (a.family === 'IPv4') out.add(a.address);
  return out;
}

/** Berth's routes now in the main table. */
export async function listPodRoutes(): Promise<PodRoute[]> {
  const out = await mustRun('ip', ['-j', '-4', 'route', 'show', 'proto', BERTH_ROUTE_PROTO]);
  const parsed = JSON.parse(out.trim() || '[]') as Array<{ dst?: string; gateway?: string }>;
  return parsed.filter((r) => r.dst && r.gateway).map((r) => ({ cidr: r.dst!.includes('/') ? r.dst! : `${r.dst}/32`, via: r.gateway! }));
}

/**
 * Makes Berth's routes exactly `wanted`. Returns what failed (e.g. a gateway not reachable yet), so the
 * caller can retry later; one bad route does not stop the others.
 */
export async function reconcilePodRoutes(wanted: PodRoute[]): Promise<{ added: PodRoute[]; removed: PodRoute[]; failed: Array<{ route: PodRoute; error: string }> }> {
  const current = await listPodRoutes();
  const want = new Map(wanted.map((r) => [r.cidr, r.via]));
  const added: PodRoute[] = [];
  const removed: PodRoute[] = [];
  const failed: Array<{ route: PodRoute; error: string }> = [];
  for (const r of current) {
    if (want.get(r.cidr) === r.via) continue;
    if (!want.has(r.cidr)) {
      const res = await run('ip', ['route', 'del', r.cidr, 'proto', BERTH_ROUTE_PROTO]);
      if (res.code === 0) removed.push(r);
    }
  }
  const have = new Map(current.map((r) => [r.cidr, r.via]));
  for (const r of wanted) {
    if (have.get(r.cidr) === r.via) continue;
    const res = await run('ip', ['route', 'replace', r.cidr, 'via', r.via, 'proto', BERTH_ROUTE_PROTO]);
    if (res.code === 0) added.push(r);
    else failed.push({ route: r, error: res.stderr.trim() });
  }
  return { added, removed, failed };
}
