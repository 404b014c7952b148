/**
 * Owns the scheduler's arithmetic, pure: a pod's requests (as counted for fit, and with kube-scheduler's
 * non-zero defaults for scoring), a node's allocatable and effective taints, and toleration matching.
 * The filters and scores that use them are the plugins' (plugins/, run by framework.ts).
 */
import { milliValue, parseQuantity, value } from '../../api/quantity.js';
import type { Container, Node, Pod, Taint, Toleration } from '../../api/types.js';

/** What a pod asks for, in exact units: cpu in millicores, memory in bytes. */
export interface Requests {
  cpuMilli: bigint;
  memory: bigint;
}

function containerRequests(c: Container): Requests {
  // An unset request defaults to the limit, as in Kubernetes.
  const cpu = c.resources?.requests?.cpu ?? c.resources?.limits?.cpu;
  const mem = c.resources?.requests?.memory ?? c.resources?.limits?.memory;
  return { cpuMilli: cpu ? milliValue(parseQuantity(cpu)) : 0n, memory: mem ? value(parseQuantity(mem)) : 0n };
}

/** A pod's requests from each container's: the app containers summed, or an init container's if larger (init containers run one at a time). */
function sumRequests(pod: Pod, perContainer: (c: Container) => Requests): Requests {
  const sum: Requests = { cpuMilli: 0n, memory: 0n };
  for (const c of pod.spec.containers ?? []) {
    const r = perContainer(c);
    sum.cpuMilli += r.cpuMilli;
    sum.memory += r.memory;
  }
  for (const c of pod.spec.initContainers ?? []) {
    const r = perContainer(c);
    if (r.cpuMilli > sum.cpuMilli) sum.cpuMilli = r.cpuMilli;
    if (r.memory > sum.memory) sum.memory = r.memory;
  }
  return sum;
}

/** Pod requests: the sum of app containers, or the largest init container if that is larger. */
export function podRequests(pod: Pod): Requests {
  return sumRequests(pod, containerRequests);
}

/** kube-scheduler's defaults for a container without requests, so scoring still sees it. */
const DEFAULT_MILLI_CPU = 100n;
const DEFAULT_MEMORY = 200n * 1024n * 1024n;

/** Requests as scoring counts them: an unset cpu or memory request of a container counts as 100m / 200Mi. */
export function nonZeroRequests(pod: Pod): Requests {
  return sumRequests(pod, (c) => {
    const r = containerRequests(c);
    const hasCpu = c.resources?.requests?.cpu !== undefined || c.resources?.limits?.cpu !== undefined;
    const hasMem = c.resources?.requests?.memory !== undefined || c.resources?.limits?.memory !== undefined;
    return { cpuMilli: hasCpu ? r.cpuMilli : DEFAULT_MILLI_CPU, memory: hasMem ? r.memory : DEFAULT_MEMORY };
  });
}

export interface NodeAllocatable {
  cpuMilli: bigint;
  memory: bigint;
  pods: bigint;
}

export function allocatableOf(node: Node): NodeAllocatable {
  const a = node.status?.allocatable ?? node.status?.capacity ?? {};
  return {
    cpuMilli: a.cpu ? milliValue(parseQuantity(a.cpu)) : 0n,
    memory: a.memory ? value(parseQuantity(a.memory)) : 0n,
    pods: a.pods ? value(parseQuantity(a.pods)) : 110n,
  };
}

export function isNodeReady(node: Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** The taints a node effectively has: its own, plus the ones Kubernetes' node lifecycle adds for readiness and cordoning. */
export function effectiveTaints(node: Node): Taint[] {
  const taints = [...(node.spec?.taints ?? [])];
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const has = (key: string) => taints.some((t) => t.key === key);
  if (ready?.status === 'Unknown' && !has('node.kubernetes.io/unreachable')) taints.push({ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' });
  else if (ready?.status !== 'True' && !has('node.kubernetes.io/not-ready')) taints.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' });
  const network = node.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');
  if (network?.status === 'True' && !has('node.kubernetes.io/network-unavailable')) taints.push({ key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' });
  if (node.spec?.unschedulable && !has('node.kubernetes.io/unschedulable')) taints.push({ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' });
  return taints;
}

export function tolerates(tolerations: Toleration[] | undefined, taint: Taint): boolean {
  return (tolerations ?? []).some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if (!t.key) return t.operator === 'Exists';
    if (t.key !== taint.key) return false;
    return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
  });
}
