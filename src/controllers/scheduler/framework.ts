/**
 * Owns the scheduling framework, pure: the per-node view the plugins read (NodeInfo: the node, its
 * pods, their summed requests and host ports), the cluster snapshot an attempt runs against, the
 * plugin contract (preFilter, filter, score, normalizeScore, as kube-scheduler's extension points),
 * running a profile's plugins over the nodes (filter until enough feasible nodes, weighted scores,
 * best node), and the "0/N nodes are available: …" message built from the filter reasons.
 */
import { labelSelectorFromObject, matchesLabels, type LabelSelector } from '../../api/selectors.js';
import type { LabelSelector as LabelSelectorObject, Node, Pod, PodAffinityTerm, Taint } from '../../api/types.js';
import { allocatableOf, effectiveTaints, nonZeroRequests, podRequests, type NodeAllocatable, type Requests } from './fit.js';

/** kube-scheduler's score range: every plugin's normalized score lies in [0, MAX_NODE_SCORE]. */
export const MAX_NODE_SCORE = 100;

export interface HostPort {
  protocol: string;
  hostIP: string;
  port: number;
}

/** A pod as the scheduler's cache holds it, with what the plugins derive from it computed once. */
export interface PodInfo {
  key: string;
  pod: Pod;
  requests: Requests;
  /** requests with kube-scheduler's defaults for unset cpu (100m) and memory (200Mi), for scoring */
  nonZero: Requests;
  ports: HostPort[];
  priority: number;
  /** the controller owner's uid, for the default topology spreading */
  ownerUid?: string;
  /** its required anti-affinity terms, each with a signature shared by identical terms of the same namespace */
  antiTerms: { signature: string; term: PodAffinityTerm }[];
  hasAffinity: boolean;
  hasRequiredAntiAffinity: boolean;
}

export function podInfoOf(key: string, pod: Pod): PodInfo {
  const ports: HostPort[] = [];
  for (const c of pod.spec.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (p.hostPort && p.hostPort > 0) ports.push({ protocol: p.protocol ?? 'TCP', hostIP: p.hostIP || '0.0.0.0', port: p.hostPort });
    }
  }
  const a = pod.spec.affinity;
  const hasAffinity = Boolean(a?.podAffinity || a?.podAntiAffinity);
  return {
    key,
    pod,
    requests: podRequests(pod),
    nonZero: nonZeroRequests(pod),
    ports,
    priority: pod.spec.priority ?? 0,
    ownerUid: pod.metadata.deletionTimestamp ? undefined : pod.metadata.ownerReferences?.find((r) => r.controller)?.uid,
    antiTerms: (a?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((term) => ({
      // Terms whose meaning depends on the owner's labels are the owner's alone.
      signature: term.matchLabelKeys?.length || term.mismatchLabelKeys?.length ? `${key}\u0000${JSON.stringify(term)}` : `${pod.metadata.namespace}\u0000${JSON.stringify(term)}`,
      term,
    })),
    hasAffinity,
    hasRequiredAntiAffinity: Boolean(a?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length),
  };
}

/**
 * One node and the pods bound (or assumed bound) to it, with their sums kept as pods come and go,
 * and indexes that let plugins skip a node without looking at its pods: pods per label pair and per
 * controller owner.
 */
export class NodeInfo {
  readonly pods = new Map<string, PodInfo>();
  requested: Requests = { cpuMilli: 0n, memory: 0n };
  nonZeroRequested: Requests = { cpuMilli: 0n, memory: 0n };
  podsWithAffinity = 0;
  /** `key\0value` → pods with that label */
  readonly labelCounts = new Map<string, number>();
  /** controller uid → its live pods here */
  readonly ownerCounts = new Map<string, number>();
  /** `namespace\0key\0value` → pods of that namespace with that label */
  readonly namespacedLabelCounts = new Map<string, number>();
  /** required anti-affinity terms of the pods here, one entry per signature: the term, a pod that has it, how many do */
  readonly antiTerms = new Map<string, { term: PodAffinityTerm; owner: Pod; count: number }>();
  private current: Node;
  private derived?: { allocatable: NodeAllocatable; taints: Taint[]; images: Map<string, number> };

  constructor(node: Node) {
    this.current = node;
  }

  get node(): Node {
    return this.current;
  }

  set node(node: Node) {
    this.current = node;
    this.derived = undefined;
  }

  private derive() {
    if (!this.derived) {
      const images = new Map<string, number>();
      for (const img of this.current.status?.images ?? []) for (const name of img.names ?? []) images.set(normalizeImageName(name), img.sizeBytes ?? 0);
      this.derived = { allocatable: allocatableOf(this.current), taints: effectiveTaints(this.current), images };
    }
    return this.derived;
  }

