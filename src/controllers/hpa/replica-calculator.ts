/**
 * The HPA's replica arithmetic for resource metrics, as kube-controller-manager's replica
 * calculator does it: the ratio of current to target usage (utilization of requests, or an average
 * value) times the pods measured, a tolerance band around 1 within which nothing changes, and the
 * conservative treatment of pods without metrics (assumed at 100% of request when scaling down, at
 * 0 when scaling up) and of not-yet-ready pods (assumed at 0 when scaling up on CPU).
 * Pure: pods and usage come in as numbers, so every rule is unit-tested without a cluster.
 */

/** One pod the scale's selector matched, reduced to what the calculation reads. */
export interface CalculatorPod {
  name: string;
  /** Ready condition True */
  ready: boolean;
  /** Pending pods are counted as unready; Failed and deleted ones are left out */
  phase?: string;
  deleting?: boolean;
  /** the sum of the containers' requests for the resource, in milli-units; undefined when a container has none */
  request?: number;
}

/** What one pod of the target uses, in milli-units (millicores, or bytes × 1000). */
export type PodUsage = ReadonlyMap<string, number>;

export interface ResourceReplicaInput {
  currentReplicas: number;
  pods: CalculatorPod[];
  usage: PodUsage;
  resource: string;
  /** a percentage of requests (Utilization) … */
  targetUtilization?: number;
  /** … or an average per pod, in milli-units (AverageValue) */
  targetAverageValue?: number;
  /** 0.1 unless --horizontal-pod-autoscaler-tolerance says otherwise */
  tolerance: number;
}

export interface ResourceReplicaResult {
  replicas: number;
  /** the ready pods' average utilization in percent (Utilization targets) */
  utilization?: number;
  /** the ready pods' average usage in milli-units */
  averageValue: number;
}

/** Thrown when the metric cannot be computed; its message is what the FailedGetResourceMetric event says. */
export class MetricUnavailableError extends Error {}

interface Groups {
  readyCount: number;
  unready: string[];
  missing: string[];
  ignored: Set<string>;
}

function groupPods(pods: CalculatorPod[], usage: PodUsage, resource: string): Groups {
  const groups: Groups = { readyCount: 0, unready: [], missing: [], ignored: new Set() };
  for (const pod of pods) {
    if (pod.deleting || pod.phase === 'Failed') {
      groups.ignored.add(pod.name);
      continue;
    }
    if (pod.phase === 'Pending') {
      groups.unready.push(pod.name);
      continue;
    }
    if (!usage.has(pod.name)) {
      groups.missing.push(pod.name);
      continue;
    }
    // CPU of a pod that is not Ready yet is start-up work, not load.
    if (resource === 'cpu' && !pod.ready) {
      groups.unready.push(pod.name);
      continue;
    }
    groups.readyCount++;
  }
  return groups;
}

/** Sum of usage over sum of requests, as a ratio to the target (Utilization) or average over target (AverageValue). */
function usageRatio(usage: Map<string, number>, requests: Map<string, number>, input: ResourceReplicaInput): { ratio: number; utilization?: number; average: number } {
  let used = 0;
  let requested = 0;
  for (const [name, value] of usage) {
    used += value;
    requested += requests.get(name) ?? 0;
  }
  const average = usage.size ? used / usage.size : 0;
  if (input.targetUtilization !== undefined) {
    if (requested <= 0) throw new MetricUnavailableError(`missing request for ${input.resource}`);
    const utilization = (used * 100) / requested;
    return { ratio: utilization / input.targetUtilization, utilization: Math.trunc(utilization), average };
  }
  return { ratio: average / (input.targetAverageValue ?? 1), average };
}

/** The replica count one resource metric asks for (GetResourceReplicas / GetRawResourceReplicas). */
export function resourceReplicas(input: ResourceReplicaInput): ResourceReplicaResult {
  const { pods, currentReplicas, tolerance } = input;
  if (!pods.length) throw new MetricUnavailableError('no pods returned by selector while calculating replica count');
  const groups = groupPods(pods, input.usage, input.resource);
  const usage = new Map<string, number>();
  for (const pod of pods) {
    if (groups.ignored.has(pod.name) || groups.unready.includes(pod.name)) continue;
    const value = input.usage.get(pod.name);
    if (value !== undefined) usage.set(pod.name, value);
  }
  if (!usage.size) throw new MetricUnavailableError('did not receive metrics for targeted pods (pods might be unready)');

  const requests = new Map<string, number>();
  if (input.targetUtilization !== undefined) {
    for (const pod of pods) {
      if (groups.ignored.has(pod.name)) continue;
      if (pod.request === undefined) throw new MetricUnavailableError(`missing request for ${input.resource} in container(s) of pod ${pod.name}`);
      requests.set(pod.name, pod.request);
    }
  }
  const first = usageRatio(usage, requests, input);
  const result = (replicas: number): ResourceReplicaResult => ({ replicas, utilization: first.utilization, averageValue: Math.trunc(first.average) });

  const scaleUpWithUnready = groups.unready.length > 0 && first.ratio > 1;
  if (!scaleUpWithUnready && !groups.missing.length) {
    if (Math.abs(1 - first.ratio) <= tolerance) return result(currentReplicas);
    return result(Math.ceil(first.ratio * groups.readyCount));
  }

  // Pods without a reading are assumed to use what would hold the replica count back most.
  if (groups.missing.length) {
    for (const name of groups.missing) {
      if (first.ratio < 1) usage.set(name, input.targetUtilization !== undefined ? (requests.get(name) ?? 0) : (input.targetAverageValue ?? 0));
      else usage.set(name, 0);
    }
  }
  if (scaleUpWithUnready) for (const name of groups.unready) usage.set(name, 0);

  const second = usageRatio(usage, requests, input);
  const flipped = (first.ratio < 1 && second.ratio > 1) || (first.ratio > 1 && second.ratio < 1);
  if (Math.abs(1 - second.ratio) <= tolerance || flipped) return result(currentReplicas);
  const replicas = Math.ceil(second.ratio * usage.size);
  if ((second.ratio < 1 && replicas > currentReplicas) || (second.ratio > 1 && replicas < currentReplicas)) return result(currentReplicas);
  return result(replicas);
}
