/**
 * Node credentials on a real two-node cluster: node A's credential (from its agent's credentials.json)
 * reaches only what A's own pods need, as Kubernetes' Node authorizer and NodeRestriction admission
 * allow. Every attempt on node B's things, or on objects no pod of A references, must be 403 and leave
 * the target untouched; what the agent itself needs must keep working (its pods run, its volumes follow
 * updates).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE, type ResourceRef } from '../../src/client/client.js';
import { HttpClient, type RawResponse } from '../../src/client/http-client.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { BERTH_BIN, docker, podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

const execFileAsync = promisify(execFile);

const SECRETS: ResourceRef = { plural: 'secrets' };
const CONFIGMAPS: ResourceRef = { plural: 'configmaps' };
const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

describe('node credentials reach only their own node', () => {
  let c: Cluster;
  let nodeA: string;
  let nodeB: string;
  /** a client holding node A's credential */
  let asA: HttpClient;
  let podB: Pod;

  /** A client of its own credential-less, so the Authorization header sent is the one given (a join token). */
  const withoutCredential = () => new HttpClient({ server: c.url, ca: fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8') });
  const call = (method: string, p: string, body?: unknown, contentType = 'application/json'): Promise<RawResponse> =>
    asA.raw({ method, path: p, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { 'content-type': contentType } });
  const expectStatus = async (res: Promise<RawResponse>, code: number, what: string) => {
    const r = await res;
    assert.equal(r.status, code, `${what}: expected ${code}, got ${r.status} ${r.body.toString().slice(0, 300)}`);
    return r;
  };

  before(async () => {
    c = await startCluster({ agents: ['a', 'b'] });
    [nodeA, nodeB] = c.nodeNames as [string, string];
    const creds = JSON.parse(fs.readFileSync(path.join(c.dir, `agent-${nodeA}`, 'credentials.json'), 'utf8')) as { token: string; ca: string };
    asA = new HttpClient({ server: c.url, token: creds.token, ca: creds.ca });

    const secret = (namespace: string, name: string) =>
      c.client.create(SECRETS, { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { key: `value-of-${name}` } }, { namespace });
    await secret('default', 'used-by-a');
    await secret('default', 'used-by-b');
    await secret('default', 'unused');
    await secret('kube-system', 'system-secret');
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-a' }, data: { greeting: 'one' } }, { namespace: 'default' });
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-b' }, data: { greeting: 'b' } }, { namespace: 'default' });

    const pod = (name: string, nodeName: string, secretName: string, configMap: string) =>
      podManifest(name, {
        nodeName,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], volumeMounts: [{ name: 's', mountPath: '/s' }, { name: 'cm', mountPath: '/cm' }] }],
        volumes: [{ name: 's', secret: { secretName } }, { name: 'cm', configMap: { name: configMap } }],
      } as Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>);
    await c.client.create(CORE.pods, pod('pod-a', nodeA, 'used-by-a', 'cm-a'), { namespace: 'default' });
    await c.client.create(CORE.pods, pod('pod-b', nodeB, 'used-by-b', 'cm-b'), { namespace: 'default' });
    await waitForPod(c.client, 'default', 'pod-a', running, 60_000);
    podB = await waitForPod(c.client, 'default', 'pod-b', running, 60_000);
  });
  after(async () => {
    asA?.close();
    // Pods go first: a stopped agent leaves its pods' in-memory secret volumes mounted.
    for (const name of ['pod-a', 'pod-b', 'unbound', 'many']) await c?.client.delete(CORE.pods, { namespace: 'default', name, gracePeriodSeconds: 0 }).catch(() => undefined);
    if (c) await waitFor(async () => ((await c.client.list<Pod>(CORE.pods, { namespace: 'default' })).items.length === 0), 60_000, 'the pods to be gone').catch(() => undefined);
    await c?.stop();
  });

  it('reads a Secret and ConfigMap its own pod references, by get and by a single-object list/watch', async () => {
    await expectStatus(call('GET', '/api/v1/namespaces/default/secrets/used-by-a'), 200, 'get a secret pod-a mounts');
    await expectStatus(call('GET', '/api/v1/namespaces/default/configmaps/cm-a'), 200, 'get a configmap pod-a mounts');
    const list = await expectStatus(call('GET', '/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dused-by-a'), 200, 'list one referenced secret by name');
    assert.deepEqual((JSON.parse(list.body.toString()) as { items: KubeObject[] }).items.map((s) => s.metadata.name), ['used-by-a']);
  });

  it('cannot read Secrets or ConfigMaps no pod of its own references', async () => {
    await expectStatus(call('GET', '/api/v1/namespaces/default/secrets/used-by-b'), 403, "get node B's pod's secret");
    await expectStatus(call('GET', '/api/v1/namespaces/default/secrets/unused'), 403, 'get an unreferenced secret');
    await expectStatus(call('GET', '/api/v1/namespaces/kube-system/secrets/system-secret'), 403, 'get a kube-system secret');
    await expectStatus(call('GET', '/api/v1/namespaces/default/configmaps/cm-b'), 403, "get node B's pod's configmap");
    await expectStatus(call('GET', '/api/v1/secrets'), 403, 'list every secret');
    await expectStatus(call('GET', '/api/v1/namespaces/kube-system/secrets'), 403, 'list kube-system secrets');
    await expectStatus(call('GET', '/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Dused-by-b'), 403, "list node B's secret by name");
    await expectStatus(call('GET', '/api/v1/namespaces/default/secrets?watch=true&fieldSelector=metadata.name%3Dunused'), 403, 'watch an unreferenced secret');
    await expectStatus(call('GET', '/api/v1/namespaces/default/configmaps'), 403, 'list configmaps');
  });

  it('gets no claim its pods do not use; asking for a claim that does not exist ends in 404', async () => {
    await c.client.create({ plural: 'persistentvolumeclaims' }, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'someone-elses' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }, { namespace: 'default' });
    await expectStatus(call('GET', '/api/v1/namespaces/default/persistentvolumeclaims/someone-elses'), 403, 'get an unreferenced claim');
    await expectStatus(call('GET', '/api/v1/namespaces/default/persistentvolumeclaims'), 403, 'list claims');
    await expectStatus(call('GET', '/api/v1/namespaces/default/persistentvolumeclaims/no-such-claim'), 404, 'get a claim that does not exist');
  });

  it('cannot delete node B, nor patch its status or its Lease', async () => {
    await expectStatus(call('DELETE', `/api/v1/nodes/${nodeB}`), 403, 'delete node B');
    await expectStatus(call('DELETE', `/api/v1/nodes/${nodeA}`), 403, 'delete its own Node');
    await expectStatus(
      call('PATCH', `/api/v1/nodes/${nodeB}/status`, { status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Stolen', message: 'x' }] } }, 'application/merge-patch+json'),
      403,
      "patch node B's status",
    );
    await expectStatus(call('PATCH', `/api/v1/nodes/${nodeB}`, { metadata: { labels: { stolen: 'yes' } } }, 'application/merge-patch+json'), 403, 'patch node B');
    await expectStatus(
      call('PATCH', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeB}`, { spec: { renewTime: '2000-01-01T00:00:00.000000Z' } }, 'application/merge-patch+json'),
      403,
      "patch node B's Lease",
    );
    await expectStatus(
      call('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'not-a-node' }, spec: {} }),
      403,
      "create a Lease under another node's name",
    );
    const b = await c.client.get<KubeObject>(CORE.nodes, { name: nodeB });
    assert.equal(b.metadata.labels?.stolen, undefined);
    assert.ok(JSON.stringify(b).includes('"type":"Ready","status":"True"'), 'node B is still Ready');
  });

  it("cannot mark node B's pod Failed, delete it, or bind pods", async () => {
    const failed = { ...podB, status: { ...podB.status, phase: 'Failed', reason: 'Stolen' } };
    await expectStatus(call('PUT', '/api/v1/namespaces/default/pods/pod-b/status', failed), 403, "PUT node B's pod status");
    await expectStatus(call('PATCH', '/api/v1/namespaces/default/pods/pod-b/status', { status: { phase: 'Failed' } }, 'application/merge-patch+json'), 403, "patch node B's pod status");
    await expectStatus(call('DELETE', '/api/v1/namespaces/default/pods/pod-b'), 403, "delete node B's pod");
    await expectStatus(call('POST', '/api/v1/namespaces/default/pods/pod-b/eviction', { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'pod-b', namespace: 'default' } }), 403, "evict node B's pod");
    await expectStatus(call('GET', '/api/v1/namespaces/default/pods/pod-b'), 403, "get node B's pod");
    await expectStatus(call('GET', '/api/v1/pods'), 403, 'list every pod');
    await expectStatus(call('GET', `/api/v1/pods?fieldSelector=spec.nodeName%3D${nodeB}`), 403, "list node B's pods");
    const still = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'pod-b' });
    assert.equal(still.status?.phase, 'Running');
    assert.equal(still.metadata.deletionTimestamp, undefined);
    const ids = await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${podB.metadata.uid}`, '--filter', 'label=berth.dev/container-name=main']);
    assert.ok(ids, "node B's container still runs");

    await c.client.create(CORE.pods, podManifest('unbound', { containers: [{ name: 'main', image: TEST_IMAGE }], schedulerName: 'nobody' } as Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>), { namespace: 'default' });
    await expectStatus(call('POST', '/api/v1/namespaces/default/pods/unbound/binding', { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'unbound' }, target: { kind: 'Node', name: nodeA } }), 403, 'bind a pod');
  });

  it('cannot create pods, least of all a privileged one in kube-system pinned to node B', async () => {
    const hostile = podManifest('hostile', {
      nodeName: nodeB,
      hostPID: true,
      containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], volumeMounts: [{ name: 'sock', mountPath: '/var/run/docker.sock' }, { name: 'etc', mountPath: '/host-etc' }] }],
      volumes: [{ name: 'sock', hostPath: { path: '/var/run/docker.sock' } }, { name: 'etc', hostPath: { path: '/etc' } }],
    } as Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>);
    await expectStatus(call('POST', '/api/v1/namespaces/kube-system/pods', hostile), 403, 'create a hostPID/hostPath pod in kube-system on node B');
    await expectStatus(call('POST', '/api/v1/namespaces/default/pods', podManifest('plain', { nodeName: nodeA, containers: [{ name: 'main', image: TEST_IMAGE }] })), 403, 'create a plain pod on itself');
    const r = await c.client.raw({ method: 'GET', path: '/api/v1/namespaces/kube-system/pods/hostile' });
    assert.equal(r.status, 404);
  });

  it('cannot give its own Node restricted labels or change its taints, but may set ordinary ones', async () => {
    await expectStatus(call('PATCH', `/api/v1/nodes/${nodeA}`, { metadata: { labels: { 'node-restriction.kubernetes.io/dedicated': 'secure' } } }, 'application/merge-patch+json'), 403, 'set a node-restriction label');
    await expectStatus(call('PATCH', `/api/v1/nodes/${nodeA}`, { metadata: { labels: { 'node-role.kubernetes.io/control-plane': '' } } }, 'application/merge-patch+json'), 403, 'set a kubernetes.io label outside the kubelet set');
    await expectStatus(call('PATCH', `/api/v1/nodes/${nodeA}`, { spec: { taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }] } }, 'application/merge-patch+json'), 403, 'change its taints');
    await expectStatus(call('PATCH', `/api/v1/nodes/${nodeA}`, { metadata: { labels: { 'example.com/rack': 'r1', 'node.kubernetes.io/instance-type': 'big' } } }, 'application/merge-patch+json'), 200, 'set ordinary labels');
    await expectStatus(call('GET', `/api/v1/nodes/${nodeA}`), 200, 'read its own Node');
  });

  it("root on node A, with A's files and the join token, cannot join as node B; a new name still can", async () => {
    const joinSecret = fs.readFileSync(path.join(c.dir, 'server', 'node-token'), 'utf8').trim().split('::')[2]!;
    const passwordOfA = fs.readFileSync(path.join(c.dir, `agent-${nodeA}`, 'node-password'), 'utf8').trim();
    assert.equal(fs.statSync(path.join(c.dir, `agent-${nodeA}`, 'node-password')).mode & 0o777, 0o600);
    const joinAs = (nodeName: string, nodePassword?: string) =>
      withoutCredential().raw({ method: 'POST', path: '/berth/v1/join', body: JSON.stringify({ nodeName, ...(nodePassword ? { nodePassword } : {}) }), headers: { authorization: `Bearer ${joinSecret}`, 'content-type': 'application/json' } });
    for (const [what, password] of [["A's node password", passwordOfA], ['no node password', undefined], ['a made-up one', 'x'.repeat(43)]] as const) {
      const r = await expectStatus(joinAs(nodeB, password), 403, `join as node B with ${what}`);
      assert.match(r.body.toString(), new RegExp(`node \\\\"${nodeB}\\\\" is already joined with another node password.*kubectl delete node ${nodeB}`));
    }
    // Node B's credential was not replaced by the refused joins.
    const credsB = JSON.parse(fs.readFileSync(path.join(c.dir, `agent-${nodeB}`, 'credentials.json'), 'utf8')) as { token: string; ca: string };
    const asB = new HttpClient({ server: c.url, token: credsB.token, ca: credsB.ca });
    assert.equal((await asB.raw({ method: 'GET', path: `/api/v1/nodes/${nodeB}` })).status, 200);
    asB.close();
    // A name no Node has is free, with any password.
    const fresh = await expectStatus(joinAs('brand-new-node', 'y'.repeat(43)), 200, 'a new node joins');
    assert.match(fresh.body.toString(), /"token":"[A-Za-z0-9_-]+"/);
  });

  it('join tokens from `berth token`: listed without their secrets; a live one admits a new node, an expired or deleted one is refused', async () => {
    const berthToken = async (...args: string[]) => (await execFileAsync(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'token', ...args, '--kubeconfig', c.kubeconfig])).stdout;
    const caHashOfCluster = fs.readFileSync(path.join(c.dir, 'server', 'node-token'), 'utf8').trim().split('::')[1];
    const parse = (line: string) => {
      const [prefix, hash, token] = line.trim().split('::');
      assert.equal(prefix, 'berth1');
      assert.equal(hash, caHashOfCluster, 'the token pins the cluster CA');
      return { token: token!, id: token!.split('.')[0]! };
    };
    const joinWith = (token: string, nodeName: string) =>
      withoutCredential().raw({ method: 'POST', path: '/berth/v1/join', body: JSON.stringify({ nodeName, nodePassword: 'z'.repeat(43) }), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });

    const revoked = parse(await berthToken('create', '--description', 'to-revoke'));
    const lasting = parse(await berthToken('create', '--ttl', '0', '--description', 'lasting'));
    const TTL_MS = 5_000;
    const shortLived = parse(await berthToken('create', '--ttl', `${TTL_MS / 1000}s`, '--description', 'short'));
    const createdAt = Date.now();
    await expectStatus(joinWith(shortLived.token, 'token-node-1'), 200, 'join with a live token');
    const list = await berthToken('list');
    assert.match(list, /^ID\s+TTL\s+EXPIRES\s+DESCRIPTION\n/);
    assert.match(list, new RegExp(`^${revoked.id}\\s+(23h|24h)\\S*\\s+\\S+Z\\s+to-revoke$`, 'm'));
    assert.match(list, new RegExp(`^${lasting.id}\\s+<forever>\\s+<never>\\s+lasting$`, 'm'));
    for (const t of [revoked, lasting, shortLived]) assert.ok(!list.includes(t.token.split('.')[1]!), 'no secret is listed');

    await new Promise((r) => setTimeout(r, Math.max(0, createdAt + TTL_MS + 500 - Date.now())));
    const expired = await expectStatus(joinWith(shortLived.token, 'token-node-2'), 401, 'join with an expired token');
    assert.match(expired.body.toString(), /invalid join token: unknown, deleted or expired/);
    await berthToken('delete', revoked.id);
    await expectStatus(joinWith(revoked.token, 'token-node-3'), 401, 'join with a deleted token');
    assert.doesNotMatch(await berthToken('list'), new RegExp(`^${revoked.id}`, 'm'));
    await expectStatus(joinWith(lasting.token, 'token-node-4'), 200, 'join with a token that never expires');
  });

  it("may not move its own pod range, nor may the admin: 422 naming spec.podCIDRs, and the range stays", async () => {
    const before = (await c.client.get<KubeObject & { spec?: { podCIDR?: string } }>(CORE.nodes, { name: nodeA })).spec?.podCIDR;
    assert.ok(before, 'node IPAM gave node A a pod range');
    // The service range: routed to this node, it would take the cluster's Service traffic.
    const move = { spec: { podCIDR: '10.96.0.0/24', podCIDRs: ['10.96.0.0/24'] } };
    for (const [who, send] of [['node A', call], ['the admin', (method: string, p: string, body?: unknown, contentType?: string) => c.client.raw({ method, path: p, body: JSON.stringify(body), headers: { 'content-type': contentType ?? 'application/json' } })]] as const) {
      const r = await expectStatus(send('PATCH', `/api/v1/nodes/${nodeA}`, move, 'application/merge-patch+json'), 422, `${who} moves the pod range`);
      assert.match(r.body.toString(), /spec\.podCIDRs: Forbidden: node updates may not change podCIDR except from \\"\\" to valid/, who);
    }
    assert.equal((await c.client.get<KubeObject & { spec?: { podCIDR?: string } }>(CORE.nodes, { name: nodeA })).spec?.podCIDR, before);
  });

  it('still does what an agent needs: its pod status, its Lease, events, and live secret/configmap volume updates', async () => {
    await expectStatus(call('GET', '/api/v1/namespaces/default/pods/pod-a'), 200, 'get its own pod');
    await expectStatus(call('GET', `/api/v1/pods?fieldSelector=spec.nodeName%3D${nodeA}`), 200, 'list its own pods');
    await expectStatus(call('GET', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeA}`), 200, 'get its own Lease');
    await expectStatus(
      call('POST', '/api/v1/namespaces/default/events', {
        apiVersion: 'v1', kind: 'Event', metadata: { name: `pod-a.${Date.now()}` }, involvedObject: { kind: 'Pod', namespace: 'default', name: 'pod-a' }, reason: 'Test', message: 'm', type: 'Normal', source: { component: 'kubelet', host: nodeA },
      }),
      201,
      'create an event',
    );
    // A volume follows updates: the agent now watches exactly the objects its pods reference.
    await c.client.patch(CONFIGMAPS, { namespace: 'default', name: 'cm-a', type: 'merge', patch: { data: { greeting: 'two' } } });
    const podA = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'pod-a' });
    const id = (await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${podA.metadata.uid}`, '--filter', 'label=berth.dev/container-name=main'])).split('\n')[0]!;
    await waitFor(async () => (await docker(['exec', id, 'cat', '/cm/greeting'])) === 'two', 60_000, 'the configmap volume to show the update');
    assert.equal(await docker(['exec', id, 'cat', '/s/key']), 'value-of-used-by-a');
  });

  it('starts a pod that uses 120 ConfigMaps: the agent watches each one on its own, without starving its other requests', async () => {
    const names = Array.from({ length: 120 }, (_, i) => `many-${i}`);
    for (const name of names) await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { [`K_${name.replace(/-/g, '_')}`]: name } }, { namespace: 'default' });
    await c.client.create(
      CORE.pods,
      podManifest('many', { nodeName: nodeA, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'], envFrom: names.map((name) => ({ configMapRef: { name } })) }] } as Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>),
      { namespace: 'default' },
    );
    const pod = await waitForPod(c.client, 'default', 'many', running, 60_000);
    const id = (await docker(['ps', '-q', '--filter', `label=berth.dev/pod-uid=${pod.metadata.uid}`, '--filter', 'label=berth.dev/container-name=main'])).split('\n')[0]!;
    assert.equal(await docker(['exec', id, 'sh', '-c', 'echo $K_many_119']), 'many-119');
    await c.client.delete(CORE.pods, { namespace: 'default', name: 'many', gracePeriodSeconds: 0 });
  });

  it('loses access to a pod-referenced secret once that pod is gone', async () => {
    await c.client.delete(CORE.pods, { namespace: 'default', name: 'pod-a', gracePeriodSeconds: 0 });
    await waitFor(async () => (await c.client.raw({ method: 'GET', path: '/api/v1/namespaces/default/pods/pod-a' })).status === 404, 60_000, 'pod-a to be gone');
    await waitFor(async () => (await call('GET', '/api/v1/namespaces/default/secrets/used-by-a')).status === 403, 5_000, "pod-a's secret to become unreadable");
  });
});
