/**
 * `berth server --leader-elect` on one SQLite server, with a real agent on Docker: the server takes
 * the kube-system/berth-controller-manager Lease as `<hostname>_<uuid>` and its controllers run (a
 * Deployment's pods become Ready); stopped gracefully it releases the Lease (holderIdentity empty);
 * restarted it leads again within seconds — no lease duration to wait out — and its controllers
 * leave the Deployment's pods alone (same pods, same containers) while still acting on changes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Deployment, KubeObject, Lease, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { BERTH_BIN, podContainers, sleep, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { DEPLOYMENTS, LEASES } from '../../src/api/identities.js';

const LOCK = { namespace: 'kube-system', name: 'berth-controller-manager' };
const LOCK_KEY = '/registry/coordination.k8s.io/leases/kube-system/berth-controller-manager';

async function lease(c: Cluster): Promise<Lease | undefined> {
  return c.client.get<Lease>(LEASES, LOCK).catch(() => undefined);
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

async function readyPods(c: Cluster, app: string): Promise<Pod[]> {
  const pods = await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: `app=${app}` });
  return pods.items.filter((p) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
}

describe('leader election on a single server', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({ serverArgs: ['--leader-elect'] });
  });
  after(async () => {
    await c?.stop();
  });

  it('holds the Lease, runs controllers, releases on a graceful stop and leads again at once after a restart, pods untouched', async () => {
    await waitFor(async () => (await lease(c))?.spec?.holderIdentity !== undefined, 10_000, 'the controller-manager Lease');
    const first = (await lease(c))!;
    const hostname = os.hostname();
    assert.match(first.spec!.holderIdentity!, new RegExp(`^${hostname.replace(/[.]/g, '\\.')}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`));
    assert.equal(first.spec!.leaseDurationSeconds, 15);
    const events = await c.client.list<KubeObject & { reason?: string; message?: string }>(CORE.events, { namespace: 'kube-system' });
    assert.ok(events.items.some((e) => e.reason === 'LeaderElection' && e.message === `${first.spec!.holderIdentity} became leader`), 'LeaderElection event');

    // Controllers (deployment, replicaset, scheduler) run on the leader: the pods come up on real Docker.
    const deployment: Deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'led', namespace: 'default' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'led' } },
        template: { metadata: { labels: { app: 'led' } }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
      },
    } as Deployment;
    await c.client.create(DEPLOYMENTS, deployment, { namespace: 'default' });
    await waitFor(async () => (await readyPods(c, 'led')).length === 2, 60_000, 'two Ready pods');
    const podsBefore = await readyPods(c, 'led');
    const containersBefore = new Map<string, string[]>();
    for (const p of podsBefore) containersBefore.set(p.metadata.uid!, (await podContainers(p.metadata.uid!)).map((x) => x.id).sort());

    // Graceful stop: the Lease is released in the store (read with the server down).
    const pid = c.serverPid();
    process.kill(pid, 'SIGTERM');
    await waitFor(() => processGone(pid), 20_000, 'server exit');
    const store = openSqliteBackend({ file: path.join(c.dir, 'server', 'state.db') });
    const stored = await store.get(LOCK_KEY);
    store.close();
    assert.ok(stored, 'the Lease is in the store');
    const released = JSON.parse(stored.value) as Lease;
    assert.equal(released.spec?.holderIdentity, '');
    assert.equal(released.spec?.leaseDurationSeconds, 1);
    assert.equal(released.spec?.leaseTransitions, first.spec!.leaseTransitions);

    // Restart: leads again at once (a fresh identity; a crash would make it wait out 15 s instead).
    const restartStarted = Date.now();
    await c.restartServer();
    await waitFor(async () => {
      const holder = (await lease(c))?.spec?.holderIdentity;
      return !!holder && holder !== first.spec!.holderIdentity;
    }, 5_000, 'leading again within seconds of the restart');
    const leadAfterMs = Date.now() - restartStarted;
    const second = (await lease(c))!;
    assert.equal(second.spec?.leaseTransitions, (first.spec!.leaseTransitions ?? 0) + 1);
    console.log(`# restarted server led again ${leadAfterMs} ms after the restart began`);

    // The new term's controllers adopt what is there: no pod replaced, no container restarted.
    await sleep(3_000);
    const podsAfter = await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=led' });
    assert.deepEqual(podsAfter.items.map((p) => p.metadata.uid).sort(), podsBefore.map((p) => p.metadata.uid).sort());
    for (const p of podsAfter.items) assert.deepEqual((await podContainers(p.metadata.uid!)).map((x) => x.id).sort(), containersBefore.get(p.metadata.uid!));

    // …and they act: scaling up adds a Ready pod.
    await c.client.patch(DEPLOYMENTS, { namespace: 'default', name: 'led', type: 'merge', patch: { spec: { replicas: 3 } } });
    await waitFor(async () => (await readyPods(c, 'led')).length === 3, 60_000, 'three Ready pods after the restart');
  });
});

describe('leader election flags', () => {
  it('rejects timings that cannot give a safe election, naming the flag', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'server', ...args], { encoding: 'utf8', timeout: 20_000 });
    const bad = run(['--leader-elect', '--leader-elect-renew-deadline', '20s']);
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /--leader-elect-renew-deadline must be less than --leader-elect-lease-duration/);
    const badRetry = run(['--leader-elect=true', '--leader-elect-retry-period', '10s']);
    assert.equal(badRetry.status, 2, badRetry.stderr);
    assert.match(badRetry.stderr, /--leader-elect-retry-period must be less than --leader-elect-renew-deadline/);
    const unit = run(['--leader-elect', '--leader-elect-lease-duration', '15']);
    assert.equal(unit.status, 2, unit.stderr);
    assert.match(unit.stderr, /invalid --leader-elect-lease-duration "15"/);
    const help = run(['--help']);
    assert.match(help.stdout, /--leader-elect\[=BOOL\].*\n.*\n.*\(default: on with --etcd-servers, off otherwise\)/);
  });
});
