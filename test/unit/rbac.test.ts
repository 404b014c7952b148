/**
 * RBAC: rule matching, "covers", the authorizer over a real registry (index fed by watches, decision
 * cache dropped on change), the default policy's reconciliation, ClusterRole aggregation, escalation
 * prevention, kinds' validation and the static token file.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ApiError } from '../../src/api/errors.js';
import type { ClusterRole, KubeObject, PolicyRule } from '../../src/api/types.js';
import type { UserInfo } from '../../src/api/user-info.js';
import { AdmissionChain } from '../../src/admission/chain.js';
import { rbacEscalation } from '../../src/admission/plugins/rbac-escalation.js';
import { Authorizer, forbiddenMessage, nonResourceAttributes } from '../../src/auth/authz.js';
import { bootstrapClusterRoles, reconcileBootstrapPolicy, reconcileClusterRole } from '../../src/auth/rbac/bootstrap-policy.js';
import { RbacAuthorizer } from '../../src/auth/rbac/rbac-authorizer.js';
import { covers, ruleAllows, subjectMatches } from '../../src/auth/rbac/rule-matching.js';
import { parseStaticTokens, StaticTokenAuthenticator } from '../../src/auth/static-tokens.js';
import { LocalClient } from '../../src/client/local-client.js';
import { aggregatedRules, ClusterRoleAggregationController } from '../../src/controllers/clusterrole-aggregation/clusterrole-aggregation.js';
import { SharedInformers } from '../../src/controllers/runtime/index.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { CLUSTER_ROLE_BINDING_INFO, CLUSTER_ROLE_INFO, ROLE_BINDING_INFO, ROLE_INFO } from '../../src/registry/kinds/rbac.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const RBAC = 'rbac.authorization.k8s.io';
const jane: UserInfo = { username: 'jane', groups: ['devs', 'system:authenticated'] };
const graph = { reaches: () => false, exists: () => false, reachesVolume: () => ({ viaClaim: false, pinned: false }) };

async function newRegistry(): Promise<Registry> {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  const namespaces = ALL_STRATEGIES.find((s) => s.info.plural === 'namespaces')!.info;
  for (const name of ['team', 'ns', 'other']) await registry.create(namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } as KubeObject);
  return registry;
}

const role = (ns: string, name: string, rules: PolicyRule[]) => ({ apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { name, namespace: ns }, rules }) as KubeObject;
const clusterRole = (name: string, rules: PolicyRule[], labels?: Record<string, string>) => ({ apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name, labels }, rules }) as KubeObject;
const binding = (ns: string | undefined, name: string, kind: 'Role' | 'ClusterRole', roleName: string, subjects: Array<Record<string, string>>) =>
  ({ apiVersion: `${RBAC}/v1`, kind: ns ? 'RoleBinding' : 'ClusterRoleBinding', metadata: { name, namespace: ns }, roleRef: { apiGroup: RBAC, kind, name: roleName }, subjects }) as KubeObject;

describe('RBAC rule matching', () => {
  const r = (rule: Partial<PolicyRule>): PolicyRule => ({ verbs: ['get'], ...rule });
  it('matches verbs, groups, resources, subresources, names and `*`', () => {
    assert.ok(ruleAllows(r({ apiGroups: [''], resources: ['pods'] }), { verb: 'get', group: '', resource: 'pods' }));
    assert.ok(!ruleAllows(r({ apiGroups: [''], resources: ['pods'] }), { verb: 'list', group: '', resource: 'pods' }));
    assert.ok(!ruleAllows(r({ apiGroups: ['apps'], resources: ['pods'] }), { verb: 'get', group: '', resource: 'pods' }));
    assert.ok(ruleAllows(r({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }), { verb: 'delete', group: 'apps', resource: 'deployments', subresource: 'scale' }));
    // `pods` does not grant `pods/log`; `pods/log` does, and `*/log` does.
    assert.ok(!ruleAllows(r({ apiGroups: [''], resources: ['pods'] }), { verb: 'get', group: '', resource: 'pods', subresource: 'log' }));
    assert.ok(ruleAllows(r({ apiGroups: [''], resources: ['pods/log'] }), { verb: 'get', group: '', resource: 'pods', subresource: 'log' }));
    assert.ok(ruleAllows(r({ apiGroups: [''], resources: ['*/log'] }), { verb: 'get', group: '', resource: 'pods', subresource: 'log' }));
    assert.ok(!ruleAllows(r({ apiGroups: [''], resources: ['*/log'] }), { verb: 'get', group: '', resource: 'pods' }));
    // resourceNames: only named objects; a list (no name) is not allowed by a named rule.
    const named = r({ apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] });
    assert.ok(ruleAllows(named, { verb: 'get', group: '', resource: 'configmaps', name: 'a' }));
    assert.ok(!ruleAllows(named, { verb: 'get', group: '', resource: 'configmaps', name: 'b' }));
    assert.ok(!ruleAllows({ ...named, verbs: ['list'] }, { verb: 'list', group: '', resource: 'configmaps' }));
  });

  it('matches non-resource URLs exactly, by `prefix*` and `*`, and never a resource rule', () => {
    const u = r({ nonResourceURLs: ['/healthz', '/apis/*'] });
    assert.ok(ruleAllows(u, { verb: 'get', path: '/healthz' }));
    assert.ok(!ruleAllows(u, { verb: 'get', path: '/healthz/etcd' }));
    assert.ok(ruleAllows(u, { verb: 'get', path: '/apis/apps/v1' }));
    assert.ok(!ruleAllows(u, { verb: 'post', path: '/healthz' }));
    assert.ok(ruleAllows(r({ nonResourceURLs: ['*'] }), { verb: 'get', path: '/anything' }));
    assert.ok(!ruleAllows(r({ apiGroups: ['*'], resources: ['*'] }), { verb: 'get', path: '/healthz' }));
  });

  it('matches subjects: users, groups, ServiceAccounts in the binding namespace or their own', () => {
    const sa: UserInfo = { username: 'system:serviceaccount:team:bot', groups: [] };
    assert.ok(subjectMatches({ kind: 'User', name: 'jane' }, jane, 'x'));
    assert.ok(subjectMatches({ kind: 'Group', name: 'devs' }, jane, 'x'));
    assert.ok(subjectMatches({ kind: 'ServiceAccount', name: 'bot' }, sa, 'team'));
    assert.ok(!subjectMatches({ kind: 'ServiceAccount', name: 'bot' }, sa, 'other'));
    assert.ok(subjectMatches({ kind: 'ServiceAccount', name: 'bot', namespace: 'team' }, sa, ''));
    assert.ok(!subjectMatches({ kind: 'ServiceAccount', name: 'bot' }, sa, ''));
  });

  it('covers: a `*` is covered only by `*`, names by unnamed rules, URLs by prefixes', () => {
    const owner: PolicyRule[] = [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', '*/scale'] }, { verbs: ['get'], nonResourceURLs: ['/apis/*'] }];
    assert.ok(covers(owner, [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['x'] }]).covered);
    assert.ok(covers(owner, [{ verbs: ['list'], apiGroups: [''], resources: ['deployments/scale'] }]).covered);
    assert.ok(covers(owner, [{ verbs: ['get'], nonResourceURLs: ['/apis/apps'] }]).covered);
    const missing = covers(owner, [{ verbs: ['get', 'delete'], apiGroups: [''], resources: ['pods'] }]);
    assert.deepEqual(missing.uncovered, [{ verbs: ['delete'], apiGroups: [''], resources: ['pods'] }]);
    assert.ok(!covers(owner, [{ verbs: ['*'], apiGroups: [''], resources: ['pods'] }]).covered);
    assert.ok(!covers([{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['x'] }], [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }]).covered);
  });

  it('classifies non-resource paths', () => {
    assert.deepEqual(nonResourceAttributes('HEAD', '/healthz'), { verb: 'get', path: '/healthz', group: '', resource: '' });
    assert.equal(nonResourceAttributes('GET', '/apis/apps/v1')?.path, '/apis/apps/v1');
    assert.equal(nonResourceAttributes('GET', '/api/v1/pods'), undefined);
    assert.equal(nonResourceAttributes('GET', '/apis/apps/v1/deployments'), undefined);
  });
});

describe('RBAC authorizer over the registry', () => {
  it('grants bound rules only, RoleBindings only in their namespace, and forgets a deleted binding at once', async () => {
    const registry = await newRegistry();
    const rbac = new RbacAuthorizer({ registry });
    await rbac.start();
    const authz = new Authorizer({ graph, rbac });
    const can = (verb: string, resource: string, namespace?: string, extra: { subresource?: string; group?: string } = {}) =>
      authz.authorize(jane, { verb, group: extra.group ?? '', resource, namespace, subresource: extra.subresource }).allowed;
    assert.ok(!can('get', 'pods', 'team'), 'denied by default');
    await registry.create(CLUSTER_ROLE_INFO, undefined, clusterRole('pod-reader', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'pods/log'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-reads', 'ClusterRole', 'pod-reader', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    assert.ok(can('get', 'pods', 'team'));
    assert.ok(can('get', 'pods', 'team', { subresource: 'log' }));
    assert.ok(!can('create', 'pods', 'team', { subresource: 'exec' }));
    assert.ok(!can('get', 'pods', 'other'), 'a RoleBinding to a ClusterRole grants only in its namespace');
    assert.ok(!can('list', 'pods'), 'nor cluster-wide');
    // A RoleBinding granting `get namespaces` lets its subject read that one Namespace, as upstream.
    await registry.create(ROLE_INFO, 'team', role('team', 'ns-reader', [{ verbs: ['get'], apiGroups: [''], resources: ['namespaces'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-ns', 'Role', 'ns-reader', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    assert.ok(authz.authorize(jane, { verb: 'get', group: '', resource: 'namespaces', name: 'team' }).allowed);
    assert.ok(!authz.authorize(jane, { verb: 'get', group: '', resource: 'namespaces', name: 'other' }).allowed);
    assert.equal(forbiddenMessage(jane, { verb: 'get', group: '', resource: 'namespaces', name: 'other' }), 'namespaces "other" is forbidden: User "jane" cannot get resource "namespaces" in API group "" in the namespace "other"');
    await registry.delete(ROLE_BINDING_INFO, 'team', 'jane-ns');
    await registry.create(ROLE_INFO, 'team', role('team', 'cm-writer', [{ verbs: ['create'], apiGroups: [''], resources: ['configmaps'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'devs-write', 'Role', 'cm-writer', [{ kind: 'Group', apiGroup: RBAC, name: 'devs' }]));
    assert.ok(can('create', 'configmaps', 'team'));
    await registry.create(CLUSTER_ROLE_BINDING_INFO, undefined, binding(undefined, 'jane-everywhere', 'ClusterRole', 'pod-reader', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    assert.ok(can('get', 'pods', 'other'));
    assert.ok(can('list', 'pods'));
    // The decision is cached; deleting the binding drops the cache before the next request.
    await registry.delete(CLUSTER_ROLE_BINDING_INFO, undefined, 'jane-everywhere');
    await Promise.resolve();
    assert.ok(!can('get', 'pods', 'other'));
    // A changed role changes the decision too.
    await registry.update(CLUSTER_ROLE_INFO, undefined, 'pod-reader', clusterRole('pod-reader', [{ verbs: ['list'], apiGroups: [''], resources: ['pods'] }]));
    await Promise.resolve();
    assert.ok(!can('get', 'pods', 'team'));
    assert.ok(can('list', 'pods', 'team'));

    const rules = authz.rulesFor(jane, 'team');
    assert.deepEqual(rules, {
      resourceRules: [
        { verbs: ['list'], apiGroups: [''], resources: ['pods'] },
        { verbs: ['create'], apiGroups: [''], resources: ['configmaps'] },
      ],
      nonResourceRules: [],
      incomplete: false,
    });
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'dangling', 'Role', 'missing', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await Promise.resolve();
    assert.equal(authz.rulesFor(jane, 'team').incomplete, true);
    rbac.stop();
  });

  it('answers repeated decisions from the cache', async () => {
    const registry = await newRegistry();
    const rbac = new RbacAuthorizer({ registry });
    await rbac.start();
    await reconcileBootstrapPolicy({ registry });
    await Promise.resolve();
    const attrs = { verb: 'get', group: 'apps', resource: 'deployments', namespace: 'ns', name: 'x' };
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 10_000; i++) rbac.allows(jane, attrs);
    const perDecisionNs = Number(process.hrtime.bigint() - t0) / 10_000;
    assert.ok(perDecisionNs < 20_000, `a cached decision took ${perDecisionNs} ns`);
    rbac.stop();
  });
});

describe('default policy', () => {
  it('is created, then reconciled: missing rules and subjects return, user additions and autoupdate=false stay', async () => {
    const registry = await newRegistry();
    await reconcileBootstrapPolicy({ registry });
    const crb = await registry.get(CLUSTER_ROLE_BINDING_INFO, undefined, 'cluster-admin');
    assert.deepEqual((crb as unknown as { subjects: unknown }).subjects, [{ kind: 'Group', apiGroup: RBAC, name: 'system:masters' }]);
    // A user narrows system:discovery and adds a rule of their own; another role opts out of updates.
    const discovery = (await registry.get(CLUSTER_ROLE_INFO, undefined, 'system:discovery')) as ClusterRole;
    discovery.rules = [{ verbs: ['get'], nonResourceURLs: ['/custom'] }];
    await registry.update(CLUSTER_ROLE_INFO, undefined, 'system:discovery', discovery);
    const basic = (await registry.get(CLUSTER_ROLE_INFO, undefined, 'system:basic-user')) as ClusterRole;
    basic.metadata.annotations = { 'rbac.authorization.kubernetes.io/autoupdate': 'false' };
    basic.rules = [];
    await registry.update(CLUSTER_ROLE_INFO, undefined, 'system:basic-user', basic);
    await registry.delete(CLUSTER_ROLE_BINDING_INFO, undefined, 'cluster-admin');
    await reconcileBootstrapPolicy({ registry });
    const after = (await registry.get(CLUSTER_ROLE_INFO, undefined, 'system:discovery')) as ClusterRole;
    assert.deepEqual(after.rules![0], { verbs: ['get'], nonResourceURLs: ['/custom'] });
    assert.ok(covers(after.rules!, bootstrapClusterRoles().find((r) => r.metadata.name === 'system:discovery')!.rules!).covered);
    assert.deepEqual(((await registry.get(CLUSTER_ROLE_INFO, undefined, 'system:basic-user')) as ClusterRole).rules, []);
    await registry.get(CLUSTER_ROLE_BINDING_INFO, undefined, 'cluster-admin');
    // Nothing left to do: reconciling an up-to-date role changes nothing.
    assert.equal(reconcileClusterRole(after, bootstrapClusterRoles().find((r) => r.metadata.name === 'system:discovery')!), undefined);
  });
});

describe('ClusterRole aggregation', () => {
  it('computes the union of the selected roles, once each, in name order', () => {
    const agg = { ...clusterRole('agg', []), aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: 'true' } }] } } as ClusterRole;
    const a = clusterRole('b', [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], { x: 'true' }) as ClusterRole;
    const b = clusterRole('a', [{ verbs: ['list'], apiGroups: [''], resources: ['pods'] }, { verbs: ['get'], apiGroups: [''], resources: ['pods'] }], { x: 'true' }) as ClusterRole;
    const c = clusterRole('c', [{ verbs: ['delete'], apiGroups: [''], resources: ['pods'] }]) as ClusterRole;
    assert.deepEqual(aggregatedRules(agg, [agg, a, b, c]), [
      { verbs: ['list'], apiGroups: [''], resources: ['pods'] },
      { verbs: ['get'], apiGroups: [''], resources: ['pods'] },
    ]);
  });

  it('keeps admin ⊇ edit ⊇ view from the default policy, and view cannot read Secrets', async () => {
    const registry = await newRegistry();
    await reconcileBootstrapPolicy({ registry });
    const client = new LocalClient(registry);
    const informers = new SharedInformers({ client });
    const controller = new ClusterRoleAggregationController({ client, informers, log: pino({ level: 'silent' }) });
    await controller.start();
    const rulesOf = async (name: string) => ((await registry.get(CLUSTER_ROLE_INFO, undefined, name)) as ClusterRole).rules ?? [];
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !((await rulesOf('admin')).some((r) => r.resources?.includes('rolebindings')) && (await rulesOf('admin')).some((r) => r.resources?.includes('pods/log')))) await new Promise((r) => setTimeout(r, 20));
    const [view, edit, admin] = [await rulesOf('view'), await rulesOf('edit'), await rulesOf('admin')];
    assert.ok(covers(edit, view).covered && covers(admin, edit).covered);
    assert.ok(!covers(view, [{ verbs: ['get'], apiGroups: [''], resources: ['secrets'] }]).covered);
    assert.ok(covers(edit, [{ verbs: ['get', 'create'], apiGroups: [''], resources: ['secrets'] }]).covered);
    assert.ok(!covers(edit, [{ verbs: ['create'], apiGroups: [RBAC], resources: ['rolebindings'] }]).covered);
    assert.ok(covers(admin, [{ verbs: ['create'], apiGroups: [RBAC], resources: ['rolebindings'] }]).covered);
    // Quotas and limit ranges are the cluster admin's to set: tenants read them (upstream's view), none of the three writes them.
    assert.ok(covers(view, [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['resourcequotas', 'resourcequotas/status', 'limitranges'] }]).covered);
    assert.ok(!covers(admin, [{ verbs: ['create'], apiGroups: [''], resources: ['resourcequotas'] }]).covered);
    assert.ok(!covers(admin, [{ verbs: ['update'], apiGroups: [''], resources: ['limitranges'] }]).covered);
    // A new role labelled aggregate-to-view reaches view, edit and admin.
    await registry.create(CLUSTER_ROLE_INFO, undefined, clusterRole('widgets-view', [{ verbs: ['get'], apiGroups: ['example.com'], resources: ['widgets'] }], { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' }));
    const widget = [{ verbs: ['get'], apiGroups: ['example.com'], resources: ['widgets'] }];
    const until = Date.now() + 5000;
    while (Date.now() < until && !covers(await rulesOf('admin'), widget).covered) await new Promise((r) => setTimeout(r, 20));
    assert.ok(covers(await rulesOf('view'), widget).covered && covers(await rulesOf('admin'), widget).covered);
    await controller.stop();
    informers.stop();
  });
});

describe('RBAC escalation prevention', () => {
  async function setup() {
    const registry = await newRegistry();
    const rbac = new RbacAuthorizer({ registry });
    await rbac.start();
    const authorizer = new Authorizer({ graph, rbac });
    await reconcileBootstrapPolicy({ registry });
    const chain = new AdmissionChain();
    chain.register(rbacEscalation({ authorizer }));
    registry.setAdmission(chain);
    return { registry, rbac };
  }

  it('refuses a role granting what the user lacks, with upstream message, and allows it with the rules or escalate', async () => {
    const { registry, rbac } = await setup();
    await registry.create(ROLE_INFO, 'team', role('team', 'cm', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-cm', 'Role', 'cm', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await registry.create(ROLE_INFO, 'team', role('team', 'roles', [{ verbs: ['create', 'update'], apiGroups: [RBAC], resources: ['roles', 'rolebindings'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-roles', 'Role', 'roles', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await registry.create(ROLE_INFO, 'team', role('team', 'jane-sub', [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'] }]), { user: jane });
    await assert.rejects(
      registry.create(ROLE_INFO, 'team', role('team', 'too-much', [{ verbs: ['get', 'delete'], apiGroups: [''], resources: ['configmaps', 'secrets'] }]), { user: jane }),
      (e: ApiError) =>
        e.code === 403 &&
        e.message ===
          'roles.rbac.authorization.k8s.io "too-much" is forbidden: user "jane" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n' +
            '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}\n{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}',
    );
    await registry.create(ROLE_INFO, 'team', role('team', 'escalate', [{ verbs: ['escalate'], apiGroups: [RBAC], resources: ['roles'], resourceNames: ['too-much'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-escalate', 'Role', 'escalate', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await registry.create(ROLE_INFO, 'team', role('team', 'too-much', [{ verbs: ['get', 'delete'], apiGroups: [''], resources: ['configmaps', 'secrets'] }]), { user: jane });
    rbac.stop();
  });

  it('refuses a binding to a role whose rules the user lacks, unless it may bind that role', async () => {
    const { registry, rbac } = await setup();
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-edit', 'ClusterRole', 'edit', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-rb', 'ClusterRole', 'rb-writer', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await registry.create(CLUSTER_ROLE_INFO, undefined, clusterRole('rb-writer', [{ verbs: ['create'], apiGroups: [RBAC], resources: ['rolebindings'] }]));
    await Promise.resolve();
    const toAdmin = binding('team', 'jane-admin', 'ClusterRole', 'cluster-admin', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]);
    await assert.rejects(registry.create(ROLE_BINDING_INFO, 'team', toAdmin, { user: jane }), (e: ApiError) => e.code === 403 && /^rolebindings.rbac.authorization.k8s.io "jane-admin" is forbidden: user "jane" .* is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\["\*"\], Resources:\["\*"\], Verbs:\["\*"\]\}/.test(e.message));
    await registry.create(CLUSTER_ROLE_INFO, undefined, clusterRole('binder', [{ verbs: ['bind'], apiGroups: [RBAC], resources: ['clusterroles'], resourceNames: ['cluster-admin'] }]));
    await registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'jane-binder', 'ClusterRole', 'binder', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]));
    await Promise.resolve();
    // bind on cluster-admin by name does not extend to other roles
    await assert.rejects(registry.create(ROLE_BINDING_INFO, 'team', binding('team', 'x', 'ClusterRole', 'system:monitoring', [{ kind: 'User', apiGroup: RBAC, name: 'jane' }]), { user: jane }), (e: ApiError) => e.code === 403);
    await registry.create(ROLE_BINDING_INFO, 'team', toAdmin, { user: jane });
    rbac.stop();
  });
});

describe('RBAC kinds validation', () => {
  it('names fields as upstream', async () => {
    const registry = await newRegistry();
    const invalid = async (p: Promise<unknown>, causes: string[]) =>
      assert.rejects(p, (e: ApiError) => {
        assert.equal(e.code, 422);
        assert.deepEqual((e.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`), causes);
        return true;
      });
    await invalid(registry.create(ROLE_INFO, 'ns', role('ns', 'r', [{ verbs: [], apiGroups: [''], resources: [] }])), [
      'rules[0].verbs: Required value: verbs must contain at least one value',
      'rules[0].resources: Required value: resource rules must supply at least one resource',
    ]);
    await invalid(registry.create(ROLE_INFO, 'ns', role('ns', 'r', [{ verbs: ['get'], nonResourceURLs: ['/x'] }])), ['rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs']);
    await invalid(registry.create(ROLE_BINDING_INFO, 'ns', binding('ns', 'b', 'Role', 'r', [{ kind: 'Robot', name: 'x' }])), ['subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"']);
    await invalid(registry.create(CLUSTER_ROLE_BINDING_INFO, undefined, binding(undefined, 'b', 'Role', 'r', [])), ['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"']);
    await invalid(registry.create(CLUSTER_ROLE_BINDING_INFO, undefined, binding(undefined, 'b', 'ClusterRole', 'r', [{ kind: 'ServiceAccount', name: 'sa' }])), ['subjects[0].namespace: Required value']);
    const created = await registry.create(ROLE_BINDING_INFO, 'ns', binding('ns', 'system:b', 'Role', 'r', [{ kind: 'User', name: 'u' }]));
    assert.equal((created as unknown as { subjects: Array<{ apiGroup: string }> }).subjects[0]!.apiGroup, RBAC, 'User subjects default to the RBAC group');
    await invalid(registry.update(ROLE_BINDING_INFO, 'ns', 'system:b', { ...created, roleRef: { apiGroup: RBAC, kind: 'Role', name: 'other' } } as KubeObject), [`roleRef: Invalid value: {"apiGroup":"${RBAC}","kind":"Role","name":"other"}: cannot change roleRef`]);
  });
});

describe('static token file', () => {
  it('parses token,user,uid,"groups" and adds system:authenticated', () => {
    const users = new StaticTokenAuthenticator(parseStaticTokens('t1,jane,u1,"devs,ops"\nt2,bob,u2\n\n# comment\n'));
    assert.deepEqual(users.authenticate('Bearer t1'), { username: 'jane', uid: 'u1', groups: ['devs', 'ops', 'system:authenticated'] });
    assert.deepEqual(users.authenticate('Bearer t2'), { username: 'bob', uid: 'u2', groups: ['system:authenticated'] });
    assert.equal(users.authenticate('Bearer nope'), undefined);
    assert.equal(users.authenticate(undefined), undefined);
    assert.throws(() => parseStaticTokens('t1,jane\n', 'f.csv'), /token file 'f.csv' must have at least 3 columns \(token, user name, user uid\), found 2/);
  });
});
