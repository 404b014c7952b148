/**
 * Node credentials across control-plane replicas: two TokenAuthenticators (two "replicas") on one
 * real store — one SQLite backend, and two etcd clients on one real etcd member — must agree on
 * which node credentials are live. A credential issued through one replica is accepted by the
 * other; one replaced by a re-join or deleted from the store is refused by both; a lost watch is
 * made good by listing again.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { NODE_CREDENTIAL_PREFIX, TokenAuthenticator } from '../../src/auth/tokens.js';
import { StorageError, type Backend, type WatchOptions, type Watcher } from '../../src/storage/backend.js';
import { openEtcdBackend } from '../../src/storage/etcd.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { startEtcdCluster, type EtcdCluster } from '../e2e/etcd-cluster.js';

const logger = pino({ level: 'silent' });
const CA = '-----BEGIN CERTIFICATE-----\nnot parsed: only hashed into the node token\n-----END CERTIFICATE-----\n';

async function eventually(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Replicas {
  a: TokenAuthenticator;
  b: TokenAuthenticator;
  /** the store as replica A writes it */
  store: Backend;
  joinSecret: string;
  close(): void;
}

/** Two authenticators sharing the secret files (as replicas given the same files do) and one store. */
async function replicas(storeA: Backend, storeB: Backend, extra: Partial<Parameters<typeof TokenAuthenticator.open>[0]> = {}): Promise<Replicas> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-node-creds-'));
  const a = await TokenAuthenticator.open({ dataDir, backend: storeA, caCert: CA, ...extra });
  const b = await TokenAuthenticator.open({ dataDir, backend: storeB, caCert: CA, ...extra });
  return {
    a,
    b,
    store: storeA,
    joinSecret: fs.readFileSync(path.join(dataDir, 'join-secret'), 'utf8').trim(),
    close() {
      a.close();
      b.close();
      storeA.close();
      if (storeB !== storeA) storeB.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const nodeOf = (auth: TokenAuthenticator, token: string) => auth.authenticate(`Bearer ${token}`)?.nodeName;

function sharedStoreBehaviour(open: () => Promise<{ storeA: Backend; storeB: Backend }>): void {
  it('a credential issued through A after B started is accepted by B', async () => {
    const { storeA, storeB } = await open();
    const r = await replicas(storeA, storeB);
    try {
      const token = await r.a.join(`Bearer ${r.joinSecret}`, 'node-1');
      assert.equal(nodeOf(r.a, token), 'node-1', 'the issuing replica accepts it at once');
      await eventually(() => nodeOf(r.b, token) === 'node-1', 'B to accept the credential A issued');
      assert.equal(r.b.authenticate(`Bearer ${token}x`), undefined, 'another token is still refused');
    } finally {
      r.close();
    }
  });

  it('a re-join through B revokes the old credential on both replicas; the new one works on both', async () => {
    const { storeA, storeB } = await open();
    const r = await replicas(storeA, storeB);
    try {
      const first = await r.a.join(`Bearer ${r.joinSecret}`, 'node-2');
      await eventually(() => nodeOf(r.b, first) === 'node-2', 'B to accept the first credential');
      const second = await r.b.join(`Bearer ${r.joinSecret}`, 'node-2');
      assert.equal(nodeOf(r.b, first), undefined, 'B refuses the replaced credential at once');
      await eventually(() => nodeOf(r.a, first) === undefined && nodeOf(r.a, second) === 'node-2', 'A to drop the replaced credential and accept the new one');
      assert.equal(nodeOf(r.b, second), 'node-2');
      // The watch also brings each replica its own writes, later: they must not revive the old digest.
      await new Promise((res) => setTimeout(res, 200));
      assert.equal(nodeOf(r.a, first), undefined);
      assert.equal(nodeOf(r.b, first), undefined);
    } finally {
      r.close();
    }
  });

  it('a credential deleted from the store is refused by both replicas', async () => {
    const { storeA, storeB } = await open();
    const r = await replicas(storeA, storeB);
    try {
      const token = await r.a.join(`Bearer ${r.joinSecret}`, 'node-3');
      await eventually(() => nodeOf(r.b, token) === 'node-3', 'B to accept the credential');
      await r.store.delete(NODE_CREDENTIAL_PREFIX + 'node-3');
      await eventually(() => nodeOf(r.a, token) === undefined && nodeOf(r.b, token) === undefined, 'both replicas to refuse the deleted credential');
    } finally {
      r.close();
    }
  });
}

describe('node credentials on two replicas over one SQLite store', () => {
  sharedStoreBehaviour(async () => {
    const store = openSqliteBackend({ file: ':memory:', logger });
    return { storeA: store, storeB: store };
  });

  it('after a lost watch the credentials are listed again: what changed meanwhile takes effect', async () => {
    const store = openSqliteBackend({ file: ':memory:', logger });
    // B's store loses its watch on demand, as a networked store may; it misses the events meanwhile.
    const lost: Array<{ opts: WatchOptions; watcher: Watcher }> = [];
    const losing: Backend = {
      currentRevision: () => store.currentRevision(),
      observedRevision: () => store.observedRevision(),
      waitObserved: (revision: number) => store.waitObserved(revision),
      get: (key) => store.get(key),
      modRevisionOf: (key) => store.modRevisionOf(key),
      list: (prefix, opts) => store.list(prefix, opts),
      count: (prefix) => store.count(prefix),
      create: (key, value) => store.create(key, value),
      update: (key, value, rev) => store.update(key, value, rev),
      delete: (key, rev) => store.delete(key, rev),
      compact: (rev) => store.compact(rev),
      watch: async (prefix, opts) => {
        const watcher = await store.watch(prefix, opts);
        lost.push({ opts, watcher });
        return watcher;
      },
      close: () => undefined,
    };
    const r = await replicas(store, losing, { resyncDelayMs: 20 });
    try {
      const kept = await r.a.join(`Bearer ${r.joinSecret}`, 'kept');
      const dropped = await r.a.join(`Bearer ${r.joinSecret}`, 'dropped');
      await eventually(() => nodeOf(r.b, kept) === 'kept' && nodeOf(r.b, dropped) === 'dropped', 'B to accept both');
      const first = lost.at(-1)!;
      first.watcher.close();
      await store.delete(NODE_CREDENTIAL_PREFIX + 'dropped');
      const added = await r.a.join(`Bearer ${r.joinSecret}`, 'added');
      await new Promise((res) => setTimeout(res, 50));
      assert.equal(nodeOf(r.b, added), undefined, 'with its watch gone B has not heard of the new credential');
      first.opts.onError!(new StorageError('Failed', 'watch lost'));
      await eventually(() => nodeOf(r.b, added) === 'added' && nodeOf(r.b, dropped) === undefined && nodeOf(r.b, kept) === 'kept', 'B to list again and follow the store');
      assert.equal(lost.length, 2, 'B watches again once, after listing');
    } finally {
      r.close();
    }
  });
});

describe('node credentials on two replicas, each with its own client of one etcd member', () => {
  let etcd: EtcdCluster | undefined;
  let prefixes = 0;
  before(async () => {
    etcd = await startEtcdCluster();
  });
  after(async () => {
    await etcd?.stop();
  });
  sharedStoreBehaviour(async () => {
    const prefix = `/node-creds-${++prefixes}`;
    const storeA = await openEtcdBackend({ endpoints: etcd!.endpoints, prefix, logger });
    const storeB = await openEtcdBackend({ endpoints: etcd!.endpoints, prefix, logger });
    return { storeA, storeB };
  });
});
