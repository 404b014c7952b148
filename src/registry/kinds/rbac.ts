/**
 * rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding: their shapes,
 * REST identity, defaults, validation, table columns and protobuf messages — everything hand-written
 * about the kinds. The authorizer that reads them is src/auth/rbac/; the controller that keeps
 * aggregated ClusterRoles' rules is src/controllers/clusterrole-aggregation/; escalation checks are
 * the RBAC admission plugin (src/admission/plugins/rbac-escalation.ts).
 *
 * As upstream: names are any single path segment (`system:basic-user`), a rule needs verbs and
 * either resources with apiGroups or nonResourceURLs (cluster roles only), a binding's roleRef is
 * immutable, and subjects are Users, Groups or ServiceAccounts.
 */
import type { FieldError } from '../../api/errors.js';
import type { ClusterRole, ClusterRoleBinding, KubeObject, Role, RoleBinding, Subject } from '../../api/types.js';
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
} from '../../api/validation.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import type { KindStrategy } from '../strategy.js';
import { CLUSTERROLEBINDINGS, CLUSTERROLES, resourceInfo, ROLEBINDINGS, ROLES, type KindIdentity, type ResourceInfo } from '../../api/identities.js';

// ---------- shapes ----------

export const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** Bootstrap objects carrying this annotation with "false" are left as they are at start. */
export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';

// ---------- REST identity ----------

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function rbacInfo(id: KindIdentity): ResourceInfo {
  return resourceInfo(id, { listKind: `${id.kind}List`, singular: id.kind.toLowerCase(), shortNames: [], verbs: VERBS, subresources: [], categories: [] });
}

export const ROLE_INFO = rbacInfo(ROLES);
export const CLUSTER_ROLE_INFO = rbacInfo(CLUSTERROLES);
export const ROLE_BINDING_INFO = rbacInfo(ROLEBINDINGS);
export const CLUSTER_ROLE_BINDING_INFO = rbacInfo(CLUSTERROLEBINDINGS);

// ---------- defaults (rbac/v1 SetDefaults_*) ----------

function defaultBinding(binding: RoleBinding): void {
  if (isRecord(binding.roleRef) && !binding.roleRef.apiGroup) binding.roleRef.apiGroup = RBAC_GROUP;
  for (const s of Array.isArray(binding.subjects) ? binding.subjects : []) {
    if (!isRecord(s) || s.apiGroup) continue;
    if (s.kind === 'ServiceAccount') s.apiGroup = '';
    else if (s.kind === 'User' || s.kind === 'Group') s.apiGroup = RBAC_GROUP;
  }
}

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

function validateRole(role: Role): FieldError[] {
  return [...validateObjectMeta(role.metadata, { namespaced: true, nameRule: 'pathSegment' }), ...validateRules(role.rules, true)];
}

