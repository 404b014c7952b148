/**
 * ResourceQuota accounting, pure and shared by the ResourceQuota admission plugin
 * (src/admission/plugins/resource-quota.ts) and the quota controller (src/controllers/resourcequota):
 * what one object uses of each quota resource (Kubernetes' quota evaluators for pods, services,
 * persistentvolumeclaims and the generic `count/<resource>.<group>` counters), which quotas' scopes
 * select a pod, the "must specify" constraint a compute quota puts on pods, and resource-list
 * arithmetic and printing as Kubernetes' quota helpers do it.
 */
import { add, compare, formatQuantity, isZero, parseQuantity, quantityFromValue, sub, tryParseQuantity, type Quantity } from './quantity.js';
import { podQosClass } from './pod-qos.js';
import type { Container, Pod, ResourceQuota, ScopedResourceSelectorRequirement } from './types.js';

/** A resource list with parsed quantities (ResourceList in Go). */
export type Usage = Map<string, Quantity>;

export const QUOTA_SCOPES = ['Terminating', 'NotTerminating', 'BestEffort', 'NotBestEffort', 'PriorityClass', 'CrossNamespacePodAffinity'] as const;
export const SCOPE_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

const STORAGE_CLASS_SUFFIX = '.storageclass.storage.k8s.io/';

/** The compute resources a pod quota counts; a quota on any of them makes pods state them (validationSet upstream). */
const POD_COMPUTE_CONSTRAINED = ['cpu', 'memory', 'requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory'];

/** Resource names Kubernetes knows for quota without a '/' (IsStandardQuotaResourceName). */
export const STANDARD_QUOTA_RESOURCES = new Set([
  'pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims',
  'services.nodeports', 'services.loadbalancers', 'requests.storage',
  'cpu', 'memory', 'ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage', 'limits.cpu', 'limits.memory', 'limits.ephemeral-storage',
]);

/** Resources a pod-scoped quota (Terminating, NotTerminating, NotBestEffort, PriorityClass) may hold. */
const POD_COMPUTE_RESOURCES = new Set(['pods', 'cpu', 'memory', 'requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory', 'ephemeral-storage', 'requests.ephemeral-storage', 'limits.ephemeral-storage']);

/** Whether a quota with `scope` may limit `resource` (IsResourceQuotaScopeValidForResource). */
export function scopeValidForResource(scope: string, resource: string): boolean {
  if (scope === 'BestEffort') return resource === 'pods' || resource === 'count/pods';
  if (['Terminating', 'NotTerminating', 'NotBestEffort', 'PriorityClass', 'CrossNamespacePodAffinity'].includes(scope)) {
    return POD_COMPUTE_RESOURCES.has(resource) || resource === 'count/pods' || resource.startsWith('requests.hugepages-') || resource.startsWith('hugepages-');
  }
  return true;
}

// ---------- resource lists ----------

export function usageFromList(list: Record<string, string> | undefined | null): Usage {
  const out: Usage = new Map();
  for (const [k, v] of Object.entries(list ?? {})) {
    const q = tryParseQuantity(v);
    if (q) out.set(k, q);
  }
  return out;
}

/** Sorted by name and printed canonically, as the API stores a ResourceList. */
export function usageToList(usage: Usage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [...usage.keys()].sort()) out[k] = formatQuantity(usage.get(k)!);
  return out;
}

/** a + b per resource; a zero takes the other's format, as Go's Quantity.Add (0 + 256Mi prints 256Mi). */
export function addUsage(a: Usage, b: Usage): Usage {
  const out = new Map(a);
  for (const [k, v] of b) {
    const have = out.get(k);
    out.set(k, !have ? v : isZero(have) ? { nanos: have.nanos + v.nanos, format: v.format } : add(have, v));
  }
  return out;
}

/** a − b, never below zero per resource (quota.SubtractWithNonNegativeResult). */
export function subtractNonNegative(a: Usage, b: Usage): Usage {
  const out: Usage = new Map();
  for (const [k, v] of a) {
    const other = b.get(k);
    const diff = other ? sub(v, other) : v;
    out.set(k, diff.nanos < 0n ? { nanos: 0n, format: v.format } : diff);
  }
  return out;
}

