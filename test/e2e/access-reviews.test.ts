/**
 * Who may do what, asked with stock kubectl against a real server over HTTPS: `kubectl auth can-i`
 * (SelfSubjectAccessReview) and `kubectl auth can-i --list` (SelfSubjectRulesReview) for
 * cluster-admin, a namespace `edit` user, a `view` user and a ServiceAccount with one Role, each
 * reached by impersonation from the admin kubeconfig (`--as`, `--as-group`) and, for the edit and
 * view users, by kubeconfigs of their own (static tokens, --token-auth-file); `kubectl auth whoami`
 * (SelfSubjectReview); and impersonation refused to a caller without the `impersonate` verb.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { kubeconfig } from '../../src/control-plane.js';
import { describeEachKubectl, needsKubectl, startCluster, type Cluster } from './harness.js';

const NS = 'team';
const OTHER = 'other';
const SA_USER = `system:serviceaccount:${NS}:bot`;

/** Static tokens of two users (kube-apiserver's token file: token,user,uid,"groups"). */
const TOKENS = { erin: 'erin-token-0123456789', vic: 'vic-token-0123456789' };
const tokenDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-reviews-'));
const tokenFile = path.join(tokenDir, 'tokens.csv');
/** user → a kubeconfig of their own */
const KUBECONFIGS: Record<string, string> = {};

let c: Cluster;
/** a credential of a user with no RBAC rules at all (a node's own, from joining) */
let nodeToken: string;

