/**
 * LimitRange semantics, pure and shared by the kind (src/registry/kinds/core-policy.ts: the
 * defaults a LimitRangeItem gets) and the LimitRanger admission plugin
 * (src/admission/plugins/limit-ranger.ts): the requests and limits a container without them gets,
 * the `kubernetes.io/limit-ranger` annotation saying so, and the min / max / maxLimitRequestRatio
 * checks for Container, Pod and PersistentVolumeClaim with Kubernetes' messages.
 */
import { add, compare, formatQuantity, milliValue, tryParseQuantity, value, type Quantity } from './quantity.js';
import type { Container, LimitRange, LimitRangeItem, Pod } from './types.js';

export const LIMIT_TYPES = ['Pod', 'Container', 'PersistentVolumeClaim'] as const;
export const LIMIT_RANGER_ANNOTATION = 'kubernetes.io/limit-ranger';

type List = Record<string, string>;

/**
 * SetDefaults_LimitRangeItem: for a Container item, a missing default limit is the max, a missing
 * default request is the default limit, or else the min.
 */
export function defaultLimitRangeItem(item: LimitRangeItem): void {
  if (item.type !== 'Container') return;
  const defaults: List = { ...(item.default ?? {}) };
  const defaultRequest: List = { ...(item.defaultRequest ?? {}) };
  for (const [k, v] of Object.entries(item.max ?? {})) if (!(k in defaults)) defaults[k] = v;
  for (const [k, v] of Object.entries(defaults)) if (!(k in defaultRequest)) defaultRequest[k] = v;
  for (const [k, v] of Object.entries(item.min ?? {})) if (!(k in defaultRequest)) defaultRequest[k] = v;
  if (Object.keys(defaults).length) item.default = defaults;
  if (Object.keys(defaultRequest).length) item.defaultRequest = defaultRequest;
}

// ---------- defaults for pods ----------

/** The default limits and requests a LimitRange's Container items give containers. */
function containerDefaults(range: LimitRange): { limits: List; requests: List } {
  const limits: List = {};
  const requests: List = {};
  for (const item of range.spec?.limits ?? []) {
    if (item.type !== 'Container') continue;
    Object.assign(requests, item.defaultRequest ?? {});
    Object.assign(limits, item.default ?? {});
  }
  return { limits, requests };
}

function mergeContainer(c: Container, defaults: { limits: List; requests: List }, prefix: string, notes: string[]): void {
  const resources = (c.resources ??= {});
  const limits: List = { ...((resources.limits as List | undefined) ?? {}) };
  const requests: List = { ...((resources.requests as List | undefined) ?? {}) };
  const setLimits: string[] = [];
  const setRequests: string[] = [];
  for (const [k, v] of Object.entries(defaults.limits)) {
    if (!(k in limits)) {
      limits[k] = v;
      setLimits.push(k);
    }
  }
  for (const [k, v] of Object.entries(defaults.requests)) {
    if (!(k in requests)) {
      requests[k] = v;
      setRequests.push(k);
    }
  }
  if (setLimits.length) resources.limits = limits;
  if (setRequests.length) resources.requests = requests;
  if (setRequests.length) notes.push(`${setRequests.sort().join(', ')} request for ${prefix} ${c.name}`);
  if (setLimits.length) notes.push(`${setLimits.sort().join(', ')} limit for ${prefix} ${c.name}`);
}

/**
 * Gives every container (and init container) the requests and limits it does not state from the
 * namespace's LimitRanges, and records what was set in the pod's `kubernetes.io/limit-ranger`
 * annotation, as the LimitRanger plugin does. Returns whether anything changed.
 */
export function applyPodDefaults(pod: Pod, ranges: LimitRange[]): boolean {
  let changed = false;
  for (const range of ranges) {
    const defaults = containerDefaults(range);
    if (!Object.keys(defaults.limits).length && !Object.keys(defaults.requests).length) continue;
    const notes: string[] = [];
    for (const c of pod.spec?.containers ?? []) mergeContainer(c, defaults, 'container', notes);
    for (const c of pod.spec?.initContainers ?? []) mergeContainer(c, defaults, 'init container', notes);
    if (notes.length) {
      pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [LIMIT_RANGER_ANNOTATION]: `LimitRanger plugin set: ${notes.join('; ')}` };
      changed = true;
    }
  }
  return changed;
}

// ---------- constraints ----------

const MAX_MILLI_VALUE = 9223372036854775807n / 1000n;

/** Request, limit and enforced value at a common precision: milli-units unless that would overflow. */
function comparable(req: Quantity | undefined, lim: Quantity | undefined, enforced: Quantity): [bigint, bigint, bigint] {
  const values = [req, lim, enforced].map((q) => (q ? value(q) : 0n)) as [bigint, bigint, bigint];
  if (values.every((v) => v <= MAX_MILLI_VALUE)) return [req ? milliValue(req) : 0n, lim ? milliValue(lim) : 0n, milliValue(enforced)];
  return values;
}

type Parsed = Map<string, Quantity>;

function parsed(list: Record<string, string> | undefined): Parsed {
  const out: Parsed = new Map();
  for (const [k, v] of Object.entries(list ?? {})) {
    const q = tryParseQuantity(v);
    if (q) out.set(k, q);
  }
  return out;
}

const show = formatQuantity;

