/** Resource names and quantities: container requests/limits and node capacity. */
import type { FieldError } from '../errors.js';
import { compare, formatQuantity, parseQuantity, QuantityError, type Quantity } from '../quantity.js';
import { child, entriesOf, expectObject, fieldErrors, invalidEach, isRecord, key } from './field-errors.js';
import { qualifiedNameErrors } from './names.js';

const STANDARD_CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);
const STANDARD_NODE_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage', 'pods']);

function isHugePages(name: string): boolean {
  return name.startsWith('hugepages-');
}

/** Names in (or under) kubernetes.io are Kubernetes' own; anything else with a '/' is an extended resource. */
function isNative(name: string): boolean {
  return !name.includes('/') || name.includes('kubernetes.io/');
}

function isExtended(name: string): boolean {
  return !isNative(name) && !name.startsWith('requests.');
}

/** Native, non-hugepage resources may be requested below their limit; the rest must match exactly. */
function isOvercommitAllowed(name: string): boolean {
  return isNative(name) && !isHugePages(name);
}

/** Extended resources are counted devices, so fractions make no sense. */
function mustBeInteger(name: string): boolean {
  return isExtended(name);
}

function validateContainerResourceName(name: string, path: string): FieldError[] {
  const errs = invalidEach(path, name, qualifiedNameErrors(name));
  if (!name.includes('/')) {
    if (!STANDARD_CONTAINER_RESOURCES.has(name) && !isHugePages(name)) {
      errs.push(fieldErrors.invalid(path, name, 'must be a standard resource for containers'));
    }
  } else if (!isNative(name) && !isExtended(name)) {
    errs.push(fieldErrors.invalid(path, name, "doesn't follow extended resource name standard"));
  }
  return errs;
}

function validateNodeResourceName(name: string, path: string): FieldError[] {
  const errs = invalidEach(path, name, qualifiedNameErrors(name));
  if (!name.includes('/') && !STANDARD_NODE_RESOURCES.has(name) && !isHugePages(name)) {
    errs.push(fieldErrors.invalid(path, name, 'must be a standard resource type or fully qualified'));
  }
  return errs;
}

type QuantityCheck = { quantity: Quantity; errors: FieldError[] } | { quantity?: undefined; errors: FieldError[] };

/**
 * Parses one resource value and checks it is non-negative (and whole, for extended resources).
 * Returns the quantity only when it parsed, so callers can go on to compare it.
 */
export function validateResourceQuantityValue(resource: string, raw: unknown, path: string): QuantityCheck {
  if (typeof raw !== 'string' && typeof raw !== 'number') {
    return { errors: [fieldErrors.typeInvalid(path, raw, 'must be a quantity string')] };
  }
  let quantity: Quantity;
  try {
    quantity = parseQuantity(raw);
  } catch (e) {
    if (!(e instanceof QuantityError)) throw e;
    return { errors: [fieldErrors.invalid(path, String(raw), e.message)] };
  }
  const errors: FieldError[] = [];
  if (quantity.nanos < 0n) errors.push(fieldErrors.invalid(path, formatQuantity(quantity), 'must be greater than or equal to 0'));
  if (mustBeInteger(resource) && quantity.nanos % 1_000_000_000n !== 0n) {
    errors.push(fieldErrors.invalid(path, formatQuantity(quantity), 'must be an integer'));
  }
  return { quantity, errors };
}

/**
 * Container `resources`: only limits/requests, standard or extended names, valid non-negative
 * quantities, and each request no greater than its limit (equal for non-overcommittable ones).
 */
export function validateResourceRequirements(resources: unknown, path: string): FieldError[] {
  const typeErrs = expectObject(path, resources);
  if (typeErrs.length || !isRecord(resources)) return typeErrs;
  const req = resources;
  const limitsPath = child(path, 'limits');
  const requestsPath = child(path, 'requests');
  const errs = [...expectObject(limitsPath, req.limits), ...expectObject(requestsPath, req.requests)];

  const limits = new Map<string, Quantity>();
  for (const [name, raw] of entriesOf(req.limits)) {
    const at = key(limitsPath, name);
    errs.push(...validateContainerResourceName(name, at));
    const checked = validateResourceQuantityValue(name, raw, at);
    errs.push(...checked.errors);
    if (checked.quantity) limits.set(name, checked.quantity);
  }
  for (const [name, raw] of entriesOf(req.requests)) {
    const at = key(requestsPath, name);
    errs.push(...validateContainerResourceName(name, at));
    const checked = validateResourceQuantityValue(name, raw, at);
    errs.push(...checked.errors);
    const limit = limits.get(name);
    if (checked.quantity && limit) errs.push(...compareRequestToLimit(name, checked.quantity, limit, requestsPath));
  }
  return errs;
}

function compareRequestToLimit(name: string, request: Quantity, limit: Quantity, requestsPath: string): FieldError[] {
  const order = compare(request, limit);
  const shown = formatQuantity(request);
  if (order !== 0 && !isOvercommitAllowed(name)) {
    return [fieldErrors.invalid(requestsPath, shown, `must be equal to ${name} limit of ${formatQuantity(limit)}`)];
  }
  if (order > 0) {
    return [fieldErrors.invalid(requestsPath, shown, `must be less than or equal to ${name} limit of ${formatQuantity(limit)}`)];
  }
  return [];
}

/** Node status.capacity / status.allocatable: resource names and non-negative quantities (`status.capacity.cpu`). */
export function validateNodeResourceList(list: unknown, path: string): FieldError[] {
  const errs = expectObject(path, list);
  for (const [name, raw] of entriesOf(list)) {
    const at = child(path, name);
    errs.push(...validateNodeResourceName(name, at));
    errs.push(...validateResourceQuantityValue(name, raw, at).errors);
  }
  return errs;
}