before(async () => {
  fs.writeFileSync(tokenFile, `${TOKENS.erin},erin,uid-erin,"editors"\n${TOKENS.vic},vic,uid-vic,"viewers"\n`, { mode: 0o600 });
  c = await startCluster({ agents: [], serverArgs: ['--token-auth-file', tokenFile] });
  const ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
  for (const [user, token] of Object.entries(TOKENS)) KUBECONFIGS[user] = c.writeFile(`${user}.kubeconfig`, kubeconfig({ url: c.url, caCert: ca, token }));
  await c.kubectl(['create', 'namespace', NS]);
  await c.kubectl(['create', 'namespace', OTHER]);
  await c.kubectl(['create', 'rolebinding', 'erin-edit', '--clusterrole=edit', '--user=erin', '-n', NS]);
  await c.kubectl(['create', 'rolebinding', 'vic-view', '--clusterrole=view', '--user=vic', '-n', NS]);
  await c.kubectl(['create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods,pods/log', '-n', NS]);
  await c.kubectl(['create', 'rolebinding', 'bot-reads-pods', '--role=pod-reader', `--serviceaccount=${NS}:bot`, '-n', NS]);
  const joinSecret = fs.readFileSync(path.join(c.dir, 'server', 'node-token'), 'utf8').trim().split('::')[2]!;
  nodeToken = await join(joinSecret);
  // RBAC indexes follow the store by watch: wait until the last binding counts.
  for (let i = 0; i < 50; i++) {
    const r = await c.kubectl(['auth', 'can-i', 'get', 'pods', '-n', NS, '--as', SA_USER], { allowFail: true });
    if (r.code === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

after(async () => {
  await c?.stop();
  fs.rmSync(tokenDir, { recursive: true, force: true });
});

/** Join as a node (over HTTPS trusting the cluster CA) for a credential of that node. */
async function join(joinSecret: string): Promise<string> {
  const ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
  return new Promise((resolve, reject) => {
    const req = https.request(`${c.url}/berth/v1/join`, { method: 'POST', ca, headers: { authorization: `Bearer ${joinSecret}`, 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve((JSON.parse(body) as { token: string }).token) : reject(new Error(`join: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ nodeName: 'reviewer' }));
  });
}

/** [user flags, can-i arguments, expected answer] */
type Case = [string[], string[], boolean];

const ADMIN: string[] = [];
const EDIT = ['--as', 'erin'];
const VIEW = ['--as', 'vic', '--as-group', 'viewers'];
const BOT = ['--as', SA_USER];
const OWN = (user: keyof typeof TOKENS) => ['--kubeconfig', KUBECONFIGS[user]!];

const MATRIX: Case[] = [
  // cluster-admin (system:masters through the admin kubeconfig)
  [ADMIN, ['create', 'pods', '-n', NS], true],
  [ADMIN, ['delete', 'nodes'], true],
  [ADMIN, ['create', 'pods', '--subresource=exec', '-n', OTHER], true],
  [ADMIN, ['*', '*'], true],
  // edit in "team"
  [EDIT, ['create', 'deployments.apps', '-n', NS], true],
  [EDIT, ['get', 'secrets', '-n', NS], true],
  [EDIT, ['get', 'pods', '--subresource=log', '-n', NS], true],
  [EDIT, ['create', 'pods', '--subresource=exec', '-n', NS], true],
  [EDIT, ['update', 'deployments.apps', '--subresource=scale', '-n', NS], true],
  [EDIT, ['create', 'rolebindings.rbac.authorization.k8s.io', '-n', NS], false],
  [EDIT, ['create', 'deployments.apps', '-n', OTHER], false],
  [EDIT, ['list', 'nodes'], false],
  // view in "team"
  [VIEW, ['get', 'pods', '-n', NS], true],
  [VIEW, ['list', 'deployments.apps', '-n', NS], true],
  [VIEW, ['get', 'pods', '--subresource=log', '-n', NS], true],
  [VIEW, ['get', 'secrets', '-n', NS], false],
  [VIEW, ['create', 'pods', '-n', NS], false],
  [VIEW, ['create', 'pods', '--subresource=exec', '-n', NS], false],
  [VIEW, ['update', 'deployments.apps', '--subresource=scale', '-n', NS], false],
  [VIEW, ['get', 'pods', '-n', OTHER], false],
  // a ServiceAccount with one Role (get, list on pods and pods/log)
  [BOT, ['get', 'pods', '-n', NS], true],
  [BOT, ['get', 'pods/web', '-n', NS], true],
  [BOT, ['get', 'pods', '--subresource=log', '-n', NS], true],
  [BOT, ['create', 'pods', '--subresource=exec', '-n', NS], false],
  [BOT, ['delete', 'pods', '-n', NS], false],
  [BOT, ['get', 'pods', '-n', OTHER], false],
  [BOT, ['get', 'deployments.apps', '--subresource=scale', '-n', NS], false],
];

/** The edit and view users again, each with a kubeconfig (static token) of their own. */
const OWN_MATRIX = (): Case[] => [
  [OWN('erin'), ['create', 'deployments.apps', '-n', NS], true],
  [OWN('erin'), ['create', 'pods', '--subresource=exec', '-n', NS], true],
  [OWN('erin'), ['create', 'rolebindings.rbac.authorization.k8s.io', '-n', NS], false],
  [OWN('erin'), ['get', 'pods', '-n', OTHER], false],
  [OWN('vic'), ['get', 'pods', '--subresource=log', '-n', NS], true],
  [OWN('vic'), ['get', 'secrets', '-n', NS], false],
  [OWN('vic'), ['update', 'deployments.apps', '--subresource=scale', '-n', NS], false],
];

/** `kubectl auth can-i --list` rows as `resource|resourceNames|verbs` (non-resource rows left out). */
function listedRules(stdout: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of stdout.split('\n').slice(1)) {
    const cols = line.trim().split(/\s{2,}/);
    if (cols.length < 4 || cols[0]!.startsWith('[')) continue;
    rows.set(cols[0]!, cols.slice(2).join(' '));
  }
  return rows;
}

describeEachKubectl('kubectl auth can-i', (k) => {
  const kubectl = (args: string[]) => c.forKubectl(k).kubectl(args, { allowFail: true });

  it('answers the matrix of users, verbs, namespaces and subresources', async () => {
    const wrong: string[] = [];
    for (const [who, args, allowed] of [...MATRIX, ...OWN_MATRIX()]) {
      const r = await kubectl(['auth', 'can-i', ...args, ...who]);
      const answer = r.stdout.trim().split(/\s/)[0];
      if (answer !== (allowed ? 'yes' : 'no') || r.code !== (allowed ? 0 : 1)) wrong.push(`${who.join(' ').replace(tokenDir, '') || 'admin'} can-i ${args.join(' ')}: ${r.stdout.trim()} ${r.stderr.trim()} (exit ${r.code})`);
    }
    assert.deepEqual(wrong, []);
  });

  it('lists what a ServiceAccount with one Role may do', async () => {
    const r = await kubectl(['auth', 'can-i', '--list', '-n', NS, ...BOT]);
    assert.equal(r.code, 0, r.stderr);
    const rules = listedRules(r.stdout);
    assert.equal(rules.get('pods'), '[] [get list]', r.stdout);
    assert.equal(rules.get('pods/log'), '[] [get list]', r.stdout);
    // What every authenticated user may do (system:basic-user), and nothing more.
    assert.equal(rules.get('selfsubjectaccessreviews.authorization.k8s.io'), '[] [create]', r.stdout);
    const resources = [...rules.keys()].filter((name) => !name.startsWith('self'));
    assert.deepEqual(resources.sort(), ['pods', 'pods/log']);
    const elsewhere = listedRules((await kubectl(['auth', 'can-i', '--list', '-n', OTHER, ...BOT])).stdout);
    assert.equal(elsewhere.has('pods'), false);
  });

  it('lists the view role without Secrets, and the edit role with them', async () => {
    const view = listedRules((await kubectl(['auth', 'can-i', '--list', '-n', NS, ...VIEW])).stdout);
    assert.ok(view.has('pods'), [...view.keys()].join(','));
    assert.ok(view.has('deployments.apps'));
    assert.equal(view.has('secrets'), false);
    assert.match(view.get('pods')!, /\[get list watch\]/);
    const edit = listedRules((await kubectl(['auth', 'can-i', '--list', '-n', NS, ...EDIT])).stdout);
    assert.ok(edit.has('secrets'), [...edit.keys()].join(','));
    assert.match(edit.get('deployments.apps/scale') ?? '', /update/);
  });

  it('lists everything for cluster-admin', async () => {
    const r = await kubectl(['auth', 'can-i', '--list', '-n', NS]);
    assert.match(listedRules(r.stdout).get('*.*') ?? '', /\[\*\]/, r.stdout);
  });

  it('refuses impersonation to a caller without the impersonate verb', async () => {
    const r = await kubectl(['--token', nodeToken, 'auth', 'can-i', 'get', 'pods', '--as', 'erin']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /users "erin" is forbidden: User "system:node:reviewer" cannot impersonate resource "users" in API group "" at the cluster scope/);
    const group = await kubectl(['auth', 'can-i', 'get', 'pods', '--as', 'erin', '--as-group', 'system:masters', '--token', nodeToken]);
    assert.match(group.stderr, /is forbidden: User "system:node:reviewer" cannot impersonate/);
    // A namespace editor may not act as anyone else either.
    const editor = await kubectl(['get', 'pods', '-n', NS, '--as', 'vic', ...OWN('erin')]);
    assert.notEqual(editor.code, 0);
    assert.match(editor.stderr, /users "vic" is forbidden: User "erin" cannot impersonate resource "users" in API group "" at the cluster scope/);
  });

  it('shows who the caller is (kubectl auth whoami)', { skip: needsKubectl(k, '1.28', 'kubectl auth whoami') }, async () => {
    const own = await kubectl(['auth', 'whoami', ...OWN('erin')]);
    assert.equal(own.code, 0, own.stderr);
    assert.match(own.stdout, /Username\s+erin/);
    assert.match(own.stdout, /UID\s+uid-erin/);
    assert.match(own.stdout, /Groups\s+\[editors system:authenticated\]/);
    const r = await kubectl(['auth', 'whoami', ...VIEW]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Username\s+vic/);
    assert.match(r.stdout, /Groups\s+\[viewers system:authenticated\]/);
    const admin = await kubectl(['auth', 'whoami', '-o', 'json']);
    const review = JSON.parse(admin.stdout) as { kind: string; status: { userInfo: { username: string; groups: string[] } } };
    assert.equal(review.kind, 'SelfSubjectReview');
    assert.equal(review.status.userInfo.username, 'admin');
    assert.ok(review.status.userInfo.groups.includes('system:masters'));
  });
});