export function maskUsage(usage: Usage, names: Iterable<string>): Usage {
  const keep = new Set(names);
  return new Map([...usage].filter(([k]) => keep.has(k)));
}

export function withoutZeros(usage: Usage): Usage {
  return new Map([...usage].filter(([, v]) => !isZero(v)));
}

/** The resources of `usage` that exceed `hard` (those `hard` does not limit are never exceeded). */
export function exceededResources(usage: Usage, hard: Usage): string[] {
  const out: string[] = [];
  for (const [k, v] of usage) {
    const limit = hard.get(k);
    if (limit && compare(v, limit) > 0) out.push(k);
  }
  return out.sort();
}

/** `name=value,…` sorted by name: how the quota plugin prints a resource list in its messages. */
export function prettyPrintUsage(usage: Usage): string {
  return [...usage.keys()].sort().map((k) => `${k}=${formatQuantity(usage.get(k)!)}`).join(',');
}

const one = () => quantityFromValue(1n);

// ---------- evaluators ----------

/** `count/<resource>` for the core group, `count/<resource>.<group>` otherwise. */
export function countResourceName(group: string, plural: string): string {
  return group ? `count/${plural}.${group}` : `count/${plural}`;
}

/** Parses `count/<resource>[.<group>]` into the resource it counts. */
export function parseCountResource(name: string): { plural: string; group: string } | undefined {
  if (!name.startsWith('count/')) return undefined;
  const rest = name.slice('count/'.length);
  const dot = rest.indexOf('.');
  return dot < 0 ? { plural: rest, group: '' } : { plural: rest.slice(0, dot), group: rest.slice(dot + 1) };
}

/** Core resources with their own object-count name besides `count/<resource>`. */
const LEGACY_COUNT_NAMES = new Set(['pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims']);

/**
 * Whether a pod still uses quota (QuotaV1Pod): terminal pods do not, nor does a pod whose deletion
 * grace period has run out.
 */
export function podCountsForQuota(pod: Pod, nowMs: number): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  const deletion = pod.metadata.deletionTimestamp;
  const grace = pod.metadata.deletionGracePeriodSeconds;
  if (deletion && grace !== undefined && grace !== null && nowMs > Date.parse(deletion) + grace * 1000) return false;
  return true;
}

function containerList(c: Container, which: 'requests' | 'limits'): Usage {
  return usageFromList(c.resources?.[which] as Record<string, string> | undefined);
}

/** A pod's effective requests or limits: containers summed, each init container a floor, overhead added. */
function podResources(pod: Pod, which: 'requests' | 'limits'): Usage {
  let total: Usage = new Map();
  for (const c of pod.spec?.containers ?? []) total = addUsage(total, containerList(c, which));
  for (const c of pod.spec?.initContainers ?? []) {
    for (const [k, v] of containerList(c, which)) {
      const have = total.get(k);
      if (!have || compare(have, v) < 0) total.set(k, v);
    }
  }
  const overhead = usageFromList(pod.spec?.overhead as Record<string, string> | undefined);
  if (overhead.size) total = addUsage(total, maskUsage(overhead, total.keys()));
  return total;
}

/** What one container (or pod) states, as quota names: requests.cpu and cpu, limits.cpu, … (podComputeUsageHelper). */
function computeUsage(requests: Usage, limits: Usage): Usage {
  const out: Usage = new Map();
  for (const [k, v] of requests) {
    if (k === 'cpu' || k === 'memory' || k === 'ephemeral-storage') {
      out.set(k, v);
      out.set(`requests.${k}`, v);
    } else if (k.startsWith('hugepages-')) {
      out.set(`requests.${k}`, v);
    } else if (k.includes('/')) {
      out.set(`requests.${k}`, v);
    }
  }
  for (const [k, v] of limits) {
    if (k === 'cpu' || k === 'memory' || k === 'ephemeral-storage') out.set(`limits.${k}`, v);
  }
  return out;
}

export function podUsage(pod: Pod, nowMs: number): Usage {
  if (!podCountsForQuota(pod, nowMs)) return new Map();
  const usage: Usage = new Map([['pods', one()], [countResourceName('', 'pods'), one()]]);
  for (const [k, v] of computeUsage(podResources(pod, 'requests'), podResources(pod, 'limits'))) usage.set(k, v);
  return usage;
}

