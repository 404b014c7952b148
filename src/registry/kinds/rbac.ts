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
 * Validation rules live in src/api/validation/rbac.ts.
 */
import type { ClusterRole, ClusterRoleBinding, KubeObject, Role, RoleBinding, Subject } from '../../api/types.js';
import { isRecord,
  validateObjectMetaUpdate
} from '../../api/validation.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import type { KindStrategy } from '../strategy.js';
import { CLUSTERROLEBINDINGS, CLUSTERROLES, resourceInfo, ROLEBINDINGS, ROLES, type KindIdentity, type ResourceInfo, RBAC_GROUP } from '../../api/identities.js';

import { validateBinding, validateBindingUpdate, validateClusterRole, validateRole } from '../../api/validation/rbac.js';
// ---------- shapes ----------


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
