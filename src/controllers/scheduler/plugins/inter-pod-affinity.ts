/**
 * Owns the InterPodAffinity plugin. Filter: the pod's required affinity (every term needs a matching
 * pod in the node's topology domain, except the first pod of a group that matches its own terms),
 * its required anti-affinity (no matching pod in the domain), and existing pods' required
 * anti-affinity against it. Score: preferred terms both ways, and existing pods' required affinity
 * toward it, summed per topology domain. A term's namespaces are its `namespaces` plus those its
 * `namespaceSelector` selects; with neither, the namespace of the pod that owns the term.
 */
import type { LabelSelector, Pod, PodAffinityTerm } from '../../../api/types.js';
import { MAX_NODE_SCORE, mayMatchOn, selects, type Cycle, type FilterStatus, type NodeInfo, type Plugin, type PodInfo, type Snapshot } from '../framework.js';

export const REASON_AFFINITY = "node(s) didn't match pod affinity rules";
export const REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules";
export const REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules";

/** Weight of an existing pod's required affinity term when scoring the pod it attracts (kube-scheduler's hardPodAffinityWeight). */
const HARD_POD_AFFINITY_WEIGHT = 1;

const effectiveSelectors = new WeakMap<PodAffinityTerm, LabelSelector | undefined>();

/** The term's selector with matchLabelKeys / mismatchLabelKeys resolved against the owning pod's labels. */
function selectorOfTerm(term: PodAffinityTerm, owner: Pod): LabelSelector | undefined {
  if (!term.matchLabelKeys?.length && !term.mismatchLabelKeys?.length) return term.labelSelector;
  if (effectiveSelectors.has(term)) return effectiveSelectors.get(term);
  if (!term.labelSelector) return undefined;
  const labels = owner.metadata.labels ?? {};
  const extra = [
    ...(term.matchLabelKeys ?? []).filter((k) => k in labels).map((key) => ({ key, operator: 'In', values: [labels[key]!] })),
    ...(term.mismatchLabelKeys ?? []).filter((k) => k in labels).map((key) => ({ key, operator: 'NotIn', values: [labels[key]!] })),
  ];
  const sel: LabelSelector = { ...term.labelSelector, matchExpressions: [...(term.labelSelector.matchExpressions ?? []), ...extra] };
  effectiveSelectors.set(term, sel);
  return sel;
}

/** Whether `term`, written by `owner`, selects `target` (namespace and labels). */
export function termMatches(term: PodAffinityTerm, owner: Pod, target: Pod, snapshot: Snapshot): boolean {
  const ns = target.metadata.namespace ?? '';
  const listed = term.namespaces ?? [];
  let nsOk: boolean;
  if (!listed.length && !term.namespaceSelector) nsOk = ns === owner.metadata.namespace;
  else nsOk = listed.includes(ns) || (term.namespaceSelector !== undefined && selects(term.namespaceSelector, snapshot.namespaceLabels(ns)));
  return nsOk && selects(selectorOfTerm(term, owner), target.metadata.labels);
}

/**
 * Pods on the node a plain term selects (one matchLabels pair, the owner's namespace), read from the
 * node's label index; undefined when the term needs each pod looked at.
 */
function simpleCount(term: PodAffinityTerm, ownNamespace: string, node: NodeInfo): number | undefined {
  const sel = term.labelSelector;
  if (!sel) return 0;
  if (sel.matchExpressions?.length || term.namespaceSelector || term.matchLabelKeys?.length || term.mismatchLabelKeys?.length) return undefined;
  if (term.namespaces?.length && !(term.namespaces.length === 1 && term.namespaces[0] === ownNamespace)) return undefined;
  const pairs = Object.entries(sel.matchLabels ?? {});
  if (pairs.length !== 1) return undefined;
  return node.countLabel(ownNamespace, pairs[0]![0], pairs[0]![1]);
}

type Counts = Map<string, number>;
const pairKey = (key: string, value: string) => `${key}\u0000${value}`;
const bump = (m: Counts, key: string, value: string, by: number) => m.set(pairKey(key, value), (m.get(pairKey(key, value)) ?? 0) + by);

interface State {
  affinityTerms: PodAffinityTerm[];
  antiAffinityTerms: PodAffinityTerm[];
  existingAntiAffinity: Counts;
  affinity: Counts;
  antiAffinity: Counts;
}

interface ScoreState {
  scores: Counts;
  keys: Set<string>;
}

/** Every pod with its node; only nodes holding pods with affinity terms when `withAffinityOnly`. */
function* podsOf(snapshot: Snapshot, withAffinityOnly: boolean): Generator<{ info: PodInfo; node: NodeInfo }> {
  for (const node of snapshot.nodes) {
    if (withAffinityOnly && node.podsWithAffinity === 0) continue;
    for (const info of node.pods.values()) yield { info, node };
  }
}

