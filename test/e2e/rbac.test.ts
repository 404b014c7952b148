/**
 * RBAC on a real cluster with stock kubectl: users from a --token-auth-file get exactly what their
 * roles grant — a namespace `edit` user and a `view` user, allowed and denied verbs, namespaces and
 * subresources (pods/log, pods/exec, deployments/scale) — with real requests (success, or 403 with
 * kube-apiserver's message). Escalation is refused (an `edit` user cannot bind cluster-admin, a user
 * with `bind` on it can), a deleted binding stops granting at once, and the default roles come back
 * on restart after being deleted.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Pod } from '../../src/api/types.js';
import { HttpClient } from '../../src/client/http-client.js';
import { podManifest, runKubectl, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const NS = 'team';
const USERS = { edit: 'edit-token-0123456789', view: 'view-token-0123456789', binder: 'binder-token-0123456789', nobody: 'nobody-token-0123456789' };
const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

describe('RBAC with kubectl and static-token users', () => {
  let c: Cluster;
  let tokenDir: string;
  const kubeconfigs: Record<string, string> = {};
  /** kubectl as one of the users; never throws, so refusals can be checked */
  const as = (user: keyof typeof USERS, args: string[]) => runKubectl(kubeconfigs[user]!, args, { allowFail: true });
  const admin = (args: string[]) => c.kubectl(args);
  const allowed = async (user: keyof typeof USERS, args: string[]) => {
    const r = await as(user, args);
    assert.equal(r.code, 0, `${user}: kubectl ${args.join(' ')} should succeed: ${r.stderr}`);
    return r.stdout;
  };
  const refused = async (user: keyof typeof USERS, args: string[], message: string | RegExp) => {
    const r = await as(user, args);
    assert.notEqual(r.code, 0, `${user}: kubectl ${args.join(' ')} should be refused: ${r.stdout}`);
    // kubectl prints "Error from server (Forbidden): MESSAGE" for reads and "error: failed to create X: MESSAGE" for its create generators.
    if (typeof message === 'string') assert.ok(r.stderr.includes(`(Forbidden): ${message}`) || r.stderr.includes(`: ${message}\n`), `${user}: kubectl ${args.join(' ')}: ${r.stderr}`);
    else assert.match(r.stderr, message);
  };

  before(async () => {
    tokenDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-rbac-'));
    const tokenFile = path.join(tokenDir, 'tokens.csv');
    fs.writeFileSync(tokenFile, `${USERS.edit},edit-user,uid-edit\n${USERS.view},view-user,uid-view,"viewers"\n${USERS.binder},binder-user,uid-binder\n${USERS.nobody},nobody,uid-nobody\n`);
    c = await startCluster({ serverArgs: ['--token-auth-file', tokenFile] });
    const adminConfig = fs.readFileSync(c.kubeconfig, 'utf8');
    for (const [user, token] of Object.entries(USERS)) {
      const file = path.join(tokenDir, `${user}.kubeconfig`);
      fs.writeFileSync(file, adminConfig.replace(/token: .*/, `token: ${token}`).replace(/namespace: default/, `namespace: ${NS}`), { mode: 0o600 });
      kubeconfigs[user] = file;
    }
    await admin(['create', 'namespace', NS]);
    // Bindings made with kubectl's own generators, as users make them.
    await admin(['create', 'rolebinding', 'edit-user-edit', '--clusterrole=edit', '--user=edit-user', '-n', NS]);
    await admin(['create', 'rolebinding', 'viewers-view', '--clusterrole=view', '--group=viewers', '-n', NS]);
    await admin(['create', 'rolebinding', 'binder-edit', '--clusterrole=edit', '--user=binder-user', '-n', NS]);
    await admin(['create', 'clusterrole', 'bind-cluster-admin', '--verb=bind', '--resource=clusterroles', '--resource-name=cluster-admin']);
    await admin(['create', 'rolebinding', 'binder-may-bind', '--clusterrole=bind-cluster-admin', '--user=binder-user', '-n', NS]);
    await admin(['create', 'role', 'rolebinding-writer', '--verb=create', '--resource=rolebindings.rbac.authorization.k8s.io', '-n', NS]);
    await admin(['create', 'rolebinding', 'edit-user-writes-bindings', '--role=rolebinding-writer', '--user=edit-user', '--user=binder-user', '-n', NS]);
    await admin(['create', 'deployment', 'web', '--image', TEST_IMAGE, '--replicas=0', '-n', NS, '--', 'sleep', '3600']);
    await admin(['create', 'secret', 'generic', 'creds', '--from-literal=k=v', '-n', NS]);
    const pod = podManifest('shell', { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sh', '-c', 'echo hello-from-shell; sleep 3600'] }] });
    await c.client.create({ plural: 'pods' }, pod, { namespace: NS });
    await waitForPod(c.client, NS, 'shell', running, 60_000);
    // The aggregation controller fills edit and view in right after start.
    await waitFor(async () => (await as('view', ['get', 'pods'])).code === 0, 20_000, 'view to be aggregated');
  });
  after(async () => {
    await c?.client.delete({ plural: 'pods' }, { namespace: NS, name: 'shell', gracePeriodSeconds: 0 }).catch(() => undefined);
    if (c) await waitFor(async () => ((await c.client.list<Pod>({ plural: 'pods' }, { namespace: NS })).items.length === 0), 60_000, 'the pod to be gone').catch(() => undefined);
    await c?.stop();
    if (tokenDir) fs.rmSync(tokenDir, { recursive: true, force: true });
  });

  it('shows RBAC objects as kubectl does', async () => {
    const out = await admin(['get', 'rolebinding', 'edit-user-edit', '-n', NS]);
    assert.match(out.stdout, /^NAME\s+ROLE\s+AGE\nedit-user-edit\s+ClusterRole\/edit\s+\d+s\n$/);
    const wide = await admin(['get', 'rolebinding', 'viewers-view', '-n', NS, '-o', 'wide']);
    assert.match(wide.stdout, /^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS\nviewers-view\s+ClusterRole\/view\s+\d+s\s+viewers\s*\n$/);
    await admin(['create', 'clusterrolebinding', 'nobody-monitoring', '--clusterrole=system:monitoring', '--user=nobody', '--serviceaccount=team:bot']);
    const crb = await admin(['get', 'clusterrolebinding', 'nobody-monitoring', '-o', 'wide']);
    assert.match(crb.stdout, /^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS\nnobody-monitoring\s+ClusterRole\/system:monitoring\s+\d+s\s+nobody\s+team\/bot\n$/);
    try {
      // Bound to system:monitoring, the same user now reads the server's Prometheus metrics.
      const metrics = await as('nobody', ['get', '--raw', '/metrics']);
      assert.equal(metrics.code, 0, metrics.stderr);
      assert.match(metrics.stdout, /^# TYPE apiserver_request_total counter$/m);
    } finally {
      await admin(['delete', 'clusterrolebinding', 'nobody-monitoring']);
    }
    const roles = await admin(['get', 'clusterrole', 'view']);
    assert.match(roles.stdout, /^NAME\s+CREATED AT\nview\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
  });

  it('an edit user works in its namespace, with logs, exec, scale and Secrets, and nowhere else', async () => {
    assert.match(await allowed('edit', ['get', 'pods']), /shell/);
    assert.match(await allowed('edit', ['logs', 'shell']), /hello-from-shell/);
    assert.match(await allowed('edit', ['exec', 'shell', '--', 'echo', 'exec-ok']), /exec-ok/);
    await allowed('edit', ['scale', 'deployment', 'web', '--replicas=0']);
    assert.match(await allowed('edit', ['get', 'secret', 'creds', '-o', 'jsonpath={.data.k}']), /^dg==$/);
    await allowed('edit', ['create', 'configmap', 'made-by-edit', '--from-literal=a=b']);
    await refused('edit', ['get', 'pods', '-n', 'default'], 'pods is forbidden: User "edit-user" cannot list resource "pods" in API group "" in the namespace "default"');
    await refused('edit', ['get', 'nodes'], 'nodes is forbidden: User "edit-user" cannot list resource "nodes" in API group "" at the cluster scope');
    await refused('edit', ['get', 'roles'], 'roles.rbac.authorization.k8s.io is forbidden: User "edit-user" cannot list resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "team"');
  });

  it('a view user reads (logs included) but cannot exec, scale, write or read Secrets', async () => {
    assert.match(await allowed('view', ['get', 'pods']), /shell/);
    assert.match(await allowed('view', ['logs', 'shell']), /hello-from-shell/);
    await allowed('view', ['get', 'deployment', 'web']);
    await refused('view', ['exec', 'shell', '--', 'true'], /pods "shell" is forbidden: User "view-user" cannot (create|get) resource "pods\/exec" in API group "" in the namespace "team"/);
    await refused('view', ['scale', 'deployment', 'web', '--replicas=1'], /deployments.apps "web" is forbidden: User "view-user" cannot (patch|update) resource "deployments\/scale" in API group "apps" in the namespace "team"/);
    await refused('view', ['get', 'secret', 'creds'], 'secrets "creds" is forbidden: User "view-user" cannot get resource "secrets" in API group "" in the namespace "team"');
    await refused('view', ['create', 'configmap', 'nope', '--from-literal=a=b'], 'configmaps is forbidden: User "view-user" cannot create resource "configmaps" in API group "" in the namespace "team"');
    await refused('view', ['delete', 'pod', 'shell'], 'pods "shell" is forbidden: User "view-user" cannot delete resource "pods" in API group "" in the namespace "team"');
    await refused('view', ['get', 'pods', '-n', 'kube-system'], 'pods is forbidden: User "view-user" cannot list resource "pods" in API group "" in the namespace "kube-system"');
  });

  it('a user without bindings gets discovery and nothing else; an unknown token gets 401', async () => {
    assert.match(await allowed('nobody', ['version', '-o', 'json']), /"serverVersion"/);
    await allowed('nobody', ['api-resources', '--api-group=apps']);
    await refused('nobody', ['get', 'pods'], 'pods is forbidden: User "nobody" cannot list resource "pods" in API group "" in the namespace "team"');
    await refused('nobody', ['get', '--raw', '/metrics'], 'forbidden: User "nobody" cannot get path "/metrics"');
    const stranger = new HttpClient({ server: c.url, token: 'not-a-token', ca: fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8') });
    const res = await stranger.raw({ method: 'GET', path: '/version' });
    stranger.close();
    assert.equal(res.status, 401);
  });

  it('refuses escalation: an edit user cannot bind cluster-admin, a user with bind on it can', async () => {
    await refused(
      'edit',
      ['create', 'rolebinding', 'grab-admin', '--clusterrole=cluster-admin', '--user=edit-user'],
      /rolebindings.rbac.authorization.k8s.io "grab-admin" is forbidden: user "edit-user" \(groups=\["system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\["\*"\], Resources:\["\*"\], Verbs:\["\*"\]\}/,
    );
    await allowed('binder', ['create', 'rolebinding', 'binder-admin', '--clusterrole=cluster-admin', '--user=binder-user']);
    // Holding cluster-admin in the namespace, binder-user can now do anything there, but still nothing elsewhere.
    await allowed('binder', ['get', 'roles']);
    await refused('binder', ['get', 'pods', '-n', 'default'], 'pods is forbidden: User "binder-user" cannot list resource "pods" in API group "" in the namespace "default"');
    // Roles within what it now holds in the namespace pass the escalation check.
    await allowed('binder', ['create', 'role', 'pod-reader', '--verb=get', '--resource=pods']);
  });

  it('a deleted binding stops granting at the next request, and a restored one grants again', async () => {
    await allowed('view', ['get', 'pods']);
    await admin(['delete', 'rolebinding', 'viewers-view', '-n', NS]);
    await refused('view', ['get', 'pods'], 'pods is forbidden: User "view-user" cannot list resource "pods" in API group "" in the namespace "team"');
    await admin(['create', 'rolebinding', 'viewers-view', '--clusterrole=view', '--group=viewers', '-n', NS]);
    await allowed('view', ['get', 'pods']);
  });

  it('default roles and bindings deleted while running come back at the next start', async () => {
    await admin(['delete', 'clusterrole', 'view']);
    await admin(['delete', 'clusterrolebinding', 'system:discovery']);
    await refused('view', ['get', 'pods'], /forbidden/);
    await c.restartServer();
    await waitFor(async () => (await as('view', ['get', 'pods'])).code === 0, 30_000, 'view to be restored and aggregated');
    const crb = await admin(['get', 'clusterrolebinding', 'system:discovery', '-o', 'jsonpath={.roleRef.name} {.subjects[0].name}']);
    assert.equal(crb.stdout, 'system:discovery system:authenticated');
  });
});
