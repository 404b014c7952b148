/**
 * Owns the PodTopologySpread plugin. DoNotSchedule constraints filter: placing the pod on a node must
 * keep (pods in the node's domain + the pod itself if it matches) − (fewest in any eligible domain)
 * within maxSkew, the fewest counting as 0 while there are fewer domains than minDomains; a node
 * without the topology key is rejected outright. Eligible nodes follow nodeAffinityPolicy (Honor by
 * default: the pod's nodeSelector/affinity) and nodeTaintsPolicy (Ignore by default). ScheduleAnyway
 * constraints score: fewer matching pods in the node's domain is better. A pod with no constraints
 * gets kube-scheduler's system defaults (hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway)
 * over the pods of its own controller.
 */
import type { Pod, TopologySpreadConstraint } from '../../../api/types.js';
import { tolerates } from '../fit.js';
import { MAX_NODE_SCORE, mayMatchOn, selects, type Cycle, type FilterStatus, type NodeInfo, type Plugin, type Snapshot } from '../framework.js';
import { nodeMatchesPlacement } from './node-affinity.js';

export const REASON_CONSTRAINTS = "node(s) didn't match pod topology spread constraints";
export const REASON_MISSING_LABEL = `${REASON_CONSTRAINTS} (missing required label)`;

interface Constraint {
  topologyKey: string;
  maxSkew: number;
  minDomains: number;
  doNotSchedule: boolean;
  /** a system default: nodes need only some of the keys, not all */
  systemDefault: boolean;
  honorAffinity: boolean;
  honorTaints: boolean;
  matches: (p: Pod) => boolean;
  /** pods matching on this node, when an index answers without looking at each pod */
  countOn?: (node: NodeInfo) => number | undefined;
}

interface Counted {
  constraints: Constraint[];
  /** per constraint: eligible domain value → matching pods */
  counts: Map<string, number>[];
}

const SYSTEM_DEFAULTS = [
  { topologyKey: 'kubernetes.io/hostname', maxSkew: 3 },
  { topologyKey: 'topology.kubernetes.io/zone', maxSkew: 5 },
];

export function constraintsOf(pod: Pod): Constraint[] {
  const ns = pod.metadata.namespace;
  const explicit = pod.spec.topologySpreadConstraints ?? [];
  if (explicit.length) {
    return explicit.map((c: TopologySpreadConstraint) => {
      const labels = pod.metadata.labels ?? {};
      const extra = (c.matchLabelKeys ?? []).filter((k) => k in labels).map((key) => ({ key, operator: 'In', values: [labels[key]!] }));
      const selector = c.labelSelector && extra.length ? { ...c.labelSelector, matchExpressions: [...(c.labelSelector.matchExpressions ?? []), ...extra] } : c.labelSelector;
      return {
        topologyKey: c.topologyKey,
        maxSkew: c.maxSkew,
        minDomains: c.minDomains ?? 1,
        doNotSchedule: c.whenUnsatisfiable === 'DoNotSchedule',
        systemDefault: false,
        honorAffinity: (c.nodeAffinityPolicy ?? 'Honor') === 'Honor',
        honorTaints: c.nodeTaintsPolicy === 'Honor',
        matches: (p: Pod) => p.metadata.namespace === ns && selects(selector, p.metadata.labels),
        countOn: (node: NodeInfo) => (mayMatchOn(selector, node) ? undefined : 0),
      };
    });
  }
  const owner = pod.metadata.ownerReferences?.find((r) => r.controller);
  if (!owner) return [];
  const sameOwner = (p: Pod) => p.metadata.namespace === ns && (p.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === owner.uid);
  // Pods of one controller share its namespace, so the per-node owner index counts them directly.
  const countOn = (node: NodeInfo) => node.ownerCounts.get(owner.uid) ?? 0;
  return SYSTEM_DEFAULTS.map((d) => ({ ...d, minDomains: 1, doNotSchedule: false, systemDefault: true, honorAffinity: true, honorTaints: false, matches: sameOwner, countOn }));
}

function eligible(c: Constraint, pod: Pod, node: NodeInfo): boolean {
  if (c.honorAffinity && !nodeMatchesPlacement(pod.spec, node.node)) return false;
  if (c.honorTaints) {
    for (const t of node.node.spec?.taints ?? []) if (t.effect !== 'PreferNoSchedule' && !tolerates(pod.spec.tolerations, t)) return false;
  }
  return true;
}

/** Whether a node takes part: it carries every key (only some, for the system defaults). */
function hasKeys(constraints: Constraint[], labels: Record<string, string>): boolean {
  const has = (c: Constraint) => labels[c.topologyKey] !== undefined;
  return constraints.length > 0 && constraints[0]!.systemDefault ? constraints.some(has) : constraints.every(has);
}

