/**
 * /openapi/v2 with real clients: Debian's kubectl 1.20 (which reads only OpenAPI v2, as protobuf)
 * applies, validates and explains against Berth, and kubectl 1.32 parses the same protobuf with
 * `explain --output=plaintext-openapiv2`.
 *
 * kubectl 1.20 is found at $KUBECTL_1_20, else at .cache/kubectl-1.20/usr/bin/kubectl under the
 * repository (`mkdir -p .cache/kubectl-1.20 && apt-get download kubernetes-client && dpkg -x
 * kubernetes-client_*.deb .cache/kubectl-1.20` on Debian 12). Without it the kubectl 1.20 tests
 * are skipped with a message naming the path looked at.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import { availableKubectls, compareVersions, REPO_ROOT, runKubectl, startCluster, waitFor, type Cluster } from './harness.js';

const KUBECTL_1_20 = process.env.KUBECTL_1_20 ?? path.join(REPO_ROOT, '.cache', 'kubectl-1.20', 'usr', 'bin', 'kubectl');
const haveKubectl120 = fs.existsSync(KUBECTL_1_20);
// The newest kubectl here, for what only newer clients do (`explain` from OpenAPI v3 arrived in 1.27); on a
// fresh Debian machine the only kubectl is 1.20, and that case says so.
const newest = availableKubectls()[0];
const skipNewer = newest && compareVersions(newest.version, '1.27') >= 0 ? false : `needs kubectl ≥ 1.27 (explain from OpenAPI v3); the newest here is ${newest?.version ?? 'none'}`;
const SKIP_120 = haveKubectl120
  ? false
  : `kubectl 1.20 not found at ${KUBECTL_1_20} (set KUBECTL_1_20 or extract Debian's kubernetes-client package into .cache/kubectl-1.20)`;
if (SKIP_120) process.stderr.write(`\n*** SKIPPING kubectl 1.20 tests: ${SKIP_120} ***\n\n`);

const PROTOBUF_ACCEPT_OLD = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
const PROTOBUF_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

function run(binary: string, kubeconfig: string, args: string[], opts: { allowFail?: boolean } = {}) {
  // A fresh HOME keeps kubectl's discovery cache from leaking between clusters and versions.
  return runKubectl(kubeconfig, args, { bin: binary, env: { HOME: path.dirname(kubeconfig) }, allowFail: opts.allowFail });
}

const deployment = (opts: { image: string; env: Array<[string, string]>; extra?: string }) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: ${opts.image}
        env:
${opts.env.map(([k, v]) => `        - {name: ${k}, value: "${v}"}`).join('\n')}
${opts.extra ?? ''}`;

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.v2test.example.com
spec:
  group: v2test.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the gizmo should be.
            properties:
              size: {type: integer, description: How big the gizmo is.}
              port: {x-kubernetes-int-or-string: true}
              note: {type: string, nullable: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
`;

describe('OpenAPI v2', () => {
  let c: Cluster;
  const kubectl120 = (args: string[], opts?: { allowFail?: boolean }) => run(KUBECTL_1_20, c.kubeconfig, args, opts);
  const kubectl132 = (args: string[], opts?: { allowFail?: boolean }) => run(newest?.path ?? 'kubectl', c.kubeconfig, args, opts);
  before(async () => {
    c = await startCluster({ agents: [] });
  });
  after(async () => {
    await c?.stop();
  });

  it('GET /openapi/v2 answers JSON and protobuf with an ETag that If-None-Match honours', async () => {
    const json = await c.client.raw({ method: 'GET', path: '/openapi/v2' });
    assert.equal(json.status, 200);
    assert.match(String(json.headers['content-type']), /^application\/json/);
    const doc = JSON.parse(json.body.toString('utf8')) as { swagger: string; definitions: Record<string, Record<string, unknown>>; paths: Record<string, unknown> };
    assert.equal(doc.swagger, '2.0');
    assert.deepEqual(doc.definitions['io.k8s.api.core.v1.Pod']?.['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Pod', version: 'v1' }]);
    assert.ok(doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}']);

    const pb = await c.client.raw({ method: 'GET', path: '/openapi/v2', headers: { accept: PROTOBUF_ACCEPT_OLD } });
    assert.equal(pb.status, 200);
    assert.equal(pb.headers['content-type'], PROTOBUF_TYPE);
    assert.equal(pb.body[0], 0x0a, 'field 1 (swagger) comes first');
    assert.equal(pb.body.subarray(2, 5).toString(), '2.0');
    const etag = String(pb.headers['etag']);
    assert.match(etag, /^"[0-9A-F]{128}"$/);
    assert.notEqual(etag, json.headers['etag'], 'each representation has its own ETag');

    const again = await c.client.raw({ method: 'GET', path: '/openapi/v2', headers: { accept: PROTOBUF_ACCEPT_OLD, 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    const refused = await c.client.raw({ method: 'GET', path: '/openapi/v2', headers: { accept: 'text/html' } });
    assert.equal(refused.status, 406);
  });

  it('kubectl 1.20 apply creates, and a re-apply patches with the strategic merge keys from OpenAPI', { skip: SKIP_120 }, async () => {
    const file = c.writeFile('web.yaml', deployment({ image: 'img:1', env: [['A', '1'], ['B', '2']] }));
    const created = await kubectl120(['apply', '-f', file]);
    assert.match(created.stdout, /deployment.apps\/web created/);

    // Dropping env B and changing the image: only a patch built with containers merged by `name`
    // and env merged by `name` deletes B; without the OpenAPI merge keys kubectl would send a whole
    // env list, which the server merges by name and B would survive.
    fs.writeFileSync(file, deployment({ image: 'img:2', env: [['A', '1']] }));
    const changed = await kubectl120(['apply', '-f', file]);
    assert.match(changed.stdout, /deployment.apps\/web configured/);
    assert.doesNotMatch(changed.stderr, /error calculating patch from openapi spec/);
    const live = JSON.parse((await kubectl120(['get', 'deployment', 'web', '-o', 'json'])).stdout) as KubeObject & {
      spec: { template: { spec: { containers: Array<{ name: string; image: string; env?: Array<{ name: string }> }> } } };
    };
    const containers = live.spec.template.spec.containers;
    assert.equal(containers.length, 1);
    assert.equal(containers[0]?.image, 'img:2');
    assert.deepEqual(containers[0]?.env?.map((e) => e.name), ['A']);
    assert.match((await kubectl120(['apply', '-f', file])).stdout, /deployment.apps\/web unchanged/);
  });

  it('kubectl 1.20 apply --server-side', { skip: SKIP_120 }, async () => {
    const file = c.writeFile('ssa.yaml', deployment({ image: 'img:ssa', env: [['X', '1']] }).replace('name: web', 'name: ssa'));
    const out = await kubectl120(['apply', '--server-side', '-f', file]);
    assert.match(out.stdout, /deployment.apps\/ssa serverside-applied/);
    const live = JSON.parse((await kubectl120(['get', 'deployment', 'ssa', '-o', 'json'])).stdout) as KubeObject;
    const managers = (live.metadata.managedFields ?? []) as Array<{ manager?: string; operation?: string }>;
    assert.ok(managers.some((m) => m.manager === 'kubectl' && m.operation === 'Apply'), JSON.stringify(managers));
  });

  it('kubectl 1.20 --dry-run=server finds dryRun among the PATCH parameters of the kind', { skip: SKIP_120 }, async () => {
    const file = c.writeFile('dry.yaml', deployment({ image: 'img:1', env: [['A', '1']] }).replace('name: web', 'name: dry'));
    const out = await kubectl120(['apply', '--dry-run=server', '-f', file]);
    assert.match(out.stdout, /deployment.apps\/dry created \(server dry run\)/);
    const missing = await c.client.raw({ method: 'GET', path: '/apis/apps/v1/namespaces/default/deployments/dry' });
    assert.equal(missing.status, 404, 'a dry run stores nothing');
  });

  it('kubectl 1.20 --validate=true refuses an unknown field client-side, naming it and its definition', { skip: SKIP_120 }, async () => {
    const file = c.writeFile('bad.yaml', deployment({ image: 'img:1', env: [['A', '1']], extra: '  replicaz: 3\n' }).replace('name: web', 'name: bad'));
    const out = await kubectl120(['apply', '--validate=true', '-f', file], { allowFail: true });
    assert.notEqual(out.code, 0);
    assert.match(out.stderr, /ValidationError\(Deployment\.spec\): unknown field "replicaz" in io\.k8s\.api\.apps\.v1\.DeploymentSpec/);
    const missing = await c.client.raw({ method: 'GET', path: '/apis/apps/v1/namespaces/default/deployments/bad' });
    assert.equal(missing.status, 404, 'nothing was sent');
  });

  it('kubectl explain pod.spec with a newer kubectl, from OpenAPI v3 and v2', { skip: skipNewer }, async () => {
    const v3 = await kubectl132(['explain', 'pod.spec']);
    assert.match(v3.stdout, /containers\s+<\[\]Container> -required-/);
    const v2 = await kubectl132(['explain', 'pod.spec', '--output=plaintext-openapiv2']);
    assert.match(v2.stdout, /containers\s+<\[\]Object> -required-/);
    assert.match(v2.stdout, /^KIND:\s+Pod/m);
  });

  it('kubectl 1.20 explain pod.spec and nested fields from OpenAPI v2', { skip: SKIP_120 }, async () => {
    const v120 = await kubectl120(['explain', 'pod.spec']);
    assert.match(v120.stdout, /^KIND:\s+Pod/m);
    assert.match(v120.stdout, /containers\s+<\[\]Object> -required-/);
    const deep = await kubectl120(['explain', 'deployment.spec.template.spec.containers.resources']);
    assert.match(deep.stdout, /limits\s+<map\[string\]string>/);
  });

  it('a CRD registered at runtime is in v2 at once: kubectl 1.20 explains and validates it', { skip: SKIP_120 }, async () => {
    await kubectl120(['apply', '-f', c.writeFile('crd.yaml', CRD)]);
    await waitFor(async () => {
      const doc = JSON.parse((await c.client.raw({ method: 'GET', path: '/openapi/v2' })).body.toString('utf8')) as { definitions: Record<string, unknown> };
      return 'com.example.v2test.v1.Gizmo' in doc.definitions;
    }, 5000, 'Gizmo in /openapi/v2');
    const explained = await kubectl120(['explain', 'gizmo.spec']);
    assert.match(explained.stdout, /What the gizmo should be\./);
    assert.match(explained.stdout, /size\s+<integer>\s+How big the gizmo is\./);

    const gizmo = (spec: string) => `apiVersion: v2test.example.com/v1\nkind: Gizmo\nmetadata: {name: g}\nspec:\n${spec}\n`;
    // int-or-string, null and preserved fields are all accepted; an unlisted field is not.
    const ok = await kubectl120(['apply', '--validate=true', '-f', c.writeFile('g.yaml', gizmo('  size: 2\n  port: http\n  note: null\n  extra: {deep: [1, {x: y}]}'))]);
    assert.match(ok.stdout, /gizmo.v2test.example.com\/g created/);
    const bad = await kubectl120(['apply', '--validate=true', '-f', c.writeFile('g2.yaml', gizmo('  size: 2\n  colour: red'))], { allowFail: true });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /unknown field "colour"/);
  });
});
