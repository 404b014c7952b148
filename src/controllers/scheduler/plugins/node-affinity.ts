/**
 * Owns the NodeAffinity plugin: nodeSelector and required node affinity as a filter (terms ORed,
 * requirements within a term ANDed; matchExpressions on labels, matchFields on metadata.name; In,
 * NotIn, Exists, DoesNotExist, Gt, Lt), a preFilter that narrows the attempt to the named nodes when
 * every term pins metadata.name (DaemonSet pods), and the preferred terms' weights as its score.
 */
import { nodeSelectorTermMatches } from '../../../api/node-selector.js';
import type { Node, NodeSelectorTerm, PodSpec } from '../../../api/types.js';
import { defaultNormalize, type Cycle, type FilterStatus, type NodeInfo, type Plugin, type PreFilterResult } from '../framework.js';

export const REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector";

/** nodeSelector and required node affinity (any term). */
export function nodeMatchesPlacement(spec: PodSpec, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && !terms.some((t) => nodeSelectorTermMatches(t, node))) return false;
  return true;
}

/** The node names every required term pins by `metadata.name In`, when all of them do. */
export function pinnedNodeNames(spec: PodSpec): Set<string> | undefined {
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return undefined;
  const names = new Set<string>();
  for (const term of terms) {
    const pin = (term.matchFields ?? []).find((f) => f.key === 'metadata.name' && f.operator === 'In');
    if (!pin) return undefined;
    for (const v of pin.values ?? []) names.add(v);
  }
  return names;
}

export const nodeAffinity: Plugin = {
  name: 'NodeAffinity',
  preFilter(cycle: Cycle): PreFilterResult | undefined {
    const names = pinnedNodeNames(cycle.pod.spec);
    return names ? { nodeNames: names } : undefined;
  },
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    return nodeMatchesPlacement(cycle.pod.spec, node.node) ? undefined : { reasons: [REASON_NODE_AFFINITY], unresolvable: true };
  },
  score(cycle: Cycle, node: NodeInfo): number {
    let sum = 0;
    for (const p of cycle.pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []) {
      if (p.weight && nodeSelectorTermMatches(p.preference, node.node)) sum += p.weight;
    }
    return sum;
  },
  normalizeScore: (_cycle, scores) => defaultNormalize(scores, false),
};
