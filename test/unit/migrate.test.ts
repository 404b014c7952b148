/**
 * `berth migrate`'s copy (src/migrate.ts) between two real SQLite stores: the revision arithmetic,
 * resourceVersions above the source's, compaction of the half-copied history, and the refusals
 * (non-empty target, another source's marker, a differing key, a locked or missing file), --force,
 * and resuming an interrupted copy. The etcd path is proven end to end in test/e2e/migrate.test.ts.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StorageError, type Backend } from '../../src/storage/backend.js';
import { openSqliteBackend, type SqliteBackend } from '../../src/storage/sqlite.js';
import {
  MIGRATION_MARKER_KEY,
  MigrationRefused,
  migrateStores,
  openSourceExclusively,
  revisionsToAdvance,
  scratchRounds,
} from '../../src/migrate.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-migrate-unit-'));
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

/** A source with history: creates, updates, deletes, and a record outside /registry. */
async function sourceWithHistory(): Promise<SqliteBackend> {
  const s = openSqliteBackend({ file: ':memory:' });
  for (let i = 0; i < 40; i++) await s.create(`/registry/configmaps/default/cm-${i}`, JSON.stringify({ metadata: { name: `cm-${i}`, uid: `uid-${i}` } }));
  for (let i = 0; i < 40; i += 2) {
    const kv = (await s.get(`/registry/configmaps/default/cm-${i}`))!;
    await s.update(kv.key, JSON.stringify({ metadata: { name: `cm-${i}`, uid: `uid-${i}` }, data: { v: '2' } }), kv.modRevision);
  }
  for (let i = 1; i < 40; i += 4) await s.delete(`/registry/configmaps/default/cm-${i}`);
  await s.create('/registry/secrets/default/s', 'k8s:enc:aesgcm:v1:key1:\u0001\u00ffopaque');
  await s.create('/berth/credentials/nodes/n1', '{"hash":"x"}');
  return s;
}

async function liveMap(b: Backend): Promise<Map<string, string>> {
  const res = await b.list('/');
  return new Map(res.items.map((kv) => [kv.key, kv.value]));
}

describe('revision arithmetic', () => {
  it('advances a target just past the source', () => {
    assert.equal(revisionsToAdvance(100, 1), 99); // the 100th write is revision 100; the copy starts at 101
    assert.equal(revisionsToAdvance(100, 100), 0);
    assert.equal(revisionsToAdvance(100, 250), 0);
    assert.equal(revisionsToAdvance(0, 0), 0);
  });
  it('splits the advance into create+delete rounds that never fall short', () => {
    assert.deepEqual(scratchRounds(0, 64), []);
    assert.deepEqual(scratchRounds(1, 64), [1]);
    assert.deepEqual(scratchRounds(7, 2), [2, 2]);
    for (const [n, c] of [[99, 64], [128, 64], [129, 64], [1000, 7]] as const) {
      const rounds = scratchRounds(n, c);
      const revisions = rounds.reduce((a, b) => a + b, 0) * 2;
      assert.ok(revisions >= n && revisions <= n + 1, `${n} → ${revisions}`);
      assert.ok(rounds.every((r) => r <= c));
    }
  });
});