function minConstraint(limitType: string, name: string, enforced: Quantity, requests: Parsed, limits: Parsed): string | undefined {
  const req = requests.get(name);
  const lim = limits.get(name);
  const [r, l, e] = comparable(req, lim, enforced);
  if (!req) return `minimum ${name} usage per ${limitType} is ${show(enforced)}.  No request is specified`;
  if (r < e) return `minimum ${name} usage per ${limitType} is ${show(enforced)}, but request is ${show(req)}`;
  if (lim && l < e) return `minimum ${name} usage per ${limitType} is ${show(enforced)}, but limit is ${show(lim)}`;
  return undefined;
}

function maxConstraint(limitType: string, name: string, enforced: Quantity, requests: Parsed, limits: Parsed): string | undefined {
  const req = requests.get(name);
  const lim = limits.get(name);
  const [r, l, e] = comparable(req, lim, enforced);
  if (!lim) return `maximum ${name} usage per ${limitType} is ${show(enforced)}.  No limit is specified`;
  if (l > e) return `maximum ${name} usage per ${limitType} is ${show(enforced)}, but limit is ${show(lim)}`;
  if (req && r > e) return `maximum ${name} usage per ${limitType} is ${show(enforced)}, but request is ${show(req)}`;
  return undefined;
}

/** A claim has no limits: its max applies to what it requests. */
function maxRequestConstraint(limitType: string, name: string, enforced: Quantity, requests: Parsed): string | undefined {
  const req = requests.get(name);
  const [r, , e] = comparable(req, undefined, enforced);
  if (!req) return `maximum ${name} usage per ${limitType} is ${show(enforced)}.  No request is specified`;
  if (r > e) return `maximum ${name} usage per ${limitType} is ${show(enforced)}, but request is ${show(req)}`;
  return undefined;
}

function ratioConstraint(limitType: string, name: string, enforced: Quantity, requests: Parsed, limits: Parsed): string | undefined {
  const req = requests.get(name);
  const lim = limits.get(name);
  const [r, l] = comparable(req, lim, enforced);
  if (!req || r === 0n) return `${name} max limit to request ratio per ${limitType} is ${show(enforced)}, but no request is specified or request is 0`;
  if (!lim || l === 0n) return `${name} max limit to request ratio per ${limitType} is ${show(enforced)}, but no limit is specified or limit is 0`;
  const observed = Number(l) / Number(r);
  const enforcedValue = value(enforced) <= MAX_MILLI_VALUE ? Number(milliValue(enforced)) : Number(value(enforced));
  const observedScaled = value(enforced) <= MAX_MILLI_VALUE ? observed * 1000 : observed;
  if (observedScaled > enforcedValue) return `${name} max limit to request ratio per ${limitType} is ${show(enforced)}, but provided ratio is ${observed.toFixed(6)}`;
  return undefined;
}

function checkItem(item: LimitRangeItem, limitType: string, requests: Parsed, limits: Parsed, out: string[]): void {
  const push = (m: string | undefined) => {
    if (m !== undefined) out.push(m);
  };
  for (const [k, q] of parsed(item.min)) push(minConstraint(limitType, k, q, requests, limits));
  for (const [k, q] of parsed(item.max)) push(maxConstraint(limitType, k, q, requests, limits));
  for (const [k, q] of parsed(item.maxLimitRequestRatio)) push(ratioConstraint(limitType, k, q, requests, limits));
}

/** The pod's requests or limits: containers summed, each init container a floor, overhead added. */
function podTotal(pod: Pod, which: 'requests' | 'limits'): Parsed {
  const total: Parsed = new Map();
  for (const c of pod.spec?.containers ?? []) {
    for (const [k, v] of parsed(c.resources?.[which] as List | undefined)) total.set(k, total.has(k) ? add(total.get(k)!, v) : v);
  }
  for (const c of pod.spec?.initContainers ?? []) {
    for (const [k, v] of parsed(c.resources?.[which] as List | undefined)) if (!total.has(k) || compare(total.get(k)!, v) < 0) total.set(k, v);
  }
  for (const [k, v] of parsed(pod.spec?.overhead as List | undefined)) total.set(k, total.has(k) ? add(total.get(k)!, v) : v);
  return total;
}

/** Every way the pod breaks the LimitRange's Container and Pod items (PodValidateLimitFunc). */
export function podLimitViolations(pod: Pod, range: LimitRange): string[] {
  const out: string[] = [];
  for (const item of range.spec?.limits ?? []) {
    if (item.type === 'Container') {
      for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
        checkItem(item, 'Container', parsed(c.resources?.requests as List | undefined), parsed(c.resources?.limits as List | undefined), out);
      }
    } else if (item.type === 'Pod') {
      checkItem(item, 'Pod', podTotal(pod, 'requests'), podTotal(pod, 'limits'), out);
    }
  }
  return out;
}

/** Every way the claim breaks the LimitRange's PersistentVolumeClaim items (min and max of what it requests). */
export function claimLimitViolations(pvc: { spec?: { resources?: { requests?: List; limits?: List } } }, range: LimitRange): string[] {
  const out: string[] = [];
  const requests = parsed(pvc.spec?.resources?.requests);
  const limits = parsed(pvc.spec?.resources?.limits);
  for (const item of range.spec?.limits ?? []) {
    if (item.type !== 'PersistentVolumeClaim') continue;
    for (const [k, q] of parsed(item.min)) {
      const m = minConstraint('PersistentVolumeClaim', k, q, requests, limits);
      if (m) out.push(m);
    }
    for (const [k, q] of parsed(item.max)) {
      const m = maxRequestConstraint('PersistentVolumeClaim', k, q, requests);
      if (m) out.push(m);
    }
  }
  return out;
}

/** One message for several errors, as Go's utilerrors.NewAggregate prints them (duplicates once). */
export function aggregateMessages(messages: string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}
