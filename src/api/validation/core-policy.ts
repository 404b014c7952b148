/**
 * Validation of the core group's policy kinds, ResourceQuota and LimitRange, with Kubernetes'
 * field paths and wording (ValidateResourceQuota, ValidateLimitRange).
 */
import type { FieldError } from '../errors.js';
import { LIMIT_TYPES } from '../limit-range.js';
import { compare, formatQuantity, milliValue, value, type Quantity } from '../quantity.js';
import { QUOTA_SCOPES, SCOPE_SELECTOR_OPERATORS, scopeValidForResource, STANDARD_QUOTA_RESOURCES } from '../resource-quota.js';
import { child, entriesOf, fieldErrors, index, invalidEach, isRecord, key, listOf } from './field-errors.js';
import { qualifiedNameErrors } from './names.js';
import { validateResourceQuantityValue } from './resources.js';

const STANDARD_CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);

/** Resources counted in whole objects (IsIntegerResourceName). */
function isIntegerQuotaResource(name: string): boolean {
  return ['pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims', 'services.nodeports', 'services.loadbalancers'].includes(name) || name.startsWith('count/') || name.endsWith('.storageclass.storage.k8s.io/persistentvolumeclaims');
}

function validateQuotaResourceName(name: string, path: string): FieldError[] {
  const errs = invalidEach(path, name, qualifiedNameErrors(name));
  if (!name.includes('/') && !STANDARD_QUOTA_RESOURCES.has(name) && !name.startsWith('hugepages-') && !name.startsWith('requests.hugepages-')) {
    errs.push(fieldErrors.invalid(path, name, 'must be a standard resource for quota'));
  }
  return errs;
}

/** A quota's resource list (spec.hard, status.hard, status.used): names for quota, non-negative quantities, whole counts. */
function validateQuotaResourceList(list: unknown, path: string): FieldError[] {
  if (list === undefined || list === null) return [];
  if (!isRecord(list)) return [fieldErrors.typeInvalid(path, list, 'must be an object')];
  const errs: FieldError[] = [];
  for (const [name, raw] of entriesOf(list)) {
    const at = key(path, name);
    errs.push(...validateQuotaResourceName(name, at));
    const checked = validateResourceQuantityValue(name, raw, at);
    errs.push(...checked.errors);
    if (checked.quantity && isIntegerQuotaResource(name) && checked.quantity.nanos % 1_000_000_000n !== 0n) {
      errs.push(fieldErrors.invalid(at, formatQuantity(checked.quantity), 'must be an integer'));
    }
  }
  return errs;
}

function validateScopes(spec: Record<string, unknown>, path: string): FieldError[] {
  const scopes = listOf(spec.scopes);
  if (!scopes.length) return [];
  const errs: FieldError[] = [];
  const at = child(path, 'scopes');
  const hard = isRecord(spec.hard) ? Object.keys(spec.hard) : [];
  for (const scope of scopes) {
    if (!(QUOTA_SCOPES as readonly unknown[]).includes(scope)) errs.push(fieldErrors.invalid(at, spec.scopes, 'unsupported scope'));
    for (const name of hard.sort()) {
      if (STANDARD_QUOTA_RESOURCES.has(name) && !scopeValidForResource(String(scope), name)) errs.push(fieldErrors.invalid(at, spec.scopes, 'unsupported scope applied to resource'));
    }
  }
  for (const [a, b] of [['BestEffort', 'NotBestEffort'], ['Terminating', 'NotTerminating']]) {
    if (scopes.includes(a) && scopes.includes(b)) errs.push(fieldErrors.invalid(at, spec.scopes, 'conflicting scopes'));
  }
  return errs;
}

