/**
 * RBAC escalation prevention, as kube-apiserver's RBAC storage does it: a user may create or update
 * a Role or ClusterRole only with every permission it grants already held (in the role's namespace,
 * or cluster-wide for a ClusterRole) or with the `escalate` verb on it, and may create or update a
 * binding only when holding every permission of the role it references or the `bind` verb on that
 * role (resourceNames honoured). Setting a ClusterRole's aggregationRule needs `escalate`. Members of
 * system:masters may do all of it; writes without a user (in-process controllers, the bootstrap
 * policy) are trusted.
 */
import { ApiError, errors } from '../../api/errors.js';
import type { UserInfo } from '../../api/user-info.js';
import { RBAC_GROUP } from '../../api/identities.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';
import type { ClusterRole, PolicyRule, Role, RoleBinding, RoleRef } from '../../api/types.js';

/** What the plugin asks the authorizer (src/auth/authz.ts with its RBAC authorizer). */
export interface EscalationAuthorizer {
  /** is the user allowed this verb on the role (`escalate`, `bind`)? */
  authorize(who: UserInfo, attrs: { verb: string; group: string; resource: string; namespace?: string; name?: string }): { allowed: boolean };
  /**
   * The parts of `rules` the user does not hold in the namespace (cluster-wide rules included; ''
   * for cluster-wide only), and whether the user's own rules could not all be resolved.
   */
  uncoveredRules(who: UserInfo, namespace: string, rules: PolicyRule[]): { uncovered: PolicyRule[]; incomplete: boolean };
  /** the rules of the role a binding in `namespace` references; undefined when it does not exist */
  roleReferenceRules(ref: RoleRef, namespace: string): PolicyRule[] | undefined;
}

const PRIVILEGED_GROUP = 'system:masters';

export function rbacEscalation(opts: { authorizer: EscalationAuthorizer }): AdmissionPlugin {
  const { authorizer } = opts;
  return {
    name: 'RBACEscalation',
    kind: 'validating',
    completeMessages: true,
    admit(attrs) {
      if (attrs.info.group !== RBAC_GROUP || attrs.operation === 'DELETE' || attrs.subresource) return;
      const user = attrs.user;
      if (!user || user.groups.includes(PRIVILEGED_GROUP)) return;
      switch (attrs.info.kind) {
        case 'Role':
        case 'ClusterRole':
          return admitRole(authorizer, user, attrs);
        case 'RoleBinding':
        case 'ClusterRoleBinding':
          return admitBinding(authorizer, user, attrs);
      }
    },
  };
}

function forbidden(attrs: AdmissionAttributes, message: string): ApiError {
  return errors.forbidden(`${attrs.info.plural}.${RBAC_GROUP} "${attrs.object.metadata.name ?? ''}" is forbidden: ${message}`);
}

function admitRole(authorizer: EscalationAuthorizer, user: UserInfo, attrs: AdmissionAttributes): void {
  const role = attrs.object as Role & ClusterRole;
  const namespace = attrs.info.namespaced ? (role.metadata.namespace ?? '') : '';
  const escalate = () => authorizer.authorize(user, { verb: 'escalate', group: RBAC_GROUP, resource: attrs.info.plural, namespace: namespace || undefined, name: role.metadata.name }).allowed;
  if (attrs.info.kind === 'ClusterRole' && role.aggregationRule) {
    const old = attrs.oldObject as ClusterRole | undefined;
    const changed = JSON.stringify(old?.aggregationRule ?? null) !== JSON.stringify(role.aggregationRule);
    if (changed && !escalate()) throw forbidden(attrs, 'must have cluster-admin privileges to use the aggregationRule');
    // An aggregated role's rules are the controller's to fill in; the selectors were checked above.
    return;
  }
  if (escalate()) return;
  confirmNoEscalation(authorizer, user, namespace, role.rules ?? [], attrs);
}

function admitBinding(authorizer: EscalationAuthorizer, user: UserInfo, attrs: AdmissionAttributes): void {
  const binding = attrs.object as RoleBinding;
  const old = attrs.oldObject as RoleBinding | undefined;
  // Changes that grant nothing new (the garbage collector's owner references, finalizers) need no check.
  if (old && JSON.stringify(old.subjects ?? []) === JSON.stringify(binding.subjects ?? []) && JSON.stringify(old.roleRef) === JSON.stringify(binding.roleRef)) return;
  const namespace = attrs.info.namespaced ? (binding.metadata.namespace ?? '') : '';
  const ref = binding.roleRef;
  const roleResource = ref.kind === 'Role' ? 'roles' : 'clusterroles';
  if (authorizer.authorize(user, { verb: 'bind', group: RBAC_GROUP, resource: roleResource, namespace: namespace || undefined, name: ref.name }).allowed) return;
  const rules = authorizer.roleReferenceRules(ref, namespace);
  if (!rules) throw errors.notFound({ group: RBAC_GROUP, resource: roleResource, name: ref.name });
  confirmNoEscalation(authorizer, user, namespace, rules, attrs);
}

/** Refuses, with upstream's message, rules the user does not hold. */
function confirmNoEscalation(authorizer: EscalationAuthorizer, user: UserInfo, namespace: string, rules: PolicyRule[], attrs: AdmissionAttributes): void {
  const { uncovered, incomplete } = authorizer.uncoveredRules(user, namespace, rules);
  if (!uncovered.length) return;
  let message = `user ${goQuote(user.username)} (groups=${goQuoteList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${compactRules(uncovered).map(compactString).sort().join('\n')}`;
  if (incomplete) message += '; resolution errors: some bindings name roles that do not exist';
  throw forbidden(attrs, message);
}

/** Missing single-verb rules differing only in their verb, merged into one (upstream's CompactRules). */
export function compactRules(rules: PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const byTarget = new Map<string, PolicyRule>();
  for (const r of rules) {
    const key = JSON.stringify([r.apiGroups ?? [], r.resources ?? [], r.resourceNames ?? [], r.nonResourceURLs ?? []]);
    const have = byTarget.get(key);
    if (have) {
      for (const v of r.verbs) if (!have.verbs.includes(v)) have.verbs.push(v);
    } else {
      const copy = { ...r, verbs: [...r.verbs] };
      byTarget.set(key, copy);
      out.push(copy);
    }
  }
  return out;
}

/** A rule as upstream's CompactString prints it: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups?.length) parts.push(`APIGroups:${goQuoteList(r.apiGroups)}`);
  if (r.resources?.length) parts.push(`Resources:${goQuoteList(r.resources)}`);
  if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${goQuoteList(r.nonResourceURLs)}`);
  if (r.resourceNames?.length) parts.push(`ResourceNames:${goQuoteList(r.resourceNames)}`);
  if (r.verbs.length) parts.push(`Verbs:${goQuoteList(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}

const goQuote = (s: string) => JSON.stringify(s);
/** Go's %q of a []string: `["a" "b"]`. */
const goQuoteList = (list: string[]) => `[${list.map(goQuote).join(' ')}]`;