describe('migrateStores', () => {
  it('copies every live key verbatim with resourceVersions above the source and compacts the history', async () => {
    const source = await sourceWithHistory();
    const target = openSqliteBackend({ file: ':memory:' });
    const sourceRevision = await source.currentRevision();
    const report = await migrateStores({ source, sourceName: 'src.db', target, concurrency: 8 });
    assert.equal(report.outcome, 'migrated');
    assert.equal(report.sourceRevision, sourceRevision);

    const want = await liveMap(source);
    const got = await liveMap(target);
    got.delete(MIGRATION_MARKER_KEY);
    assert.deepEqual(got, want);
    assert.equal(report.keys, want.size);
    assert.ok(got.has('/berth/credentials/nodes/n1'));
    assert.equal(got.get('/registry/secrets/default/s'), 'k8s:enc:aesgcm:v1:key1:\u0001\u00ffopaque');

    for (const kv of (await target.list('/')).items) assert.ok(kv.modRevision > sourceRevision, `${kv.key} at ${kv.modRevision} ≤ ${sourceRevision}`);
    assert.ok(report.firstCopiedRevision > sourceRevision);
    assert.ok((await target.list('/berth/migration-scratch/')).items.length === 0, 'scratch keys left behind');

    // Any earlier revision is compacted: a list or watch there is refused (410), never the half-copied state.
    await assert.rejects(target.list('/registry/', { revision: report.compactedAt - 1 }), (e: unknown) => e instanceof StorageError && e.code === 'Compacted');
    await assert.rejects(target.watch('/registry/', { fromRevision: sourceRevision, onEvent: () => undefined }), (e: unknown) => e instanceof StorageError && e.code === 'Compacted');

    // Running it again is a no-op.
    const again = await migrateStores({ source, sourceName: 'src.db', target });
    assert.equal(again.outcome, 'already-done');
    assert.equal(again.copied, 0);
  });

  it('refuses a non-empty target, and --force replaces its contents', async () => {
    const source = await sourceWithHistory();
    const target = openSqliteBackend({ file: ':memory:' });
    await target.create('/registry/configmaps/default/other-cluster', '{}');
    await assert.rejects(migrateStores({ source, sourceName: 'src.db', target }), (e: unknown) => e instanceof MigrationRefused && /already holds 1 keys/.test(e.message));
    assert.equal((await liveMap(target)).size, 1, 'a refused migration writes nothing');

    const report = await migrateStores({ source, sourceName: 'src.db', target, force: true });
    assert.equal(report.removed, 1);
    const got = await liveMap(target);
    assert.ok(!got.has('/registry/configmaps/default/other-cluster'));
    got.delete(MIGRATION_MARKER_KEY);
    assert.deepEqual(got, await liveMap(source));
  });

  it('refuses a target holding another source\'s migration', async () => {
    const source = await sourceWithHistory();
    const target = openSqliteBackend({ file: ':memory:' });
    await migrateStores({ source, sourceName: 'a.db', target });
    await assert.rejects(migrateStores({ source, sourceName: 'b.db', target }), (e: unknown) => e instanceof MigrationRefused && /migration of a\.db/.test(e.message));
    // The same file after more writes is another source revision: refused too.
    await source.create('/registry/configmaps/default/late', '{}');
    await assert.rejects(migrateStores({ source, sourceName: 'a.db', target }), MigrationRefused);
  });

  it('resumes an interrupted copy, and refuses a key changed meanwhile', async () => {
    const source = await sourceWithHistory();
    const sourceRevision = await source.currentRevision();
    const target = openSqliteBackend({ file: ':memory:' });
    // A target that fails on the 10th copied key, as a lost connection would.
    let copies = 0;
    const failing: Backend = Object.create(target, {
      create: {
        value: async (key: string, value: string) => {
          if (key.startsWith('/registry/') && ++copies === 10) throw new StorageError('Failed', 'connection lost');
          return target.create(key, value);
        },
      },
    });
    await assert.rejects(migrateStores({ source, sourceName: 'src.db', target: failing, concurrency: 1 }), /connection lost/);
    const partial = await liveMap(target);
    assert.ok(partial.size > 1 && partial.size < (await liveMap(source)).size + 1, `partial copy of ${partial.size}`);

    const resumed = await migrateStores({ source, sourceName: 'src.db', target, concurrency: 4 });
    assert.equal(resumed.outcome, 'resumed');
    assert.equal(resumed.copied, resumed.keys - (partial.size - 1));
    const got = await liveMap(target);
    got.delete(MIGRATION_MARKER_KEY);
    assert.deepEqual(got, await liveMap(source));
    for (const kv of (await target.list('/')).items) assert.ok(kv.modRevision > sourceRevision);

    // Interrupted again, then something else writes a copied key: the resume refuses to overwrite it.
    const target2 = openSqliteBackend({ file: ':memory:' });
    copies = 0;
    const failing2: Backend = Object.create(target2, {
      create: {
        value: async (key: string, value: string) => {
          if (key.startsWith('/registry/') && ++copies === 5) throw new StorageError('Failed', 'connection lost');
          return target2.create(key, value);
        },
      },
    });
    await assert.rejects(migrateStores({ source, sourceName: 'src.db', target: failing2, concurrency: 1 }), /connection lost/);
    const some = (await target2.list('/registry/')).items[0]!;
    await target2.update(some.key, '{"changed":true}', some.modRevision);
    await assert.rejects(migrateStores({ source, sourceName: 'src.db', target: target2 }), (e: unknown) => e instanceof MigrationRefused && e.message.includes(some.key));
  });
});

describe('openSourceExclusively', () => {
  it('refuses a file a running server holds, and a missing file', async () => {
    const file = path.join(tmpRoot, 'held', 'state.db');
    const server = openSqliteBackend({ file });
    await server.create('/registry/namespaces/default', '{}');
    try {
      assert.throws(() => openSourceExclusively(file), (e: unknown) => e instanceof MigrationRefused && /locked by a running berth server/.test(e.message));
    } finally {
      server.close();
    }
    const source = openSourceExclusively(file);
    assert.equal((await source.list('/')).items.length, 1);
    source.close();
    assert.throws(() => openSourceExclusively(path.join(tmpRoot, 'nope', 'state.db')), (e: unknown) => e instanceof MigrationRefused && /does not exist/.test(e.message));
  });
});
