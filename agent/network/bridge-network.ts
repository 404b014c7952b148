/**
 * The node's pod bridge as a runtime network (NetworkRuntime): `berth-<hash>` with the node's podCIDR as
 * its subnet and .1 as gateway, the Linux bridge named like the network, and the runtime's own
 * masquerading off (the agent masquerades only traffic that leaves the cluster CIDR, so pod-to-pod
 * traffic keeps its source IP). The network is labelled with its cluster and agent data dir: a pod
 * range that overlaps a live pod network of another cluster on the host is refused (HostConflictError),
 * never shared.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { Logger } from 'pino';
import { cidrsOverlap, gatewayOf, parseCidr } from '../../src/api/cidr.js';
import type { NetworkRuntime } from '../runtime/networks.js';
import { LABEL_CLUSTER } from '../node/cluster-scope.js';
import { HostConflictError } from '../node/host-conflicts.js';
import { deleteIptablesRulesByComment } from './host-commands.js';

export const LABEL_NETWORK_NODE = 'berth.dev/node-name';
/** the agent data dir that made the network: a network whose dir is gone belongs to a cluster that is gone */
export const LABEL_NETWORK_DATA_DIR = 'berth.dev/agent-data-dir';
export const LABEL_NETWORK_MANAGED = 'berth.dev/pod-network';

/** The comment on every iptables rule the agent made for one pod network. */
export function ruleComment(networkName: string): string {
  return `berth:${networkName}`;
}

/**
 * `berth-` + 8 hex of the cluster id and node name: a valid Linux interface name (≤ 15 chars), stable
 * per node, and distinct for two clusters whose nodes share a name on one host.
 */
export function podNetworkName(p: { clusterId: string; nodeName: string }): string {
  return `berth-${createHash('sha256').update(`${p.clusterId}/${p.nodeName}`).digest('hex').slice(0, 8)}`;
}

export interface EnsureNetworkParams {
  networks: NetworkRuntime;
  clusterId: string;
  nodeName: string;
  podCidr: string;
  dataDir: string;
  log: Logger;
  /** removes the iptables rules of a leftover network (tests replace the host's iptables) */
  deleteRules?: (table: string, comment: string) => Promise<unknown>;
}

/**
 * Creates the network, or checks the existing one has the right subnet; resolves with its name. A
 * network this data dir made before networks carried a cluster label is kept under its old name. A
 * Berth network of a cluster that no longer exists (its agent data dir is gone, no containers attached)
 * that overlaps the subnet is removed first, so a host that ran an earlier cluster is not stuck with
 * its leftovers; one of a cluster still there is a HostConflictError.
 */
export async function ensurePodBridgeNetwork(p: EnsureNetworkParams): Promise<string> {
  const want = parseCidr(p.podCidr);
  const deleteRules = p.deleteRules ?? deleteIptablesRulesByComment;
  const networks = await p.networks.listNetworks();
  const legacy = networks.find((n) => n.labels[LABEL_NETWORK_MANAGED] === 'true' && n.labels[LABEL_NETWORK_DATA_DIR] === p.dataDir && !n.labels[LABEL_CLUSTER]);
  const name = legacy?.name ?? podNetworkName(p);
  const mine = networks.find((n) => n.name === name);
  if (mine) {
    if (mine.subnets.includes(p.podCidr)) return name;
    if (((await p.networks.attachedContainers(mine.id)) ?? 0) > 0) {
      throw new Error(`network ${name} has subnet ${mine.subnets.join(',')} but the node's podCIDR is ${p.podCidr}, and containers still use it`);
    }
    p.log.warn({ network: name, had: mine.subnets, podCIDR: p.podCidr }, 'pod network has an old subnet; recreating it');
    await p.networks.removeNetwork(mine.id);
  }
  for (const n of networks) {
    if (n.name === name || n.labels[LABEL_NETWORK_MANAGED] !== 'true') continue;
    const overlap = n.subnets.find((s) => cidrsOverlap(parseCidr(s), want));
    if (!overlap) continue;
    const dir = n.labels[LABEL_NETWORK_DATA_DIR];
    const inUse = ((await p.networks.attachedContainers(n.id)) ?? 0) > 0;
    const owner = n.labels[LABEL_CLUSTER];
    const live = (dir !== undefined && fs.existsSync(dir)) || inUse;
    if (owner && owner !== p.clusterId && dir !== p.dataDir && live) {
      throw new HostConflictError(
        `this node's pod range ${p.podCidr} overlaps ${overlap}, the pod network ${n.name} of another Berth cluster on this host ` +
          `(agent data dir ${dir ?? 'unknown'}${inUse ? ', containers attached' : ''}). Give this cluster a pod range of its own with --cluster-cidr`,
      );
    }
    // Still used: Docker refuses the new bridge until it is not (NetworkUnavailable meanwhile).
    if (inUse) continue;
    // Removable: this cluster's own (a deleted node's, whose podCIDR came back to this node, or this
    // data dir's of an earlier cluster), or one whose cluster is gone. A network made before networks
    // carried a cluster label, of a data dir still there, may be anyone's: it stays.
    if (owner !== p.clusterId && dir !== p.dataDir && live) continue;
    p.log.warn({ network: n.name }, 'removing a leftover pod network (of a deleted node or a cluster that is gone)');
    await p.networks.removeNetwork(n.id).catch(() => undefined);
    for (const table of ['nat', 'filter']) await deleteRules(table, ruleComment(n.name)).catch(() => 0);
  }
  await p.networks.createBridgeNetwork({
    name,
    subnet: p.podCidr,
    gateway: gatewayOf(want),
    labels: { [LABEL_NETWORK_MANAGED]: 'true', [LABEL_NETWORK_NODE]: p.nodeName, [LABEL_NETWORK_DATA_DIR]: p.dataDir, [LABEL_CLUSTER]: p.clusterId },
  });
  p.log.info({ network: name, podCIDR: p.podCidr }, 'created pod network');
  return name;
}
