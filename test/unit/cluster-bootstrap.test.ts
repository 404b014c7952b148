/**
 * The shared-secret bootstrap of control-plane replicas (src/auth/cluster-bootstrap.ts) on a real
 * SQLite store shared by several data dirs, and the start-up steps every replica runs against one
 * store at the same moment (system namespaces, default RBAC policy).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { bootstrapClusterSecrets, CLUSTER_BOOTSTRAP_KEY, sharedFiles } from '../../src/auth/cluster-bootstrap.js';
import { caHash } from '../../src/auth/pki.js';
import { reconcileBootstrapPolicy } from '../../src/auth/rbac/bootstrap-policy.js';
import { ensureSystemNamespaces } from '../../src/control-plane.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-cluster-bootstrap-'));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const newDataDir = () => path.join(scratch, `server-${dirs++}`);
const read = (dir: string, name: string) => fs.readFileSync(path.join(dir, name), 'utf8');
const nodeToken = (dir: string) => `berth1::${caHash(read(dir, 'pki/ca.crt'))}::${read(dir, 'join-secret').trim()}`;

function assertSameSecrets(a: string, b: string): void {
  for (const name of sharedFiles(true)) assert.equal(read(b, name), read(a, name), name);
}

describe('cluster secrets shared through the store', () => {
  it('the first server stores them encrypted; a second with the node token takes the same files', async () => {
    const store = openSqliteBackend({ file: ':memory:' });
    const first = newDataDir();
    assert.equal((await bootstrapClusterSecrets({ dataDir: first, store, shareEncryptionConfig: true })).outcome, 'bootstrapped');
    const stored = (await store.get(CLUSTER_BOOTSTRAP_KEY))!.value;
    for (const name of sharedFiles(true)) {
      // Nothing of a secret file shows in the stored value (the CA key's base64 body is a long run).
      const body = read(first, name).replace(/-----[^-]+-----/g, '').replace(/\s/g, '').slice(0, 40);
      assert.ok(!stored.includes(body), `${name} is stored in the clear`);
    }
    const second = newDataDir();
    const joined = await bootstrapClusterSecrets({ dataDir: second, store, token: nodeToken(first), shareEncryptionConfig: true });
    assert.equal(joined.outcome, 'joined');
    assert.deepEqual(joined.written.sort(), sharedFiles(true).sort());
    assertSameSecrets(first, second);
    assert.equal(fs.statSync(path.join(second, 'pki/ca.key')).mode & 0o777, 0o600);
    // A restart of either finds agreeing files: nothing to write, no token needed.
    assert.deepEqual((await bootstrapClusterSecrets({ dataDir: second, store, shareEncryptionConfig: true })).written, []);
    assert.equal((await bootstrapClusterSecrets({ dataDir: first, store, shareEncryptionConfig: true })).outcome, 'joined');
    store.close();
  });

  it('a server whose data dir holds copies of the first one’s files joins without --token', async () => {
    const store = openSqliteBackend({ file: ':memory:' });
    const first = newDataDir();
    await bootstrapClusterSecrets({ dataDir: first, store, shareEncryptionConfig: true });
    const second = newDataDir();
    for (const name of [...sharedFiles(true), 'pki/server.crt']) {
      if (!fs.existsSync(path.join(first, name))) continue;
      fs.mkdirSync(path.dirname(path.join(second, name)), { recursive: true });
      fs.copyFileSync(path.join(first, name), path.join(second, name));
    }
    const result = await bootstrapClusterSecrets({ dataDir: second, store, shareEncryptionConfig: true });
    assert.deepEqual(result, { outcome: 'joined', written: [] });
    store.close();
  });

  it('refuses a joining server without a token, with a wrong token, or with disagreeing files', async () => {
    const store = openSqliteBackend({ file: ':memory:' });
    const first = newDataDir();
    await bootstrapClusterSecrets({ dataDir: first, store, shareEncryptionConfig: true });
    await assert.rejects(bootstrapClusterSecrets({ dataDir: newDataDir(), store, shareEncryptionConfig: true }), /start this server with --token or --token-file/);
    await assert.rejects(bootstrapClusterSecrets({ dataDir: newDataDir(), store, token: 'not-the-secret', shareEncryptionConfig: true }), /the cluster token does not open the cluster secrets/);
    // The right secret but a node token pinning another CA.
    const otherCa = `berth1::${'0'.repeat(64)}::${read(first, 'join-secret').trim()}`;
    await assert.rejects(bootstrapClusterSecrets({ dataDir: newDataDir(), store, token: otherCa, shareEncryptionConfig: true }), /--token names CA 0{64}, but the cluster in the store has CA/);

    // A data dir of another cluster: its own service-account key must not be replaced silently.
    const stranger = newDataDir();
    await bootstrapClusterSecrets({ dataDir: stranger, store: openSqliteBackend({ file: ':memory:' }), shareEncryptionConfig: true });
    const keyBefore = read(stranger, 'pki/sa.key');
    await assert.rejects(bootstrapClusterSecrets({ dataDir: stranger, store, token: nodeToken(first), shareEncryptionConfig: true }), /ca\.crt differs from the cluster's copy in the store/);
    assert.equal(read(stranger, 'pki/sa.key'), keyBefore, 'nothing was overwritten');
    store.close();
  });

  it('two servers starting at the same moment on an empty store: one bootstraps, the other takes its secrets', async () => {
    const store = openSqliteBackend({ file: ':memory:' });
    const a = newDataDir();
    const b = newDataDir();
    const token = 'a-cluster-token-given-to-every-server';
    const results = await Promise.all([
      bootstrapClusterSecrets({ dataDir: a, store, token, shareEncryptionConfig: true }),
      bootstrapClusterSecrets({ dataDir: b, store, token, shareEncryptionConfig: true }),
    ]);
    assert.deepEqual(results.map((r) => r.outcome).sort(), ['bootstrapped', 'joined']);
    assertSameSecrets(a, b);
    // The loser's serving certificate of its discarded CA is gone, so it is issued again by the shared CA.
    const loser = results[0]!.outcome === 'joined' ? a : b;
    assert.equal(fs.existsSync(path.join(loser, 'pki/server.crt')), false);
    assert.equal(read(a, 'join-secret').trim(), token);

    // Without a shared token, the loser cannot join and says how to.
    const other = openSqliteBackend({ file: ':memory:' });
    const outcomes = await Promise.allSettled([newDataDir(), newDataDir()].map((dataDir) => bootstrapClusterSecrets({ dataDir, store: other, shareEncryptionConfig: true })));
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
    assert.match(String((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason), /another server stored its cluster secrets in this etcd while this one started/);
    other.close();
    store.close();
  });

  it('with --encryption-provider-config the encryption key is the operator’s file, not shared', async () => {
    const store = openSqliteBackend({ file: ':memory:' });
    const first = newDataDir();
    await bootstrapClusterSecrets({ dataDir: first, store, shareEncryptionConfig: false });
    assert.equal(fs.existsSync(path.join(first, 'encryption-config.yaml')), false);
    await assert.rejects(bootstrapClusterSecrets({ dataDir: newDataDir(), store, token: nodeToken(first), shareEncryptionConfig: true }), /lack encryption-config\.yaml/);
    store.close();
  });
});

describe('replicas starting together on one store', () => {
  it('system namespaces and the default RBAC policy tolerate a concurrent replica', async () => {
    const backend = openSqliteBackend({ file: ':memory:' });
    const replicas = [0, 1, 2].map(() => {
      const registry = new Registry({ backend });
      for (const s of ALL_STRATEGIES) registry.register(s);
      return registry;
    });
    await Promise.all(replicas.map((registry) => ensureSystemNamespaces(registry)));
    await Promise.all(replicas.map((registry) => reconcileBootstrapPolicy({ registry })));
    const namespaces = ALL_STRATEGIES.find((s) => s.info.plural === 'namespaces')!.info;
    assert.deepEqual((await replicas[0]!.list(namespaces, undefined, {})).items.map((n) => n.metadata.name).sort(), ['default', 'kube-node-lease', 'kube-public', 'kube-system']);
    backend.close();
  });
});
