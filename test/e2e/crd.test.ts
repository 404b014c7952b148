/**
 * CustomResourceDefinitions with stock kubectl: a new resource is live at once, validated, pruned
 * and defaulted by its schema, printed with its columns, served at two versions, with a status
 * subresource; deleting the CRD deletes its objects. Once with each kubectl under test.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, it } from 'node:test';
import type { KubeObject, WatchEvent } from '../../src/api/types.js';
import { describeEachKubectl, needsKubectl, startCluster, waitFor, type Cluster, type Kubectl } from './harness.js';

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            properties:
              cronSpec: {type: string, pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'}
              image: {type: string}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
              mode: {type: string, enum: [fast, slow]}
              port: {x-kubernetes-int-or-string: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              phase: {type: string}
              replicas: {type: integer}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;

const cr = (name: string, spec: string) => `apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: ${name}}
spec:
${spec}
`;

describeEachKubectl('CustomResourceDefinitions', (k: Kubectl) => {
  let c: Cluster;
  const ref = { group: 'stable.example.com', version: 'v1', plural: 'crontabs' };
  const write = (name: string, text: string) => c.writeFile(name, text);
  before(async () => {
    c = (await startCluster({ agents: [] })).forKubectl(k);
  });
  after(async () => {
    await c?.stop();
  });

  it('serves the new resource within a second, by plural, singular and short name', async () => {
    await c.kubectl(['apply', '-f', write('crd.yaml', CRD)]);
    const t0 = Date.now();
    await waitFor(async () => (await c.client.raw({ method: 'GET', path: '/apis/stable.example.com/v1/namespaces/default/crontabs' })).status === 200, 1000, 'crontabs served');
    assert.ok(Date.now() - t0 < 1000);
    for (const name of ['crontabs', 'crontab', 'ct']) {
      const r = await c.kubectl(['get', name]);
      assert.match(r.stdout + r.stderr, /No resources found/);
    }
    await waitFor(async () => {
      const crd = JSON.parse((await c.kubectl(['get', 'crd', 'crontabs.stable.example.com', '-o', 'json'])).stdout) as { status?: { conditions?: Array<{ type: string; status: string }> } };
      return crd.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') ?? false;
    }, 5000, 'Established condition');
  });

  it('validates against the schema with field paths, defaults, and prunes unknown fields', async () => {
    // kubectl before 1.25 checks required fields against /openapi/v2 itself; skip that so the server answers.
    const serverSide = needsKubectl(k, '1.25', 'server-side field validation') ? ['--validate=false'] : [];
    const bad = await c.kubectl(['apply', ...serverSide, '-f', write('bad.yaml', cr('bad', '  cronSpec: "* * * * *"\n  replicas: 20'))], { allowFail: true });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /spec\.replicas/);
    const badPattern = await c.kubectl(['apply', ...serverSide, '-f', write('bad2.yaml', cr('bad2', '  cronSpec: "not a cron"'))], { allowFail: true });
    assert.match(badPattern.stderr, /spec\.cronSpec/);
    const badEnum = await c.kubectl(['apply', ...serverSide, '-f', write('bad3.yaml', cr('bad3', '  cronSpec: "* * * * *"\n  mode: medium'))], { allowFail: true });
    assert.match(badEnum.stderr, /spec\.mode/);
    const missing = await c.kubectl(['apply', ...serverSide, '-f', write('bad4.yaml', cr('bad4', '  image: x'))], { allowFail: true });
    assert.match(missing.stderr, /spec\.cronSpec.*Required/);

    await c.kubectl(['apply', '--validate=false', '-f', write('good.yaml', cr('good', '  cronSpec: "*/5 * * * *"\n  image: img:1\n  port: http\n  unknownField: drop-me\n  extra: {anything: [1, 2]}'))]);
    const obj = await c.client.get<KubeObject & { spec: Record<string, unknown> }>(ref, { namespace: 'default', name: 'good' });
    assert.equal(obj.spec.replicas, 1, 'defaulted');
    assert.equal(obj.spec.unknownField, undefined, 'pruned');
    assert.deepEqual(obj.spec.extra, { anything: [1, 2] }, 'preserved where the schema says so');
    assert.equal(obj.spec.port, 'http');
  });

  it('fieldValidation: Strict refuses unknown and duplicate fields with their path, Warn warns, Ignore prunes', { skip: needsKubectl(k, '1.25', '--validate=strict|warn sends fieldValidation; kubectl 1.20 validates against /openapi/v2 itself') }, async () => {
    const strict = await c.kubectl(['apply', '-f', write('strict.yaml', cr('strict', '  cronSpec: "* * * * *"\n  bogus: 1'))], { allowFail: true });
    assert.notEqual(strict.code, 0);
    assert.match(strict.stderr, /unknown field "spec\.bogus"/);
    const dup = await c.client.raw({ method: 'POST', path: '/apis/stable.example.com/v1/namespaces/default/crontabs?fieldValidation=Strict', body: '{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"dup"},"spec":{"cronSpec":"* * * * *","image":"a","image":"b"}}', headers: { 'content-type': 'application/json' } });
    assert.equal(dup.status, 400);
    assert.match(dup.body.toString(), /duplicate field \\"spec\.image\\"/);
    const warn = await c.kubectl(['apply', '--validate=warn', '-f', write('warn.yaml', cr('warned', '  cronSpec: "* * * * *"\n  bogus: 1'))]);
    assert.match(warn.stderr, /unknown field "spec\.bogus"/);
    const stored = await c.client.get<KubeObject & { spec: Record<string, unknown> }>(ref, { namespace: 'default', name: 'warned' });
    assert.equal(stored.spec.bogus, undefined, 'warned about, then pruned');
  });

  it('prints the additional printer columns in kubectl get', async () => {
    const out = (await c.kubectl(['get', 'ct'])).stdout;
    assert.match(out, /^NAME\s+SPEC\s+REPLICAS\s+AGE/m);
    assert.match(out, /^good\s+\*\/5 \* \* \* \*\s+1\s+\d+s/m);
  });

  it('keeps status behind the status subresource', async () => {
    const obj = await c.client.get<KubeObject & { status?: { phase?: string } }>(ref, { namespace: 'default', name: 'good' });
    const viaMain = await c.client.update(ref, { ...obj, status: { phase: 'Hacked' } });
    assert.equal((viaMain as { status?: unknown }).status, undefined);
    const viaStatus = await c.client.update(ref, { ...viaMain, status: { phase: 'Active' } }, { subresource: 'status' });
    assert.equal((viaStatus as { status?: { phase?: string } }).status?.phase, 'Active');
  });

  it('scales through the scale subresource (kubectl scale)', async () => {
    await c.kubectl(['scale', 'crontab', 'good', '--replicas=4']);
    const obj = await c.client.get<KubeObject & { spec: { replicas: number } }>(ref, { namespace: 'default', name: 'good' });
    assert.equal(obj.spec.replicas, 4);
    const scale = JSON.parse((await c.client.raw({ method: 'GET', path: '/apis/stable.example.com/v1/namespaces/default/crontabs/good/scale' })).body.toString()) as { kind: string; spec: { replicas: number } };
    assert.equal(scale.kind, 'Scale');
    assert.equal(scale.spec.replicas, 4);
  });

  it('serves a second version with the same objects, and patch and watch work', async () => {
    const beta = await c.client.get<KubeObject>({ ...ref, version: 'v1beta1' }, { namespace: 'default', name: 'good' });
    assert.equal(beta.apiVersion, 'stable.example.com/v1beta1');
    const events: WatchEvent[] = [];
    const list = await c.client.list(ref, { namespace: 'default' });
    const w = c.client.watch(ref, { namespace: 'default', resourceVersion: list.metadata.resourceVersion, onEvent: (e) => events.push(e) });
    await c.kubectl(['patch', 'ct', 'good', '--type', 'merge', '-p', '{"spec":{"replicas":3}}']);
    await waitFor(() => events.some((e) => e.type === 'MODIFIED' && (e.object as { spec?: { replicas?: number } }).spec?.replicas === 3), 5000, 'watch saw the patch');
    w.close();
  });

  it('deleting the CRD deletes its objects and the resource', async () => {
    await c.kubectl(['delete', 'crd', 'crontabs.stable.example.com']);
    const r = await c.client.raw({ method: 'GET', path: '/apis/stable.example.com/v1/namespaces/default/crontabs' });
    assert.equal(r.status, 404);
    const again = await c.kubectl(['get', 'crontabs'], { allowFail: true });
    assert.notEqual(again.code, 0);
    // Re-creating it starts empty: the old objects were really deleted, not hidden.
    await c.kubectl(['apply', '-f', path.join(c.dir, 'crd.yaml')]);
    await waitFor(async () => (await c.client.raw({ method: 'GET', path: '/apis/stable.example.com/v1/namespaces/default/crontabs' })).status === 200, 2000, 'served again');
    assert.equal((await c.client.list(ref, { namespace: 'default' })).items.length, 0);
  });
});
