/**
 * Lets Service traffic from other hosts through Docker's FORWARD policy. A NodePort or LoadBalancer
 * connection from another host is DNATed to a pod and then forwarded; Docker's filter FORWARD chain
 * (iptables-nft, policy DROP) accepts only its own published ports, and an accept in Berth's nftables
 * table cannot overrule a drop in another table. So, as kube-proxy adds its KUBE-FORWARD accept, one
 * iptables rule in DOCKER-USER (the chain Docker keeps first) accepts connections that were DNATed.
 */
import { ensureIptablesRule, hasChain } from '../network/host-commands.js';

export const SERVICE_PROXY_RULE_COMMENT = 'berth:service-proxy';

export async function ensureDnatForwardAccepted(): Promise<void> {
  const chain = (await hasChain('filter', 'DOCKER-USER')) ? 'DOCKER-USER' : 'FORWARD';
  await ensureIptablesRule({
    table: 'filter',
    chain,
    position: 'first',
    rule: ['-m', 'conntrack', '--ctstate', 'DNAT', '-m', 'comment', '--comment', SERVICE_PROXY_RULE_COMMENT, '-j', 'ACCEPT'],
  });
}
