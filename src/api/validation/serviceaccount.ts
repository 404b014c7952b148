/**
 * core/v1 ServiceAccount validation: its secrets and imagePullSecrets references.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import type { ServiceAccount } from '../types.js';
import { child, expectArray, expectObject, expectString, fieldErrors, index, isRecord, validateObjectMeta } from '../validation.js';

function validateReferenceList(path: string, v: unknown, fields: readonly string[]): FieldError[] {
  const errs = expectArray(path, v);
  if (errs.length || !Array.isArray(v)) return errs;
  v.forEach((entry, i) => {
    const at = index(path, i);
    const objErrs = expectObject(at, entry);
    if (objErrs.length || !isRecord(entry)) {
      errs.push(...objErrs);
      return;
    }
    for (const f of fields) errs.push(...expectString(child(at, f), entry[f]));
  });
  return errs;
}

export function validateServiceAccount(sa: ServiceAccount): FieldError[] {
  const errs = validateObjectMeta(sa.metadata, { namespaced: true, nameRule: 'subdomain' });
  errs.push(...validateReferenceList('secrets', sa.secrets, ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath']));
  errs.push(...validateReferenceList('imagePullSecrets', sa.imagePullSecrets, ['name']));
  const automount = sa.automountServiceAccountToken;
  if (automount !== undefined && automount !== null && typeof automount !== 'boolean') {
    errs.push(fieldErrors.typeInvalid('automountServiceAccountToken', automount, 'must be a boolean'));
  }
  return errs;
}