/** Matching pods per domain over the eligible nodes that carry every constraint's key. */
function count(pod: Pod, constraints: Constraint[], snapshot: Snapshot): Counted {
  const counts = constraints.map(() => new Map<string, number>());
  for (const node of snapshot.nodes) {
    const labels = node.node.metadata.labels ?? {};
    if (!hasKeys(constraints, labels)) continue;
    constraints.forEach((c, i) => {
      if (labels[c.topologyKey] === undefined || !eligible(c, pod, node)) return;
      const value = labels[c.topologyKey]!;
      let n = counts[i]!.get(value) ?? 0;
      const indexed = c.countOn?.(node);
      if (indexed !== undefined) n += indexed;
      else for (const info of node.pods.values()) if (!info.pod.metadata.deletionTimestamp && c.matches(info.pod)) n++;
      counts[i]!.set(value, n);
    });
  }
  return { constraints, counts };
}

function state(cycle: Cycle, which: 'filter' | 'score'): Counted {
  const key = `PodTopologySpread/${which}`;
  const cached = cycle.state.get(key) as Counted | undefined;
  if (cached) return cached;
  const constraints = constraintsOf(cycle.pod).filter((c) => c.doNotSchedule === (which === 'filter'));
  const counted = constraints.length ? count(cycle.pod, constraints, cycle.snapshot) : { constraints, counts: [] };
  cycle.state.set(key, counted);
  return counted;
}

interface ScoreState {
  weights: number[];
  ignored: Set<string>;
}

export const podTopologySpread: Plugin = {
  name: 'PodTopologySpread',
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    const { constraints, counts } = state(cycle, 'filter');
    const labels = node.node.metadata.labels ?? {};
    for (let i = 0; i < constraints.length; i++) {
      const c = constraints[i]!;
      const value = labels[c.topologyKey];
      if (value === undefined) return { reasons: [REASON_MISSING_LABEL], unresolvable: true };
      const domains = counts[i]!;
      let min = Infinity;
      for (const n of domains.values()) if (n < min) min = n;
      if (domains.size < c.minDomains) min = 0;
      const self = c.matches(cycle.pod) ? 1 : 0;
      if ((domains.get(value) ?? 0) + self - min > c.maxSkew) return { reasons: [REASON_CONSTRAINTS] };
    }
    return undefined;
  },
  preScore(cycle: Cycle, nodes: NodeInfo[]): void {
    const { constraints } = state(cycle, 'score');
    cycle.state.set('PodTopologySpread/nodes', nodes);
    const ignored = new Set<string>();
    const domains = constraints.map(() => new Set<string>());
    for (const n of nodes) {
      const labels = n.node.metadata.labels ?? {};
      if (!hasKeys(constraints, labels)) ignored.add(n.name);
      else constraints.forEach((c, i) => labels[c.topologyKey] !== undefined && domains[i]!.add(labels[c.topologyKey]!));
    }
    // Constraints over more domains weigh more (log of their count), as kube-scheduler weighs them.
    cycle.state.set('PodTopologySpread/scoreState', { weights: domains.map((d) => Math.log(d.size + 2)), ignored } satisfies ScoreState);
  },
  score(cycle: Cycle, node: NodeInfo): number {
    const { constraints, counts } = state(cycle, 'score');
    const s = cycle.state.get('PodTopologySpread/scoreState') as ScoreState | undefined;
    if (!constraints.length || !s || s.ignored.has(node.name)) return 0;
    const labels = node.node.metadata.labels ?? {};
    let sum = 0;
    constraints.forEach((c, i) => {
      if (labels[c.topologyKey] === undefined) return;
      sum += (counts[i]!.get(labels[c.topologyKey]!) ?? 0) * s.weights[i]! + (c.maxSkew - 1);
    });
    return Math.round(sum);
  },
  normalizeScore(cycle: Cycle, scores: number[]): void {
    const { constraints } = state(cycle, 'score');
    if (!constraints.length) return;
    const s = cycle.state.get('PodTopologySpread/scoreState') as ScoreState | undefined;
    // Nodes lacking a key score 0; the rest: fewer matching pods → closer to MAX_NODE_SCORE.
    const nodes = cycle.state.get('PodTopologySpread/nodes') as NodeInfo[] | undefined;
    let min = Infinity, max = -Infinity;
    scores.forEach((v, i) => {
      if (nodes && s?.ignored.has(nodes[i]!.name)) return;
      if (v < min) min = v;
      if (v > max) max = v;
    });
    for (let i = 0; i < scores.length; i++) {
      if (nodes && s?.ignored.has(nodes[i]!.name)) scores[i] = 0;
      else scores[i] = max <= 0 ? MAX_NODE_SCORE : Math.floor((MAX_NODE_SCORE * (max + min - scores[i]!)) / max);
    }
  },
};
