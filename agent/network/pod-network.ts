/**
 * The node's pod network, host-gateway style (as flannel's host-gw backend): once the control plane
 * has given this Node a podCIDR, the agent
 *  1. makes the runtime's bridge network `berth-<hash>` with that subnet, which every infra container joins;
 *  2. masquerades traffic from the pods that leaves the cluster CIDR (and only that: pod-to-pod traffic
 *     across hosts keeps the pod's own source address — no NAT between pods);
 *  3. accepts forwarding between the bridge and the cluster CIDR (Docker's FORWARD policy and bridge
 *     isolation would drop it otherwise) and turns on ip_forward;
 *  4. keeps one route per other node, `<its podCIDR> via <its InternalIP>`, following nodes as they come
 *     and go (a watch, plus a periodic resync for routes whose gateway was not reachable yet).
 * The agent's iptables rules carry the comment `berth:<network>`, so they can be found and removed.
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Node } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import { Informer } from '../../src/client/informer.js';
import { ANNOTATION_CLUSTER_CIDR, DEFAULT_CLUSTER_CIDR } from '../../src/api/cluster-cidr.js';
import type { NetworkRuntime } from '../runtime/networks.js';
import { HostConflictError } from '../node/host-conflicts.js';
import { ensurePodBridgeNetwork, LABEL_NETWORK_MANAGED, LABEL_NETWORK_NODE, ruleComment } from './bridge-network.js';
import { deleteIptablesRulesByComment, ensureIptablesRule, hasChain } from './host-commands.js';
import { localIpv4Addresses, reconcilePodRoutes, type PodRoute } from './routes.js';

export { podNetworkName, ruleComment } from './bridge-network.js';

export interface PodNetworkOptions {
  client: Client;
  /** names the bridge and labels it (agent/cluster-scope.ts) */
  clusterId: string;
  nodeName: string;
  /** the runtime's networks, where the pod bridge is made */
  networks: NetworkRuntime;
  /** labels the network, so a later agent can tell a leftover of a cluster that is gone */
  dataDir: string;
  log: Logger;
  /** how long to wait for the control plane to assign a podCIDR (default 30 s) */
  waitForCidrMs?: number;
  /** periodic re-check of routes and rules, and the retry of a bridge that could not be made (default 10 s) */
  resyncMs?: number;
  /** told why the bridge cannot be made (the node reports NetworkUnavailable), then undefined once it is */
  reportProblem?: (problem: string | undefined) => void;
}

export interface PodNetwork {
  /** the runtime network infra containers join */
  readonly name: string;
  readonly podCidr: string;
  readonly clusterCidr: string;
  /** Stops following nodes. Network, rules and routes stay: running pods keep their connectivity. */
  stop(): void;
  /** Resolves when no route reconcile is running (tests). */
  idle(): Promise<void>;
}

