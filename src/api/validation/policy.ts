/**
 * policy/v1 validation: PodDisruptionBudget spec and status.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import { PERCENT, UNHEALTHY_POD_EVICTION_POLICIES } from '../disruption-budget.js';
import type { PodDisruptionBudget } from '../types.js';
import {
  child,
  expectInteger,
  fieldErrors,
  isRecord,
  validateLabelSelectorObject,
  validateObjectMeta
} from '../validation.js';

// ---------- int-or-percent ----------

/** A non-negative integer or a percentage of at most 100%, as apps' ValidatePositiveIntOrPercent + IsNotMoreThan100Percent. */
function validateIntOrPercent(path: string, v: unknown): FieldError[] {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return [fieldErrors.typeInvalid(path, v, 'must be an integer or percentage (e.g \'5%\')')];
    return v < 0 ? [fieldErrors.invalid(path, v, 'must be greater than or equal to 0')] : [];
  }
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      return [fieldErrors.invalid(path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")];
    }
    return Number(v.slice(0, -1)) > 100 ? [fieldErrors.invalid(path, v, 'must not be greater than 100%')] : [];
  }
  return [fieldErrors.typeInvalid(path, v, 'must be an integer or percentage (e.g \'5%\')')];
}

const isSet = (v: unknown) => v !== undefined && v !== null;

export function validatePdbSpec(spec: unknown): FieldError[] {
  const path = 'spec';
  if (spec === undefined || spec === null) return [];
  if (!isRecord(spec)) return [fieldErrors.typeInvalid(path, spec, 'must be an object')];
  const errs: FieldError[] = [];
  if (isSet(spec.minAvailable) && isSet(spec.maxUnavailable)) {
    errs.push(fieldErrors.invalid(path, spec, 'minAvailable and maxUnavailable cannot be both set'));
  }
  for (const f of ['minAvailable', 'maxUnavailable'] as const) {
    if (isSet(spec[f])) errs.push(...validateIntOrPercent(child(path, f), spec[f]));
  }
  errs.push(...validateLabelSelectorObject(spec.selector, child(path, 'selector')));
  const policy = spec.unhealthyPodEvictionPolicy;
  if (isSet(policy) && !(UNHEALTHY_POD_EVICTION_POLICIES as readonly unknown[]).includes(policy)) {
    errs.push(fieldErrors.notSupported(child(path, 'unhealthyPodEvictionPolicy'), policy, UNHEALTHY_POD_EVICTION_POLICIES));
  }
  return errs;
}

/** The counts are never negative (ValidatePodDisruptionBudgetStatusUpdate for policy/v1). */
export function validatePdbStatus(status: unknown): FieldError[] {
  if (!isRecord(status)) return [];
  const errs: FieldError[] = [];
  for (const f of ['disruptionsAllowed', 'currentHealthy', 'desiredHealthy', 'expectedPods', 'observedGeneration'] as const) {
    const v = status[f];
    const path = child('status', f);
    errs.push(...expectInteger(path, v));
    if (typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than or equal to 0'));
  }
  return errs;
}

export function validatePdb(pdb: PodDisruptionBudget): FieldError[] {
  return [...validateObjectMeta(pdb.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validatePdbSpec(pdb.spec)];
}

