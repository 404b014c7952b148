/**
 * Owns preemption, pure, as kube-scheduler's DefaultPreemption: whether a pod may preempt at all
 * (preemptionPolicy Never, or victims of its last preemption still terminating), and on which node
 * evicting lower-priority pods makes it fit: per node, remove every lower-priority pod, then give back
 * as many as still leave room (those a PodDisruptionBudget protects first, most important first);
 * among nodes, fewest PDB violations, then the lowest highest-victim priority, the smallest priority
 * sum, the fewest victims, the latest-started most important victim. Also the "preemption: …" part
 * of the FailedScheduling message when no node qualifies.
 */
import type { Pod, PodDisruptionBudget } from '../../api/types.js';
import { Cycle, fitErrorMessage, runFilters, runPreFilters, selects, type FilterStatus, type NodeInfo, type PodInfo, type Snapshot, type WeightedPlugin } from './framework.js';

export const NOT_HELPFUL = 'Preemption is not helpful for scheduling';
export const NO_VICTIMS = 'No preemption victims found for incoming pod';

export interface Candidate {
  node: string;
  victims: PodInfo[];
  pdbViolations: number;
}

/** Why the pod may not preempt (kube-scheduler's words), or undefined when it may. */
export function notEligibleToPreempt(pod: Pod, snapshot: Snapshot): string | undefined {
  if (pod.spec.preemptionPolicy === 'Never') return 'not eligible due to preemptionPolicy=Never.';
  const nominated = pod.status?.nominatedNodeName;
  if (nominated) {
    const node = snapshot.byName.get(nominated);
    const priority = pod.spec.priority ?? 0;
    if (node && [...node.pods.values()].some((p) => p.pod.metadata.deletionTimestamp && p.priority < priority)) return 'not eligible due to a terminating pod on the nominated node.';
  }
  return undefined;
}

function fitsOn(plugins: readonly WeightedPlugin[], pod: Pod, snapshot: Snapshot, node: NodeInfo, info: PodInfo): boolean {
  const cycle = new Cycle(pod, snapshot, info);
  const pre = runPreFilters(plugins, cycle);
  if (pre.reject || (pre.nodeNames && !pre.nodeNames.has(node.name))) return false;
  return runFilters(plugins, cycle, node) === undefined;
}

const startOf = (p: PodInfo) => Date.parse(p.pod.status?.startTime ?? p.pod.metadata.creationTimestamp ?? '') || 0;
/** Higher priority first, then the one that started earlier. */
const moreImportant = (a: PodInfo, b: PodInfo) => b.priority - a.priority || startOf(a) - startOf(b);

/** Which victims' eviction a PDB forbids (disruptionsAllowed used up, counting the other victims). */
function splitByPDB(victims: PodInfo[], pdbs: readonly PodDisruptionBudget[]): { violating: PodInfo[]; fine: PodInfo[] } {
  const allowed = pdbs.map((p) => p.status?.disruptionsAllowed ?? 0);
  const violating: PodInfo[] = [];
  const fine: PodInfo[] = [];
  for (const v of victims) {
    let violates = false;
    pdbs.forEach((pdb, i) => {
      const sel = pdb.spec?.selector;
      if (pdb.metadata.namespace !== v.pod.metadata.namespace || !sel || (!sel.matchLabels && !sel.matchExpressions?.length)) return;
      if (!selects(sel, v.pod.metadata.labels)) return;
      if (pdb.status?.disruptedPods?.[v.pod.metadata.name ?? '']) return;
      allowed[i]!--;
      if (allowed[i]! < 0) violates = true;
    });
    (violates ? violating : fine).push(v);
  }
  return { violating, fine };
}

/** The fewest, least important pods whose eviction lets `pod` fit on `node`, or undefined when none do. */
export function selectVictimsOnNode(plugins: readonly WeightedPlugin[], cycle: Cycle, node: NodeInfo, pdbs: readonly PodDisruptionBudget[]): Candidate | undefined {
  const priority = cycle.info.priority;
  const lower = [...node.pods.values()].filter((p) => p.priority < priority);
  if (!lower.length) return undefined;
  const trial = node.clone();
  for (const p of lower) trial.removePod(p.key);
  const snapshot = cycle.snapshot.withNode(trial);
  if (!fitsOn(plugins, cycle.pod, snapshot, trial, cycle.info)) return undefined;
  lower.sort(moreImportant);
  const { violating, fine } = splitByPDB(lower, pdbs);
  const victims: PodInfo[] = [];
  let pdbViolations = 0;
  const reprieve = (p: PodInfo, violates: boolean) => {
    trial.addPod(p);
    if (fitsOn(plugins, cycle.pod, snapshot, trial, cycle.info)) return;
    trial.removePod(p.key);
    victims.push(p);
    if (violates) pdbViolations++;
  };
  for (const p of violating) reprieve(p, true);
  for (const p of fine) reprieve(p, false);
  return { node: node.name, victims, pdbViolations };
}

/** kube-scheduler's order of preference among candidate nodes. */
export function pickCandidate(candidates: Candidate[]): Candidate | undefined {
  const highest = (c: Candidate) => Math.max(...c.victims.map((v) => v.priority));
  // Offset each priority so negative ones still add up in order (as kube-scheduler does with MaxInt32+1).
  const sum = (c: Candidate) => c.victims.reduce((s, v) => s + v.priority + 2 ** 31, 0);
  const latestStartOfHighest = (c: Candidate) => {
    const h = highest(c);
    return Math.max(...c.victims.filter((v) => v.priority === h).map(startOf));
  };
  const sorted = [...candidates].sort((a, b) =>
    a.pdbViolations - b.pdbViolations ||
    highest(a) - highest(b) ||
    sum(a) - sum(b) ||
    a.victims.length - b.victims.length ||
    latestStartOfHighest(b) - latestStartOfHighest(a),
  );
  return sorted[0];
}

export interface PreemptionOutcome {
  candidate?: Candidate;
  /** the FailedScheduling suffix when preemption cannot help ("preemption: …") */
  message?: string;
}

/** After a failed attempt: the node and victims to evict, or why preemption cannot help. */
export function preempt(plugins: readonly WeightedPlugin[], cycle: Cycle, rejected: Map<string, FilterStatus>, pdbs: readonly PodDisruptionBudget[]): PreemptionOutcome {
  const notEligible = notEligibleToPreempt(cycle.pod, cycle.snapshot);
  if (notEligible) return { message: `preemption: ${notEligible}` };
  const statuses = new Map<string, FilterStatus>();
  const candidates: Candidate[] = [];
  for (const node of cycle.snapshot.nodes) {
    const status = rejected.get(node.name);
    if (status?.unresolvable) {
      statuses.set(node.name, { reasons: [NOT_HELPFUL], unresolvable: true });
      continue;
    }
    const c = selectVictimsOnNode(plugins, cycle, node, pdbs);
    if (c?.victims.length) candidates.push(c);
    else statuses.set(node.name, { reasons: [NO_VICTIMS] });
  }
  const candidate = pickCandidate(candidates);
  if (candidate) return { candidate };
  return { message: `preemption: ${fitErrorMessage(cycle.snapshot.nodes.length, { rejected: statuses })}` };
}
