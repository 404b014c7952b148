/**
 * Owns the RBAC authorizer: an in-memory index of Roles, ClusterRoles, RoleBindings and
 * ClusterRoleBindings, fed by watches on the registry, and the decisions it implies. It denies by
 * default; rules only add. ClusterRoleBindings grant their ClusterRole's rules everywhere; a
 * RoleBinding grants its Role's (or ClusterRole's) rules only in the binding's namespace.
 *
 * Decisions are synchronous (a request never waits for the store) and cached by user, groups and
 * request attributes; the cache is dropped whenever any RBAC object changes, so a deleted binding
 * stops granting at the next request. As with the Node authorizer's graph (src/auth/node-graph.ts),
 * the store delivers watch events in a microtask right after the commit and requests are handled in
 * I/O callbacks, so a change written by one request is indexed before the next is authorized.
 */
import type { UserInfo } from '../../api/user-info.js';
import type { Registry, RegistryWatcher } from '../../registry/registry.js';
import { CLUSTER_ROLE_BINDING_INFO, CLUSTER_ROLE_INFO, ROLE_BINDING_INFO, ROLE_INFO } from '../../registry/kinds/rbac.js';
import { ruleAllows, subjectMatches, type RuleRequest } from './rule-matching.js';
import type { ClusterRole, PolicyRule, Role, RoleBinding, RoleRef } from '../../api/types.js';

/** One namespace's (or, with namespace '', the cluster's) rules for a user, as SelfSubjectRulesReview shows them. */
export interface ResourceRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
}

export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs: string[];
}

export interface UserRules {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  /** some binding names a role that does not exist, or another authorizer's rules cannot be listed */
  incomplete: boolean;
}

/** What the composed authorizer (src/auth/authz.ts) needs of RBAC. */
export interface RbacRules {
  allows(user: UserInfo, req: RuleRequest & { namespace?: string }): boolean;
  rulesFor(user: UserInfo, namespace: string): UserRules;
  /** every rule the user holds in the namespace (cluster-wide ones included), for escalation checks */
  policyRulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; incomplete: boolean };
  /** the rules of the role a binding in `namespace` ('' for a ClusterRoleBinding) references; undefined when it does not exist */
  roleReferenceRules(ref: RoleRef, namespace: string): PolicyRule[] | undefined;
}

/** how long to wait before trying again to rebuild the index when the store refused */
const REBUILD_RETRY_MS = 1000;
/** Decisions cached at most; past it the cache starts over (a bench's mix of users and paths stays far below). */
const MAX_CACHED_DECISIONS = 50_000;

export interface RbacAuthorizerOptions {
  registry: Registry;
}

/** RBAC over the registry's objects; start() before the first decision, stop() to end the watches. */
export class RbacAuthorizer implements RbacRules {
  private readonly clusterRoles = new Map<string, ClusterRole>();
  /** `namespace/name` → Role */
  private readonly roles = new Map<string, Role>();
  private readonly clusterRoleBindings = new Map<string, RoleBinding>();
  /** namespace → name → RoleBinding */
  private readonly roleBindings = new Map<string, Map<string, RoleBinding>>();
  private readonly decisions = new Map<string, boolean>();
  private watches: RegistryWatcher[] = [];
  private started = false;
  private wanted = false;
  private generation = 0;
  /** called after every indexed change (after the cache is dropped) */
  private readonly listeners = new Set<() => void>();

  constructor(private readonly opts: RbacAuthorizerOptions) {}

  /** Indexes the RBAC objects that exist now (resolves once they are) and follows every later change. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.wanted = true;
    const generation = ++this.generation;
    const { registry } = this.opts;
    const onError = () => this.rebuild(generation);
    const follow = <T>(info: typeof ROLE_INFO, put: (obj: T) => void, remove: (obj: T) => void) =>
      registry.watch(info, undefined, {
        onEvent: (ev) => {
          if (ev.type === 'DELETED') remove(ev.object as T);
          else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') put(ev.object as T);
          else return;
          this.changed();
        },
        onError,
      });
    let opened: RegistryWatcher[];
    try {
      opened = await Promise.all([
        follow<ClusterRole>(CLUSTER_ROLE_INFO, (o) => this.clusterRoles.set(o.metadata.name ?? '', o), (o) => this.clusterRoles.delete(o.metadata.name ?? '')),
        follow<Role>(ROLE_INFO, (o) => this.roles.set(`${o.metadata.namespace}/${o.metadata.name}`, o), (o) => this.roles.delete(`${o.metadata.namespace}/${o.metadata.name}`)),
        follow<RoleBinding>(CLUSTER_ROLE_BINDING_INFO, (o) => this.clusterRoleBindings.set(o.metadata.name ?? '', o), (o) => this.clusterRoleBindings.delete(o.metadata.name ?? '')),
        follow<RoleBinding>(
          ROLE_BINDING_INFO,
          (o) => {
            const ns = o.metadata.namespace ?? '';
            let m = this.roleBindings.get(ns);
            if (!m) this.roleBindings.set(ns, (m = new Map()));
            m.set(o.metadata.name ?? '', o);
          },
          (o) => {
            const m = this.roleBindings.get(o.metadata.namespace ?? '');
            m?.delete(o.metadata.name ?? '');
            if (m && !m.size) this.roleBindings.delete(o.metadata.namespace ?? '');
          },
        ),
      ]);
    } catch (err) {
      if (generation === this.generation) this.started = false;
      throw err;
    }
    if (generation !== this.generation) for (const w of opened) w.close();
    else this.watches = opened;
  }

  stop(): void {
    this.wanted = false;
    this.closeWatches();
  }

  /** Calls `fn` after every change to an RBAC object; returns a function that stops it. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Does any rule bound to the user allow the request? A request with a namespace also consults that namespace's RoleBindings. */
  allows(user: UserInfo, req: RuleRequest & { namespace?: string }): boolean {
    const key = decisionKey(user, req);
    const cached = this.decisions.get(key);
    if (cached !== undefined) return cached;
    const allowed = this.visit(user, req.path === undefined ? (req.namespace ?? '') : '', (rule) => ruleAllows(rule, req));
    if (this.decisions.size >= MAX_CACHED_DECISIONS) this.decisions.clear();
    this.decisions.set(key, allowed);
    return allowed;
  }

