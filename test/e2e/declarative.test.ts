/**
 * The declarative API with stock kubectl: server-side apply with field managers (conflicts, force,
 * removal of dropped fields, concurrent managers), and the other writing verbs; once with each
 * kubectl under test (PATH's and Debian's 1.20).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import { describeEachKubectl, needsKubectl, startCluster, type Cluster, type Kubectl } from './harness.js';

const DEPLOY = { group: 'apps', version: 'v1', plural: 'deployments' };
const CM = { plural: 'configmaps' };

const deployment = (extra: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shared
${extra}`;

const teamA = deployment(`  labels: {owner: team-a, tier: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: shared}}
  template:
    metadata: {labels: {app: shared}}
    spec:
      containers:
      - name: web
        image: berth/busybox:test
        command: ["sleep", "3600"]
`);

describeEachKubectl('declarative API: server-side apply and kubectl verbs', (k: Kubectl) => {
  let c: Cluster;
  const file = (name: string, text: string) => c.writeFile(name, text);
  // kubectl before 1.25 validates manifests itself against /openapi/v2, where a partial Deployment
  // (no selector, no template) is invalid even for server-side apply; its users pass --validate=false.
  const clientSideValidation = needsKubectl(k, '1.25', 'server-side field validation');
  const ssa = (manager: string, text: string, extra: string[] = []) =>
    c.kubectl(['apply', '--server-side', `--field-manager=${manager}`, '-f', file(`${manager}-${Date.now()}.yaml`, text), ...(clientSideValidation ? ['--validate=false'] : []), ...extra], { allowFail: true });
  before(async () => {
    c = (await startCluster({ agents: [] })).forKubectl(k);
  });
  after(async () => {
    await c?.stop();
  });

  it('two managers apply different fields of one Deployment and both win', async () => {
    const a = await ssa('team-a', teamA);
    assert.equal(a.code, 0, a.stderr);
    const b = await ssa('team-b', deployment('  annotations: {team-b/note: "hello"}\n'));
    assert.equal(b.code, 0, b.stderr);
    const d = await c.client.get<KubeObject & { spec: { replicas: number } }>(DEPLOY, { namespace: 'default', name: 'shared' });
    assert.equal(d.metadata.labels?.owner, 'team-a');
    assert.equal(d.metadata.annotations?.['team-b/note'], 'hello');
    assert.equal(d.spec.replicas, 0);
    const managers = (d.metadata.managedFields as Array<{ manager: string; operation: string }>).map((m) => `${m.manager}/${m.operation}`).sort();
    assert.deepEqual(managers, ['team-a/Apply', 'team-b/Apply']);
  });

  it('a conflicting apply is a 409 naming the field and its manager; --force-conflicts takes it over', async () => {
    const conflict = await ssa('team-b', deployment('  annotations: {team-b/note: "hello"}\nspec:\n  replicas: 2\n'));
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /conflict with "team-a".*\.spec\.replicas/s);
    const forced = await ssa('team-b', deployment('  annotations: {team-b/note: "hello"}\nspec:\n  replicas: 0\n  paused: true\n'), ['--force-conflicts']);
    assert.equal(forced.code, 0, forced.stderr);
    const d = await c.client.get<KubeObject & { spec: { paused?: boolean } }>(DEPLOY, { namespace: 'default', name: 'shared' });
    assert.equal(d.spec.paused, true);
    const owners = (d.metadata.managedFields as Array<{ manager: string; fieldsV1: { 'f:spec'?: Record<string, unknown> } }>);
    assert.ok(owners.find((m) => m.manager === 'team-b')?.fieldsV1['f:spec']?.['f:paused'], 'team-b owns spec.paused');
  });

  it('a field dropped from a manager\'s config is removed when that manager alone owned it', async () => {
    const r = await ssa('team-a', teamA.replace(', tier: web', ''));
    assert.equal(r.code, 0, r.stderr);
    const d = await c.client.get<KubeObject>(DEPLOY, { namespace: 'default', name: 'shared' });
    assert.equal(d.metadata.labels?.tier, undefined, 'tier label removed');
    assert.equal(d.metadata.labels?.owner, 'team-a');
    assert.equal(d.metadata.annotations?.['team-b/note'], 'hello', "team-b's field untouched");
  });

  it('re-applying the same configuration with the same manager writes nothing: same resourceVersion and managedFields time', async () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same-again\n  namespace: default\ndata:\n  key: value-0\n';
    const first = await ssa('same-manager', text);
    assert.equal(first.code, 0, first.stderr);
    const before = await c.client.get<KubeObject>(CM, { namespace: 'default', name: 'same-again' });
    // managedFields times have whole seconds: a second apply in another second would show a new one.
    await new Promise((r) => setTimeout(r, 1100));
    const again = await ssa('same-manager', text);
    assert.equal(again.code, 0, again.stderr);
    const after = await c.client.get<KubeObject>(CM, { namespace: 'default', name: 'same-again' });
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
    assert.deepEqual(after.metadata.managedFields, before.metadata.managedFields);
    // A changed value is a write, with a new time.
    const changed = await ssa('same-manager', text.replace('value-0', 'value-1'));
    assert.equal(changed.code, 0, changed.stderr);
    const later = await c.client.get<KubeObject>(CM, { namespace: 'default', name: 'same-again' });
    assert.notEqual(later.metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it('concurrent applies of different fields by two managers lose nothing', async () => {
    await c.client.create(CM, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'busy', namespace: 'default' }, data: {} } as KubeObject);
    const apply = (manager: string, i: number) =>
      c.client.patch(CM, { namespace: 'default', name: 'busy', type: 'apply', fieldManager: manager, patch: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'busy' }, data: { [manager]: String(i) } } });
    await Promise.all(Array.from({ length: 20 }, (_, i) => apply(i % 2 ? 'left' : 'right', i)));
    const cm = await c.client.get<KubeObject & { data: Record<string, string> }>(CM, { namespace: 'default', name: 'busy' });
    assert.deepEqual(Object.keys(cm.data).sort(), ['left', 'right']);
  });

  it('patch (json, merge, strategic), label, annotate, replace, diff and server-side dry-run work', async () => {
    await c.kubectl(['apply', '-f', file('cfg.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: "1"}\n')]);
    await c.kubectl(['patch', 'configmap', 'cfg', '--type', 'merge', '-p', '{"data":{"b":"2"}}']);
    await c.kubectl(['patch', 'configmap', 'cfg', '--type', 'json', '-p', '[{"op":"test","path":"/data/a","value":"1"},{"op":"replace","path":"/data/a","value":"10"}]']);
    const failedTest = await c.kubectl(['patch', 'configmap', 'cfg', '--type', 'json', '-p', '[{"op":"test","path":"/data/a","value":"nope"}]'], { allowFail: true });
    assert.notEqual(failedTest.code, 0);
    await c.kubectl(['patch', 'deployment', 'shared', '--type', 'strategic', '-p', '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"berth/busybox:test"}]}}}}']);
    const d = await c.client.get<KubeObject & { spec: { template: { spec: { containers: Array<{ name: string }> } } } }>(DEPLOY, { namespace: 'default', name: 'shared' });
    assert.deepEqual(d.spec.template.spec.containers.map((x) => x.name).sort(), ['side', 'web'], 'strategic merge added a container by name');
    await c.kubectl(['label', 'configmap', 'cfg', 'color=blue']);
    await c.kubectl(['annotate', 'configmap', 'cfg', 'note=hi']);
    const cm = await c.client.get<KubeObject & { data: Record<string, string> }>(CM, { namespace: 'default', name: 'cfg' });
    assert.deepEqual(cm.data, { a: '10', b: '2' });
    assert.equal(cm.metadata.labels?.color, 'blue');
    assert.equal(cm.metadata.annotations?.note, 'hi');

    const replaced = file('replace.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {only: one}\n');
    await c.kubectl(['replace', '-f', replaced]);
    assert.deepEqual((await c.client.get<KubeObject & { data: Record<string, string> }>(CM, { namespace: 'default', name: 'cfg' })).data, { only: 'one' });

    const changed = file('diff.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {only: two}\n');
    const diff = await c.kubectl(['diff', '-f', changed], { allowFail: true });
    assert.equal(diff.code, 1, `kubectl diff exits 1 when there are differences: ${diff.stderr}`);
    assert.match(diff.stdout, /-\s+only: one[\s\S]*\+\s+only: two/);

    const before = await c.client.get<KubeObject>(CM, { namespace: 'default', name: 'cfg' });
    const dry = await c.kubectl(['apply', '--dry-run=server', '-f', changed, '-o', 'json']);
    assert.equal((JSON.parse(dry.stdout) as { data: Record<string, string> }).data.only, 'two');
    const afterDry = await c.client.get<KubeObject & { data: Record<string, string> }>(CM, { namespace: 'default', name: 'cfg' });
    assert.equal(afterDry.data.only, 'one', 'dry run stored nothing');
    assert.equal(afterDry.metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it('kubectl edit round-trips through an editor', async () => {
    const editor = file('editor.sh', '#!/bin/sh\nsed -i "s/only: one/only: edited/" "$1"\n');
    fs.chmodSync(editor, 0o755);
    const r = await c.kubectl(['edit', 'configmap', 'cfg'], { env: { KUBE_EDITOR: editor } });
    assert.match(r.stdout, /edited/);
    assert.equal((await c.client.get<KubeObject & { data: Record<string, string> }>(CM, { namespace: 'default', name: 'cfg' })).data.only, 'edited');
  });
});
