/**
 * The agent's one call into the service proxy: builds it with real nft unless told otherwise, lets
 * DNATed traffic through Docker's FORWARD policy, keeps hairpin mode on the pod bridge's ports, and
 * starts the proxy in the background (the agent's start-up
 * does not wait for the first table build; failures are logged and retried by the proxy).
 */
import type { Logger } from 'pino';
import type { Client } from '../../src/client/client.js';
import type { Informer } from '../../src/client/informer.js';
import { ensureDnatForwardAccepted } from './forward-accept.js';
import { startHairpinKeeper } from './hairpin.js';
import { NftCommand, type NftExecutor } from './nft-executor.js';
import { ServiceProxy } from './service-proxy.js';
import { ConntrackCommand } from './udp-conntrack.js';
import type { Service } from '../../src/api/types.js';

export interface StartServiceProxyOptions {
  client: Client;
  nodeName: string;
  table: string;
  /** the table's owner comment (agent/host-conflicts.ts) */
  tableComment?: string | undefined;
  clusterCidr: string | undefined;
  /** the agent's Services informer, shared with containers' service variables */
  services: Informer<Service>;
  /** the node's pod bridge, whose ports get hairpin mode (none when pods use a network the agent did not make) */
  bridge: string | undefined;
  /** default: the real nft (and the host's iptables for the forward accept) */
  executor: NftExecutor | undefined;
  log: Logger;
}

export interface RunningServiceProxy {
  readonly proxy: ServiceProxy;
  /** Stops following the API; the rules (and hairpin settings) stay. */
  stop(): void;
}

export function startServiceProxy(o: StartServiceProxyOptions): RunningServiceProxy {
  const log = o.log.child({ component: 'service-proxy' });
  const proxy = new ServiceProxy({ client: o.client, nodeName: o.nodeName, table: o.table, tableComment: o.tableComment, services: o.services, clusterCidr: o.clusterCidr, executor: o.executor ?? new NftCommand(), conntrack: o.executor ? undefined : new ConntrackCommand(), log });
  if (!o.executor) ensureDnatForwardAccepted().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'cannot add the forward accept for DNATed Service traffic'));
  const hairpin = o.bridge && !o.executor ? startHairpinKeeper({ bridge: o.bridge, log }) : undefined;
  proxy.start().catch((err: unknown) => log.error({ err: (err as Error).message }, 'service proxy did not start'));
  return {
    proxy,
    stop: () => {
      hairpin?.stop();
      proxy.stop();
    },
  };
}