function prepare(cycle: Cycle): State {
  const cached = cycle.state.get('InterPodAffinity') as State | undefined;
  if (cached) return cached;
  const { pod, snapshot } = cycle;
  const affinityTerms = pod.spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  const antiAffinityTerms = pod.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
  const state: State = { affinityTerms, antiAffinityTerms, existingAntiAffinity: new Map(), affinity: new Map(), antiAffinity: new Map() };
  const ns = pod.metadata.namespace ?? '';
  // Existing pods' terms are evaluated once per distinct term, not once per pod.
  const existingMatches = new Map<string, boolean>();
  for (const node of snapshot.nodes) {
    const labels = node.node.metadata.labels ?? {};
    for (const [signature, e] of node.antiTerms) {
      const value = labels[e.term.topologyKey];
      if (value === undefined) continue;
      let matches = existingMatches.get(signature);
      if (matches === undefined) existingMatches.set(signature, (matches = termMatches(e.term, e.owner, pod, snapshot)));
      if (matches) bump(state.existingAntiAffinity, e.term.topologyKey, value, e.count);
    }
    for (const t of antiAffinityTerms) {
      const value = labels[t.topologyKey];
      if (value === undefined) continue;
      let n = simpleCount(t, ns, node);
      if (n === undefined) {
        n = 0;
        if (mayMatchOn(t.labelSelector, node)) for (const info of node.pods.values()) if (info.key !== cycle.info.key && termMatches(t, pod, info.pod, snapshot)) n++;
      }
      if (n) bump(state.antiAffinity, t.topologyKey, value, n);
    }
    if (affinityTerms.length && affinityTerms.every((t) => mayMatchOn(t.labelSelector, node))) {
      for (const info of node.pods.values()) {
        if (info.key === cycle.info.key || !affinityTerms.every((t) => termMatches(t, pod, info.pod, snapshot))) continue;
        for (const t of affinityTerms) if (labels[t.topologyKey] !== undefined) bump(state.affinity, t.topologyKey, labels[t.topologyKey]!, 1);
      }
    }
  }
  cycle.state.set('InterPodAffinity', state);
  return state;
}

export const interPodAffinity: Plugin = {
  name: 'InterPodAffinity',
  preFilter(cycle) {
    prepare(cycle);
    return undefined;
  },
  filter(cycle: Cycle, node: NodeInfo): FilterStatus | undefined {
    const state = prepare(cycle);
    const labels = node.node.metadata.labels ?? {};
    if (state.affinityTerms.length) {
      const satisfied = state.affinityTerms.every((t) => labels[t.topologyKey] !== undefined && (state.affinity.get(pairKey(t.topologyKey, labels[t.topologyKey]!)) ?? 0) > 0);
      if (!satisfied) {
        // The first pod of a group that would match its own affinity may start it anywhere the keys exist.
        const first = state.affinity.size === 0 && state.affinityTerms.every((t) => termMatches(t, cycle.pod, cycle.pod, cycle.snapshot)) && state.affinityTerms.every((t) => labels[t.topologyKey] !== undefined);
        if (!first) return { reasons: [REASON_AFFINITY], unresolvable: true };
      }
    }
    for (const t of state.antiAffinityTerms) {
      const v = labels[t.topologyKey];
      if (v !== undefined && (state.antiAffinity.get(pairKey(t.topologyKey, v)) ?? 0) > 0) return { reasons: [REASON_ANTI_AFFINITY] };
    }
    if (state.existingAntiAffinity.size) {
      for (const [k, v] of Object.entries(labels)) if ((state.existingAntiAffinity.get(pairKey(k, v)) ?? 0) > 0) return { reasons: [REASON_EXISTING_ANTI_AFFINITY] };
    }
    return undefined;
  },
  preScore(cycle: Cycle): void {
    const { pod, snapshot } = cycle;
    const preferredAffinity = pod.spec.affinity?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    const preferredAnti = pod.spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    const own = preferredAffinity.length + preferredAnti.length > 0;
    const state: ScoreState = { scores: new Map(), keys: new Set() };
    const add = (key: string, labels: Record<string, string>, by: number) => {
      const v = labels[key];
      if (v === undefined || by === 0) return;
      bump(state.scores, key, v, by);
      state.keys.add(key);
    };
    for (const { info, node } of podsOf(snapshot, !own)) {
      if (!own && !info.hasAffinity) continue;
      const existing = info.pod;
      const labels = node.node.metadata.labels ?? {};
      for (const w of preferredAffinity) if (termMatches(w.podAffinityTerm, pod, existing, snapshot)) add(w.podAffinityTerm.topologyKey, labels, w.weight);
      for (const w of preferredAnti) if (termMatches(w.podAffinityTerm, pod, existing, snapshot)) add(w.podAffinityTerm.topologyKey, labels, -w.weight);
      if (!info.hasAffinity) continue;
      const a = existing.spec.affinity!;
      for (const t of a.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) if (termMatches(t, existing, pod, snapshot)) add(t.topologyKey, labels, HARD_POD_AFFINITY_WEIGHT);
      for (const w of a.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []) if (termMatches(w.podAffinityTerm, existing, pod, snapshot)) add(w.podAffinityTerm.topologyKey, labels, w.weight);
      for (const w of a.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []) if (termMatches(w.podAffinityTerm, existing, pod, snapshot)) add(w.podAffinityTerm.topologyKey, labels, -w.weight);
    }
    cycle.state.set('InterPodAffinity/score', state);
  },
  score(cycle: Cycle, node: NodeInfo): number {
    const state = cycle.state.get('InterPodAffinity/score') as ScoreState | undefined;
    if (!state?.keys.size) return 0;
    const labels = node.node.metadata.labels ?? {};
    let sum = 0;
    for (const key of state.keys) if (labels[key] !== undefined) sum += state.scores.get(pairKey(key, labels[key]!)) ?? 0;
    return sum;
  },
  normalizeScore(_cycle, scores) {
    let min = Infinity, max = -Infinity;
    for (const s of scores) {
      if (s < min) min = s;
      if (s > max) max = s;
    }
    for (let i = 0; i < scores.length; i++) scores[i] = max > min ? Math.floor((MAX_NODE_SCORE * (scores[i]! - min)) / (max - min)) : 0;
  },
};