  /** The user's rules in the namespace ('' for cluster-wide only), split as SelfSubjectRulesReview shows them. */
  rulesFor(user: UserInfo, namespace: string): UserRules {
    const { rules, incomplete } = this.policyRulesFor(user, namespace);
    const resourceRules: ResourceRule[] = [];
    const nonResourceRules: NonResourceRule[] = [];
    for (const r of rules) {
      if (r.resources?.length) {
        const rr: ResourceRule = { verbs: [...r.verbs], apiGroups: [...(r.apiGroups ?? [])], resources: [...r.resources] };
        if (r.resourceNames?.length) rr.resourceNames = [...r.resourceNames];
        resourceRules.push(rr);
      }
      if (r.nonResourceURLs?.length) nonResourceRules.push({ verbs: [...r.verbs], nonResourceURLs: [...r.nonResourceURLs] });
    }
    return { resourceRules, nonResourceRules, incomplete };
  }

  policyRulesFor(user: UserInfo, namespace: string): { rules: PolicyRule[]; incomplete: boolean } {
    const rules: PolicyRule[] = [];
    const incomplete = !this.visit(user, namespace, (rule) => {
      rules.push(rule);
      return false;
    }, true);
    return { rules, incomplete };
  }

  roleReferenceRules(ref: RoleRef, namespace: string): PolicyRule[] | undefined {
    const role = ref.kind === 'ClusterRole' ? this.clusterRoles.get(ref.name) : ref.kind === 'Role' && namespace ? this.roles.get(`${namespace}/${ref.name}`) : undefined;
    return role ? (role.rules ?? []) : undefined;
  }

  /**
   * Calls `visit` with each rule bound to the user (ClusterRoleBindings first, then the namespace's
   * RoleBindings) until it returns true. Returns whether a rule was accepted — or, with
   * `reportMissing`, whether every referenced role existed.
   */
  private visit(user: UserInfo, namespace: string, visit: (rule: PolicyRule) => boolean, reportMissing = false): boolean {
    let complete = true;
    const rulesOf = (rules: PolicyRule[] | null | undefined): boolean => {
      for (const rule of rules ?? []) if (rule && Array.isArray(rule.verbs) && visit(rule)) return true;
      return false;
    };
    for (const b of this.clusterRoleBindings.values()) {
      if (!(b.subjects ?? []).some((s) => subjectMatches(s, user, ''))) continue;
      const role = b.roleRef?.kind === 'ClusterRole' ? this.clusterRoles.get(b.roleRef.name) : undefined;
      if (!role) complete = false;
      else if (rulesOf(role.rules)) return true;
    }
    if (namespace) {
      for (const b of this.roleBindings.get(namespace)?.values() ?? []) {
        if (!(b.subjects ?? []).some((s) => subjectMatches(s, user, namespace))) continue;
        const role = b.roleRef?.kind === 'ClusterRole' ? this.clusterRoles.get(b.roleRef.name) : b.roleRef?.kind === 'Role' ? this.roles.get(`${namespace}/${b.roleRef.name}`) : undefined;
        if (!role) complete = false;
        else if (rulesOf(role.rules)) return true;
      }
    }
    return reportMissing ? complete : false;
  }

  private changed(): void {
    this.decisions.clear();
    for (const fn of this.listeners) fn();
  }

  private closeWatches(): void {
    this.generation++;
    this.started = false;
    for (const w of this.watches) w.close();
    this.watches = [];
  }

  /** The store ended a watch: the index may have missed changes, so it is dropped (denying all) and rebuilt. */
  private rebuild(generation: number): void {
    if (generation !== this.generation) return;
    this.closeWatches();
    this.clusterRoles.clear();
    this.roles.clear();
    this.clusterRoleBindings.clear();
    this.roleBindings.clear();
    this.changed();
    const retry = () => {
      this.start().catch(() => {
        const timer = setTimeout(() => {
          if (this.wanted && !this.started) retry();
        }, REBUILD_RETRY_MS);
        timer.unref();
      });
    };
    retry();
  }
}

/** Everything a decision depends on: the user's name and groups, and the request. */
function decisionKey(user: UserInfo, req: RuleRequest & { namespace?: string }): string {
  return [user.username, user.groups.join('\u0001'), req.verb, req.path ?? '', req.group ?? '', req.resource ?? '', req.subresource ?? '', req.namespace ?? '', req.name ?? ''].join('\u0000');
}
