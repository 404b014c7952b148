/**
 * Moving a running cluster from SQLite to etcd, end to end: a real `berth server` on SQLite with an
 * agent on real Docker running a Deployment, plus a Secret (encrypted at rest). While the server runs,
 * `berth migrate` refuses (the SQLite file is locked). The server is stopped, `berth migrate` copies
 * its store into a real one-member etcd, and the server starts again on the same data dir with
 * `--etcd-servers`. Then: kubectl sees the same objects with the same uids; the Secret reads back and
 * is stored encrypted in etcd; every resourceVersion is above the largest one SQLite gave out; the
 * agent reconnects and its pods keep their containers with restartCount 0; a watch from the
 * pre-migration list resourceVersion gets 410 or later events, never an older object; and a second
 * server with an empty data dir joins the migrated cluster with `--token`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { NODE_LEASE_NAMESPACE } from '../../src/api/lease.js';
import type { Lease, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { BERTH_BIN, podContainers, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';
import { startEtcdCluster, type EtcdCluster } from './etcd-cluster.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { LEASES } from '../../src/api/identities.js';

const execFileAsync = promisify(execFile);

/** Kinds whose objects must come through with the same uids (Events and Leases are written all the time). */
const KINDS = 'namespaces,nodes,deployments,replicasets,pods,secrets,configmaps,serviceaccounts,services';

interface Listed {
  kind: string;
  metadata: { name: string; namespace?: string; uid: string; resourceVersion: string };
}

function ready(p: Pod): boolean {
  return !p.metadata.deletionTimestamp && !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
}


async function runMigrate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'migrate', ...args], { timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(err) };
  }
}

