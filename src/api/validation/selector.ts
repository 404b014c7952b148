/** metav1.LabelSelector objects as found in workload specs (ReplicaSet, Deployment, …). */
import type { FieldError } from '../errors.js';
import { child, expectArray, expectObject, fieldErrors, index, invalidEach, isRecord, listOf } from './field-errors.js';
import { validateLabelName, validateLabels } from './meta.js';
import { labelValueErrors } from './names.js';

/**
 * Validates `{matchLabels, matchExpressions}` at `path` (e.g. `spec.selector`). An absent selector
 * is not an error here; kinds that require one check presence themselves.
 */
export function validateLabelSelectorObject(selector: unknown, path: string): FieldError[] {
  if (selector === undefined || selector === null) return [];
  const typeErrs = expectObject(path, selector);
  if (typeErrs.length || !isRecord(selector)) return typeErrs;
  const exprPath = child(path, 'matchExpressions');
  const errs = [...validateLabels(selector.matchLabels, child(path, 'matchLabels')), ...expectArray(exprPath, selector.matchExpressions)];
  listOf(selector.matchExpressions).forEach((expr, i) => errs.push(...validateRequirement(expr, index(exprPath, i))));
  return errs;
}

function validateRequirement(expr: unknown, path: string): FieldError[] {
  if (!isRecord(expr)) return [fieldErrors.typeInvalid(path, expr, 'must be an object')];
  const errs: FieldError[] = [];
  const values = Array.isArray(expr.values) ? expr.values : [];
  errs.push(...expectArray(child(path, 'values'), expr.values));
  switch (expr.operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) errs.push(fieldErrors.required(child(path, 'values'), "must be specified when `operator` is 'In' or 'NotIn'"));
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0) errs.push(fieldErrors.forbidden(child(path, 'values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
      break;
    default:
      errs.push(fieldErrors.invalid(child(path, 'operator'), expr.operator, 'not a valid selector operator'));
  }
  errs.push(...validateLabelName(typeof expr.key === 'string' ? expr.key : '', child(path, 'key')));
  values.forEach((v, i) => {
    const at = index(child(path, 'values'), i);
    if (typeof v !== 'string') errs.push(fieldErrors.typeInvalid(at, v, 'must be a string'));
    else errs.push(...invalidEach(at, v, labelValueErrors(v)));
  });
  return errs;
}
