/**
 * core/v1 ReplicationController and PodTemplate validation.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { validateNonNegative, validateReplicatedTemplate } from './apps.js';
import type { FieldError } from '../errors.js';
import type { PodTemplate, ReplicationController } from '../types.js';
import {
  child,
  expectObject,
  expectStringMap,
  fieldErrors,
  isRecord,
  validateAnnotations,
  validateLabels,
  validateObjectMeta,
  validatePodSpec
} from '../validation.js';

function selectorMatches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

export function validateReplicationController(rc: ReplicationController): FieldError[] {
  const errs = validateObjectMeta(rc.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(rc.spec)) return [...errs, fieldErrors.required('spec.selector'), fieldErrors.required('spec.template')];
  const spec: Record<string, unknown> = rc.spec;
  errs.push(...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  const selectorErrs = expectStringMap('spec.selector', spec.selector);
  if (!selectorErrs.length) selectorErrs.push(...validateLabels(spec.selector, 'spec.selector'));
  const selector = !selectorErrs.length && isRecord(spec.selector) ? (spec.selector as Record<string, string>) : undefined;
  if (!selectorErrs.length && (!selector || Object.keys(selector).length === 0)) selectorErrs.push(fieldErrors.required('spec.selector'));
  errs.push(...selectorErrs, ...validateNonNegative(spec.replicas, 'spec.replicas'));
  const matchesSelector = selector && Object.keys(selector).length > 0 ? (labels: Record<string, string>) => selectorMatches(selector, labels) : undefined;
  errs.push(...validateReplicatedTemplate({ template: spec.template, matchesSelector, kind: 'ReplicationController' }));
  return errs;
}

/** Upstream's ValidatePodTemplateSpec at `template`: labels, annotations and a valid pod spec. */
function validatePodTemplateSpec(template: unknown, path: string): FieldError[] {
  if (template === undefined || template === null) return [fieldErrors.required(child(child(path, 'spec'), 'containers'))];
  if (!isRecord(template)) return expectObject(path, template);
  const errs: FieldError[] = [];
  const metaPath = child(path, 'metadata');
  errs.push(...expectObject(metaPath, template.metadata));
  if (isRecord(template.metadata)) {
    errs.push(...validateLabels(template.metadata.labels, child(metaPath, 'labels')), ...validateAnnotations(template.metadata.annotations, child(metaPath, 'annotations')));
  }
  const specPath = child(path, 'spec');
  const spec = template.spec;
  if (spec === undefined || spec === null) return [...errs, fieldErrors.required(child(specPath, 'containers'))];
  if (!isRecord(spec)) return [...errs, fieldErrors.typeInvalid(specPath, spec, 'must be an object')];
  errs.push(...validatePodSpec(spec, specPath));
  if (spec.ephemeralContainers !== undefined && spec.ephemeralContainers !== null) {
    errs.push(fieldErrors.forbidden(child(specPath, 'ephemeralContainers'), 'ephemeral containers not allowed in pod template'));
  }
  return errs;
}

export function validatePodTemplate(pt: PodTemplate): FieldError[] {
  return [...validateObjectMeta(pt.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validatePodTemplateSpec((pt as { template?: unknown }).template, 'template')];
}