function validateScopeSelector(spec: Record<string, unknown>, path: string): FieldError[] {
  const selector = spec.scopeSelector;
  if (selector === undefined || selector === null) return [];
  const at = child(path, 'scopeSelector');
  if (!isRecord(selector)) return [fieldErrors.typeInvalid(at, selector, 'must be an object')];
  const errs: FieldError[] = [];
  const hard = isRecord(spec.hard) ? Object.keys(spec.hard).sort() : [];
  listOf(selector.matchExpressions).forEach((req, i) => {
    const rp = index(child(at, 'matchExpressions'), i);
    if (!isRecord(req)) {
      errs.push(fieldErrors.typeInvalid(rp, req, 'must be an object'));
      return;
    }
    if (!(QUOTA_SCOPES as readonly unknown[]).includes(req.scopeName)) errs.push(fieldErrors.invalid(child(rp, 'scopeName'), req.scopeName, 'unsupported scope'));
    for (const name of hard) {
      if (STANDARD_QUOTA_RESOURCES.has(name) && !scopeValidForResource(String(req.scopeName), name)) errs.push(fieldErrors.invalid(rp, req, 'unsupported scope applied to resource'));
    }
    const values = listOf(req.values);
    if (req.operator === 'In' || req.operator === 'NotIn') {
      if (!values.length) errs.push(fieldErrors.required(child(rp, 'values'), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"));
    } else if (req.operator === 'Exists' || req.operator === 'DoesNotExist') {
      if (values.length) errs.push(fieldErrors.invalid(child(rp, 'values'), req.values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"));
    } else {
      errs.push(fieldErrors.notSupported(child(rp, 'operator'), req.operator, SCOPE_SELECTOR_OPERATORS));
    }
  });
  return errs;
}

/** ResourceQuota's spec and status (ValidateResourceQuotaSpec, ValidateResourceQuotaStatus). */
export function validateResourceQuotaBody(obj: { spec?: unknown; status?: unknown }): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj.spec;
  if (spec !== undefined && spec !== null) {
    if (!isRecord(spec)) return [fieldErrors.typeInvalid('spec', spec, 'must be an object')];
    errs.push(...validateQuotaResourceList(spec.hard, 'spec.hard'), ...validateScopes(spec, 'spec'), ...validateScopeSelector(spec, 'spec'));
  }
  if (isRecord(obj.status)) errs.push(...validateQuotaResourceList(obj.status.hard, 'status.hard'), ...validateQuotaResourceList(obj.status.used, 'status.used'));
  return errs;
}

// ---------- LimitRange ----------

function validateLimitResourceName(limitType: string, name: string, path: string): FieldError[] {
  const errs = invalidEach(path, name, qualifiedNameErrors(name));
  if (name.includes('/')) return errs;
  if ((limitType === 'Container' || limitType === 'Pod') && !STANDARD_CONTAINER_RESOURCES.has(name) && !name.startsWith('hugepages-')) {
    errs.push(fieldErrors.invalid(path, name, 'must be a standard resource for containers'));
  } else if (limitType === 'PersistentVolumeClaim' && name !== 'storage') {
    errs.push(fieldErrors.invalid(path, name, 'must be a standard resource type or fully qualified'));
  }
  return errs;
}

/** Native, non-hugepage resources may be requested below their limit (IsOvercommitAllowed). */
function overcommitAllowed(name: string): boolean {
  return (!name.includes('/') || name.includes('kubernetes.io/')) && !name.startsWith('hugepages-');
}

/** LimitRange's spec (ValidateLimitRange): one item per type, sane resource names, min ≤ defaultRequest ≤ default ≤ max. */
export function validateLimitRangeSpec(spec: unknown): FieldError[] {
  // spec is a struct upstream: a LimitRange without one (or without limits) limits nothing.
  if (spec === undefined || spec === null) return [];
  if (!isRecord(spec)) return [fieldErrors.typeInvalid('spec', spec, 'must be an object')];
  const errs: FieldError[] = [];
  const path = 'spec.limits';
  const seen = new Set<unknown>();
  listOf(spec.limits).forEach((raw, i) => {
    const ip = index(path, i);
    if (!isRecord(raw)) {
      errs.push(fieldErrors.typeInvalid(ip, raw, 'must be an object'));
      return;
    }
    const type = typeof raw.type === 'string' ? raw.type : '';
    const typePath = child(ip, 'type');
    if (!type) errs.push(fieldErrors.required(typePath, ''));
    else {
      errs.push(...invalidEach(typePath, type, qualifiedNameErrors(type)));
      if (!type.includes('/') && !(LIMIT_TYPES as readonly string[]).includes(type)) errs.push(fieldErrors.invalid(typePath, type, 'must be a standard limit type or fully qualified'));
    }
    if (seen.has(type)) errs.push(fieldErrors.duplicate(typePath, type));
    seen.add(type);

    const lists: Record<string, Map<string, Quantity>> = {};
    const names = new Set<string>();
    for (const field of ['max', 'min', 'default', 'defaultRequest', 'maxLimitRequestRatio'] as const) {
      const parsedList = new Map<string, Quantity>();
      lists[field] = parsedList;
      const list = raw[field];
      if (list === undefined || list === null) continue;
      if (type === 'Pod' && (field === 'default' || field === 'defaultRequest')) {
        if (isRecord(list) && Object.keys(list).length) errs.push(fieldErrors.forbidden(child(ip, field), "may not be specified when `type` is 'Pod'"));
        continue;
      }
      for (const [name, q] of entriesOf(list)) {
        const at = key(child(ip, field), name);
        errs.push(...validateLimitResourceName(type, name, at));
        const checked = validateResourceQuantityValue(name, q, at);
        errs.push(...checked.errors);
        if (checked.quantity) parsedList.set(name, checked.quantity);
        if (field !== 'maxLimitRequestRatio') names.add(name);
      }
    }
    if (type === 'PersistentVolumeClaim' && !lists.min!.has('storage') && !lists.max!.has('storage')) {
      errs.push(fieldErrors.required(child(ip, 'limits'), 'either minimum or maximum storage value is required, but neither was provided'));
    }
    for (const name of [...names, ...lists.maxLimitRequestRatio!.keys()]) {
      const min = lists.min!.get(name);
      const max = lists.max!.get(name);
      const def = lists.default!.get(name);
      const defReq = lists.defaultRequest!.get(name);
      const ratio = lists.maxLimitRequestRatio!.get(name);
      const s = formatQuantity;
      if (min && max && compare(min, max) > 0) errs.push(fieldErrors.invalid(key(child(ip, 'min'), name), s(min), `min value ${s(min)} is greater than max value ${s(max)}`));
      if (defReq && min && compare(min, defReq) > 0) errs.push(fieldErrors.invalid(key(child(ip, 'defaultRequest'), name), s(defReq), `min value ${s(min)} is greater than default request value ${s(defReq)}`));
      if (defReq && max && compare(defReq, max) > 0) errs.push(fieldErrors.invalid(key(child(ip, 'defaultRequest'), name), s(defReq), `default request value ${s(defReq)} is greater than max value ${s(max)}`));
      if (defReq && def && compare(defReq, def) > 0) errs.push(fieldErrors.invalid(key(child(ip, 'defaultRequest'), name), s(defReq), `default request value ${s(defReq)} is greater than default limit value ${s(def)}`));
      if (def && min && compare(min, def) > 0) errs.push(fieldErrors.invalid(key(child(ip, 'default'), name), s(def), `min value ${s(min)} is greater than default value ${s(def)}`));
      if (def && max && compare(def, max) > 0) errs.push(fieldErrors.invalid(key(child(ip, 'default'), name), s(def), `default value ${s(def)} is greater than max value ${s(max)}`));
      if (ratio && ratio.nanos < 1_000_000_000n) errs.push(fieldErrors.invalid(key(child(ip, 'maxLimitRequestRatio'), name), s(ratio), `ratio ${s(ratio)} is less than 1`));
      if (ratio && min && max && min.nanos > 0n) {
        const limit = Number(milliValue(max)) / Number(milliValue(min));
        const ratioValue = Number(milliValue(ratio)) / 1000;
        if (value(ratio) < 2n ** 53n && ratioValue > limit) {
          errs.push(fieldErrors.invalid(key(child(ip, 'maxLimitRequestRatio'), name), s(ratio), `ratio ${s(ratio)} is greater than max/min = ${limit.toFixed(6)}`));
        }
      }
      if (!overcommitAllowed(name) && def && defReq && compare(def, defReq) !== 0) {
        errs.push(fieldErrors.invalid(key(child(ip, 'defaultRequest'), name), s(defReq), `default value ${s(def)} must equal to defaultRequest value ${s(defReq)} in ${name}`));
      }
    }
  });
  return errs;
}
