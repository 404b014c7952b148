/**
 * The node's pod bridge as a runtime network (NetworkRuntime): `berth-<hash>` with the node's podCIDR as
 * its subnet and .1 as gateway, the Linux bridge named like the network, and the runtime's own
 * masquerading off (the agent masquerades only traffic that leaves the cluster CIDR, so pod-to-pod
 * traffic keeps its source IP).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { Logger } from 'pino';
import { cidrsOverlap, gatewayOf, parseCidr } from '../../src/api/cidr.js';
import type { NetworkRuntime } from '../runtime/networks.js';
import { deleteIptablesRulesByComment } from './host-commands.js';

export const LABEL_NETWORK_NODE = 'berth.dev/node-name';
/** the agent data dir that made the network: a network whose dir is gone belongs to a cluster that is gone */
export const LABEL_NETWORK_DATA_DIR = 'berth.dev/agent-data-dir';
export const LABEL_NETWORK_MANAGED = 'berth.dev/pod-network';

/** The comment on every iptables rule the agent made for one pod network. */
export function ruleComment(networkName: string): string {
  return `berth:${networkName}`;
}

/** `berth-` + 8 hex of the node name: a valid Linux interface name (≤ 15 chars), stable per node. */
export function podNetworkName(nodeName: string): string {
  return `berth-${createHash('sha256').update(nodeName).digest('hex').slice(0, 8)}`;
}

export interface EnsureNetworkParams {
  networks: NetworkRuntime;
  name: string;
  nodeName: string;
  podCidr: string;
  dataDir: string;
  log: Logger;
  /** removes the iptables rules of a leftover network (tests replace the host's iptables) */
  deleteRules?: (table: string, comment: string) => Promise<unknown>;
}

/**
 * Creates the network, or checks the existing one has the right subnet. A Berth network of a cluster
 * that no longer exists (its agent data dir is gone, no containers attached) that overlaps the subnet is
 * removed first, so a host that ran an earlier cluster is not stuck with its leftovers.
 */
export async function ensurePodBridgeNetwork(p: EnsureNetworkParams): Promise<void> {
  const want = parseCidr(p.podCidr);
  const deleteRules = p.deleteRules ?? deleteIptablesRulesByComment;
  const networks = await p.networks.listNetworks();
  const mine = networks.find((n) => n.name === p.name);
  if (mine) {
    if (mine.subnets.includes(p.podCidr)) return;
    if (((await p.networks.attachedContainers(mine.id)) ?? 0) > 0) {
      throw new Error(`network ${p.name} has subnet ${mine.subnets.join(',')} but the node's podCIDR is ${p.podCidr}, and containers still use it`);
    }
    p.log.warn({ network: p.name, had: mine.subnets, podCIDR: p.podCidr }, 'pod network has an old subnet; recreating it');
    await p.networks.removeNetwork(mine.id);
  }
  for (const n of networks) {
    if (n.name === p.name || n.labels[LABEL_NETWORK_MANAGED] !== 'true') continue;
    if (!n.subnets.some((s) => cidrsOverlap(parseCidr(s), want))) continue;
    const dir = n.labels[LABEL_NETWORK_DATA_DIR];
    if (!dir || fs.existsSync(dir)) continue;
    if (((await p.networks.attachedContainers(n.id)) ?? 0) > 0) continue;
    p.log.warn({ network: n.name }, 'removing a leftover pod network of a cluster that is gone');
    await p.networks.removeNetwork(n.id).catch(() => undefined);
    for (const table of ['nat', 'filter']) await deleteRules(table, ruleComment(n.name)).catch(() => 0);
  }
  await p.networks.createBridgeNetwork({
    name: p.name,
    subnet: p.podCidr,
    gateway: gatewayOf(want),
    labels: { [LABEL_NETWORK_MANAGED]: 'true', [LABEL_NETWORK_NODE]: p.nodeName, [LABEL_NETWORK_DATA_DIR]: p.dataDir },
  });
  p.log.info({ network: p.name, podCIDR: p.podCidr }, 'created pod network');
}
