/**
 * Owns the pod QoS class (status.qosClass), computed as Kubernetes does from cpu/memory requests and limits.
 */
import { compare, isZero, parseQuantity, type Quantity } from '../src/api/quantity.js';
import type { Container, PodSpec } from '../src/api/types.js';

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = ['cpu', 'memory'] as const;

function quantityOf(list: Record<string, string> | undefined, name: string): Quantity | undefined {
  const raw = list?.[name];
  if (raw === undefined) return undefined;
  try {
    const q = parseQuantity(raw);
    return isZero(q) ? undefined : q;
  } catch {
    return undefined; // validation rejects bad quantities before a pod reaches a node
  }
}

/**
 * Guaranteed: every container limits cpu and memory and requests equal limits (an unset request
 * defaults to the limit). BestEffort: nobody requests or limits cpu/memory. Burstable: anything between.
 */
export function qosClassOf(spec: PodSpec): QosClass {
  const containers: Container[] = [...(spec.initContainers ?? []), ...spec.containers];
  let anySet = false;
  let guaranteed = true;
  for (const c of containers) {
    for (const r of QOS_RESOURCES) {
      const limit = quantityOf(c.resources?.limits, r);
      const request = quantityOf(c.resources?.requests, r) ?? limit;
      if (limit || request) anySet = true;
      if (!limit || !request || compare(limit, request) !== 0) guaranteed = false;
    }
  }
  if (!anySet) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
