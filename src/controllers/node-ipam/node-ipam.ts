/**
 * Node IPAM: gives every Node a pod subnet (spec.podCIDR and spec.podCIDRs) cut from the cluster CIDR,
 * as kube-controller-manager's range allocator does. The allocation lives on the Node itself, so it is
 * stable across control-plane restarts (the in-use set is rebuilt from the nodes before anything new is
 * handed out) and a subnet is free again as soon as its Node is deleted.
 */
import { CoalescedPass } from '../runtime/coalesced-pass.js';
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import type { Node } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { ANNOTATION_CLUSTER_CIDR } from '../../api/cluster-cidr.js';
import { formatCidr, parseCidr, subnetAt, subnetCount, subnetIndex, type Ipv4Cidr } from '../../api/cidr.js';

export { DEFAULT_CLUSTER_CIDR } from '../../api/cluster-cidr.js';
import { DEFAULT_CLUSTER_CIDR } from '../../api/cluster-cidr.js';
export const DEFAULT_NODE_CIDR_MASK_SIZE = 24;

export interface NodeIpamOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the network every pod address comes from (default 10.244.0.0/16) */
  clusterCidr?: string;
  /** prefix length of each node's subnet (default 24) */
  nodeCidrMaskSize?: number;
}

export class NodeIpamController {
  readonly nodes: Informer<Node>;
  private readonly cluster: Ipv4Cidr;
  private readonly nodePrefix: number;
  private readonly pass: CoalescedPass;

  constructor(private readonly opts: NodeIpamOptions) {
    this.pass = new CoalescedPass({
      run: () => this.allocate(),
      ready: () => this.nodes.hasSynced(),
      onError: (e) => this.opts.log.warn({ err: e.message }, 'pod CIDR allocation failed'),
    });
    this.cluster = parseCidr(opts.clusterCidr ?? DEFAULT_CLUSTER_CIDR);
    this.nodePrefix = opts.nodeCidrMaskSize ?? DEFAULT_NODE_CIDR_MASK_SIZE;
    if (subnetCount(this.cluster, this.nodePrefix) === 0) {
      throw new Error(`node CIDR mask size /${this.nodePrefix} does not fit in cluster CIDR ${formatCidr(this.cluster)}`);
    }
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    const kick = () => this.pass.kick();
    this.nodes.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  /** The cluster CIDR in canonical form. */
  get clusterCidr(): string {
    return formatCidr(this.cluster);
  }

  async start(): Promise<void> {
    await this.pass.startAfter([this.nodes]);
  }

  async stop(): Promise<void> {
    await this.pass.stop();
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    await this.pass.idle();
  }

  /**
   * One pass over the cached nodes: rebuild the in-use set from every node, then give each node
   * without a subnet the lowest free one. Public so tests drive passes themselves.
   */
  async allocate(): Promise<void> {
    const used = new Set<number>();
    const waiting: string[] = [];
    for (const node of this.nodes.list()) {
      const cidr = node.spec?.podCIDR;
      if (cidr) {
        const idx = this.indexOf(cidr);
        if (idx !== undefined) {
          used.add(idx);
          if (node.metadata.annotations?.[ANNOTATION_CLUSTER_CIDR] !== this.clusterCidr) await this.annotate(node.metadata.name!);
        }
        else this.opts.log.warn({ node: node.metadata.name, podCIDR: cidr, clusterCidr: this.clusterCidr }, 'node has a pod CIDR outside the cluster CIDR; left alone');
      } else if (!node.metadata.deletionTimestamp) {
        waiting.push(node.metadata.name!);
      }
    }
    const total = subnetCount(this.cluster, this.nodePrefix);
    let next = 0;
    for (const name of waiting.sort()) {
      while (used.has(next)) next++;
      if (next >= total) {
        this.opts.log.error({ node: name, clusterCidr: this.clusterCidr }, 'cluster CIDR is exhausted; node gets no pod CIDR');
        return;
      }
      const cidr = formatCidr(subnetAt(this.cluster, this.nodePrefix, next));
      if (await this.assign(name, cidr)) used.add(next);
    }
  }

  private indexOf(cidr: string): number | undefined {
    try {
      return subnetIndex(this.cluster, this.nodePrefix, parseCidr(cidr));
    } catch {
      return undefined;
    }
  }

  /** Tells the node's agent which cluster CIDR its subnet belongs to (nodes allocated before the annotation existed). */
  private async annotate(name: string): Promise<void> {
    try {
      await this.opts.client.patch<Node>(CORE.nodes, { name, type: 'merge', patch: { metadata: { annotations: { [ANNOTATION_CLUSTER_CIDR]: this.clusterCidr } } } });
    } catch (e) {
      if (!(e instanceof ApiError && e.reason === 'NotFound')) throw e;
    }
  }

  /** Writes the subnet with the node's resourceVersion, so a concurrent writer wins and we re-read. */
  private async assign(name: string, cidr: string): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      let node: Node;
      try {
        node = await this.opts.client.get<Node>(CORE.nodes, { name });
      } catch (e) {
        if (e instanceof ApiError && e.reason === 'NotFound') return false;
        throw e;
      }
      if (node.spec?.podCIDR || node.metadata.deletionTimestamp) return false;
      node.spec = { ...(node.spec ?? {}), podCIDR: cidr, podCIDRs: [cidr] };
      node.metadata.annotations = { ...(node.metadata.annotations ?? {}), [ANNOTATION_CLUSTER_CIDR]: this.clusterCidr };
      try {
        await this.opts.client.update(CORE.nodes, node);
        this.opts.log.info({ node: name, podCIDR: cidr }, 'allocated pod CIDR');
        return true;
      } catch (e) {
        if (!(e instanceof ApiError && e.reason === 'Conflict')) throw e;
      }
    }
    return false;
  }
}
