/** Owns the NodeName plugin: a pod that names its node (spec.nodeName) fits only that node. */
import type { Cycle, FilterStatus, NodeInfo, Plugin } from '../framework.js';

export const REASON_NODE_NAME = "node(s) didn't match the requested node name";

export const nodeName: Plugin = {
  name: 'NodeName',
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    const wanted = cycle.pod.spec.nodeName;
    if (!wanted || wanted === node.name) return undefined;
    return { reasons: [REASON_NODE_NAME], unresolvable: true };
  },
};
