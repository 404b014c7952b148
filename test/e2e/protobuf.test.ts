/**
 * Stock kubectl's typed commands send their objects as application/vnd.kubernetes.protobuf; these
 * must work against Berth exactly as their JSON equivalents do. No agent is needed: the objects
 * only have to be accepted and stored (pods stay Pending or are bound to a node object by hand).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import { availableKubectls, needsKubectl, startCluster, waitFor, type Cluster } from './harness.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/**
 * The newest kubectl under test drives these cases. kubectl 1.32's typed commands send protobuf;
 * Debian's 1.20 sends the same objects as JSON, which the other e2e files cover.
 */
const newest = availableKubectls()[0];
const needsProtobufKubectl = newest ? needsKubectl(newest, '1.32', 'typed commands that send protobuf bodies') : 'no kubectl here';

type Obj = KubeObject & { data?: Record<string, string>; type?: string; spec?: any; status?: any };

describe('kubectl typed commands (protobuf bodies) against Berth', () => {
  let c: Cluster;
  const get = (path: string) => c.client.request<Obj>({ method: 'GET', path });

  before(async () => {
    const cluster = await startCluster({ agents: [] });
    c = newest ? cluster.forKubectl(newest) : cluster;
  });
  after(async () => {
    await c?.stop();
  });

  it('kubectl create configmap sends protobuf and the object is stored', { skip: needsProtobufKubectl }, async () => {
    const out = await c.kubectl(['create', 'configmap', 'pb-cm', '--from-literal=a=1', '--from-literal=greeting=hello world', '-v=8']);
    assert.match(out.stdout, /configmap\/pb-cm created/);
    // -v=8 logs the request headers: prove the body really was protobuf.
    assert.match(out.stderr, new RegExp(`Content-Type: ${PROTOBUF.replace(/\./g, '\\.')}`));
    const cm = await get('/api/v1/namespaces/default/configmaps/pb-cm');
    assert.deepEqual(cm.data, { a: '1', greeting: 'hello world' });
    assert.ok(cm.metadata.uid && cm.metadata.creationTimestamp);
    assert.equal((cm.metadata.managedFields?.[0] as { manager?: string } | undefined)?.manager, 'kubectl-create');
  });

  it('kubectl create secret generic --from-literal stores base64 data', { skip: needsProtobufKubectl }, async () => {
    assert.match((await c.kubectl(['create', 'secret', 'generic', 'pb-secret', '--from-literal=password=s3cr3t'])).stdout, /secret\/pb-secret created/);
    const secret = await get('/api/v1/namespaces/default/secrets/pb-secret');
    assert.equal(secret.data?.password, Buffer.from('s3cr3t').toString('base64'));
    assert.equal(secret.type, 'Opaque');
  });

  it('kubectl create namespace', { skip: needsProtobufKubectl }, async () => {
    assert.match((await c.kubectl(['create', 'namespace', 'pb-team'])).stdout, /namespace\/pb-team created/);
    const ns = await get('/api/v1/namespaces/pb-team');
    assert.equal(ns.status?.phase, 'Active');
    // and namespaced creates land in it
    await c.kubectl(['create', 'configmap', 'inside', '-n', 'pb-team', '--from-literal=k=v']);
    assert.deepEqual((await get('/api/v1/namespaces/pb-team/configmaps/inside')).data, { k: 'v' });
  });

  it('kubectl create deployment: defaults applied, the controller makes a ReplicaSet', { skip: needsProtobufKubectl }, async () => {
    const out = await c.kubectl(['create', 'deployment', 'pb-web', '--image=berth/busybox:test', '--replicas=2', '--port=8080']);
    assert.match(out.stdout, /deployment\.apps\/pb-web created/);
    const d = await get('/apis/apps/v1/namespaces/default/deployments/pb-web');
    assert.equal(d.spec.replicas, 2);
    assert.deepEqual(d.spec.selector, { matchLabels: { app: 'pb-web' } });
    const container = d.spec.template.spec.containers[0];
    assert.equal(container.image, 'berth/busybox:test');
    assert.deepEqual(container.ports, [{ containerPort: 8080, protocol: 'TCP' }]);
    assert.equal(d.spec.strategy.type, 'RollingUpdate');
    await waitFor(async () => {
      const list = await c.client.request<{ items: Obj[] }>({ method: 'GET', path: '/apis/apps/v1/namespaces/default/replicasets?labelSelector=app%3Dpb-web' });
      return list.items.length === 1 && list.items[0]?.spec.replicas === 2;
    }, 30_000, 'a ReplicaSet for pb-web');
  });

  it('kubectl create job, create cronjob and create job --from=cronjob/...', { skip: needsProtobufKubectl }, async () => {
    const resources = (await c.kubectl(['api-resources', '--api-group=batch'])).stdout;
    assert.match(resources, /^jobs\s/m, 'batch/v1 jobs are served');
    assert.match(resources, /^cronjobs\s/m, 'batch/v1 cronjobs are served');
    assert.match((await c.kubectl(['create', 'job', 'pb-job', '--image=berth/busybox:test', '--', 'sleep', '1'])).stdout, /job\.batch\/pb-job created/);
    const job = await get('/apis/batch/v1/namespaces/default/jobs/pb-job');
    assert.deepEqual(job.spec.template.spec.containers[0].command, ['sleep', '1']);
    assert.equal(job.spec.template.spec.restartPolicy, 'Never');

    const cron = await c.kubectl(['create', 'cronjob', 'pb-cron', '--image=berth/busybox:test', '--schedule=0 0 1 1 *', '--', 'echo', 'hi']);
    assert.match(cron.stdout, /cronjob\.batch\/pb-cron created/);
    const cj = await get('/apis/batch/v1/namespaces/default/cronjobs/pb-cron');
    assert.equal(cj.spec.schedule, '0 0 1 1 *');

    // kubectl reads the CronJob and sends a Job with an ownerReference (controller: true) as protobuf.
    assert.match((await c.kubectl(['create', 'job', 'pb-manual', '--from=cronjob/pb-cron'])).stdout, /job\.batch\/pb-manual created/);
    const manual = await get('/apis/batch/v1/namespaces/default/jobs/pb-manual');
    const owner = manual.metadata.ownerReferences?.[0];
    assert.equal(owner?.kind, 'CronJob');
    assert.equal(owner?.name, 'pb-cron');
    assert.equal(owner?.uid, cj.metadata.uid);
    assert.equal(owner?.controller, true);
    assert.equal(manual.metadata.annotations?.['cronjob.kubernetes.io/instantiate'], 'manual');
    assert.deepEqual(manual.spec.template.spec.containers[0].command, ['echo', 'hi']);
  });

  it('kubectl drain evicts through pods/eviction; a protobuf Eviction (typed client-go) is accepted too', { skip: needsProtobufKubectl }, async () => {
    const core = await c.client.request<{ resources: Array<{ name: string }> }>({ method: 'GET', path: '/api/v1' });
    assert.ok(core.resources.some((r) => r.name === 'pods/eviction'), 'the pods/eviction subresource is served');
    // A node object with no agent behind it, and pods already bound to it.
    const node = 'pb-drain-node';
    await c.client.request({ method: 'POST', path: '/api/v1/nodes', body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node } } });
    const bound = (name: string) =>
      c.client.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/pods',
        body: { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: node, terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: 'berth/busybox:test' }] } },
      });
    const podGone = async (name: string) => (await c.client.raw({ method: 'GET', path: `/api/v1/namespaces/default/pods/${name}` })).status === 404;

    // kubectl 1.32's drain posts its Eviction as JSON (only create/get/list use protobuf); it must work end to end.
    await bound('pb-victim');
    const out = await c.kubectl(['drain', node, '--force', '--grace-period=0', '--timeout=60s', '-v=8'], { allowFail: true });
    assert.doesNotMatch(out.stderr, /Response Status: 415|UnsupportedMediaType/, out.stderr.slice(-2000));
    assert.match(out.stderr, /pods\/pb-victim\/eviction/);
    assert.equal(out.code, 0, out.stderr.slice(-2000));
    assert.match(out.stdout, /pod\/pb-victim evicted/);
    assert.equal((await get(`/api/v1/nodes/${node}`)).spec.unschedulable, true);
    assert.ok(await podGone('pb-victim'));

    // What a typed client-go EvictV1 with the protobuf content type sends:
    // k8s\0 + Unknown{typeMeta{policy/v1, Eviction}, raw: Eviction{metadata{name, namespace}, deleteOptions{gracePeriodSeconds: 0}}}
    await bound('pb-victim-2');
    const field = (no: number, payload: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2, payload.length]), payload]);
    const text = (no: number, s: string) => field(no, Buffer.from(s));
    const eviction = Buffer.concat([field(1, Buffer.concat([text(1, 'pb-victim-2'), text(3, 'default')])), field(2, Buffer.from([0x08, 0x00]))]);
    const body = Buffer.concat([Buffer.from('k8s\0', 'latin1'), field(1, Buffer.concat([text(1, 'policy/v1'), text(2, 'Eviction')])), field(2, eviction)]);
    const res = await c.client.raw({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods/pb-victim-2/eviction',
      body,
      headers: { 'content-type': PROTOBUF, accept: `${PROTOBUF},application/json` },
    });
    assert.equal(res.status, 201, res.body.toString());
    assert.equal((JSON.parse(res.body.toString()) as { kind: string }).kind, 'Status');
    await waitFor(() => podGone('pb-victim-2'), 15_000, 'pb-victim-2 to be deleted');
  });

  it('answers raw protobuf bodies with proper Status objects: 400 for garbage, 415 for kinds without a schema', async () => {
    const post = (body: Buffer) =>
      c.client.raw({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body, headers: { 'content-type': PROTOBUF, accept: `${PROTOBUF},application/json` } });
    const garbage = await post(Buffer.from('k8s\0\x0a\xff', 'latin1'));
    assert.equal(garbage.status, 400);
    const status = JSON.parse(garbage.body.toString()) as { kind: string; reason: string; message: string };
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'BadRequest');
    assert.match(status.message, /protobuf/);

    // runtime.Unknown{typeMeta: {v1, Service}, raw: ""}
    const typeMeta = Buffer.concat([Buffer.from([0x0a, 2]), Buffer.from('v1'), Buffer.from([0x12, 7]), Buffer.from('Service')]);
    const service = Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x0a, typeMeta.length]), typeMeta, Buffer.from([0x12, 0])]);
    const unsupported = await post(service);
    assert.equal(unsupported.status, 415);
    assert.equal((JSON.parse(unsupported.body.toString()) as { reason: string }).reason, 'UnsupportedMediaType');
  });
});
