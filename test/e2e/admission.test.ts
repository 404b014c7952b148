/**
 * Admission on the real system: sidecar injection from a ConfigMap (the seeds' Istio example) —
 * injected once, surviving re-apply, reaching the app on localhost inside the pod — and the
 * protected system namespaces.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { ensurePki } from '../../src/auth/pki.js';
import { docker, podContainers, startCluster, waitFor, waitForPod, type Cluster } from './harness.js';

const CONFIGMAPS = { plural: 'configmaps' };

const injectorConfig = (tag: string) => `template:
  containers:
  - name: proxy
    image: berth/busybox:test
    command: ["sh", "-c", "until wget -q -O /tmp/got http://127.0.0.1:8080/index.html; do sleep 0.2; done; echo ${tag} > /tmp/tag; exec sleep 3600"]
    volumeMounts:
    - {name: proxy-data, mountPath: /proxy}
  volumes:
  - name: proxy-data
    emptyDir: {}
`;

const appManifest = (name: string, version: string, extraAnnotations = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: ${name}, version: "${version}"}
${extraAnnotations ? `  annotations:\n${extraAnnotations}\n` : ''}spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: berth/busybox:test
    command: ["sh", "-c", "mkdir -p /www && echo hello-from-app > /www/index.html && exec httpd -f -p 8080 -h /www"]
`;

describe('admission: sidecar injection', () => {
  let c: Cluster;
  const apply = async (ns: string, yaml: string, extra: string[] = []) => {
    const file = path.join(c.dir, `m-${Date.now()}-${Math.random()}.yaml`);
    fs.writeFileSync(file, yaml);
    return c.kubectl(['apply', '-n', ns, '-f', file, ...extra]);
  };
  before(async () => {
    c = await startCluster({ agents: ['inj'] });
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sidecar-injector', namespace: 'kube-system' }, data: { config: injectorConfig('v1') } } as KubeObject);
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'mesh', labels: { 'berth.dev/sidecar-injection': 'enabled' } } });
  });
  after(async () => {
    await c?.stop();
  });

  it('injects the configured sidecar and volume into pods of an enabled namespace, once', async () => {
    await apply('mesh', appManifest('shop', 'one'));
    const pod = await waitForPod(c.client, 'mesh', 'shop', (p) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length === 2);
    assert.deepEqual(pod.spec.containers.map((x) => x.name), ['app', 'proxy']);
    // The ServiceAccount plugin's token volume comes after the injected one.
    assert.deepEqual(pod.spec.volumes?.map((v) => v.name.replace(/^kube-api-access-.{5}$/, 'kube-api-access-*')), ['proxy-data', 'kube-api-access-*']);
    const marker = JSON.parse(pod.metadata.annotations?.['sidecar.berth.dev/status'] ?? '{}') as { containers?: string[] };
    assert.deepEqual(marker.containers, ['proxy']);
    // The sidecar shares the pod's network namespace: it fetched the app's page from localhost.
    const proxy = (await podContainers(pod.metadata.uid!)).find((x) => x.name === 'proxy')!;
    await waitFor(async () => (await docker(['exec', proxy.id, 'cat', '/tmp/got']).catch(() => '')) === 'hello-from-app', 20_000, 'sidecar reached the app on localhost');
  });

  it('re-applying the user manifest neither duplicates nor loses the sidecar', async () => {
    const before = await c.client.get<Pod>(CORE.pods, { namespace: 'mesh', name: 'shop' });
    assert.match((await apply('mesh', appManifest('shop', 'two'))).stdout, /configured/);
    const once = await c.client.get<Pod>(CORE.pods, { namespace: 'mesh', name: 'shop' });
    // kubectl still sends a patch (the live pod has a container its file lacks, so it orders the list),
    // but applying it changes nothing, so nothing is written.
    await apply('mesh', appManifest('shop', 'two'));
    const after = await c.client.get<Pod>(CORE.pods, { namespace: 'mesh', name: 'shop' });
    assert.equal(after.metadata.resourceVersion, once.metadata.resourceVersion, 'a second identical apply writes nothing');
    assert.equal(after.metadata.labels?.version, 'two');
    assert.deepEqual(after.spec.containers.map((x) => x.name), ['app', 'proxy']);
    assert.equal(after.metadata.annotations?.['sidecar.berth.dev/status'], before.metadata.annotations?.['sidecar.berth.dev/status']);
    assert.equal((await podContainers(after.metadata.uid!)).filter((x) => x.name === 'proxy').length, 1, 'one proxy container in Docker');
  });

  it('honours the pod opt-out and opt-in annotations and leaves other namespaces alone', async () => {
    await apply('mesh', appManifest('optout', 'x', '    sidecar.berth.dev/inject: "false"'));
    await apply('default', appManifest('plain', 'x'));
    await apply('default', appManifest('optin', 'x', '    sidecar.berth.dev/inject: "true"'));
    const names = async (ns: string, n: string) => (await c.client.get<Pod>(CORE.pods, { namespace: ns, name: n })).spec.containers.map((x) => x.name);
    assert.deepEqual(await names('mesh', 'optout'), ['app']);
    assert.deepEqual(await names('default', 'plain'), ['app']);
    assert.deepEqual(await names('default', 'optin'), ['app', 'proxy']);
  });

  it('a user container with the sidecar name is kept as written, not duplicated', async () => {
    const yaml = appManifest('mine', 'x').replace('  containers:\n', '  containers:\n  - name: proxy\n    image: berth/busybox:test\n    command: ["sleep", "3600"]\n');
    await apply('mesh', yaml);
    const pod = await c.client.get<Pod>(CORE.pods, { namespace: 'mesh', name: 'mine' });
    assert.deepEqual(pod.spec.containers.map((x) => x.name), ['proxy', 'app']);
    assert.deepEqual(pod.spec.containers[0]!.command, ['sleep', '3600']);
  });

  it('a changed config affects new pods only; server-side dry-run injects without storing', async () => {
    const cm = await c.client.get<KubeObject & { data: Record<string, string> }>(CONFIGMAPS, { namespace: 'kube-system', name: 'sidecar-injector' });
    cm.data.config = injectorConfig('v2').replace('name: proxy\n', 'name: proxy2\n');
    await c.client.update(CONFIGMAPS, cm);
    const dry = await apply('mesh', appManifest('dry', 'x'), ['--dry-run=server', '-o', 'json']);
    const dryPod = JSON.parse(dry.stdout) as Pod;
    assert.deepEqual(dryPod.spec.containers.map((x) => x.name), ['app', 'proxy2']);
    await assert.rejects(c.client.get(CORE.pods, { namespace: 'mesh', name: 'dry' }), (e: { reason?: string }) => e.reason === 'NotFound');
    await apply('mesh', appManifest('fresh', 'x'));
    assert.deepEqual((await c.client.get<Pod>(CORE.pods, { namespace: 'mesh', name: 'fresh' })).spec.containers.map((x) => x.name), ['app', 'proxy2']);
    assert.deepEqual((await c.client.get<Pod>(CORE.pods, { namespace: 'mesh', name: 'shop' })).spec.containers.map((x) => x.name), ['app', 'proxy']);
  });

  it('refuses to delete system namespaces, naming the admission plugin', async () => {
    const r = await c.kubectl(['delete', 'namespace', 'kube-system'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /NamespaceLifecycle.*may not be deleted|may not be deleted/);
  });
});

describe('admission: webhooks (AdmissionReview v1 over HTTPS)', () => {
  let c: Cluster;
  let server: https.Server;
  let url: string;
  let caBundle: string;
  const calls: Array<{ path: string; op: string; name: string }> = [];
  before(async () => {
    c = await startCluster({ agents: [] });
    const pki = await ensurePki({ dataDir: path.join(c.dir, 'webhook-pki'), altNames: ['127.0.0.1'] });
    caBundle = Buffer.from(pki.caCert).toString('base64');
    server = https.createServer({ cert: pki.serverCert, key: pki.serverKey }, (req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const rv = JSON.parse(body) as { request: { uid: string; operation: string; name: string; object: Pod } };
        const r = rv.request;
        calls.push({ path: req.url ?? '', op: r.operation, name: r.name });
        const reply = (response: Record<string, unknown>) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: r.uid, ...response } }));
        };
        if (req.url === '/slow') return void setTimeout(() => reply({ allowed: true }), 3000);
        if (req.url === '/mutate') {
          const ops = r.object.metadata.labels ? [{ op: 'add', path: '/metadata/labels/mutated-by', value: 'webhook' }] : [{ op: 'add', path: '/metadata/labels', value: { 'mutated-by': 'webhook' } }];
          return reply({ allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') });
        }
        if (r.object?.metadata.labels?.deny === 'yes') return reply({ allowed: false, status: { code: 403, message: 'pods labeled deny=yes are not allowed' } });
        reply({ allowed: true });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const hook = (name: string, p: string, extra: Record<string, unknown> = {}) => ({
      name, clientConfig: { url: `${url}${p}`, caBundle }, sideEffects: 'None', admissionReviewVersions: ['v1'],
      rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      namespaceSelector: { matchLabels: { webhooks: 'on' } }, ...extra,
    });
    await c.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'hooked', labels: { webhooks: 'on' } } });
    await c.client.create({ group: 'admissionregistration.k8s.io', plural: 'mutatingwebhookconfigurations', namespaced: false }, { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name: 'labeler' }, webhooks: [hook('labeler.berth.dev', '/mutate')] } as KubeObject);
    await c.client.create({ group: 'admissionregistration.k8s.io', plural: 'validatingwebhookconfigurations', namespaced: false }, {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'policy' },
      webhooks: [
        hook('deny.berth.dev', '/validate'),
        hook('down-ignored.berth.dev', '/x', { clientConfig: { url: 'https://127.0.0.1:9/x', caBundle }, failurePolicy: 'Ignore', objectSelector: { matchLabels: { probe: 'down' } } }),
        hook('down-fails.berth.dev', '/x', { clientConfig: { url: 'https://127.0.0.1:9/x', caBundle }, failurePolicy: 'Fail', objectSelector: { matchLabels: { probe: 'down-fail' } } }),
        hook('slow.berth.dev', '/slow', { timeoutSeconds: 1, objectSelector: { matchLabels: { probe: 'slow' } } }),
      ],
    } as KubeObject);
  });
  after(async () => {
    server?.close();
    await c?.stop();
  });

  const pod = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'berth/busybox:test' }] } }) as Pod;

  it('applies a mutating webhook\'s JSONPatch in a matching namespace only', async () => {
    const p = await c.client.create<Pod>(CORE.pods, pod('m1'), { namespace: 'hooked' });
    assert.equal(p.metadata.labels?.['mutated-by'], 'webhook');
    const q = await c.client.create<Pod>(CORE.pods, pod('m2'), { namespace: 'default' });
    assert.equal(q.metadata.labels?.['mutated-by'], undefined, 'namespaceSelector excludes default');
    assert.ok(calls.some((x) => x.path === '/mutate' && x.op === 'CREATE' && x.name === 'm1'));
  });

  it('a validating webhook denies a pod with its message, through kubectl too', async () => {
    await assert.rejects(c.client.create(CORE.pods, pod('bad', { deny: 'yes' }), { namespace: 'hooked' }), (e: Error & { reason?: string }) => e.reason === 'Forbidden' && /admission webhook "deny.berth.dev" denied the request: pods labeled deny=yes are not allowed/.test(e.message));
    const file = path.join(c.dir, 'deny.yaml');
    fs.writeFileSync(file, 'apiVersion: v1\nkind: Pod\nmetadata: {name: bad2, namespace: hooked, labels: {deny: "yes"}}\nspec: {containers: [{name: c, image: berth/busybox:test}]}\n');
    const r = await c.kubectl(['apply', '-f', file], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /denied the request: pods labeled deny=yes are not allowed/);
    // Outside the selected namespace the same pod is fine.
    await c.client.create(CORE.pods, pod('bad', { deny: 'yes' }), { namespace: 'default' });
  });

  it('honours failurePolicy and timeoutSeconds', async () => {
    await c.client.create(CORE.pods, pod('ign', { probe: 'down' }), { namespace: 'hooked' });
    await assert.rejects(c.client.create(CORE.pods, pod('fail', { probe: 'down-fail' }), { namespace: 'hooked' }), (e: Error) => /failed calling webhook "down-fails.berth.dev"/.test(e.message));
    const t0 = Date.now();
    await assert.rejects(c.client.create(CORE.pods, pod('slow', { probe: 'slow' }), { namespace: 'hooked' }), (e: Error) => /failed calling webhook "slow.berth.dev".*deadline/.test(e.message));
    assert.ok(Date.now() - t0 < 2800, 'the 1 s timeout cut the 3 s webhook short');
  });
});