describe('berth migrate: SQLite to etcd under a running agent', () => {
  let etcd: EtcdCluster | undefined;
  let cluster: Cluster | undefined;
  let serverB: ServerProcess | undefined;
  let etcdClient: Etcd3 | undefined;
  // The harness reads this array on every server start: the restart after the migration adds the etcd flags.
  const serverArgs: string[] = [];

  before(async () => {
    etcd = await startEtcdCluster({ members: 1 });
    cluster = await startCluster({ serverArgs });
  });

  after(async () => {
    serverB?.client.close();
    etcdClient?.close();
    await serverB?.stop();
    await cluster?.stop();
    await etcd?.stop();
  });

  it('keeps objects, uids, pods and Secrets, and moves every resourceVersion forward', async () => {
    const c = cluster!;
    const dataDir = path.join(c.dir, 'server');
    const nodeName = c.nodeNames[0]!;
    const kubectlJson = async (args: string[]) => {
      const r = await c.kubectl([...args, '-o', 'json']);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as { items: Listed[]; metadata?: { resourceVersion?: string } };
    };

    // ---- on SQLite ----
    assert.equal((await c.kubectl(['create', 'secret', 'generic', 'moved', '--from-literal=password=s3cret-value'])).code, 0);
    const deployment = c.writeFile(
      'deploy.yaml',
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
        },
      }),
    );
    assert.equal((await c.kubectl(['apply', '-f', deployment])).code, 0);
    const podsOf = async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=web' })).items;
    await waitFor(async () => (await podsOf()).filter(ready).length === 2, 90_000, 'two Ready pods on SQLite');
    const podsBefore = await podsOf();
    const containersBefore = new Map<string, string[]>();
    for (const p of podsBefore) containersBefore.set(p.metadata.uid!, (await podContainers(p.metadata.uid!)).map((x) => x.id).sort());

    const before = await kubectlJson(['get', KINDS, '-A']);
    const uidsBefore = new Map(before.items.map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.uid]));
    const podList = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
    const podListRV = Number(podList.metadata.resourceVersion);
    // Everything SQLite gave out: the newest list revision bounds every object's resourceVersion.
    let maxBefore = podListRV;
    for (const o of before.items) maxBefore = Math.max(maxBefore, Number(o.metadata.resourceVersion));
    const leases = await c.client.list<Lease>(LEASES, { namespace: NODE_LEASE_NAMESPACE });
    maxBefore = Math.max(maxBefore, Number(leases.metadata.resourceVersion));

    const migrateArgs = ['--data-dir', dataDir, '--etcd-servers', etcd!.endpoints.join(',')];
    // A running server holds the SQLite file: refused, nothing written.
    const refused = await runMigrate(migrateArgs);
    assert.equal(refused.code, 1, `migrate while the server runs: ${refused.stderr}`);
    assert.match(refused.stderr, /locked by a running berth server/);

    // ---- stop, migrate, start on etcd ----
    const pid = c.serverPid();
    process.kill(pid, 'SIGTERM');
    await waitFor(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 20_000, 'the SQLite server to exit');
    // The last writes of the stopping server (a node heartbeat) count too.
    const { openSqliteBackend } = await import('../../src/storage/sqlite.js');
    const closedStore = openSqliteBackend({ file: path.join(dataDir, 'state.db') });
    maxBefore = Math.max(maxBefore, await closedStore.currentRevision());
    closedStore.close();

    const started = Date.now();
    const migrated = await runMigrate(migrateArgs);
    assert.equal(migrated.code, 0, migrated.stderr);
    const report = JSON.parse(migrated.stdout) as { keys: number; copied: number; sourceRevision: number; firstCopiedRevision: number; compactedAt: number };
    console.log(`# migrated ${report.keys} keys from revision ${report.sourceRevision} in ${Date.now() - started} ms (resourceVersions from ${report.firstCopiedRevision}, compacted at ${report.compactedAt})`);
    assert.equal(report.sourceRevision, maxBefore);
    assert.ok(report.firstCopiedRevision > maxBefore);
    // Running it again changes nothing.
    const again = await runMigrate(migrateArgs);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((JSON.parse(again.stdout) as { outcome: string }).outcome, 'already-done');

    serverArgs.push('--etcd-servers', etcd!.endpoints.join(','));
    const restartedAt = Date.now();
    await c.restartServer();

    // ---- on etcd ----
    const afterList = await kubectlJson(['get', KINDS, '-A']);
    const uidsAfter = new Map(afterList.items.map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.uid]));
    for (const [name, uid] of uidsBefore) assert.equal(uidsAfter.get(name), uid, `${name} keeps its uid`);
    for (const o of afterList.items) {
      assert.ok(Number(o.metadata.resourceVersion) > maxBefore, `${o.kind} ${o.metadata.name} at resourceVersion ${o.metadata.resourceVersion}, not above ${maxBefore}`);
    }

    const secret = await c.kubectl(['get', 'secret', 'moved', '-o', 'jsonpath={.data.password}']);
    assert.equal(Buffer.from(secret.stdout, 'base64').toString(), 's3cret-value');
    etcdClient = new Etcd3({ hosts: etcd!.endpoints });
    const stored = await etcdClient.get('/registry/core/secrets/default/moved').buffer();
    assert.ok(stored, 'the Secret is in etcd under /registry/core/secrets/default/moved');
    assert.match(stored.subarray(0, 16).toString('latin1'), /^k8s:enc:/, 'stored encrypted, as on SQLite');
    assert.ok(!stored.includes(Buffer.from('s3cret-value')));

    // A watch from the pre-migration list resourceVersion: 410, or events newer than every old one.
    const watch = await c.client.raw({ method: 'GET', path: `/api/v1/namespaces/default/pods?watch=1&resourceVersion=${podListRV}&timeoutSeconds=2`, timeoutMs: 15_000 });
    const lines = watch.body.toString().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; object: { code?: number; metadata?: { resourceVersion?: string } } });
    if (watch.status === 410) {
      console.log('# a watch from the pre-migration resourceVersion answered 410 (HTTP)');
    } else {
      assert.equal(watch.status, 200, watch.body.toString());
      for (const ev of lines) {
        if (ev.type === 'ERROR') assert.equal(ev.object.code, 410, JSON.stringify(ev));
        else assert.ok(Number(ev.object.metadata?.resourceVersion) > maxBefore, `an event from before the migration: ${JSON.stringify(ev).slice(0, 300)}`);
      }
      console.log(`# a watch from the pre-migration resourceVersion got: ${lines.map((l) => (l.type === 'ERROR' ? `ERROR ${l.object.code}` : l.type)).join(', ') || 'no events'}`);
    }

    // The agent reconnects: its node Lease is renewed through the etcd-backed server...
    await waitFor(async () => {
      const lease = await c.client.get<Lease>(LEASES, { namespace: NODE_LEASE_NAMESPACE, name: nodeName }).catch(() => undefined);
      return Date.parse(lease?.spec?.renewTime ?? '') > restartedAt;
    }, 30_000, 'a node Lease renewal after the migration');
    // ...and nothing restarted: same pods, same containers, restartCount 0, still Ready.
    await new Promise((r) => setTimeout(r, 3_000));
    const podsAfter = await podsOf();
    assert.deepEqual(podsAfter.map((p) => p.metadata.uid).sort(), podsBefore.map((p) => p.metadata.uid).sort());
    for (const p of podsAfter) {
      assert.ok(ready(p), `${p.metadata.name} still Ready`);
      assert.deepEqual((await podContainers(p.metadata.uid!)).map((x) => x.id).sort(), containersBefore.get(p.metadata.uid!), `${p.metadata.name} keeps its containers`);
      assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 0);
    }

    // Controllers work on the migrated store: scaling up makes a third Ready pod.
    assert.equal((await c.kubectl(['scale', 'deployment', 'web', '--replicas=3'])).code, 0);
    await waitFor(async () => (await podsOf()).filter(ready).length === 3, 60_000, 'a third Ready pod after the migration');

    // A second server with an empty data dir joins the migrated cluster with the node token.
    const dirB = path.join(c.dir, 'server-b');
    serverB = await startServerProcess({ dir: dirB, logFile: path.join(c.dir, 'logs', 'server-b.log'), args: ['--etcd-servers', etcd!.endpoints.join(','), '--token-file', path.join(dataDir, 'node-token')] });
    assert.equal(fs.readFileSync(path.join(dirB, 'pki', 'ca.crt'), 'utf8'), fs.readFileSync(path.join(dataDir, 'pki', 'ca.crt'), 'utf8'), 'B took the migrated cluster\'s CA');
    const secretB = await serverB.client.request<{ data: Record<string, string> }>({ method: 'GET', path: '/api/v1/namespaces/default/secrets/moved' });
    assert.equal(Buffer.from(secretB.data.password!, 'base64').toString(), 's3cret-value');
  });
});
