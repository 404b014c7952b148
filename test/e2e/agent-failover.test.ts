/**
 * An agent moving between control-plane replicas, end to end: a real three-member etcd cluster on
 * loopback, two `berth server` replicas on it (the second started with copies of the first's secret
 * files), one agent on real Docker given `--server A,B`, joining through A once both replicas run,
 * and running a Deployment of two pods. A is
 * killed with SIGKILL: the agent's node Lease renewals reach B within 10 s (the time is printed), its
 * pods keep running with the same containers and restartCount 0, and after the move a deleted pod's
 * replacement becomes Ready as reported through B. Both replicas compact every few seconds, so the
 * agent's watches resumed on B may also meet a 410 and relist: the containers staying the same
 * proves that a relist does not restart pods either.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NODE_LEASE_NAMESPACE } from '../../src/api/lease.js';
import type { Deployment, Lease, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { freeClusterCidr, podContainers, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { startEtcdCluster, type EtcdCluster } from './etcd-cluster.js';
import { freePort } from './ports.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { DEPLOYMENTS, LEASES } from '../../src/api/identities.js';

/** Quick elections and compactions, so the test does not wait out production timings. */
function serverArgs(etcd: EtcdCluster): string[] {
  return [
    '--etcd-servers', etcd.endpoints.join(','),
    '--leader-elect-lease-duration', '4s', '--leader-elect-renew-deadline', '3s', '--leader-elect-retry-period', '1s',
    '--compact-interval-seconds', '2', '--compact-keep-revisions', '0',
  ];
}


function ready(p: Pod): boolean {
  return !p.metadata.deletionTimestamp && !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}

describe('agent failover between control-plane replicas', () => {
  let etcd: EtcdCluster | undefined;
  let cluster: Cluster | undefined;
  let serverB: ServerProcess | undefined;
  const cidr = freeClusterCidr();
  let portB = 0;

  before(async () => {
    etcd = await startEtcdCluster({ members: 3 });
    cluster = await startCluster({ agents: [], clusterCidr: cidr, serverArgs: serverArgs(etcd), agentArgs: ['--heartbeat-interval-ms', '1000'] });
    portB = await freePort();
  });

  /**
   * Started before the agent joins through A: B learns of the credential A issues from the store,
   * which is what lets the agent's requests through B after the move be authenticated.
   */
  const startServerB = async () => {
    // The second replica gets the first one's secrets as files (CA, service-account key, join secret,
    // tokens, encryption config): everything in its data dir but its SQLite leftovers and kubeconfig.
    const dirA = path.join(cluster!.dir, 'server');
    const dirB = path.join(cluster!.dir, 'server-b');
    fs.cpSync(dirA, dirB, { recursive: true, filter: (src) => !/(^|\/)(state\.db.*|kubeconfig\.yaml)$/.test(path.relative(dirA, src)) });
    serverB = await startServerProcess({ dir: dirB, port: portB, logFile: path.join(cluster!.dir, 'logs', 'server-b.log'), args: ['--cluster-cidr', cidr, ...serverArgs(etcd!)], secretsFrom: dirA });
    return serverB.client;
  };

  after(async () => {
    serverB?.client.close();
    await serverB?.stop();
    await cluster?.stop();
    await etcd?.stop();
  });

  it('moves to B within 10 s of A being killed; pods keep their containers; status updates reach B', async () => {
    const c = cluster!;
    const nodeName = `failover-${path.basename(c.dir).slice(-6).toLowerCase().replace(/[^a-z0-9]/g, 'x')}`;
    const b = await startServerB();
    await c.startAgent(nodeName, { server: `${c.url},https://127.0.0.1:${portB}` });
    // Renewals every second: the first one through B dates the move closely.
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'moves', namespace: 'default' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'moves' } },
        template: { metadata: { labels: { app: 'moves' } }, spec: { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
      },
    } as Deployment;
    await c.client.create(DEPLOYMENTS, deployment, { namespace: 'default' });
    const podsOf = async () => (await b.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=moves' })).items;
    await waitFor(async () => (await podsOf()).filter(ready).length === 2, 90_000, 'two Ready pods');
    const before = (await podsOf()).filter(ready);
    const containersBefore = new Map<string, string[]>();
    for (const p of before) containersBefore.set(p.metadata.uid!, (await podContainers(p.metadata.uid!)).map((x) => x.id).sort());

    // The agent is on A (first in its list): its renewals are what A writes. Kill A outright.
    const killedAt = Date.now();
    process.kill(c.serverPid(), 'SIGKILL');
    let movedAfterMs = -1;
    await waitFor(async () => {
      const lease = await b.get<Lease>(LEASES, { namespace: NODE_LEASE_NAMESPACE, name: nodeName }).catch(() => undefined);
      const renewed = lease?.spec?.renewTime ? Date.parse(lease.spec.renewTime) : 0;
      if (renewed <= killedAt) return false;
      movedAfterMs = renewed - killedAt;
      return true;
    }, 15_000, 'a node Lease renewal written through B after A was killed');
    console.log(`# agent renewed its node Lease through server B ${movedAfterMs} ms after server A was killed`);
    assert.ok(movedAfterMs < 10_000, `moved in ${movedAfterMs} ms; must be under 10 s`);

    // Nothing restarted: same pods, same containers, restartCount 0, still Ready.
    await new Promise((r) => setTimeout(r, 3_000));
    const afterMove = await podsOf();
    assert.deepEqual(afterMove.map((p) => p.metadata.uid).sort(), before.map((p) => p.metadata.uid).sort());
    for (const p of afterMove) {
      assert.ok(ready(p), `${p.metadata.name} still Ready`);
      assert.deepEqual((await podContainers(p.metadata.uid!)).map((x) => x.id).sort(), containersBefore.get(p.metadata.uid!), `${p.metadata.name} keeps its containers`);
      assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 0);
    }

    // After the move: B leads the controllers; a deleted pod is replaced and its Ready status comes through B.
    const victim = before[0]!;
    const survivor = before[1]!;
    await b.delete(CORE.pods, { namespace: 'default', name: victim.metadata.name! });
    await waitFor(async () => {
      const pods = (await podsOf()).filter(ready);
      return pods.length === 2 && !pods.some((p) => p.metadata.uid === victim.metadata.uid);
    }, 60_000, 'a Ready replacement reported through B');
    const survivorNow = (await podsOf()).find((p) => p.metadata.uid === survivor.metadata.uid);
    assert.ok(survivorNow && ready(survivorNow), 'the other pod is untouched');
    assert.deepEqual((await podContainers(survivor.metadata.uid!)).map((x) => x.id).sort(), containersBefore.get(survivor.metadata.uid!));
    assert.equal(survivorNow.status?.containerStatuses?.[0]?.restartCount, 0);
  });
});