  /** allocatable, parsed once per node version */
  get allocatable(): NodeAllocatable {
    return this.derive().allocatable;
  }

  /** the node's taints plus the lifecycle ones its conditions imply */
  get taints(): Taint[] {
    return this.derive().taints;
  }

  /** normalized image name → size, from status.images */
  get images(): Map<string, number> {
    return this.derive().images;
  }

  /** Whether some pod here carries the label `key=value`. */
  hasLabel(key: string, value: string): boolean {
    return (this.labelCounts.get(`${key}\u0000${value}`) ?? 0) > 0;
  }

  /** How many pods of `namespace` here carry `key=value`. */
  countLabel(namespace: string, key: string, value: string): number {
    return this.namespacedLabelCounts.get(`${namespace}\u0000${key}\u0000${value}`) ?? 0;
  }

  private index(info: PodInfo, by: number): void {
    const bumpIn = (m: Map<string, number>, key: string) => {
      const n = (m.get(key) ?? 0) + by;
      if (n) m.set(key, n);
      else m.delete(key);
    };
    for (const [k, v] of Object.entries(info.pod.metadata.labels ?? {})) {
      bumpIn(this.labelCounts, `${k}\u0000${v}`);
      bumpIn(this.namespacedLabelCounts, `${info.pod.metadata.namespace}\u0000${k}\u0000${v}`);
    }
    for (const { signature, term } of info.antiTerms) {
      const e = this.antiTerms.get(signature);
      if (e) {
        e.count += by;
        if (!e.count) this.antiTerms.delete(signature);
      } else if (by > 0) this.antiTerms.set(signature, { term, owner: info.pod, count: by });
    }
    if (info.ownerUid) {
      const n = (this.ownerCounts.get(info.ownerUid) ?? 0) + by;
      if (n) this.ownerCounts.set(info.ownerUid, n);
      else this.ownerCounts.delete(info.ownerUid);
    }
  }

  get name(): string {
    return this.node.metadata.name ?? '';
  }

  addPod(info: PodInfo): void {
    if (this.pods.has(info.key)) this.removePod(info.key);
    this.pods.set(info.key, info);
    this.requested = add(this.requested, info.requests, 1n);
    this.nonZeroRequested = add(this.nonZeroRequested, info.nonZero, 1n);
    if (info.hasAffinity) this.podsWithAffinity++;
    this.index(info, 1);
  }

  removePod(key: string): PodInfo | undefined {
    const info = this.pods.get(key);
    if (!info) return undefined;
    this.pods.delete(key);
    this.requested = add(this.requested, info.requests, -1n);
    this.nonZeroRequested = add(this.nonZeroRequested, info.nonZero, -1n);
    if (info.hasAffinity) this.podsWithAffinity--;
    this.index(info, -1);
    return info;
  }

  clone(): NodeInfo {
    const copy = new NodeInfo(this.node);
    for (const p of this.pods.values()) copy.addPod(p);
    return copy;
  }
}

function add(a: Requests, b: Requests, sign: bigint): Requests {
  return { cpuMilli: a.cpuMilli + sign * b.cpuMilli, memory: a.memory + sign * b.memory };
}

/** What one attempt sees: every node with its pods, and namespace labels (for namespaceSelector). */
export class Snapshot {
  readonly byName = new Map<string, NodeInfo>();
  private imageCounts?: Map<string, number>;

  constructor(
    readonly nodes: NodeInfo[],
    readonly namespaceLabels: (namespace: string) => Record<string, string> | undefined = () => undefined,
  ) {
    for (const n of nodes) this.byName.set(n.name, n);
  }

  /** The same snapshot with one node's pods replaced (preemption's "what if these pods were gone"). */
  withNode(replacement: NodeInfo): Snapshot {
    return new Snapshot(this.nodes.map((n) => (n.name === replacement.name ? replacement : n)), this.namespaceLabels);
  }

  /** How many nodes report each image (normalized name) in status.images. */
  nodesWithImage(image: string): number {
    if (!this.imageCounts) {
      this.imageCounts = new Map();
      for (const n of this.nodes) {
        const seen = new Set<string>();
        for (const img of n.node.status?.images ?? []) for (const name of img.names ?? []) seen.add(normalizeImageName(name));
        for (const name of seen) this.imageCounts.set(name, (this.imageCounts.get(name) ?? 0) + 1);
      }
    }
    return this.imageCounts.get(normalizeImageName(image)) ?? 0;
  }
}

/** `busybox` → `docker.io/library/busybox:latest`, as image references are compared on nodes. */
export function normalizeImageName(image: string): string {
  let name = image;
  const lastSlash = name.lastIndexOf('/');
  if (!name.includes('@') && !name.slice(lastSlash + 1).includes(':')) name += ':latest';
  const first = name.split('/')[0]!;
  const hasRegistry = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasRegistry) name = name.includes('/') ? `docker.io/${name}` : `docker.io/library/${name}`;
  return name;
}

