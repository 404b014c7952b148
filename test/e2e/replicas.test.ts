/**
 * Several `berth server` replicas on one real three-member etcd cluster, with a real agent on Docker.
 * The first replica (L) starts alone and bootstraps the cluster's secrets into etcd; the harness's
 * replica (A, the agent's server) and a third (C) join with L's node token. Election timings are
 * short (lease 3 s, renew 2 s, retry 500 ms) so a failover takes seconds.
 *
 * Proves: every replica serves the same API and its watches see the others' writes; one replica
 * holds the Lease; `kill -9` of the leader mid-rollout hands over within leaseDuration + retryPeriod,
 * the rollout completes within replicas + maxSurge, no pod runs twice, no acknowledged write is lost,
 * a seconds-schedule CronJob never makes two Jobs for one scheduled time across the handover, and a
 * watch that reconnects to another replica from its last resourceVersion sees every event once.
 */
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CronJob, Deployment, Job, KubeObject, Lease, Pod, WatchEvent } from '../../src/api/types.js';
import { CORE, type WatchHandle } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { startEtcdCluster, type EtcdCluster } from './etcd-cluster.js';
import { BERTH_BIN, docker, freeClusterCidr, sleep, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { CRONJOBS, DEPLOYMENTS, JOBS, LEASES, REPLICASETS } from '../../src/api/identities.js';

const CONFIG_MAPS = { plural: 'configmaps' };
const LOCK = { namespace: 'kube-system', name: 'berth-controller-manager' };
const LEASE_MS = 3000;
const RETRY_MS = 500;
const ELECTION_ARGS = ['--leader-elect-lease-duration', '3s', '--leader-elect-renew-deadline', '2s', '--leader-elect-retry-period', '500ms'];
const NS = 'default';

interface Replica extends ServerProcess {
  name: string;
}

const spawned = new Set<ChildProcess>();
const scratchDirs = new Set<string>();
// Also on SIGINT/SIGTERM: etcd-cluster.ts exits the process then, which runs this.
process.on('exit', () => {
  for (const child of spawned) child.kill('SIGKILL');
  if (!process.env.BERTH_KEEP_E2E) for (const dir of scratchDirs) fs.rmSync(dir, { recursive: true, force: true });
});

async function killReplica(r: Replica | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!r) return;
  await r.stop(signal);
  spawned.delete(r.process);
}

async function lease(client: HttpClient): Promise<Lease | undefined> {
  return client.get<Lease>(LEASES, LOCK).catch(() => undefined);
}

