/**
 * The downward API: a pod's own fields (fieldRef) and a container's resources (resourceFieldRef) as text,
 * for environment variables and downwardAPI/projected volume files alike. Pure functions.
 */
import { milliValue, parseQuantity, value, type Quantity } from '../../src/api/quantity.js';
import type { Container, Pod } from '../../src/api/types.js';
import { ContainerConfigError } from './config-error.js';

/** What a pod cannot know about itself from its spec: its addresses on this node. */
export interface PodRuntimeFacts {
  podIP?: string | undefined;
  hostIP?: string | undefined;
  /** this node's allocatable cpu/memory/ephemeral-storage: what a limit-less container may use */
  allocatable: Record<string, string>;
}

export interface FieldRef {
  fieldPath?: string;
  apiVersion?: string;
}

export interface ResourceFieldRef {
  containerName?: string;
  resource?: string;
  divisor?: string | number;
}

/** `k="v"` lines, keys sorted, values quoted: Kubernetes' format for whole label/annotation maps. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m![k])}`)
    .join('\n');
}

const SUBSCRIPTED = /^(metadata\.(?:labels|annotations))\['(.*)'\]$/;

/** The value of a fieldRef for this pod; throws ContainerConfigError for a path Kubernetes does not support. */
export function fieldRefValue(ref: FieldRef, pod: Pod, facts: PodRuntimeFacts): string {
  const path = ref.fieldPath ?? '';
  const sub = SUBSCRIPTED.exec(path);
  if (sub) {
    const map = sub[1] === 'metadata.labels' ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[sub[2]!] ?? '';
  }
  switch (path) {
    case 'metadata.name':
      return pod.metadata.name ?? '';
    case 'metadata.namespace':
      return pod.metadata.namespace ?? 'default';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'metadata.labels':
      return formatMap(pod.metadata.labels);
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations);
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return typeof pod.spec.serviceAccountName === 'string' ? pod.spec.serviceAccountName : '';
    case 'status.hostIP':
    case 'status.hostIPs':
      return facts.hostIP ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return facts.podIP ?? '';
    default:
      throw new ContainerConfigError(`unsupported fieldPath: ${path}`);
  }
}

const RESOURCE_NAMES = ['cpu', 'memory', 'ephemeral-storage'];

function ceilDiv(a: bigint, b: bigint): bigint {
  if (b <= 0n) return a;
  return a >= 0n ? (a + b - 1n) / b : a / b;
}

function quantity(q: string | number | undefined): Quantity | undefined {
  if (q === undefined || q === '') return undefined;
  try {
    return parseQuantity(q);
  } catch {
    throw new ContainerConfigError(`invalid quantity "${q}" in resourceFieldRef`);
  }
}

/**
 * The value of a resourceFieldRef, as the kubelet computes it: the container's limit (the node's allocatable
 * when unset) or request (its limit when unset, as API defaulting would make it), divided by `divisor` and
 * rounded up — cpu in millicores, memory and storage in bytes.
 */
export function resourceFieldValue(ref: ResourceFieldRef, pod: Pod, container: Container | undefined, facts: PodRuntimeFacts): string {
  const resource = ref.resource ?? '';
  const [kind, name] = resource.split('.', 2) as [string, string | undefined];
  if ((kind !== 'limits' && kind !== 'requests') || !name || !RESOURCE_NAMES.includes(name)) {
    throw new ContainerConfigError(`unsupported container resource: ${resource}`);
  }
  const target = ref.containerName ? [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === ref.containerName) : container;
  if (!target) throw new ContainerConfigError(`container ${ref.containerName ?? ''} not found in pod for resourceFieldRef`);
  const limits = target.resources?.limits ?? {};
  const requests = target.resources?.requests ?? {};
  let amount: Quantity | undefined;
  if (kind === 'limits') amount = quantity(limits[name]) ?? quantity(facts.allocatable[name]);
  else amount = quantity(requests[name]) ?? quantity(limits[name]);
  const divisor = quantity(ref.divisor) ?? parseQuantity('1');
  if (!amount) return '0';
  if (name === 'cpu') return String(ceilDiv(milliValue(amount), milliValue(divisor) || 1n));
  return String(ceilDiv(value(amount), value(divisor) || 1n));
}