async function waitForPodCidr(o: PodNetworkOptions): Promise<{ podCidr: string; clusterCidr: string } | undefined> {
  const deadline = Date.now() + (o.waitForCidrMs ?? 30_000);
  for (;;) {
    try {
      const node = await o.client.get<Node>(CORE.nodes, { name: o.nodeName });
      const podCidr = node.spec?.podCIDR;
      if (podCidr) return { podCidr, clusterCidr: node.metadata.annotations?.[ANNOTATION_CLUSTER_CIDR] ?? DEFAULT_CLUSTER_CIDR };
    } catch (err) {
      o.log.debug({ err: (err as Error).message }, 'reading own node for podCIDR failed');
    }
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Installs the masquerade and forward rules of one pod network (idempotent). */
export async function ensurePodNetworkRules(p: { name: string; podCidr: string; clusterCidr: string }): Promise<void> {
  const comment = ['-m', 'comment', '--comment', ruleComment(p.name)];
  await ensureIptablesRule({ table: 'nat', chain: 'POSTROUTING', position: 'first', rule: ['-s', p.podCidr, '!', '-d', p.clusterCidr, ...comment, '-j', 'MASQUERADE'] });
  // Docker moves its isolation jump back to the top of FORWARD whenever it creates a network, so rules
  // placed there end up behind it; DOCKER-USER is the chain Docker keeps first and never rewrites.
  const chain = (await hasChain('filter', 'DOCKER-USER')) ? 'DOCKER-USER' : 'FORWARD';
  await ensureIptablesRule({ table: 'filter', chain, position: 'first', rule: ['-i', p.name, '-d', p.clusterCidr, ...comment, '-j', 'ACCEPT'] });
  await ensureIptablesRule({ table: 'filter', chain, position: 'first', rule: ['-o', p.name, '-s', p.clusterCidr, ...comment, '-j', 'ACCEPT'] });
}

/**
 * Removes what the agent set up for a node's pod networks (those labelled with the node's name, of any
 * cluster): their iptables rules and runtime networks (a network only when no container uses it). For
 * test teardown, where node names are unique; the agent never calls it.
 */
export async function removePodNetwork(p: { nodeName: string; networks: NetworkRuntime }): Promise<void> {
  for (const n of await p.networks.listNetworks()) {
    if (n.labels[LABEL_NETWORK_MANAGED] !== 'true' || n.labels[LABEL_NETWORK_NODE] !== p.nodeName) continue;
    for (const table of ['nat', 'filter']) await deleteIptablesRulesByComment(table, ruleComment(n.name));
    await p.networks.removeNetwork(n.id).catch(() => undefined);
  }
}

/** The routes this node wants: every other node's podCIDR via its InternalIP (nodes on this very host excluded). */
export function wantedRoutes(nodes: Node[], self: string, local: Set<string>): PodRoute[] {
  const out: PodRoute[] = [];
  for (const n of nodes) {
    if (n.metadata.name === self || !n.spec?.podCIDR) continue;
    const ip = n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    if (!ip || local.has(ip)) continue;
    out.push({ cidr: n.spec.podCIDR, via: ip });
  }
  return out.sort((a, b) => a.cidr.localeCompare(b.cidr));
}

/**
 * Sets the pod network up; resolves with it, or undefined when the node got no podCIDR in time (the
 * control plane runs without node IPAM: pods then use the runtime's default bridge, and the agent says
 * so). A bridge that cannot be made is retried every resync, its reason reported meanwhile, and this
 * resolves only once it exists: pods never start on another network. A pod range held by another
 * cluster on the host rejects with HostConflictError.
 */
export async function startPodNetwork(o: PodNetworkOptions): Promise<PodNetwork | undefined> {
  const log = o.log.child({ component: 'pod-network' });
  const cidrs = await waitForPodCidr(o);
  if (!cidrs) {
    log.warn('the control plane assigned no podCIDR to this node (node-ipam disabled?); pods use Docker\'s default bridge');
    return undefined;
  }
  const name = await makeBridge(o, cidrs.podCidr, log);
  o.reportProblem?.(undefined);
  try {
    fs.writeFileSync('/proc/sys/net/ipv4/ip_forward', '1');
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'cannot enable ip_forward; pods on other hosts may be unreachable');
  }
  const ensureRules = () =>
    ensurePodNetworkRules({ name, ...cidrs }).catch((err: unknown) => log.warn({ err: (err as Error).message }, 'cannot install pod network iptables rules'));
  await ensureRules();

  const nodes = new Informer<Node>({ client: o.client, resource: CORE.nodes, log });
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let lastFailed = '';
  const reconcile = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      const result = await reconcilePodRoutes(wantedRoutes(nodes.list(), o.nodeName, localIpv4Addresses()));
      for (const r of result.added) log.info(r, 'pod route set');
      for (const r of result.removed) log.info(r, 'pod route removed');
      const failed = JSON.stringify(result.failed);
      if (result.failed.length && failed !== lastFailed) log.warn({ failed: result.failed }, 'some pod routes could not be set; retrying');
      lastFailed = failed;
    })()
      .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'pod route reconcile failed'))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          reconcile();
        }
      });
  };
  nodes.addHandlers({ onAdd: reconcile, onUpdate: (n, old) => routeFacts(n) !== routeFacts(old) && reconcile(), onDelete: reconcile });
  // The watch may be down while the API is unreachable; routes already in place keep working meanwhile.
  nodes.start().then(reconcile, (err: unknown) => log.warn({ err: (err as Error).message }, 'node watch for pod routes failed to start'));
  const timer = setInterval(() => {
    void ensureRules();
    reconcile();
  }, o.resyncMs ?? 10_000);
  timer.unref();
  log.info({ network: name, ...cidrs }, 'pod network ready');
  return {
    name,
    ...cidrs,
    stop() {
      stopped = true;
      clearInterval(timer);
      nodes.stop();
    },
    async idle() {
      while (running) await running;
    },
  };
}

/** Makes the pod bridge, retrying every resync (a conflict with another cluster excepted); resolves with its name. */
async function makeBridge(o: PodNetworkOptions, podCidr: string, log: Logger): Promise<string> {
  for (let failures = 0; ; failures++) {
    try {
      return await ensurePodBridgeNetwork({ networks: o.networks, clusterId: o.clusterId, nodeName: o.nodeName, podCidr, dataDir: o.dataDir, log });
    } catch (err) {
      if (err instanceof HostConflictError) throw err;
      if (failures === 0) log.error({ err: (err as Error).message, podCIDR: podCidr }, 'cannot create the pod network; retrying, and reporting NetworkUnavailable');
      o.reportProblem?.(`cannot create the pod bridge on ${podCidr}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, o.resyncMs ?? 10_000));
    }
  }
}

function routeFacts(n: Node): string {
  return `${n.spec?.podCIDR ?? ''}|${n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? ''}`;
}
