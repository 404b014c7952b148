/** Namespace validation: DNS-1123 label names and spec.finalizers. */
import type { FieldError } from '../errors.js';
import type { Namespace } from '../types.js';
import { expectArray, fieldErrors, invalidEach, isRecord, listOf } from './field-errors.js';
import { validateObjectMeta } from './meta.js';
import { qualifiedNameErrors } from './names.js';

/** Finalizer names Kubernetes defines itself; anything else must be domain-qualified (`example.com/x`). */
export const STANDARD_FINALIZERS = ['kubernetes', 'orphan', 'foregroundDeletion'] as const;

/** Full validation of a Namespace on create or update. */
export function validateNamespace(ns: Namespace): FieldError[] {
  const errs = validateObjectMeta(ns.metadata, { namespaced: false, nameRule: 'label' });
  if (isRecord(ns.spec)) errs.push(...validateSpecFinalizers(ns.spec.finalizers, 'spec.finalizers'));
  return errs;
}

function validateSpecFinalizers(finalizers: unknown, path: string): FieldError[] {
  const errs = expectArray(path, finalizers);
  for (const name of listOf(finalizers)) {
    if (typeof name !== 'string') {
      errs.push(fieldErrors.typeInvalid(path, name, 'must be a string'));
      continue;
    }
    const problems = qualifiedNameErrors(name);
    errs.push(...invalidEach(path, name, problems));
    if (problems.length === 0 && !name.includes('/') && !(STANDARD_FINALIZERS as readonly string[]).includes(name)) {
      errs.push(fieldErrors.invalid(path, name, 'name is neither a standard finalizer name nor is it fully qualified'));
    }
  }
  return errs;
}