function validateClusterRole(role: ClusterRole): FieldError[] {
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

function validateBinding(binding: RoleBinding, namespaced: boolean): FieldError[] {
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

function validateBindingUpdate(binding: RoleBinding, old: RoleBinding, namespaced: boolean): FieldError[] {
  const errs = [...validateBinding(binding, namespaced), ...validateObjectMetaUpdate(binding.metadata, old.metadata)];
  const a = binding.roleRef;
  const b = old.roleRef;
  if (!isRecord(a) || a.apiGroup !== b?.apiGroup || a.kind !== b?.kind || a.name !== b?.name) errs.push(fieldErrors.invalid('roleRef', a, 'cannot change roleRef'));
  return errs;
}

// ---------- tables (the columns kubectl shows upstream) ----------

/** Roles print their creation time itself, not an age. */
const ROLE_COLUMNS: ColumnProvider = {
  columns: [NAME_COLUMN, { ...column('Created At', 'CreationTimestamp is the time the object was created, in UTC.'), type: 'date' }],
  cells: (obj) => [obj.metadata.name ?? '', obj.metadata.creationTimestamp ?? ''],
};

/** The binding's subjects split by kind, as kubectl's wide columns show them. */
export function subjectStrings(subjects: Subject[] | null | undefined): { users: string[]; groups: string[]; serviceAccounts: string[] } {
  const out = { users: [] as string[], groups: [] as string[], serviceAccounts: [] as string[] };
  for (const s of subjects ?? []) {
    if (s.kind === 'User') out.users.push(s.name);
    else if (s.kind === 'Group') out.groups.push(s.name);
    else if (s.kind === 'ServiceAccount') out.serviceAccounts.push(`${s.namespace ?? ''}/${s.name}`);
  }
  return out;
}

const BINDING_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Role', 'RoleRef is the role being referenced by the binding.'),
    AGE_COLUMN,
    column('Users', 'Users in the binding.', 1),
    column('Groups', 'Groups in the binding.', 1),
    column('ServiceAccounts', 'ServiceAccounts in the binding.', 1),
  ],
  cells: (obj, { now }) => {
    const b = obj as RoleBinding;
    const s = subjectStrings(b.subjects);
    return [obj.metadata.name ?? '', `${b.roleRef?.kind ?? ''}/${b.roleRef?.name ?? ''}`, ageSince(obj.metadata.creationTimestamp, now), s.users.join(', '), s.groups.join(', '), s.serviceAccounts.join(', ')];
  },
};

// ---------- protobuf (generated from Kubernetes' rbac/v1 generated.proto) ----------

const ROLE_PROTOBUF = protobufMessagesOf('rbac.authorization.k8s.io/v1', 'Role');
const CLUSTER_ROLE_PROTOBUF = protobufMessagesOf('rbac.authorization.k8s.io/v1', 'ClusterRole');
const ROLE_BINDING_PROTOBUF = protobufMessagesOf('rbac.authorization.k8s.io/v1', 'RoleBinding');
const CLUSTER_ROLE_BINDING_PROTOBUF = protobufMessagesOf('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding');

// ---------- strategies ----------

export const roleStrategy: KindStrategy<Role> = {
  info: ROLE_INFO,
  table: ROLE_COLUMNS,
  protobuf: ROLE_PROTOBUF,
  hasStatus: false,
  validate: validateRole,
  validateUpdate: (role, old) => [...validateRole(role), ...validateObjectMetaUpdate(role.metadata, old.metadata)],
};

export const clusterRoleStrategy: KindStrategy<ClusterRole> = {
  info: CLUSTER_ROLE_INFO,
  table: ROLE_COLUMNS,
  protobuf: CLUSTER_ROLE_PROTOBUF,
  hasStatus: false,
  validate: validateClusterRole,
  validateUpdate: (role, old) => [...validateClusterRole(role), ...validateObjectMetaUpdate(role.metadata, old.metadata)],
};

export const roleBindingStrategy: KindStrategy<RoleBinding> = {
  info: ROLE_BINDING_INFO,
  table: BINDING_COLUMNS,
  protobuf: ROLE_BINDING_PROTOBUF,
  hasStatus: false,
  applyDefaults: defaultBinding,
  validate: (b) => validateBinding(b, true),
  validateUpdate: (b, old) => validateBindingUpdate(b, old, true),
};

export const clusterRoleBindingStrategy: KindStrategy<ClusterRoleBinding> = {
  info: CLUSTER_ROLE_BINDING_INFO,
  table: BINDING_COLUMNS,
  protobuf: CLUSTER_ROLE_BINDING_PROTOBUF,
  hasStatus: false,
  applyDefaults: defaultBinding,
  validate: (b) => validateBinding(b, false),
  validateUpdate: (b, old) => validateBindingUpdate(b, old, false),
};

export const RBAC_STRATEGIES: KindStrategy<KubeObject>[] = [roleStrategy, clusterRoleStrategy, roleBindingStrategy, clusterRoleBindingStrategy];
