/**
 * Owns the refusal to start beside another cluster that already holds what this node would take on the
 * host: its pod range (a pod bridge network), its cluster DNS address (a node resolver), or its
 * service proxy's nftables table. Each is a fact of the host shared by every cluster on it; taking one
 * that another cluster holds breaks that cluster's pods, so the agent stops instead, naming the holder
 * and the flag that gives this cluster its own.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** A resource of the host held by another cluster: the agent must not start (exit code EXIT_HOST_CONFLICT). */
export class HostConflictError extends Error {
  override readonly name = 'HostConflictError';
}

/** `berth agent` exits with this when another cluster holds what it would take. */
export const EXIT_HOST_CONFLICT = 4;

/** The nftables table comment that says which cluster's service proxy owns a table. */
export function tableOwnerComment(clusterId: string): string {
  return `berth-cluster=${clusterId}`;
}

/** The cluster id in a table's owner comment; undefined when there is no such table, '' when it has no owner comment. */
export async function nftTableOwner(table: string): Promise<string | undefined> {
  let listing: string;
  try {
    listing = (await execFileP('nft', ['list', 'table', 'ip', table], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch {
    return undefined;
  }
  return /comment "berth-cluster=([^"]*)"/.exec(listing)?.[1] ?? '';
}

/**
 * Refuses a table that another cluster owns while that cluster still has something on this host
 * (`ownerPresent`: a container or a pod network of it). A table without an owner, or whose owner left
 * nothing behind (its agent was killed and its containers removed), is adopted: the next full sync
 * rebuilds it under this cluster's comment, as a leftover pod network is removed.
 */
export async function checkTableFree(p: {
  table: string;
  clusterId: string;
  ownerPresent: (clusterId: string) => Promise<boolean>;
  ownerOf?: (table: string) => Promise<string | undefined>;
  log?: { warn(o: object, msg: string): void };
}): Promise<void> {
  const owner = await (p.ownerOf ?? nftTableOwner)(p.table);
  if (!owner || owner === p.clusterId) return;
  if (!(await p.ownerPresent(owner))) {
    p.log?.warn({ table: p.table, owner }, 'adopting the nftables table of a cluster that has nothing left on this host');
    return;
  }
  throw new HostConflictError(
    `the nftables table "ip ${p.table}" belongs to another Berth cluster on this host (cluster ${owner}). ` +
      'Give this cluster a pod range of its own with --cluster-cidr (the table name follows from it), or name a table with --service-proxy-table',
  );
}

export interface ResolverProcess {
  pid: number;
  dataDir: string;
  listen: string;
  /** its network namespace (`net:[inode]`): only a resolver in this agent's own one holds the address here */
  netns: string;
}

function netnsOf(pid: number | 'self', procDir: string): string {
  try {
    return fs.readlinkSync(`${procDir}/${pid}/ns/net`);
  } catch {
    return '';
  }
}

/** Node resolver processes running on this host, from /proc (any cluster's). */
export function nodeResolvers(entry: string, procDir = '/proc'): ResolverProcess[] {
  const out: ResolverProcess[] = [];
  for (const name of fs.readdirSync(procDir)) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = fs.readFileSync(`${procDir}/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!argv.some((a) => a.endsWith(`/${entry}`))) continue;
    const arg = (flag: string) => {
      const at = argv.indexOf(flag);
      return at >= 0 ? argv[at + 1] : undefined;
    };
    const dataDir = arg('--data-dir');
    const listen = arg('--listen');
    if (dataDir && listen) out.push({ pid: Number(name), dataDir, listen, netns: netnsOf(Number(name), procDir) });
  }
  return out;
}

/**
 * Refuses a DNS address that the resolver of another agent data dir serves in this network namespace
 * (agents in namespaces of their own, as on a multi-host lab's simulated hosts, each have the address).
 */
export function checkDnsAddressFree(p: { address: string; dataDir: string; resolvers: ResolverProcess[]; ownNetns?: string }): void {
  const ownNetns = p.ownNetns ?? netnsOf('self', '/proc');
  const holder = p.resolvers.find((r) => r.listen === p.address && r.dataDir !== p.dataDir && r.netns === ownNetns);
  if (holder) {
    throw new HostConflictError(
      `the cluster DNS address ${p.address} is served by the node resolver of another Berth cluster on this host (pid ${holder.pid}, agent data dir ${holder.dataDir}). ` +
        'Give this cluster a Service range of its own with --service-cluster-ip-range (its DNS address follows from it), or a DNS address with --cluster-dns',
    );
  }
}

/**
 * Ends node resolvers whose agent data dir is gone (their cluster was removed while they ran) that
 * hold `address`: they would answer pods of the next cluster with a dead cluster's records.
 */
export function stopOrphanResolvers(p: { address: string; resolvers: ResolverProcess[]; log: { warn(o: object, msg: string): void } }): void {
  const ownNetns = netnsOf('self', '/proc');
  for (const r of p.resolvers) {
    if (r.listen !== p.address || r.netns !== ownNetns || fs.existsSync(r.dataDir)) continue;
    p.log.warn({ pid: r.pid, dataDir: r.dataDir }, 'stopping the node resolver of a cluster whose data dir is gone');
    try {
      process.kill(r.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
}
