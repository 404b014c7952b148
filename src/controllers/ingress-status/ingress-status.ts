/**
 * Owns status.loadBalancer of the Ingresses Berth's built-in ingress controller serves, and the
 * `berth` IngressClass itself. The data plane runs on the nodes (each agent's nginx), so an Ingress's
 * load-balancer ingress is every Ready node whose agent says, in its Node's
 * `ingress.berth.dev/ports` annotation, that its ingress runs: the node's InternalIP with those ports
 * (a port the agent could not take carries error PortInUse, so `kubectl get ingress -o yaml` says
 * why). Ingresses of other classes are left alone; the agents never write Ingresses, so a node needs
 * no write access to them.
 *
 * At start the `berth` IngressClass is created, marked the default class, when no class of that
 * name exists (an operator's edits to it, or its deletion while the server runs, are kept).
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import { BERTH_INGRESS_CLASS, BERTH_INGRESS_CONTROLLER, DEFAULT_INGRESS_CLASS_ANNOTATION, classControllers, nodeIngressPorts, servedBy } from '../../api/ingress.js';
import { INGRESSCLASSES, INGRESSES } from '../../api/identities.js';
import type { Ingress, IngressLoadBalancerIngress, KubeObject, Node } from '../../api/types.js';
import { type Client, CORE } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { CoalescedPass } from '../runtime/coalesced-pass.js';
import type { SharedInformers } from '../runtime/informer-factory.js';

export interface IngressStatusOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
}

/** The `berth` IngressClass as it is first created: the default class, served by the agents' nginx. */
export function berthIngressClass(): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name: BERTH_INGRESS_CLASS, annotations: { [DEFAULT_INGRESS_CLASS_ANNOTATION]: 'true' } },
    spec: { controller: BERTH_INGRESS_CONTROLLER },
  } as KubeObject;
}

function nodeReady(node: Node): boolean {
  return !node.metadata.deletionTimestamp && (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function ipOrder(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** What the served Ingresses' status.loadBalancer.ingress is: each Ready node running the ingress, by IP. */
export function ingressPointsFor(nodes: readonly Node[]): IngressLoadBalancerIngress[] {
  const points: IngressLoadBalancerIngress[] = [];
  for (const node of nodes) {
    const ports = nodeIngressPorts(node);
    const ip = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    if (!ports || !ip || !nodeReady(node)) continue;
    points.push(ports.length ? { ip, ports } : { ip });
  }
  return points.sort((a, b) => ipOrder(a.ip!) - ipOrder(b.ip!) || a.ip!.localeCompare(b.ip!));
}

export class IngressStatusController {
  readonly ingresses: Informer<Ingress>;
  readonly nodes: Informer<Node>;
  readonly classes: Informer<KubeObject>;
  private readonly pass: CoalescedPass;

  constructor(private readonly opts: IngressStatusOptions) {
    this.pass = new CoalescedPass({
      run: () => this.sync(),
      ready: () => this.ingresses.hasSynced() && this.nodes.hasSynced() && this.classes.hasSynced(),
      onError: (e) => this.opts.log.warn({ err: e.message }, 'ingress status sync failed'),
    });
    this.ingresses = opts.informers.informerFor<Ingress>(INGRESSES);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    this.classes = opts.informers.informerFor<KubeObject>(INGRESSCLASSES);
    const kick = () => this.pass.kick();
    for (const inf of [this.ingresses, this.nodes, this.classes] as Informer<KubeObject>[]) inf.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  async start(): Promise<void> {
    await this.ensureClass().catch((e: unknown) => this.opts.log.warn({ err: (e as Error).message }, 'cannot create the berth IngressClass'));
    await this.pass.startAfter([this.ingresses, this.nodes, this.classes]);
  }

  async stop(): Promise<void> {
    await this.pass.stop();
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    await this.pass.idle();
  }

  private async ensureClass(): Promise<void> {
    try {
      await this.opts.client.get(INGRESSCLASSES, { name: BERTH_INGRESS_CLASS });
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
      await this.opts.client.create(INGRESSCLASSES, berthIngressClass()).catch((err: unknown) => {
        if (!(err instanceof ApiError && err.reason === 'AlreadyExists')) throw err;
      });
    }
  }

  /** One pass over the cached Ingresses. Public so tests drive passes themselves. */
  async sync(): Promise<void> {
    const points = ingressPointsFor(this.nodes.list());
    const controllers = classControllers(this.classes.list());
    for (const ing of this.ingresses.list()) {
      if (!servedBy(ing, controllers) || ing.metadata.deletionTimestamp) continue;
      const have = ing.status?.loadBalancer?.ingress ?? [];
      if (JSON.stringify(have) === JSON.stringify(points)) continue;
      const next: Ingress = { ...ing, status: { ...(ing.status ?? {}), loadBalancer: points.length ? { ingress: points } : {} } };
      try {
        await this.opts.client.update(INGRESSES, next, { subresource: 'status' });
      } catch (e) {
        // A newer version is on its way through the informer, which brings another pass.
        if (e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound')) continue;
        throw e;
      }
    }
  }
}
