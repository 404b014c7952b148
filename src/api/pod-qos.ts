/**
 * The pod QoS class (status.qosClass) as Kubernetes computes it (pkg/apis/core/v1/helper/qos):
 * cpu and memory only, zero quantities ignored, requests and limits summed over containers and
 * init containers. Guaranteed: every container limits both cpu and memory and the summed requests
 * equal the summed limits; BestEffort: nothing requested or limited; Burstable: anything between.
 */
import { add, compare, isNegative, isZero, tryParseQuantity, type Quantity } from './quantity.js';
import type { Container, PodSpec } from './types.js';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = ['cpu', 'memory'] as const;

/** Sums the positive cpu/memory quantities of `list` into `into`; returns the resource names found. */
function addPositive(into: Map<string, Quantity>, list: Record<string, string> | undefined): Set<string> {
  const found = new Set<string>();
  for (const name of QOS_RESOURCES) {
    const raw = list?.[name];
    const q = raw === undefined ? undefined : tryParseQuantity(raw);
    if (!q || isZero(q) || isNegative(q)) continue;
    found.add(name);
    const sum = into.get(name);
    into.set(name, sum ? add(sum, q) : q);
  }
  return found;
}

/**
 * A container's requests with each limit standing in for a missing request: what the API
 * server's pod defaulting stores, so pods written before that defaulting class the same.
 */
function defaultedRequests(c: Container): Record<string, string> | undefined {
  const { limits, requests } = c.resources ?? {};
  return limits ? { ...limits, ...requests } : requests;
}

export function podQosClass(spec: Pick<PodSpec, 'containers' | 'initContainers'>): QosClass {
  const containers: Container[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])];
  const requests = new Map<string, Quantity>();
  const limits = new Map<string, Quantity>();
  let guaranteed = true;
  for (const c of containers) {
    addPositive(requests, defaultedRequests(c));
    const limited = addPositive(limits, c.resources?.limits);
    if (!limited.has('cpu') || !limited.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, request] of requests) {
      const limit = limits.get(name);
      if (!limit || compare(limit, request) !== 0) guaranteed = false;
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}
