/**
 * Owns the TaintToleration plugin: a node's NoSchedule/NoExecute taints (its own and the lifecycle
 * ones fit.ts derives from its conditions) must be tolerated; the score prefers nodes with fewer
 * untolerated PreferNoSchedule taints.
 */
import type { Toleration } from '../../../api/types.js';
import { tolerates } from '../fit.js';
import { defaultNormalize, type Cycle, type FilterStatus, type NodeInfo, type Plugin } from '../framework.js';

export const taintToleration: Plugin = {
  name: 'TaintToleration',
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    for (const taint of node.taints) {
      if (taint.effect === 'PreferNoSchedule') continue;
      if (!tolerates(cycle.pod.spec.tolerations, taint)) return { reasons: [`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`], unresolvable: true };
    }
    return undefined;
  },
  score(cycle: Cycle, node: NodeInfo): number {
    // Only tolerations that apply to PreferNoSchedule (or to every effect) count here.
    const preferTolerations: Toleration[] = (cycle.pod.spec.tolerations ?? []).filter((t) => !t.effect || t.effect === 'PreferNoSchedule');
    let count = 0;
    for (const taint of node.node.spec?.taints ?? []) if (taint.effect === 'PreferNoSchedule' && !tolerates(preferTolerations, taint)) count++;
    return count;
  },
  normalizeScore: (_cycle, scores) => defaultNormalize(scores, true),
};