/** A plugin's verdict on one node: why it cannot take the pod, and whether evicting pods could change that. */
export interface FilterStatus {
  reasons: string[];
  /** kube-scheduler's UnschedulableAndUnresolvable: preemption cannot help on this node */
  unresolvable?: boolean;
}

/** What a preFilter may decide for the whole attempt. */
export interface PreFilterResult {
  /** the pod fits nowhere, for this reason (reported once, not per node) */
  reject?: FilterStatus;
  /** only these nodes can fit (e.g. node affinity on metadata.name); the rest are rejected without filtering */
  nodeNames?: Set<string>;
}

/** The state of one scheduling attempt of one pod, shared by the plugins (each under its own name). */
export class Cycle {
  readonly state = new Map<string, unknown>();
  readonly info: PodInfo;
  constructor(readonly pod: Pod, readonly snapshot: Snapshot, info?: PodInfo) {
    this.info = info ?? podInfoOf(`${pod.metadata.namespace}/${pod.metadata.name}`, pod);
  }
}

/**
 * One plugin of a profile. Filters say why a node cannot take the pod; scores rate the nodes that
 * can (0…100 after normalizeScore), and the profile weighs them.
 */
export interface Plugin {
  readonly name: string;
  preFilter?(cycle: Cycle): PreFilterResult | undefined;
  filter?(cycle: Cycle, node: NodeInfo): FilterStatus | undefined;
  /** once before scoring, with the feasible nodes */
  preScore?(cycle: Cycle, nodes: NodeInfo[]): void;
  score?(cycle: Cycle, node: NodeInfo): number;
  /** rescale this plugin's raw scores (one per feasible node, same order) into 0…MAX_NODE_SCORE, in place */
  normalizeScore?(cycle: Cycle, scores: number[]): void;
}

export interface WeightedPlugin {
  plugin: Plugin;
  /** the plugin's score weight in the profile (0: filter only) */
  weight: number;
}

export interface ScheduleResult {
  /** the chosen node, when one fits */
  node?: NodeInfo;
  /** per rejected node: the first failing plugin's status */
  rejected: Map<string, FilterStatus>;
  /** a preFilter's rejection of the whole attempt */
  preFilterReject?: FilterStatus;
  /** how many nodes were considered */
  total: number;
  feasible: number;
}

/** kube-scheduler's adaptive share of nodes to find feasible before it stops filtering. */
export function feasibleNodesToFind(total: number, percentage?: number): number {
  const minFeasible = 100;
  if (total < minFeasible) return total;
  let pct = percentage ?? Math.max(5, 50 - Math.floor(total / 125));
  if (pct >= 100) return total;
  const n = Math.floor((total * pct) / 100);
  return Math.max(n, minFeasible);
}

/** The first failing filter's status for one node, or undefined when every filter passes. */
export function runFilters(plugins: readonly WeightedPlugin[], cycle: Cycle, node: NodeInfo): (FilterStatus & { plugin: string }) | undefined {
  for (const { plugin } of plugins) {
    if (!plugin.filter) continue;
    const status = plugin.filter(cycle, node);
    if (status) return { ...status, plugin: plugin.name };
  }
  return undefined;
}

/** Runs every preFilter; a rejection or an empty node set ends the attempt. */
export function runPreFilters(plugins: readonly WeightedPlugin[], cycle: Cycle): { reject?: FilterStatus; nodeNames?: Set<string>; narrowedBy: string[] } {
  let nodeNames: Set<string> | undefined;
  const narrowedBy: string[] = [];
  for (const { plugin } of plugins) {
    const r = plugin.preFilter?.(cycle);
    if (!r) continue;
    if (r.reject) return { reject: r.reject, narrowedBy };
    if (r.nodeNames) {
      nodeNames = nodeNames ? new Set([...nodeNames].filter((n) => r.nodeNames!.has(n))) : r.nodeNames;
      narrowedBy.push(plugin.name);
    }
  }
  return { nodeNames, narrowedBy };
}

export interface ScheduleOptions {
  /** where to start looking (kube-scheduler rotates it so filtering stops at different nodes each time) */
  startIndex?: number;
  percentageOfNodesToScore?: number;
}