export function serviceUsage(svc: { spec?: { type?: string; ports?: Array<{ nodePort?: number }>; allocateLoadBalancerNodePorts?: boolean } }): Usage {
  const usage: Usage = new Map([['services', one()], [countResourceName('', 'services'), one()]]);
  const ports = svc.spec?.ports ?? [];
  const type = svc.spec?.type ?? 'ClusterIP';
  if (type === 'NodePort') usage.set('services.nodeports', quantityFromValue(BigInt(ports.length)));
  if (type === 'LoadBalancer') {
    // With node ports suppressed only the ports asking for one explicitly take one.
    const counted = svc.spec?.allocateLoadBalancerNodePorts === false ? ports.filter((p) => p.nodePort).length : ports.length;
    usage.set('services.nodeports', quantityFromValue(BigInt(counted)));
    usage.set('services.loadbalancers', one());
  }
  return usage;
}

export interface ClaimLike {
  metadata: { annotations?: Record<string, string> };
  spec?: { storageClassName?: string | null; resources?: { requests?: Record<string, string> } };
  status?: { allocatedResources?: Record<string, string> };
}

export function storageClassOf(pvc: ClaimLike): string {
  return pvc.spec?.storageClassName ?? pvc.metadata.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? '';
}

export function claimUsage(pvc: ClaimLike): Usage {
  const usage: Usage = new Map([['persistentvolumeclaims', one()], [countResourceName('', 'persistentvolumeclaims'), one()]]);
  const className = storageClassOf(pvc);
  if (className) usage.set(`${className}${STORAGE_CLASS_SUFFIX}persistentvolumeclaims`, one());
  // A claim being expanded is charged for the larger of what it asks and what it was given.
  let storage = tryParseQuantity(pvc.spec?.resources?.requests?.storage ?? '');
  const allocated = tryParseQuantity(pvc.status?.allocatedResources?.storage ?? '');
  if (allocated && (!storage || compare(allocated, storage) > 0)) storage = allocated;
  if (storage) {
    usage.set('requests.storage', storage);
    if (className) usage.set(`${className}${STORAGE_CLASS_SUFFIX}requests.storage`, storage);
  }
  return usage;
}

/** What one object of `group`/`plural` uses: the kind's evaluator, or an object count for the rest. */
export function objectUsage(group: string, plural: string, obj: unknown, nowMs: number): Usage {
  if (group === '') {
    if (plural === 'pods') return podUsage(obj as Pod, nowMs);
    if (plural === 'services') return serviceUsage(obj as Parameters<typeof serviceUsage>[0]);
    if (plural === 'persistentvolumeclaims') return claimUsage(obj as ClaimLike);
    if (LEGACY_COUNT_NAMES.has(plural)) return new Map([[plural, one()], [countResourceName('', plural), one()]]);
  }
  return new Map([[countResourceName(group, plural), one()]]);
}

/** Whether an update of `group`/`plural` can change what it uses (the evaluators that handle UPDATE). */
export function chargesUpdates(group: string, plural: string): boolean {
  return group === '' && (plural === 'services' || plural === 'persistentvolumeclaims');
}

/** The quota resources an object of `group`/`plural` can use (evaluator.MatchingResources over a quota's hard). */
export function matchingResources(group: string, plural: string, hard: Iterable<string>): string[] {
  const count = countResourceName(group, plural);
  const out: string[] = [];
  for (const name of hard) {
    if (name === count) out.push(name);
    else if (group === '' && plural === 'pods' && (POD_COMPUTE_RESOURCES.has(name) || name.startsWith('requests.') || name.startsWith('limits.')) && name !== 'requests.storage' && !name.includes(STORAGE_CLASS_SUFFIX)) out.push(name);
    else if (group === '' && plural === 'services' && (name === 'services' || name === 'services.nodeports' || name === 'services.loadbalancers')) out.push(name);
    else if (group === '' && plural === 'persistentvolumeclaims' && (name === 'persistentvolumeclaims' || name === 'requests.storage' || name.includes(STORAGE_CLASS_SUFFIX))) out.push(name);
    else if (group === '' && LEGACY_COUNT_NAMES.has(plural) && name === plural) out.push(name);
  }
  return out.sort();
}

