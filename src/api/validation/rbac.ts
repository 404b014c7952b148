/**
 * rbac.authorization.k8s.io/v1 validation: Role, ClusterRole, RoleBinding, ClusterRoleBinding (pkg/apis/rbac/validation).
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { RBAC_GROUP } from '../identities.js';
import type { FieldError } from '../errors.js';
import type { ClusterRole, Role, RoleBinding } from '../types.js';
import {
  child,
  dns1123SubdomainErrors,
  fieldErrors,
  index,
  invalidEach,
  isRecord,
  validateLabelSelectorObject,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../validation.js';

// ---------- validation (pkg/apis/rbac/validation) ----------

function validateRules(rules: unknown, namespaced: boolean): FieldError[] {
  if (rules === undefined || rules === null) return [];
  if (!Array.isArray(rules)) return [fieldErrors.typeInvalid('rules', rules, 'must be an array')];
  return rules.flatMap((rule, i) => validatePolicyRule(rule, namespaced, index('rules', i)));
}

export function validatePolicyRule(rule: unknown, namespaced: boolean, path: string): FieldError[] {
  if (!isRecord(rule)) return [fieldErrors.typeInvalid(path, rule, 'must be an object')];
  const errs: FieldError[] = [];
  for (const f of ['verbs', 'apiGroups', 'resources', 'resourceNames', 'nonResourceURLs']) {
    const v = rule[f];
    if (v !== undefined && v !== null && (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))) errs.push(fieldErrors.typeInvalid(child(path, f), v, 'must be a list of strings'));
  }
  if (errs.length) return errs;
  const len = (f: string) => ((rule[f] as string[] | undefined) ?? []).length;
  if (!len('verbs')) errs.push(fieldErrors.required(child(path, 'verbs'), 'verbs must contain at least one value'));
  if (len('nonResourceURLs')) {
    if (namespaced) errs.push(fieldErrors.invalid(child(path, 'nonResourceURLs'), rule.nonResourceURLs, 'namespaced rules cannot apply to non-resource URLs'));
    if (len('apiGroups') || len('resources')) errs.push(fieldErrors.invalid(child(path, 'nonResourceURLs'), rule.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
    return errs;
  }
  if (!len('apiGroups')) errs.push(fieldErrors.required(child(path, 'apiGroups'), 'resource rules must supply at least one api group'));
  if (!len('resources')) errs.push(fieldErrors.required(child(path, 'resources'), 'resource rules must supply at least one resource'));
  return errs;
}

export function validateRole(role: Role): FieldError[] {
  return [...validateObjectMeta(role.metadata, { namespaced: true, nameRule: 'pathSegment' }), ...validateRules(role.rules, true)];
}

export function validateClusterRole(role: ClusterRole): FieldError[] {
  const errs = [...validateObjectMeta(role.metadata, { namespaced: false, nameRule: 'pathSegment' }), ...validateRules(role.rules, false)];
  const agg = role.aggregationRule;
  if (agg !== undefined && agg !== null) {
    const path = child('aggregationRule', 'clusterRoleSelectors');
    if (!isRecord(agg)) errs.push(fieldErrors.typeInvalid('aggregationRule', agg, 'must be an object'));
    else if (agg.clusterRoleSelectors !== undefined && agg.clusterRoleSelectors !== null && !Array.isArray(agg.clusterRoleSelectors)) errs.push(fieldErrors.typeInvalid(path, agg.clusterRoleSelectors, 'must be an array'));
    else if (!agg.clusterRoleSelectors?.length) errs.push(fieldErrors.required(path, 'at least one clusterRoleSelector required if aggregationRule is non-nil'));
    else agg.clusterRoleSelectors.forEach((s, i) => errs.push(...validateLabelSelectorObject(s, index(path, i))));
  }
  return errs;
}

function pathSegmentErrors(name: string): string[] {
  const errs: string[] = [];
  if (name === '.' || name === '..') errs.push(`may not be '${name}'`);
  for (const c of ['/', '%']) if (name.includes(c)) errs.push(`may not contain '${c}'`);
  return errs;
}

export function validateBinding(binding: RoleBinding, namespaced: boolean): FieldError[] {
  const errs = validateObjectMeta(binding.metadata, { namespaced, nameRule: 'pathSegment' });
  const ref = binding.roleRef as unknown;
  if (!isRecord(ref)) {
    errs.push(fieldErrors.required('roleRef'));
  } else {
    if (ref.apiGroup !== RBAC_GROUP) errs.push(fieldErrors.notSupported(child('roleRef', 'apiGroup'), ref.apiGroup, [RBAC_GROUP]));
    const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
    if (!kinds.includes(ref.kind as string)) errs.push(fieldErrors.notSupported(child('roleRef', 'kind'), ref.kind, kinds));
    if (typeof ref.name !== 'string' || !ref.name) errs.push(fieldErrors.required(child('roleRef', 'name'), ''));
    else errs.push(...invalidEach(child('roleRef', 'name'), ref.name, pathSegmentErrors(ref.name)));
  }
  const subjects = binding.subjects as unknown;
  if (subjects !== undefined && subjects !== null && !Array.isArray(subjects)) errs.push(fieldErrors.typeInvalid('subjects', subjects, 'must be an array'));
  else (subjects ?? []).forEach((s: unknown, i: number) => errs.push(...validateSubject(s, namespaced, index('subjects', i))));
  return errs;
}

function validateSubject(subject: unknown, namespaced: boolean, path: string): FieldError[] {
  if (!isRecord(subject)) return [fieldErrors.typeInvalid(path, subject, 'must be an object')];
  const errs: FieldError[] = [];
  const name = subject.name;
  if (typeof name !== 'string' || !name) errs.push(fieldErrors.required(child(path, 'name'), ''));
  switch (subject.kind) {
    case 'ServiceAccount':
      if (typeof name === 'string' && name) errs.push(...invalidEach(child(path, 'name'), name, dns1123SubdomainErrors(name)));
      if (subject.apiGroup) errs.push(fieldErrors.notSupported(child(path, 'apiGroup'), subject.apiGroup, ['']));
      if (!namespaced && !subject.namespace) errs.push(fieldErrors.required(child(path, 'namespace'), ''));
      break;
    case 'User':
    case 'Group':
      if (subject.apiGroup !== RBAC_GROUP) errs.push(fieldErrors.notSupported(child(path, 'apiGroup'), subject.apiGroup, [RBAC_GROUP]));
      break;
    default:
      errs.push(fieldErrors.notSupported(child(path, 'kind'), subject.kind, ['ServiceAccount', 'User', 'Group']));
  }
  return errs;
}

export function validateBindingUpdate(binding: RoleBinding, old: RoleBinding, namespaced: boolean): FieldError[] {
  const errs = [...validateBinding(binding, namespaced), ...validateObjectMetaUpdate(binding.metadata, old.metadata)];
  const a = binding.roleRef;
  const b = old.roleRef;
  if (!isRecord(a) || a.apiGroup !== b?.apiGroup || a.kind !== b?.kind || a.name !== b?.name) errs.push(fieldErrors.invalid('roleRef', a, 'cannot change roleRef'));
  return errs;
}

