/** ObjectMeta validation shared by every kind: names, namespace, labels, annotations, finalizers, owners. */
import type { FieldError } from '../errors.js';
import type { ObjectMeta } from '../types.js';
import {
  child,
  entriesOf,
  expectArray,
  expectInteger,
  expectObject,
  expectString,
  expectStringMap,
  fieldErrors,
  index,
  invalidEach,
  isRecord,
  listOf,
} from './field-errors.js';
import { dns1035LabelErrors, dns1123LabelErrors, dns1123SubdomainErrors, labelValueErrors, qualifiedNameErrors } from './names.js';

/**
 * Which rule an object's name follows: most kinds use an RFC 1123 subdomain, a few (Namespace) an
 * RFC 1123 label, and Service an RFC 1035 label (its name is a DNS label and an env var prefix).
 */
/** `pathSegment`: any name usable as one URL path segment (RBAC's roles and bindings, e.g. `system:basic-user`). */
export type NameRule = 'subdomain' | 'label' | 'dns1035' | 'pathSegment';

export interface ObjectMetaRules {
  /** namespaced kinds must carry metadata.namespace (the caller fills it from the URL first) */
  namespaced: boolean;
  nameRule: NameRule;
}

/** Kubernetes' cap on the summed byte length of all annotation keys and values. */
export const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024;

/** Problems with `name` under the chosen rule; `prefix` relaxes the rule for generateName. */
export function nameErrors(name: string, rule: NameRule, prefix = false): string[] {
  // generateName may end in '-' since random characters are appended after it.
  const checked = prefix && name.length > 1 && name.endsWith('-') ? `${name.slice(0, -1)}a` : name;
  if (rule === 'dns1035') return dns1035LabelErrors(checked);
  if (rule === 'pathSegment') return pathSegmentNameErrors(name, prefix);
  return rule === 'label' ? dns1123LabelErrors(checked) : dns1123SubdomainErrors(checked);
}

/** Upstream's path.IsValidPathSegmentName (and, for a generateName, IsValidPathSegmentPrefix). */
function pathSegmentNameErrors(name: string, prefix: boolean): string[] {
  const errs: string[] = [];
  if (!prefix && (name === '.' || name === '..')) errs.push(`may not be '${name}'`);
  for (const c of ['/', '%']) if (name.includes(c)) errs.push(`may not contain '${c}'`);
  return errs;
}

/** Validates metadata of a new or replaced object at path `metadata`. */
export function validateObjectMeta(meta: ObjectMeta | undefined, rules: ObjectMetaRules, path = 'metadata'): FieldError[] {
  if (!isRecord(meta)) return [fieldErrors.required(child(path, 'name'), 'name or generateName is required')];
  return [
    ...validateNameFields(meta, rules.nameRule, path),
    ...validateNamespaceField(meta.namespace, rules.namespaced, child(path, 'namespace')),
    ...validateGeneration(meta.generation, child(path, 'generation')),
    ...validateLabels(meta.labels, child(path, 'labels')),
    ...validateAnnotations(meta.annotations, child(path, 'annotations')),
    ...validateFinalizers(meta.finalizers, child(path, 'finalizers')),
    ...validateOwnerReferences(meta.ownerReferences, child(path, 'ownerReferences')),
  ];
}

function validateNameFields(meta: ObjectMeta, rule: NameRule, path: string): FieldError[] {
  const typeErrs = [...expectString(child(path, 'name'), meta.name), ...expectString(child(path, 'generateName'), meta.generateName)];
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  const { name, generateName } = meta;
  if (generateName) errs.push(...invalidEach(child(path, 'generateName'), generateName, nameErrors(generateName, rule, true)));
  if (name) errs.push(...invalidEach(child(path, 'name'), name, nameErrors(name, rule)));
  else if (!generateName) errs.push(fieldErrors.required(child(path, 'name'), 'name or generateName is required'));
  return errs;
}

function validateNamespaceField(namespace: unknown, namespaced: boolean, path: string): FieldError[] {
  const typeErrs = expectString(path, namespace);
  if (typeErrs.length) return typeErrs;
  if (!namespaced) return namespace ? [fieldErrors.forbidden(path, 'not allowed on this type')] : [];
  if (!namespace) return [fieldErrors.required(path)];
  return invalidEach(path, namespace, dns1123LabelErrors(namespace as string));
}

function validateGeneration(generation: unknown, path: string): FieldError[] {
  const typeErrs = expectInteger(path, generation);
  if (typeErrs.length) return typeErrs;
  return typeof generation === 'number' && generation < 0
    ? [fieldErrors.invalid(path, generation, 'must be greater than or equal to 0')]
    : [];
}

