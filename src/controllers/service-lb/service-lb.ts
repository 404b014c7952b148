/**
 * LoadBalancer Services as k3s's ServiceLB serves them: there is no external load balancer, every
 * node accepts the Service's traffic on its own addresses (the service proxy programs the node
 * ports and the load-balancer addresses), so `status.loadBalancer.ingress` lists the InternalIPs of
 * the Ready nodes, with `ipMode: VIP`. A Service that is no longer of type LoadBalancer has its
 * ingress cleared; one with a `loadBalancerClass` belongs to another implementation and is left
 * alone, as upstream's service controller and ServiceLB leave it.
 */
import { CoalescedPass } from '../runtime/coalesced-pass.js';
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { LoadBalancerIngress, Node, Service } from '../../api/types.js';
import { type Client, CORE } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { SERVICES } from '../../api/identities.js';


export interface ServiceLBOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
}

function nodeReady(node: Node): boolean {
  return !node.metadata.deletionTimestamp && (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function internalIP(node: Node): string | undefined {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
}

/** The ingress a LoadBalancer Service gets from these nodes: each Ready node's InternalIP, sorted. */
export function ingressFor(nodes: Node[]): LoadBalancerIngress[] {
  const ips = new Set<string>();
  for (const node of nodes) {
    const ip = nodeReady(node) ? internalIP(node) : undefined;
    if (ip) ips.add(ip);
  }
  return [...ips].sort(compareIPs).map((ip) => ({ ip, ipMode: 'VIP' as const }));
}

function compareIPs(a: string, b: string): number {
  const n = (ip: string) => ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
  return n(a) - n(b) || (a < b ? -1 : a > b ? 1 : 0);
}

export class ServiceLBController {
  readonly services: Informer<Service>;
  readonly nodes: Informer<Node>;
  private readonly pass: CoalescedPass;

  constructor(private readonly opts: ServiceLBOptions) {
    this.pass = new CoalescedPass({
      run: () => this.sync(),
      ready: () => this.services.hasSynced() && this.nodes.hasSynced(),
      onError: (e) => this.opts.log.warn({ err: e.message }, 'load balancer status sync failed'),
    });
    this.services = opts.informers.informerFor<Service>(SERVICES);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    const kick = () => this.pass.kick();
    this.services.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
    this.nodes.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  async start(): Promise<void> {
    await this.pass.startAfter([this.services, this.nodes]);
  }

  async stop(): Promise<void> {
    await this.pass.stop();
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    await this.pass.idle();
  }

  /** One pass over the cached Services. Public so tests drive passes themselves. */
  async sync(): Promise<void> {
    const ingress = ingressFor(this.nodes.list());
    for (const svc of this.services.list()) {
      if (svc.spec?.loadBalancerClass) continue;
      const want = svc.spec?.type === 'LoadBalancer' && !svc.metadata.deletionTimestamp ? ingress : [];
      const have = svc.status?.loadBalancer?.ingress ?? [];
      if (JSON.stringify(have) === JSON.stringify(want)) continue;
      await this.write(svc, want);
    }
  }

  private async write(svc: Service, ingress: LoadBalancerIngress[]): Promise<void> {
    const next: Service = { ...svc, status: { ...(svc.status ?? {}), loadBalancer: ingress.length ? { ingress } : {} } };
    try {
      await this.opts.client.update(SERVICES, next, { subresource: 'status' });
    } catch (e) {
      // A newer version is on its way through the informer, which brings another pass.
      if (e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound')) return;
      throw e;
    }
  }
}
