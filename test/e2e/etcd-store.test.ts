/**
 * The etcd store end to end: a real three-member etcd cluster on loopback, one `berth server
 * --etcd-servers` on it, one agent on real Docker, and kubectl 1.32. A Deployment runs, lists page
 * with --chunk-size, a watch from a resourceVersion sees later events; with one etcd member killed
 * (kill -9) writes go on and the restarted member catches up; after compaction a watch from a
 * compacted resourceVersion answers 410 through the HTTP API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { prefixRangeEnd } from '../../src/storage/etcd.js';
import { startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { startEtcdCluster, type EtcdCluster, type EtcdMember } from './etcd-cluster.js';

const ETCD_PREFIX = '/berth-e2e';
/** short, so the 410 case does not wait five minutes; lists and watches below finish well within one interval */
const COMPACT_INTERVAL_S = 3;

interface WatchLine {
  type: string;
  object: { kind?: string; code?: number; metadata?: { name?: string; resourceVersion?: string } };
}

describe('etcd store', () => {
  let etcd: EtcdCluster;
  let cluster: Cluster;

  before(async () => {
    etcd = await startEtcdCluster({ members: 3 });
    cluster = await startCluster({
      serverArgs: ['--etcd-servers', etcd.endpoints.join(','), '--etcd-prefix', ETCD_PREFIX, '--compact-interval-seconds', String(COMPACT_INTERVAL_S), '--compact-keep-revisions', '0'],
    });
  });
  after(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  /** A client talking to one member only, reading its local state (serializable), not the leader's. */
  const memberView = async (member: EtcdMember, prefix: string): Promise<{ revision: number; count: number }> => {
    const client = new Etcd3({ hosts: [member.clientUrl] });
    try {
      const key = Buffer.from(prefix);
      const res = await client.kv.range({ key, range_end: prefixRangeEnd(key), count_only: true, serializable: true });
      return { revision: Number(res.header.revision), count: Number(res.count) };
    } finally {
      client.close();
    }
  };

  const watchLines = async (path: string): Promise<WatchLine[]> => {
    const res = await cluster.client.raw({ method: 'GET', path, timeoutMs: 20_000 });
    assert.equal(res.status, 200, res.body.toString());
    return res.body
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as WatchLine);
  };

  it('runs a Deployment with kubectl; objects live at <prefix>/<group>/<resource>/<namespace>/<name> in etcd', async () => {
    const manifest = cluster.writeFile(
      'web.yaml',
      `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - {name: main, image: ${TEST_IMAGE}, command: ["sleep", "3600"]}
`,
    );
    await cluster.kubectl(['apply', '-f', manifest]);
    await cluster.kubectl(['rollout', 'status', 'deployment/web', '--timeout=180s']);
    const ready = await cluster.kubectl(['get', 'pods', '-l', 'app=web', '-o', 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}']);
    assert.deepEqual(ready.stdout.trim().split('\n'), ['True', 'True']);
    const direct = await memberView(etcd.members[1]!, `${ETCD_PREFIX}/apps/deployments/default/web`);
    assert.equal(direct.count, 1, 'the Deployment is stored under the etcd prefix');
    assert.equal((await memberView(etcd.members[1]!, '/registry/')).count, 0, 'nothing under the default root');
  });

  it('pages lists with --chunk-size and watches from a resourceVersion', async () => {
    for (let i = 0; i < 7; i++) await cluster.kubectl(['create', 'configmap', `page-${i}`, '--from-literal', `i=${i}`]);
    const paged = await cluster.kubectl(['get', 'configmaps', '--chunk-size=2', '-o', 'name', '-v=6']);
    const names = paged.stdout.trim().split('\n').filter((n) => n.startsWith('configmap/page-'));
    assert.deepEqual(names, Array.from({ length: 7 }, (_, i) => `configmap/page-${i}`));
    const continued = paged.stderr.match(/configmaps\?continue=[^&\s]+&limit=2 200/g) ?? [];
    assert.ok(continued.length >= 3, `kubectl fetched later chunks with continue tokens:\n${paged.stderr}`);

    const list = (await cluster.client.request({ method: 'GET', path: '/api/v1/namespaces/default/configmaps' })) as { metadata: { resourceVersion: string } };
    const from = list.metadata.resourceVersion;
    // Through the API rather than kubectl: the watch must start within one compaction interval of `from`.
    await cluster.client.request({ method: 'POST', path: '/api/v1/namespaces/default/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-list' } } });
    await cluster.client.request({ method: 'PATCH', path: '/api/v1/namespaces/default/configmaps/page-0', body: { metadata: { labels: { seen: 'yes' } } }, contentType: 'application/merge-patch+json' });
    const events = await watchLines(`/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${from}&timeoutSeconds=1`);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.object.metadata?.name}`),
      ['ADDED after-list', 'MODIFIED page-0'],
    );
  });

  it('keeps writing with one etcd member of three killed; the restarted member catches up', async () => {
    const victim = etcd.members[0]!;
    etcd.kill(victim);
    for (let i = 0; i < 20; i++) {
      const res = await cluster.client.raw({
        method: 'POST',
        path: '/api/v1/namespaces/default/configmaps',
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `during-outage-${i}` }, data: { i: String(i) } }),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 201, res.body.toString());
    }
    const prefix = `${ETCD_PREFIX}/core/configmaps/default/during-outage-`;
    const survivor = await memberView(etcd.members[1]!, prefix);
    assert.equal(survivor.count, 20);
    await etcd.restart(victim);
    await waitFor(async () => {
      const [restarted, other] = await Promise.all([memberView(victim, prefix), memberView(etcd.members[2]!, prefix)]);
      return restarted.count === 20 && other.count === 20 && restarted.revision >= survivor.revision;
    }, 30_000, 'the restarted member to hold every key written while it was down');
  });

  it('answers 410 Gone to a watch from a compacted resourceVersion', async () => {
    const list = (await cluster.client.request({ method: 'GET', path: '/api/v1/namespaces/default/configmaps' })) as { metadata: { resourceVersion: string } };
    const old = Number(list.metadata.resourceVersion);
    await cluster.kubectl(['create', 'configmap', 'after-old', '--from-literal', 'a=1']);
    // The compactor compacts to the revision it saw one interval earlier: two intervals and a bit.
    const client = new Etcd3({ hosts: etcd.endpoints });
    try {
      await waitFor(async () => {
        try {
          await client.kv.range({ key: Buffer.from(`${ETCD_PREFIX}/`), revision: old, count_only: true });
          return false;
        } catch (err) {
          return /compacted/.test(String(err));
        }
      }, 30_000, `etcd to be compacted past revision ${old}`);
    } finally {
      client.close();
    }
    const res = await cluster.client.raw({ method: 'GET', path: `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${old}&timeoutSeconds=1`, timeoutMs: 20_000 });
    // kube-apiserver answers a watch from a compacted revision with 410, or with a 200 stream whose one event is an ERROR Status of code 410.
    const code = res.status === 200 ? (JSON.parse(res.body.toString().split('\n')[0]!) as WatchLine).object.code : res.status;
    assert.equal(code, 410, res.body.toString());
  });
});
