/**
 * The node's heartbeat Lease (coordination.k8s.io/v1, kube-node-lease/<node>), renewed every
 * renewIntervalMs as the kubelet does: a small write the node lifecycle controller watches, cheaper
 * than a Node status update. The Lease is owned by the Node, so deleting the Node collects it. As the
 * kubelet's lease controller, a renewal is one update of the Lease the last one returned; the Lease is
 * read again only when that update conflicts or finds it gone.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import type { Lease, Node } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import { microTime, NODE_LEASE_NAMESPACE } from '../../src/api/lease.js';
import type { Clock, TimerHandle } from '../clock.js';
import { LEASES } from '../../src/api/identities.js';

export interface NodeLeaseOptions {
  client: Client;
  nodeName: string;
  clock: Clock;
  log: Logger;
  /** renewal period (Kubernetes: 10 s) */
  renewIntervalMs: number;
  /** advertised lease duration (Kubernetes: 40 s) */
  leaseDurationSeconds?: number;
}

export class NodeLease {
  private timer: TimerHandle | undefined;
  private stopped = false;
  private renewing: Promise<void> | undefined;
  private readonly log: Logger;
  /** the Lease as the last renewal left it */
  private latest: Lease | undefined;

  constructor(private readonly opts: NodeLeaseOptions) {
    this.log = opts.log.child({ component: 'node-lease' });
  }

  /** One renewal: update the Lease's renewTime, creating the Lease when it does not exist. */
  async renew(): Promise<void> {
    const { client, nodeName, clock } = this.opts;
    const now = microTime(clock.now());
    const renewed = (lease: Lease): Lease => ({ ...lease, spec: { ...(lease.spec ?? {}), holderIdentity: nodeName, leaseDurationSeconds: this.duration(), renewTime: now } });
    if (this.latest) {
      try {
        this.latest = await client.update(LEASES, renewed(this.latest));
        return;
      } catch (err) {
        this.latest = undefined;
        if (!(isApiError(err) && (err.reason === 'Conflict' || err.reason === 'NotFound'))) throw err;
      }
    }
    try {
      const lease = await client.get<Lease>(LEASES, { namespace: NODE_LEASE_NAMESPACE, name: nodeName });
      this.latest = await client.update(LEASES, renewed(lease));
      return;
    } catch (err) {
      if (!(isApiError(err) && err.reason === 'NotFound')) throw err;
    }
    const node = await client.get<Node>(CORE.nodes, { name: nodeName }).catch(() => undefined);
    const lease: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: nodeName,
        namespace: NODE_LEASE_NAMESPACE,
        ...(node?.metadata.uid ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: node.metadata.uid }] } : {}),
      },
      spec: { holderIdentity: nodeName, leaseDurationSeconds: this.duration(), acquireTime: now, renewTime: now },
    };
    this.latest = await client.create(LEASES, lease, { namespace: NODE_LEASE_NAMESPACE });
    this.log.info('node lease created');
  }

  private duration(): number {
    return this.opts.leaseDurationSeconds ?? 40;
  }

  /** Renews now, then every renewIntervalMs (a failed renewal is retried at the next tick). */
  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.renewing = this.renew()
        .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'node lease renewal failed'))
        .finally(() => {
          this.renewing = undefined;
          if (!this.stopped) this.timer = this.opts.clock.setTimeout(tick, this.opts.renewIntervalMs);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    await this.renewing;
  }
}
