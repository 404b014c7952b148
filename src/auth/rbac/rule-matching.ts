/**
 * Owns what one RBAC PolicyRule allows, and which subjects a binding names: the matching rules of
 * Kubernetes' RBAC authorizer (apiGroups, resources with `resource/subresource`, `*` and `*\/sub`,
 * resourceNames, verbs, nonResourceURLs exact or `prefix*`), and "covers" — whether a set of rules
 * allows everything another rule does, which escalation prevention asks. Pure functions, no state.
 */
import type { UserInfo } from '../../api/user-info.js';
import type { PolicyRule, Subject } from '../../api/types.js';

export const ALL = '*';

/** What a request asks, as the RBAC authorizer sees it: a resource request, or a non-resource path. */
export interface RuleRequest {
  verb: string;
  group?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  /** set for a non-resource request (`/healthz`, `/api`…) */
  path?: string;
}

/** The user name a ServiceAccount authenticates as. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * Does the binding's subject name this user? A ServiceAccount subject without a namespace means one
 * in the binding's own namespace (a ClusterRoleBinding's has none, so such a subject matches no one).
 */
export function subjectMatches(subject: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return user.username === subject.name;
    case 'Group':
      return user.groups.includes(subject.name);
    case 'ServiceAccount': {
      const ns = subject.namespace || bindingNamespace;
      return !!ns && user.username === serviceAccountUsername(ns, subject.name);
    }
    default:
      return false;
  }
}

function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.some((v) => v === ALL || v === verb);
}

function groupMatches(rule: PolicyRule, group: string): boolean {
  return (rule.apiGroups ?? []).some((g) => g === ALL || g === group);
}

/** `*` matches every resource and subresource; `*\/scale` matches any resource's scale subresource. */
function resourceMatches(rule: PolicyRule, resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  for (const r of rule.resources ?? []) {
    if (r === ALL || r === combined) return true;
    if (subresource && r === `*/${subresource}`) return true;
  }
  return false;
}

/** No resourceNames: every name (and requests without one, list and create). */
function resourceNameMatches(rule: PolicyRule, name: string | undefined): boolean {
  const names = rule.resourceNames ?? [];
  if (!names.length) return true;
  return !!name && names.includes(name);
}

/** `*` matches every path; a URL ending in `*` matches by prefix; anything else exactly. */
function nonResourceURLMatches(rule: PolicyRule, path: string): boolean {
  for (const u of rule.nonResourceURLs ?? []) {
    if (u === ALL || u === path) return true;
    if (u.endsWith('*') && path.startsWith(u.slice(0, -1))) return true;
  }
  return false;
}

/** Does the rule allow the request? */
export function ruleAllows(rule: PolicyRule, req: RuleRequest): boolean {
  if (!verbMatches(rule, req.verb)) return false;
  if (req.path !== undefined) return nonResourceURLMatches(rule, req.path);
  return groupMatches(rule, req.group ?? '') && resourceMatches(rule, req.resource ?? '', req.subresource) && resourceNameMatches(rule, req.name);
}

/**
 * Do `owner`'s rules allow everything `requested` does? As upstream's validation.Covers: the
 * requested rule is broken into single-verb, single-group, single-resource (and single-name, single-URL)
 * rules, and each must be allowed by one of the owner's rules, where a `*` in the requested rule is
 * covered only by a `*` (or, for URLs, a covering prefix).
 */
export function covers(owner: readonly PolicyRule[], requested: readonly PolicyRule[]): { covered: boolean; uncovered: PolicyRule[] } {
  const uncovered: PolicyRule[] = [];
  for (const rule of requested) for (const piece of breakdownRule(rule)) if (!owner.some((o) => ruleCovers(o, piece))) uncovered.push(piece);
  return { covered: uncovered.length === 0, uncovered };
}

/** One rule per verb × group × resource × name, and per verb × URL. */
export function breakdownRule(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const group of rule.apiGroups ?? []) {
    for (const resource of rule.resources ?? []) {
      for (const verb of rule.verbs) {
        if (rule.resourceNames?.length) for (const name of rule.resourceNames) out.push({ verbs: [verb], apiGroups: [group], resources: [resource], resourceNames: [name] });
        else out.push({ verbs: [verb], apiGroups: [group], resources: [resource] });
      }
    }
  }
  for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) out.push({ verbs: [verb], nonResourceURLs: [url] });
  return out;
}

/** Does one owner rule cover one broken-down rule (upstream's ruleCovers)? */
function ruleCovers(owner: PolicyRule, piece: PolicyRule): boolean {
  const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === ALL || x === v);
  if (!piece.verbs.every((v) => has(owner.verbs, v))) return false;
  if (piece.nonResourceURLs?.length) {
    return piece.nonResourceURLs.every((u) => (owner.nonResourceURLs ?? []).some((o) => o === ALL || o === u || (o.endsWith('*') && u.startsWith(o.slice(0, -1)))));
  }
  if (!(piece.apiGroups ?? []).every((g) => has(owner.apiGroups, g))) return false;
  const resourcesCovered = (piece.resources ?? []).every((r) => {
    return (owner.resources ?? []).some((o) => {
      if (o === ALL || o === r) return true;
      // `*/scale` covers any `x/scale`
      const slash = r.indexOf('/');
      return o.startsWith('*/') && slash > 0 && o.slice(1) === r.slice(slash);
    });
  });
  if (!resourcesCovered) return false;
  // An owner rule without names covers any names; one with names only those names.
  if (!owner.resourceNames?.length) return true;
  return !!piece.resourceNames?.length && piece.resourceNames.every((n) => owner.resourceNames!.includes(n));
}
