/**
 * Owns the NodeResourcesFit plugin (pod count, cpu and memory requests against allocatable, with
 * the LeastAllocated score) and NodeResourcesBalancedAllocation (prefers nodes whose cpu and memory
 * fractions stay close after placing the pod).
 */
import { MAX_NODE_SCORE, type Cycle, type FilterStatus, type NodeInfo, type Plugin } from '../framework.js';

export const nodeResourcesFit: Plugin = {
  name: 'NodeResourcesFit',
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    const alloc = node.allocatable;
    const want = cycle.info.requests;
    const reasons: string[] = [];
    if (BigInt(node.pods.size) + 1n > alloc.pods) reasons.push('Too many pods');
    if (want.cpuMilli > 0n && node.requested.cpuMilli + want.cpuMilli > alloc.cpuMilli) reasons.push('Insufficient cpu');
    if (want.memory > 0n && node.requested.memory + want.memory > alloc.memory) reasons.push('Insufficient memory');
    return reasons.length ? { reasons } : undefined;
  },
  /** LeastAllocated: the mean over cpu and memory of the share left free after placing the pod. */
  score(cycle: Cycle, node: NodeInfo): number {
    const alloc = node.allocatable;
    const free = (requested: bigint, capacity: bigint) => {
      if (capacity === 0n || requested > capacity) return 0;
      return Number(((capacity - requested) * BigInt(MAX_NODE_SCORE)) / capacity);
    };
    const cpu = free(node.nonZeroRequested.cpuMilli + cycle.info.nonZero.cpuMilli, alloc.cpuMilli);
    const mem = free(node.nonZeroRequested.memory + cycle.info.nonZero.memory, alloc.memory);
    return Math.floor((cpu + mem) / 2);
  },
};

export const nodeResourcesBalancedAllocation: Plugin = {
  name: 'NodeResourcesBalancedAllocation',
  score(cycle: Cycle, node: NodeInfo): number {
    const alloc = node.allocatable;
    const fraction = (requested: bigint, capacity: bigint) => (capacity === 0n ? 1 : Math.min(1, Number(requested) / Number(capacity)));
    const cpu = fraction(node.requested.cpuMilli + cycle.info.requests.cpuMilli, alloc.cpuMilli);
    const mem = fraction(node.requested.memory + cycle.info.requests.memory, alloc.memory);
    // Standard deviation of the two fractions is half their distance.
    const std = Math.abs(cpu - mem) / 2;
    return Math.floor((1 - std) * MAX_NODE_SCORE);
  },
};
