/**
 * The node's pod bridge as a Docker network: `berth-<hash>` with the node's podCIDR as its subnet and
 * .1 as gateway, the Linux bridge named like the network, and Docker's own masquerading off (the agent
 * masquerades only traffic that leaves the cluster CIDR, so pod-to-pod traffic keeps its source IP).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { deleteIptablesRulesByComment } from './host-commands.js';
import { cidrsOverlap, gatewayOf, parseCidr } from '../../src/api/cidr.js';

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
  docker: Dockerode;
  name: string;
  nodeName: string;
  podCidr: string;
  dataDir: string;
  log: Logger;
}

function subnetsOf(n: Dockerode.NetworkInspectInfo): string[] {
  return (n.IPAM?.Config ?? []).map((c) => c.Subnet).filter((s): s is string => !!s);
}

/**
 * Creates the network, or checks the existing one has the right subnet. A Berth network of a cluster
 * that no longer exists (its agent data dir is gone, no containers attached) that overlaps the subnet is
 * removed first, so a host that ran an earlier cluster is not stuck with its leftovers.
 */
export async function ensurePodBridgeNetwork(p: EnsureNetworkParams): Promise<void> {
  const want = parseCidr(p.podCidr);
  const networks = await p.docker.listNetworks();
  const mine = networks.find((n) => n.Name === p.name);
  if (mine) {
    const subnets = subnetsOf(mine);
    if (subnets.includes(p.podCidr)) return;
    const info = await p.docker.getNetwork(mine.Id).inspect();
    if (Object.keys(info.Containers ?? {}).length > 0) {
      throw new Error(`network ${p.name} has subnet ${subnets.join(',')} but the node's podCIDR is ${p.podCidr}, and containers still use it`);
    }
    p.log.warn({ network: p.name, had: subnets, podCIDR: p.podCidr }, 'pod network has an old subnet; recreating it');
    await p.docker.getNetwork(mine.Id).remove();
  }
  for (const n of networks) {
    if (n.Name === p.name || n.Labels?.[LABEL_NETWORK_MANAGED] !== 'true') continue;
    if (!subnetsOf(n).some((s) => cidrsOverlap(parseCidr(s), want))) continue;
    const dir = n.Labels?.[LABEL_NETWORK_DATA_DIR];
    if (!dir || fs.existsSync(dir)) continue;
    const info = await p.docker.getNetwork(n.Id).inspect();
    if (Object.keys(info.Containers ?? {}).length > 0) continue;
    p.log.warn({ network: n.Name }, 'removing a leftover pod network of a cluster that is gone');
    await p.docker.getNetwork(n.Id).remove().catch(() => undefined);
    for (const table of ['nat', 'filter']) await deleteIptablesRulesByComment(table, ruleComment(n.Name)).catch(() => 0);
  }
  await p.docker.createNetwork({
    Name: p.name,
    Driver: 'bridge',
    CheckDuplicate: true,
    IPAM: { Driver: 'default', Config: [{ Subnet: p.podCidr, Gateway: gatewayOf(want) }] },
    Options: {
      'com.docker.network.bridge.name': p.name,
      'com.docker.network.bridge.enable_ip_masquerade': 'false',
      'com.docker.network.bridge.enable_icc': 'true',
    },
    Labels: { [LABEL_NETWORK_MANAGED]: 'true', [LABEL_NETWORK_NODE]: p.nodeName, [LABEL_NETWORK_DATA_DIR]: p.dataDir },
  });
  p.log.info({ network: p.name, podCIDR: p.podCidr }, 'created pod network');
}