/** One scheduling attempt: preFilter, filter (until enough nodes fit), score, and the best node. */
export function schedulePod(plugins: readonly WeightedPlugin[], cycle: Cycle, opts: ScheduleOptions = {}): ScheduleResult & { nextStartIndex: number } {
  const all = cycle.snapshot.nodes;
  const rejected = new Map<string, FilterStatus>();
  const pre = runPreFilters(plugins, cycle);
  const start = opts.startIndex ?? 0;
  if (pre.reject) return { rejected, preFilterReject: pre.reject, total: all.length, feasible: 0, nextStartIndex: start };
  let candidates = all;
  if (pre.nodeNames) {
    candidates = [];
    const notChosen: FilterStatus = { reasons: [`node(s) didn't satisfy plugin(s) [${pre.narrowedBy.join(', ')}]`], unresolvable: true };
    for (const n of all) {
      if (pre.nodeNames.has(n.name)) candidates.push(n);
      else rejected.set(n.name, notChosen);
    }
  }
  const want = feasibleNodesToFind(candidates.length, opts.percentageOfNodesToScore);
  const feasible: NodeInfo[] = [];
  let visited = 0;
  for (; visited < candidates.length && feasible.length < want; visited++) {
    const node = candidates[(start + visited) % candidates.length]!;
    const status = runFilters(plugins, cycle, node);
    if (status) rejected.set(node.name, status);
    else feasible.push(node);
  }
  const nextStartIndex = candidates.length ? (start + visited) % candidates.length : 0;
  if (!feasible.length) return { rejected, total: all.length, feasible: 0, nextStartIndex };
  if (feasible.length === 1) return { node: feasible[0], rejected, total: all.length, feasible: 1, nextStartIndex };
  const totals = scoreNodes(plugins, cycle, feasible);
  let best = 0;
  for (let i = 1; i < feasible.length; i++) {
    if (totals[i]! > totals[best]! || (totals[i] === totals[best] && feasible[i]!.name < feasible[best]!.name)) best = i;
  }
  return { node: feasible[best], rejected, total: all.length, feasible: feasible.length, nextStartIndex };
}

/** Weighted sum of every scoring plugin's normalized score, per node. */
export function scoreNodes(plugins: readonly WeightedPlugin[], cycle: Cycle, nodes: NodeInfo[]): number[] {
  const totals = nodes.map(() => 0);
  for (const { plugin, weight } of plugins) {
    if (!plugin.score || weight === 0) continue;
    plugin.preScore?.(cycle, nodes);
    const scores = nodes.map((n) => plugin.score!(cycle, n));
    plugin.normalizeScore?.(cycle, scores);
    for (let i = 0; i < nodes.length; i++) totals[i]! += scores[i]! * weight;
  }
  return totals;
}

/** `0/3 nodes are available: 1 Too many pods, 2 node(s) were unschedulable.`: counts per reason, sorted, as kube-scheduler words it. */
export function fitErrorMessage(total: number, result: { rejected: Map<string, FilterStatus>; preFilterReject?: FilterStatus }, postFilterMessage?: string): string {
  if (total === 0) return 'no nodes available to schedule pods';
  let message = `0/${total} nodes are available:`;
  if (result.preFilterReject) message += ` ${result.preFilterReject.reasons.join(', ')}.`;
  else {
    const counts = new Map<string, number>();
    for (const status of result.rejected.values()) for (const r of status.reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
    const parts = [...counts.entries()].map(([r, n]) => `${n} ${r}`).sort();
    if (parts.length) message += ` ${parts.join(', ')}.`;
  }
  if (postFilterMessage) message += ` ${postFilterMessage}`;
  return message;
}

/** Default normalization: scale so the highest raw score becomes MAX_NODE_SCORE (reverse: lowest does). */
export function defaultNormalize(scores: number[], reverse: boolean): void {
  let max = 0;
  for (const s of scores) if (s > max) max = s;
  for (let i = 0; i < scores.length; i++) {
    if (max === 0) scores[i] = reverse ? MAX_NODE_SCORE : 0;
    else {
      const s = Math.floor((MAX_NODE_SCORE * scores[i]!) / max);
      scores[i] = reverse ? MAX_NODE_SCORE - s : s;
    }
  }
}

/** A compiled label selector, memoized per selector object (terms are read many times per attempt). */
const compiled = new WeakMap<object, LabelSelector>();
export function selectorOf(sel: LabelSelectorObject | undefined | null): LabelSelector {
  if (!sel) return { requirements: [], matchesNothing: true };
  let c = compiled.get(sel);
  if (!c) {
    try {
      c = labelSelectorFromObject(sel);
    } catch {
      c = { requirements: [], matchesNothing: true };
    }
    compiled.set(sel, c);
  }
  return c;
}

/** False only when no pod on the node can match (a matchLabels pair no pod here carries): lets callers skip the node's pods. */
export function mayMatchOn(sel: LabelSelectorObject | undefined | null, node: NodeInfo): boolean {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (!node.hasLabel(k, v)) return false;
  return true;
}

export function selects(sel: LabelSelectorObject | undefined | null, labels: Record<string, string> | undefined): boolean {
  return matchesLabels(selectorOf(sel), labels);
}
