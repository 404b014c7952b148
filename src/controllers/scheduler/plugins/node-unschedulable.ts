/**
 * Owns the NodeUnschedulable plugin: a cordoned node (spec.unschedulable) takes only pods that
 * tolerate the node.kubernetes.io/unschedulable:NoSchedule taint.
 */
import type { Cycle, FilterStatus, NodeInfo, Plugin } from '../framework.js';
import { tolerates } from '../fit.js';

export const REASON_UNSCHEDULABLE = 'node(s) were unschedulable';

export const nodeUnschedulable: Plugin = {
  name: 'NodeUnschedulable',
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    if (!node.node.spec?.unschedulable) return undefined;
    if (tolerates(cycle.pod.spec.tolerations, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' })) return undefined;
    return { reasons: [REASON_UNSCHEDULABLE], unresolvable: true };
  },
};