/** Label map rules; errors sit at the map's own path (`metadata.labels`), as Kubernetes reports them. */
export function validateLabels(labels: unknown, path: string): FieldError[] {
  const typeErrs = expectStringMap(path, labels);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  for (const [k, v] of entriesOf(labels)) {
    errs.push(...invalidEach(path, k, qualifiedNameErrors(k)));
    errs.push(...invalidEach(path, v, labelValueErrors(v as string)));
  }
  return errs;
}

/** One label key (or taint/toleration key): a qualified name. */
export function validateLabelName(name: string, path: string): FieldError[] {
  return invalidEach(path, name, qualifiedNameErrors(name));
}

/** Annotation keys are qualified names (case-insensitively); values are free-form but size-capped in total. */
export function validateAnnotations(annotations: unknown, path: string): FieldError[] {
  const typeErrs = expectStringMap(path, annotations);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  let totalBytes = 0;
  for (const [k, v] of entriesOf(annotations)) {
    errs.push(...invalidEach(path, k, qualifiedNameErrors(k.toLowerCase())));
    totalBytes += Buffer.byteLength(k) + Buffer.byteLength(v as string);
  }
  if (totalBytes > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES) errs.push(fieldErrors.tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES));
  return errs;
}

/** metadata.finalizers: each a qualified name; orphan and foreground deletion are mutually exclusive. */
export function validateFinalizers(finalizers: unknown, path: string): FieldError[] {
  const typeErrs = expectArray(path, finalizers);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  const list = listOf(finalizers);
  for (const f of list) {
    if (typeof f !== 'string') errs.push(fieldErrors.typeInvalid(path, f, 'must be a string'));
    else errs.push(...invalidEach(path, f, qualifiedNameErrors(f)));
  }
  if (list.includes('orphan') && list.includes('foregroundDeletion')) {
    errs.push(fieldErrors.invalid(path, list, 'finalizer orphan and foregroundDeletion cannot be both set'));
  }
  return errs;
}

/** ownerReferences: identity fields present, at most one controller. Errors sit at the list's path. */
export function validateOwnerReferences(refs: unknown, path: string): FieldError[] {
  const typeErrs = expectArray(path, refs);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  const controllers: string[] = [];
  listOf(refs).forEach((ref, i) => {
    if (!isRecord(ref)) {
      errs.push(...expectObject(index(path, i), ref));
      return;
    }
    const version = typeof ref.apiVersion === 'string' ? ref.apiVersion.split('/').pop() : '';
    if (!version) errs.push(fieldErrors.invalid(child(path, 'apiVersion'), ref.apiVersion ?? '', 'version must not be empty'));
    if (!ref.kind) errs.push(fieldErrors.invalid(child(path, 'kind'), ref.kind ?? '', 'kind must not be empty'));
    if (!ref.name) errs.push(fieldErrors.invalid(child(path, 'name'), ref.name ?? '', 'name must not be empty'));
    if (!ref.uid) errs.push(fieldErrors.invalid(child(path, 'uid'), ref.uid ?? '', 'uid must not be empty'));
    if (ref.controller === true) controllers.push(`${String(ref.kind)}/${String(ref.name)}`);
  });
  if (controllers.length > 1) {
    errs.push(
      fieldErrors.invalid(path, refs, `Only one reference can have Controller set to true. Found "true" in references for ${controllers.join(' and ')}`),
    );
  }
  return errs;
}

/**
 * Immutable metadata on update. uid and creationTimestamp are compared only when the new object
 * carries them: the registry copies them from the stored object, as kube-apiserver does before
 * validating, so a client that omits them is not at fault.
 */
export function validateObjectMetaUpdate(newMeta: ObjectMeta, oldMeta: ObjectMeta, path = 'metadata'): FieldError[] {
  const errs: FieldError[] = [];
  const immutable = (field: 'name' | 'namespace' | 'uid' | 'creationTimestamp', onlyIfSet: boolean) => {
    const next = newMeta[field];
    if (onlyIfSet && (next === undefined || next === '')) return;
    if ((next ?? '') !== (oldMeta[field] ?? '')) errs.push(fieldErrors.invalid(child(path, field), next ?? '', 'field is immutable'));
  };
  immutable('name', false);
  immutable('namespace', false);
  immutable('uid', true);
  immutable('creationTimestamp', true);
  return errs;
}