// ---------- scopes ----------

/** The quota's scopes and scopeSelector as one list of requirements (scopes are `Exists`). */
export function scopeRequirements(quota: ResourceQuota): ScopedResourceSelectorRequirement[] {
  const out: ScopedResourceSelectorRequirement[] = (quota.spec?.scopes ?? []).map((scopeName) => ({ scopeName, operator: 'Exists' }));
  for (const r of quota.spec?.scopeSelector?.matchExpressions ?? []) out.push(r);
  return out;
}

function podMatchesScope(pod: Pod, req: ScopedResourceSelectorRequirement): boolean {
  const spec = pod.spec;
  switch (req.scopeName) {
    case 'Terminating':
      return spec?.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds !== null && spec.activeDeadlineSeconds >= 0;
    case 'NotTerminating':
      return spec?.activeDeadlineSeconds === undefined || spec.activeDeadlineSeconds === null;
    case 'BestEffort':
      return podQosClass(spec ?? { containers: [] }) === 'BestEffort';
    case 'NotBestEffort':
      return podQosClass(spec ?? { containers: [] }) !== 'BestEffort';
    case 'PriorityClass': {
      const name = spec?.priorityClassName ?? '';
      switch (req.operator) {
        case 'Exists': return name !== '';
        case 'DoesNotExist': return name === '';
        case 'In': return (req.values ?? []).includes(name);
        case 'NotIn': return !(req.values ?? []).includes(name);
      }
      return false;
    }
    case 'CrossNamespacePodAffinity': {
      const terms = [...(spec?.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []), ...(spec?.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [])];
      return terms.some((t) => (t.namespaces?.length ?? 0) > 0 || t.namespaceSelector !== undefined);
    }
  }
  return false;
}

/**
 * Whether a quota applies to an object: a quota without scopes applies to everything; a scoped one
 * only to pods its every scope selects.
 */
export function quotaMatches(quota: ResourceQuota, group: string, plural: string, obj: unknown): boolean {
  const reqs = scopeRequirements(quota);
  if (!reqs.length) return true;
  if (group !== '' || plural !== 'pods') return false;
  return reqs.every((r) => podMatchesScope(obj as Pod, r));
}

// ---------- constraints ----------

/**
 * A quota on cpu or memory makes every container state them (a backward-compatibility rule
 * upstream keeps): the message names each missing resource and the containers missing it.
 */
export function podConstraintError(pod: Pod, restricted: string[]): string | undefined {
  const required = restricted.filter((r) => POD_COMPUTE_CONSTRAINED.includes(r));
  if (!required.length) return undefined;
  const missing = new Map<string, Set<string>>();
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    const stated = computeUsage(containerList(c, 'requests'), containerList(c, 'limits'));
    for (const r of required) {
      if (stated.has(r)) continue;
      if (!missing.has(r)) missing.set(r, new Set());
      missing.get(r)!.add(c.name);
    }
  }
  if (!missing.size) return undefined;
  const parts = [...missing.keys()].sort().map((r) => `${r} for: ${[...missing.get(r)!].sort().join(',')}`);
  return `must specify ${parts.join('; ')}`;
}

/** Parses a quantity that validation already accepted. */
export function quantityOf(raw: string): Quantity {
  return parseQuantity(raw);
}

/** Which resource's objects a quota resource counts (what the controller lists to recount it). */
export function resourceCountedBy(name: string): { group: string; plural: string } | undefined {
  const counted = parseCountResource(name);
  if (counted) return counted;
  if (name === 'services' || name === 'services.nodeports' || name === 'services.loadbalancers') return { group: '', plural: 'services' };
  if (name === 'persistentvolumeclaims' || name === 'requests.storage' || name.includes(STORAGE_CLASS_SUFFIX)) return { group: '', plural: 'persistentvolumeclaims' };
  if (LEGACY_COUNT_NAMES.has(name)) return { group: '', plural: name };
  if (POD_COMPUTE_RESOURCES.has(name) || name.startsWith('requests.') || name.startsWith('limits.') || name.startsWith('hugepages-')) return { group: '', plural: 'pods' };
  return undefined;
}
