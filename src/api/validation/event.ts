/**
 * core/v1 Event validation: kept light — only the identity of the object an event is about is checked.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { validateObjectMeta } from '../validation.js';
import type { Event } from '../types.js';
import type { FieldError } from '../errors.js';

export function validateEvent(ev: Event): FieldError[] {
  const errs = validateObjectMeta(ev.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!ev.involvedObject || typeof ev.involvedObject !== 'object') {
    errs.push({ field: 'involvedObject', type: 'FieldValueRequired', message: 'Required value' });
  }
  return errs;
}
