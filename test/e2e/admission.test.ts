/**
 * Admission on the real system: sidecar injection from a ConfigMap (the seeds' Istio example) —
 * injected once, surviving re-apply, reaching the app on localhost inside the pod — and the
 * protected system namespaces.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
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
    assert.deepEqual(pod.spec.volumes?.map((v) => v.name), ['proxy-data']);
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
