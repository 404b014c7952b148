/**
 * ResourceQuota and LimitRange end to end, on one real server (no agent: a quota counts pods
 * whether or not they run, so the pods here stay Pending), with kubectl: the quota controller fills
 * status, admission refuses the pod past `pods: 2` with Kubernetes' message, a Deployment of 3 gets
 * 2 pods and a FailedCreate event, status.used follows deletes within seconds, a compute quota
 * refuses a pod that states no requests, a LimitRange gives a bare container its defaults and
 * refuses one above max, and `kubectl describe quota|limits` (each kubectl under test) show them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LIMITRANGES, REPLICASETS, RESOURCEQUOTAS } from '../../src/api/identities.js';
import type { Event, LimitRange, Pod, ReplicaSet, ResourceQuota } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { kubectlsUnderTest, startCluster, waitFor, type Cluster } from './harness.js';

/** Pods no node can take: they are counted, never run, and go at once when deleted. */
const NOWHERE = '{"berth.test/nowhere": "true"}';

const pod = (name: string, resources = '') => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  nodeSelector: ${NOWHERE}
  containers:
  - name: main
    image: berth/busybox:test
${resources}`;

describe('ResourceQuota and LimitRange', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ agents: [] });
    await c.kubectl(['create', 'namespace', 'qa']);
    await c.kubectl(['create', 'namespace', 'qb']);
    await c.kubectl(['create', 'namespace', 'qc']);
  });
  after(async () => {
    await c?.stop();
  });

  const quota = (ns: string, name: string) => c.client.get<ResourceQuota>(RESOURCEQUOTAS, { namespace: ns, name });
  const usedPods = async (ns: string, name: string) => (await quota(ns, name)).status?.used?.pods;
  const apply = (ns: string, file: string, text: string) => c.kubectl(['apply', '-n', ns, '-f', c.writeFile(file, text)], { allowFail: true });

  it('discovery serves resourcequotas (quota) and limitranges (limits) in v1', async () => {
    const out = (await c.kubectl(['api-resources'])).stdout;
    assert.match(out, /^limitranges\s+limits\s+v1\s+true\s+LimitRange/m);
    assert.match(out, /^resourcequotas\s+quota\s+v1\s+true\s+ResourceQuota/m);
  });

  it('pods: 2 — the controller counts, the third pod is refused with upstream\'s message, deletes give back within seconds', async () => {
    await c.kubectl(['create', 'quota', 'pods', '-n', 'qa', '--hard=pods=2']);
    await waitFor(async () => (await usedPods('qa', 'pods')) === '0', 10_000, 'the controller to count the namespace');
    assert.match((await c.kubectl(['get', 'quota', '-n', 'qa'])).stdout, /^NAME\s+AGE\s+REQUEST\s+LIMIT\s*\npods\s+\S+\s+pods: 0\/2\s*$/m);
    for (const name of ['p1', 'p2']) assert.equal((await apply('qa', `${name}.yaml`, pod(name))).code, 0);
    assert.equal(await usedPods('qa', 'pods'), '2', 'admission charged both creates');
    const third = await apply('qa', 'p3.yaml', pod('p3'));
    assert.notEqual(third.code, 0);
    assert.match(third.stderr, /Error from server \(Forbidden\): error when creating ".*p3\.yaml": pods "p3" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2/);

    const deleted = Date.now();
    await c.kubectl(['delete', 'pod', '-n', 'qa', 'p1', 'p2']);
    await waitFor(async () => (await usedPods('qa', 'pods')) === '0', 5_000, 'status.used to follow the deletes');
    assert.ok(Date.now() - deleted < 5_000);
  });

  it('a Deployment of 3 under pods: 2 gets 2 pods, a FailedCreate event and a ReplicaFailure condition', async () => {
    await c.kubectl(['create', 'deployment', 'web', '-n', 'qa', '--image=berth/busybox:test', '--replicas=3']);
    const events = async () => (await c.client.list<Event>(CORE.events, { namespace: 'qa' })).items.filter((e) => e.reason === 'FailedCreate' && e.involvedObject.kind === 'ReplicaSet');
    await waitFor(async () => (await events()).length > 0, 15_000, 'a FailedCreate event');
    assert.match((await events())[0]!.message ?? '', /^Error creating: pods "web-[a-z0-9]+-[a-z0-9]+" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2$/);
    const pods = (await c.client.list<Pod>(CORE.pods, { namespace: 'qa' })).items.filter((p) => !p.metadata.deletionTimestamp);
    assert.equal(pods.length, 2);
    assert.equal(await usedPods('qa', 'pods'), '2');
    // The ReplicaSet says so in its status too, as upstream: ReplicaFailure, reason FailedCreate.
    await waitFor(async () => {
      const rs = (await c.client.list<ReplicaSet>(REPLICASETS, { namespace: 'qa' })).items[0];
      const failure = rs?.status?.conditions?.find((x) => x.type === 'ReplicaFailure');
      return failure?.status === 'True' && failure.reason === 'FailedCreate' && /exceeded quota: pods/.test(failure.message ?? '');
    }, 15_000, 'the ReplicaSet\'s ReplicaFailure condition');
  });

  it('a compute quota refuses a pod that states no requests or limits', async () => {
    await c.kubectl(['create', 'quota', 'compute', '-n', 'qb', '--hard=requests.cpu=1,limits.memory=1Gi']);
    await waitFor(async () => (await quota('qb', 'compute')).status?.used?.['requests.cpu'] === '0', 10_000, 'the compute quota counted');
    const bare = await apply('qb', 'bare.yaml', pod('bare'));
    assert.match(bare.stderr, /pods "bare" is forbidden: failed quota: compute: must specify limits\.memory for: main; requests\.cpu for: main/);
    const stated = await apply('qb', 'stated.yaml', pod('stated', '    resources: {requests: {cpu: 250m}, limits: {memory: 256Mi}}\n'));
    assert.equal(stated.code, 0, stated.stderr);
    assert.deepEqual((await quota('qb', 'compute')).status?.used, { 'limits.memory': '256Mi', 'requests.cpu': '250m' });
  });

  it('a LimitRange gives a bare container its defaults and refuses one above max with 403', async () => {
    await apply('qc', 'limits.yaml', `apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    max: {cpu: "1"}
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
`);
    const lr = await c.client.get<LimitRange>(LIMITRANGES, { namespace: 'qc', name: 'limits' });
    assert.deepEqual(lr.spec?.limits[0]?.defaultRequest, { cpu: '100m', memory: '128Mi' }, 'the default request of memory defaults to its default limit');
    assert.equal((await apply('qc', 'plain.yaml', pod('plain'))).code, 0);
    const plain = await c.client.get<Pod>(CORE.pods, { namespace: 'qc', name: 'plain' });
    assert.deepEqual(plain.spec.containers[0]!.resources, { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '100m', memory: '128Mi' } });
    assert.equal(plain.metadata.annotations?.['kubernetes.io/limit-ranger'], 'LimitRanger plugin set: cpu, memory request for container main; cpu, memory limit for container main');

    const res = await c.client.raw({
      method: 'POST',
      path: '/api/v1/namespaces/qc/pods',
      body: Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'big' }, spec: { containers: [{ name: 'main', image: 'berth/busybox:test', resources: { limits: { cpu: '2' } } }] } })),
      headers: { 'content-type': 'application/json', accept: 'application/json' },
    });
    assert.equal(res.status, 403, res.body.toString());
    const status = JSON.parse(res.body.toString()) as { reason: string; message: string; details: { name: string; kind: string } };
    assert.equal(status.reason, 'Forbidden');
    assert.equal(status.message, 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2');
    assert.deepEqual(status.details, { name: 'big', kind: 'pods' });
  });

  const { present, missingDebianKubectl } = kubectlsUnderTest();
  for (const k of present) {
    it(`kubectl ${k.version} describes the quota and the limit range as upstream`, async () => {
      const kc = c.forKubectl(k);
      const q = (await kc.kubectl(['describe', 'quota', 'pods', '-n', 'qa'])).stdout;
      assert.match(q, /^Name:\s+pods$/m);
      assert.match(q, /^Namespace:\s+qa$/m);
      assert.match(q, /^Resource\s+Used\s+Hard\n-+\s+-+\s+-+\npods\s+2\s+2$/m);
      const compute = (await kc.kubectl(['describe', 'quota', 'compute', '-n', 'qb'])).stdout;
      assert.match(compute, /^limits\.memory\s+256Mi\s+1Gi\nrequests\.cpu\s+250m\s+1$/m);
      const l = (await kc.kubectl(['describe', 'limits', 'limits', '-n', 'qc'])).stdout;
      assert.match(l, /^Type\s+Resource\s+Min\s+Max\s+Default Request\s+Default Limit\s+Max Limit\/Request Ratio$/m);
      assert.match(l, /^Container\s+cpu\s+-\s+1\s+100m\s+500m\s+-$/m);
      assert.match(l, /^Container\s+memory\s+-\s+-\s+128Mi\s+128Mi\s+-$/m);
      // describe namespace lists both, read from the same objects
      const qa = (await kc.kubectl(['describe', 'namespace', 'qa'])).stdout;
      assert.match(qa, /Resource Quotas\n\s+Name:\s+pods\n\s+Resource\s+Used\s+Hard\n\s+-+\s+-+\s+-+\n\s+pods\s+2\s+2\n/);
      const qc = (await kc.kubectl(['describe', 'namespace', 'qc'])).stdout;
      // kubectl prints a range's resources in Go map order, so the cpu and memory rows come either way.
      assert.match(qc, /Resource Limits\n\s+Type\s+Resource\s+Min\s+Max\s+Default Request\s+Default Limit\s+Max Limit\/Request Ratio\n\s+-+.*\n(\s+Container\s+.*\n)*\s+Container\s+cpu\s+-\s+1\s+100m\s+500m\s+-\n/);
      assert.match(qc, /Resource Limits\n\s+Type.*\n\s+-+.*\n(\s+Container\s+.*\n)*\s+Container\s+memory\s+-\s+-\s+128Mi\s+128Mi\s+-\n/);
    });
  }
  if (missingDebianKubectl) it('describes with kubectl 1.20', { skip: missingDebianKubectl }, () => undefined);
});
