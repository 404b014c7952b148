/**
 * coordination.k8s.io/v1 validation: Lease.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import type { Lease } from '../types.js';
import { child, expectInteger, expectObject, expectString, fieldErrors, isRecord, validateObjectMeta } from '../validation.js';

function isTime(v: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v));
}

function validateLeaseSpec(spec: unknown): FieldError[] {
  const path = 'spec';
  const errs = expectObject(path, spec);
  if (!isRecord(spec)) return errs;
  errs.push(...expectString(child(path, 'holderIdentity'), spec.holderIdentity));
  for (const f of ['leaseDurationSeconds', 'leaseTransitions'] as const) {
    const v = spec[f];
    errs.push(...expectInteger(child(path, f), v));
    if (typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(child(path, f), v, 'must be greater than or equal to 0'));
  }
  for (const f of ['acquireTime', 'renewTime'] as const) {
    const v = spec[f];
    errs.push(...expectString(child(path, f), v));
    if (typeof v === 'string' && !isTime(v)) errs.push(fieldErrors.invalid(child(path, f), v, 'must be an RFC 3339 time'));
  }
  return errs;
}

export function validateLease(lease: Lease): FieldError[] {
  return [...validateObjectMeta(lease.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateLeaseSpec(lease.spec)];
}