function logOf(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** identities this replica's log says it became leader as */
function leadershipsIn(log: string): string[] {
  return log.split('\n').filter((l) => l.includes('"msg":"became leader"')).map((l) => (JSON.parse(l) as { identity: string }).identity);
}

describe('several berth servers on one three-member etcd', () => {
  let etcd: EtcdCluster | undefined;
  let c: Cluster | undefined;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-replicas-'));
  scratchDirs.add(scratch);
  const clusterCidr = freeClusterCidr();
  let first: Replica | undefined;
  let third: Replica | undefined;
  const watches: WatchHandle[] = [];

  const startReplica = async (name: string, extraArgs: string[]): Promise<Replica> => {
    const server = await startServerProcess({
      dir: path.join(scratch, name),
      logFile: path.join(scratch, `${name}.log`),
      logLevel: 'info',
      args: ['--cluster-cidr', clusterCidr, '--etcd-servers', etcd!.endpoints.join(','), ...ELECTION_ARGS, ...extraArgs],
    });
    spawned.add(server.process);
    return { name, ...server };
  };

  before(async () => {
    etcd = await startEtcdCluster({ members: 3 });
    first = await startReplica('first', []);
    // Alone on the store, the first replica takes the Lease before the others exist.
    await waitFor(async () => !!(await lease(first!.client))?.spec?.holderIdentity, 15_000, 'the first replica to lead');
    const tokenFile = path.join(first.dir, 'node-token');
    c = await startCluster({ clusterCidr, serverArgs: ['--etcd-servers', etcd.endpoints.join(','), ...ELECTION_ARGS, '--token-file', tokenFile, '--log-level', 'info'] });
    third = await startReplica('third', ['--token-file', tokenFile]);
  });

  after(async () => {
    for (const w of watches) w.close();
    first?.client.close();
    third?.client.close();
    await c?.stop();
    await killReplica(first, 'SIGTERM');
    await killReplica(third, 'SIGTERM');
    await etcd?.stop();
    if (!process.env.BERTH_KEEP_E2E) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('every replica took the same cluster secrets from etcd', () => {
    for (const name of ['pki/ca.crt', 'pki/ca.key', 'pki/sa.key', 'admin-token', 'join-secret', 'encryption-config.yaml']) {
      const want = fs.readFileSync(path.join(first!.dir, name), 'utf8');
      assert.equal(fs.readFileSync(path.join(c!.dir, 'server', name), 'utf8'), want, `harness replica's ${name}`);
      assert.equal(fs.readFileSync(path.join(third!.dir, name), 'utf8'), want, `third replica's ${name}`);
    }
  });

  it('a write on one replica is read on another, and a watch there sees its create and update once each, in order', async () => {
    const onThird = third!.client;
    const start = await onThird.list<KubeObject>(CONFIG_MAPS, { namespace: NS, labelSelector: 'test=cross-replica' });
    const seen: Array<WatchEvent<KubeObject>> = [];
    watches.push(onThird.watch<KubeObject>(CONFIG_MAPS, { namespace: NS, labelSelector: 'test=cross-replica', resourceVersion: start.metadata.resourceVersion, onEvent: (ev) => seen.push(ev) }));
    const onA = c!.client;
    const created = await onA.create<KubeObject>(CONFIG_MAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cross', labels: { test: 'cross-replica' } }, data: { v: '1' } } as KubeObject, { namespace: NS });
    const updated = await onA.patch<KubeObject>(CONFIG_MAPS, { namespace: NS, name: 'cross', type: 'merge', patch: { data: { v: '2' } } });
    await waitFor(() => seen.length >= 2, 10_000, 'two events on the other replica');
    await sleep(1000);
    assert.deepEqual(seen.map((e) => [e.type, e.object.metadata.resourceVersion]), [['ADDED', created.metadata.resourceVersion], ['MODIFIED', updated.metadata.resourceVersion]]);
    const read = await first!.client.get<KubeObject & { data?: Record<string, string> }>(CONFIG_MAPS, { namespace: NS, name: 'cross' });
    assert.deepEqual(read.data, { v: '2' });
  });

  it('kill -9 of the leader mid-rollout: a new leader within lease + retry, the rollout completes within maxSurge, no pod twice, no write lost, no CronJob time twice, a failed-over watch sees every event once', async () => {
    const leader = (await lease(c!.client))!.spec!.holderIdentity!;
    // Exactly one replica says it leads, and it is the first.
    assert.deepEqual(leadershipsIn(logOf(path.join(scratch, 'first.log'))), [leader]);
    assert.deepEqual(leadershipsIn(logOf(path.join(scratch, 'third.log'))), []);
    assert.deepEqual(leadershipsIn(logOf(path.join(c!.dir, 'logs', 'server.log'))), []);

    // A CronJob every 2 s; its Jobs stay suspended (no pods), so only their creation is under test.
    const cronJob = await c!.client.create<CronJob>(CRONJOBS, {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick' },
      spec: {
        schedule: '*/2 * * * * *',
        successfulJobsHistoryLimit: 1000,
        failedJobsHistoryLimit: 1000,
        jobTemplate: { spec: { suspend: true, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: TEST_IMAGE, command: ['true'] }] } } } },
      },
    } as CronJob, { namespace: NS });

    const replicas = 6;
    const maxSurge = 2; // 25% of 6, rounded up
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'roll' },
      spec: {
        replicas,
        selector: { matchLabels: { app: 'roll' } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
        template: { metadata: { labels: { app: 'roll' } }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
      },
    } as unknown as Deployment;
    await c!.client.create(DEPLOYMENTS, deployment, { namespace: NS });
    const deploymentDone = async (generation?: number) => {
      const d = await c!.client.get<Deployment>(DEPLOYMENTS, { namespace: NS, name: 'roll' });
      const s = d.status;
      return (generation === undefined || (s?.observedGeneration ?? 0) >= generation) && s?.updatedReplicas === replicas && s?.readyReplicas === replicas && s?.replicas === replicas;
    };
    await waitFor(() => deploymentDone(), 120_000, 'six Ready pods');
    const jobsOfTick = async () => (await c!.client.list<Job>(JOBS, { namespace: NS })).items.filter((j) => j.metadata.ownerReferences?.some((o) => o.uid === cronJob.metadata.uid));
    await waitFor(async () => (await jobsOfTick()).length >= 2, 20_000, 'the first leader to fire the CronJob');

    // Live pods (not terminating, not finished) sampled through a watch on the surviving replica.
    const live = new Map<string, Pod>();
    let mostLive = 0;
    const podList = await c!.client.list<Pod>(CORE.pods, { namespace: NS, labelSelector: 'app=roll' });
    for (const p of podList.items) live.set(p.metadata.uid!, p);
    watches.push(c!.client.watch<Pod>(CORE.pods, {
      namespace: NS,
      labelSelector: 'app=roll',
      resourceVersion: podList.metadata.resourceVersion,
      onEvent: (ev) => {
        const p = ev.object;
        if (ev.type === 'DELETED' || p.metadata.deletionTimestamp || p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') live.delete(p.metadata.uid!);
        else live.set(p.metadata.uid!, p);
        mostLive = Math.max(mostLive, live.size);
      },
    }));

    // A watch on the replica about to die, reconnected to a survivor from its last resourceVersion.
    const writerLabel = 'test=writer';
    const watched: Array<{ type: string; name: string; rv: string; onSurvivor: boolean }> = [];
    let lastRv = (await first!.client.list<KubeObject>(CONFIG_MAPS, { namespace: NS, labelSelector: writerLabel })).metadata.resourceVersion;
    let reconnectedAt: number | undefined;
    const follow = (client: HttpClient, onSurvivor: boolean, onEnd: () => void): WatchHandle =>
      client.watch<KubeObject>(CONFIG_MAPS, {
        namespace: NS,
        labelSelector: writerLabel,
        resourceVersion: lastRv,
        onEvent: (ev) => {
          watched.push({ type: ev.type, name: ev.object.metadata.name!, rv: ev.object.metadata.resourceVersion!, onSurvivor });
          lastRv = ev.object.metadata.resourceVersion;
        },
        onClose: onEnd,
      });
    watches.push(follow(first!.client, false, () => {
      reconnectedAt = Date.now();
      watches.push(follow(c!.client, true, () => undefined));
    }));

    // A writer on the surviving replica records every 201.
    const acknowledged: string[] = [];
    let writing = true;
    let writeErrors = 0;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        try {
          const cm = await c!.client.create<KubeObject>(CONFIG_MAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `w-${i}`, labels: { test: 'writer' } }, data: { i: String(i) } } as KubeObject, { namespace: NS });
          acknowledged.push(cm.metadata.name!);
        } catch {
          writeErrors++;
        }
        await sleep(20);
      }
    })();

    // The rolling update, and the leader killed while it runs.
    const patched = await c!.client.patch<Deployment>(DEPLOYMENTS, { namespace: NS, name: 'roll', type: 'merge', patch: { spec: { template: { metadata: { annotations: { rollout: '2' } } } } } });
    await waitFor(async () => {
      const rs = await c!.client.list<KubeObject & { spec?: { replicas?: number }; metadata: { annotations?: Record<string, string> } }>(REPLICASETS, { namespace: NS, labelSelector: 'app=roll' });
      return rs.items.some((r) => r.metadata.annotations?.['deployment.kubernetes.io/revision'] === '2' && (r.spec?.replicas ?? 0) > 0);
    }, 30_000, 'the new ReplicaSet to scale up');
    const killedAt = Date.now();
    await killReplica(first);
    assert.equal(await deploymentDone(patched.metadata.generation), false, 'the rollout was still under way at the kill');
    let tookOverMs = -1;
    let newLeader = '';
    await waitFor(async () => {
      const holder = (await lease(c!.client))?.spec?.holderIdentity;
      if (!holder || holder === leader) return false;
      tookOverMs = Date.now() - killedAt;
      newLeader = holder;
      return true;
    }, 30_000, 'another replica to lead');
    console.log(`# new leader ${tookOverMs} ms after kill -9 of the leader (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`);
    // A candidate looks within every retry period and again exactly when the lease it saw runs out, so
    // it leads within leaseDuration + retryPeriod of the leader's last renewal (the kill lands after
    // it). Beyond that: the winner's two requests and this test's own polling (every 100 ms, one GET).
    assert.ok(tookOverMs <= LEASE_MS + RETRY_MS + 300, `took over after ${tookOverMs} ms`);
    const survivorsLeading = [...leadershipsIn(logOf(path.join(scratch, 'third.log'))), ...leadershipsIn(logOf(path.join(c!.dir, 'logs', 'server.log')))];
    assert.deepEqual(survivorsLeading, [newLeader], 'exactly one survivor leads');

    await waitFor(() => deploymentDone(patched.metadata.generation), 180_000, 'the rollout to complete under the new leader');
    // CronJob times on both sides of the handover.
    await sleep(5000);
    writing = false;
    await writer;
    await waitFor(() => watched.filter((w) => w.type === 'ADDED').length >= acknowledged.length, 10_000, 'the failed-over watch to catch up');
    await sleep(1000);

    // Never more than replicas + maxSurge live pods.
    console.log(`# at most ${mostLive} live pods during the rollout (bound ${replicas + maxSurge}); ${acknowledged.length} writes acknowledged, ${writeErrors} failed`);
    assert.ok(mostLive <= replicas + maxSurge, `${mostLive} live pods`);

    // No pod runs twice: each running container belongs to a pod the API has, once per container name.
    await waitFor(async () => (await c!.client.list<Pod>(CORE.pods, { namespace: NS, labelSelector: 'app=roll' })).items.length === replicas, 60_000, 'old pods gone');
    const pods = (await c!.client.list<Pod>(CORE.pods, { namespace: NS, labelSelector: 'app=roll' })).items;
    const running = (await docker(['ps', '--filter', `label=berth.dev/node-name=${c!.nodeNames[0]}`, '--format', '{{.Label "berth.dev/pod-uid"}} {{.Label "berth.dev/container-name"}} {{.Label "berth.dev/container-type"}}'])).split('\n').filter(Boolean);
    const perContainer = new Map<string, number>();
    for (const line of running) perContainer.set(line, (perContainer.get(line) ?? 0) + 1);
    for (const [container, count] of perContainer) assert.equal(count, 1, `${container} runs ${count} times`);
    const runningPods = new Set(running.map((l) => l.split(' ')[0]));
    assert.deepEqual([...runningPods].sort(), pods.map((p) => p.metadata.uid!).sort());

    // Every acknowledged write is still there, read through another replica.
    const stored = new Set((await third!.client.list<KubeObject>(CONFIG_MAPS, { namespace: NS, labelSelector: writerLabel })).items.map((cm) => cm.metadata.name!));
    assert.deepEqual(acknowledged.filter((name) => !stored.has(name)), []);
    assert.ok(acknowledged.length > 0);

    // The failed-over watch: every create exactly once, none replayed.
    assert.ok(reconnectedAt !== undefined, 'the watch on the killed replica ended');
    assert.ok(watched.some((w) => !w.onSurvivor) && watched.some((w) => w.onSurvivor), 'events came through both replicas');
    const added = watched.filter((w) => w.type === 'ADDED').map((w) => w.name);
    assert.equal(new Set(added).size, added.length, 'no event twice');
    assert.deepEqual([...added].sort(), [...stored].sort());
    assert.deepEqual(watched.map((w) => Number(w.rv)), watched.map((w) => Number(w.rv)).sort((a, b) => a - b), 'in revision order');

    // The CronJob: one Job per scheduled time, from before and after the handover.
    await c!.client.patch(CRONJOBS, { namespace: NS, name: 'tick', type: 'merge', patch: { spec: { suspend: true } } });
    const jobs = await jobsOfTick();
    const times = jobs.map((j) => j.metadata.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp'] ?? '');
    assert.equal(new Set(times).size, times.length, `a scheduled time twice: ${times.sort().join(' ')}`);
    for (const j of jobs) assert.equal(j.metadata.name, `tick-${Date.parse(j.metadata.annotations!['batch.kubernetes.io/cronjob-scheduled-timestamp']!) / 1000}`);
    const scheduled = times.map((t) => Date.parse(t));
    assert.ok(scheduled.some((t) => t < killedAt), 'Jobs of the first leader');
    assert.ok(scheduled.some((t) => t > killedAt + tookOverMs), 'Jobs of the new leader');
    console.log(`# ${jobs.length} CronJob Jobs, one per scheduled time, across the handover`);
  });
});

describe('berth server --token flags', () => {
  it('are refused without --etcd-servers, and together, naming the flag', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'server', ...args], { encoding: 'utf8', timeout: 20_000 });
    const alone = run(['--token', 'abc']);
    assert.equal(alone.status, 2, alone.stderr);
    assert.match(alone.stderr, /--token joins servers sharing etcd: it needs --etcd-servers/);
    const fileAlone = run(['--token-file', '/dev/null']);
    assert.match(fileAlone.stderr, /--token-file joins servers sharing etcd/);
    const both = run(['--etcd-servers', 'http://127.0.0.1:1', '--token', 'abc', '--token-file', '/dev/null']);
    assert.equal(both.status, 2, both.stderr);
    assert.match(both.stderr, /--token and --token-file exclude each other/);
    assert.match(run(['--help']).stdout, /--token T +with --etcd-servers: the cluster token/);
  });
});
