import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { Node, NodeCondition } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { Informer } from '../../client/informer.js';

export interface NodeLifecycleOptions {
  client: Client;
  log: Logger;
  /** a node whose agent has not posted status for this long becomes Ready=Unknown (Kubernetes: 40 s) */
  gracePeriodMs?: number;
  /** how often heartbeats are checked (Kubernetes: 5 s) */
  monitorPeriodMs?: number;
  now?: () => number;
}

/**
 * Watches node heartbeats and marks a silent node's conditions Unknown, with the reason and
 * message kube-controller-manager uses, so the scheduler stops placing pods there.
 * (Taints and eviction after the toleration come with multi-host node lifecycle.)
 */
export class NodeLifecycleController {
  readonly nodes: Informer<Node>;
  private timer: NodeJS.Timeout | undefined;
  private readonly gracePeriodMs: number;
  private readonly now: () => number;
  /** first time we saw each node without a heartbeat time, so brand-new nodes get a grace period too */
  private readonly firstSeen = new Map<string, number>();

  constructor(private readonly opts: NodeLifecycleOptions) {
    this.gracePeriodMs = opts.gracePeriodMs ?? 40_000;
    this.now = opts.now ?? Date.now;
    this.nodes = new Informer<Node>({ client: opts.client, resource: CORE.nodes, log: opts.log });
  }

  async start(): Promise<void> {
    await this.nodes.start();
    this.timer = setInterval(() => void this.monitor().catch((e: unknown) => this.opts.log.warn({ err: (e as Error).message }, 'node monitor failed')), this.opts.monitorPeriodMs ?? 5000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.nodes.stop();
  }

  /** One pass over all nodes; exported for tests that drive time themselves. */
  async monitor(): Promise<void> {
    const now = this.now();
    for (const node of this.nodes.list()) {
      const name = node.metadata.name!;
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status === 'Unknown') continue;
      const beat = ready?.lastHeartbeatTime ? Date.parse(ready.lastHeartbeatTime) : undefined;
      const since = beat ?? this.firstSeen.get(name) ?? (this.firstSeen.set(name, now), now);
      if (now - since < this.gracePeriodMs) continue;
      await this.markUnknown(name);
    }
  }

  private async markUnknown(name: string): Promise<void> {
    const ts = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    for (let attempt = 0; attempt < 5; attempt++) {
      const node = await this.opts.client.get<Node>(CORE.nodes, { name });
      const status = (node.status ??= {});
      const conditions: NodeCondition[] = status.conditions?.length ? status.conditions : [{ type: 'Ready', status: 'Unknown' }];
      status.conditions = conditions.map((c) =>
        c.status === 'Unknown' && c.reason === 'NodeStatusUnknown'
          ? c
          : { ...c, status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.', lastTransitionTime: ts },
      );
      try {
        await this.opts.client.update(CORE.nodes, node, { subresource: 'status' });
        this.opts.log.warn({ node: name }, 'node stopped posting status; marked Ready=Unknown');
        return;
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      }
    }
  }
}
