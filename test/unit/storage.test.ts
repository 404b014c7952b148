/**
 * What the SQLite backend does beyond the Backend contract (which backend-contract-sqlite.test.ts
 * checks): its log rows and compaction, restart, locking and integrity checks, durability across
 * kill -9, file permissions, and recovery from the NOSPACE alarm.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pino from 'pino';
import { StorageError } from '../../src/storage/backend.js';
import { openSqliteBackend, prefixUpperBound, startCompactor, type SqliteBackend } from '../../src/storage/sqlite.js';
import { rejectsWith } from './backend-contract.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-storage-'));
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

let dbCounter = 0;
function tempDbFile(): string {
  return path.join(tmpRoot, `store-${++dbCounter}`, 'berth.db');
}

const silent = pino({ level: 'silent' });
const open = (file = tempDbFile()): SqliteBackend => openSqliteBackend({ file, logger: silent });

/** What a synchronous step (opening a store) threw, failing unless it is a StorageError with that code. */
function throwsStorage(fn: () => unknown, code: StorageError['code']): StorageError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof StorageError, `expected StorageError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

describe('sqlite backend: beyond the contract', () => {
  test('prefix upper bounds work on code points and skip surrogates', () => {
    assert.equal(prefixUpperBound(''), undefined);
    assert.equal(prefixUpperBound('/pods/'), '/pods0');
    assert.equal(prefixUpperBound('a\u{10ffff}'), 'b');
    assert.equal(prefixUpperBound('a\ud7ff'), 'a\ue000');
  });

  test('a list at a revision not reached yet reads the latest state', async () => {
    const s = open();
    try {
      await s.create('/p/a', 'a1');
      assert.equal((await s.list('/p/', { revision: 999 })).revision, 1);
    } finally {
      s.close();
    }
  });

  test('a refused write under the size cap leaves no partial record, also after reopening', async () => {
    const file = tempDbFile();
    const s = openSqliteBackend({ file, logger: silent, maxSizeBytes: 256 * 1024 });
    let failedAt = -1;
    try {
      const chunk = 'z'.repeat(60 * 1024);
      for (let i = 0; i < 50; i++) {
        try {
          await s.create(`/full/${i}`, chunk);
        } catch (err) {
          assert.ok(err instanceof StorageError && err.code === 'NoSpace', String(err));
          failedAt = i;
          break;
        }
      }
      assert.ok(failedAt > 0, 'the size cap should be reached');
      await s.delete('/full/0');
      assert.equal(await s.currentRevision(), failedAt + 1);
    } finally {
      s.close();
    }
    const reopened = open(file);
    try {
      assert.equal(await reopened.count('/full/'), failedAt - 1);
      assert.equal(await reopened.get(`/full/${failedAt}`), undefined);
    } finally {
      reopened.close();
    }
  });

  test('closing a watcher removes it from the fan-out', async () => {
    const s = open();
    try {
      const w = await s.watch('/', { fromRevision: 0, onEvent: () => {} });
      assert.equal(s.watcherCount(), 1);
      w.close();
      assert.equal(s.watcherCount(), 0);
    } finally {
      s.close();
    }
  });
});

describe('sqlite backend: compaction and restart', () => {
  test('compaction bounds the log: 5000 writes to one key leave one row', async () => {
    const s = open();
    try {
      let kv = await s.create('/hot', '0');
      for (let i = 1; i < 5000; i++) kv = await s.update('/hot', String(i), kv.modRevision);
      for (let i = 0; i < 50; i++) await s.create(`/gone/${i}`, 'x');
      for (let i = 0; i < 50; i++) await s.delete(`/gone/${i}`);
      assert.equal(s.logRowCount(), 5100);
      await s.compact(await s.currentRevision());
      assert.equal(s.logRowCount(), 1, 'only the live value remains');
      assert.equal((await s.get('/hot'))?.value, '4999');
      // compacting again, or backwards, is a no-op
      await s.compact(10);
      assert.equal(s.compactedRevision(), 5100);
    } finally {
      s.close();
    }
  });

  test('startCompactor compacts to the previous tick, keeping the newest revisions', async () => {
    const s = open();
    const stop = startCompactor(s, { intervalMs: 15, keepRevisions: 10, logger: silent });
    try {
      let kv = await s.create('/auto', '0');
      for (let i = 1; i < 300; i++) kv = await s.update('/auto', String(i), kv.modRevision);
      const deadline = Date.now() + 2000;
      // Writes wait for their fsync, so the compactor's ticks fall among them: wait for a tick after the last one.
      while ((s.compactedRevision() === 0 || s.logRowCount() > 11) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(s.compactedRevision() > 0, 'compacted');
      assert.ok(s.compactedRevision() <= (await s.currentRevision()) - 10, 'keeps the newest revisions');
      assert.ok(s.logRowCount() <= 11);
    } finally {
      stop();
      s.close();
    }
  });

  test('reopen keeps data, compacted revision and revision, even when compaction removed the newest row', async () => {
    const file = tempDbFile();
    const first = open(file);
    await first.create('/keep/a', 'a');
    await first.create('/keep/b', 'b');
    await first.update('/keep/a', 'a2', 1);
    await first.create('/keep/tmp', 't');
    await first.delete('/keep/tmp'); // revision 5, a tombstone: the newest row
    await first.compact(5);
    assert.equal(first.logRowCount(), 2);
    first.close();
    await rejectsWith(first.get('/keep/a'), 'Failed');

    const second = open(file);
    try {
      assert.equal(await second.currentRevision(), 5, 'revision does not go backwards');
      assert.equal(second.compactedRevision(), 5);
      assert.deepEqual((await second.list('/keep/')).items.map((i) => `${i.key}=${i.value}@${i.modRevision}`), ['/keep/a=a2@3', '/keep/b=b@2']);
      await rejectsWith(second.list('/keep/', { revision: 4 }), 'Compacted');
      assert.equal((await second.create('/keep/c', 'c')).modRevision, 6);
    } finally {
      second.close();
    }
  });

  test('a second process cannot open a store in use; a non-database file fails naming the file', () => {
    const file = tempDbFile();
    const s = open(file);
    try {
      const locked = throwsStorage(
        () => openSqliteBackend({ file, logger: silent, busyTimeoutMs: 50 }),
        'Failed',
      );
      assert.match(locked.message, new RegExp(file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    } finally {
      s.close();
    }
    const junk = path.join(tmpRoot, 'junk.db');
    fs.writeFileSync(junk, 'this is not a database '.repeat(400));
    const err = throwsStorage(() => openSqliteBackend({ file: junk, logger: silent }), 'Failed');
    assert.ok(err.message.includes(junk), err.message);
  });

  test('a damaged database fails integrity check at open with an error naming the file', async () => {
    const file = tempDbFile();
    const s = open(file);
    for (let i = 0; i < 2000; i++) await s.create(`/dmg/${String(i).padStart(5, '0')}`, 'v'.repeat(50));
    s.close();
    const bytes = fs.readFileSync(file);
    const pageSize = 4096;
    const pages = Math.floor(bytes.length / pageSize);
    for (let p = Math.floor(pages / 2); p < pages; p += 3) bytes.fill(0x41, p * pageSize + 200, p * pageSize + 400);
    fs.writeFileSync(file, bytes);
    const err = throwsStorage(() => open(file), 'Failed');
    assert.ok(err.message.includes(file), err.message);
    assert.match(err.message, /integrity check failed|malformed/);
    assert.ok(err.message.length < 1000, 'the report is bounded');
  });

  test('crash: every write acknowledged before kill -9 is present after reopen', async () => {
    const file = tempDbFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const fixture = fileURLToPath(new URL('./fixtures/storage-writer.js', import.meta.url));
    const child = spawn(process.execPath, [fixture, file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`writer never became ready: ${err}`)), 4000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.startsWith('ready\n')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('close', () => reject(new Error(`writer exited early: ${err}`)));
    });
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');

    // Only complete lines were acknowledged; a torn last line is a write in flight.
    const lines = out.slice(0, out.lastIndexOf('\n')).split('\n').slice(1);
    const creates = lines.filter((l) => l.startsWith('create '));
    const updates = lines.filter((l) => l.startsWith('update '));
    assert.ok(creates.length > 10, `writer made progress (${creates.length} creates)`);

    const s = open(file); // runs integrity_check
    try {
      for (const line of creates) {
        const [, key, rev] = line.split(' ');
        const kv = await s.get(key!);
        assert.ok(kv, `acknowledged ${key} is missing`);
        assert.equal(kv.modRevision, Number(rev));
      }
      const lastUpdate = updates[updates.length - 1]!.split(' ');
      const counter = (await s.get('/crash/counter'))!;
      assert.ok(counter.modRevision >= Number(lastUpdate[2]));
      assert.ok(Number(counter.value) >= Number(lastUpdate[3]));
      const maxAcked = Math.max(...lines.map((l) => Number(l.split(' ')[2])));
      assert.ok((await s.currentRevision()) >= maxAcked);
      assert.ok((await s.create('/crash/after', 'x')).modRevision > maxAcked);
    } finally {
      s.close();
    }
    const raw = new Database(file, { readonly: true });
    try {
      assert.equal(raw.pragma('integrity_check', { simple: true }), 'ok');
    } finally {
      raw.close();
    }
  });
});

describe('sqlite backend: file permissions', () => {
  test('the database and its WAL are readable by the owner only, also when an older file was 0644', async () => {
    const file = tempDbFile();
    const b = open(file);
    await b.create('/registry/core/configmaps/default/a', '{"data":1}');
    const mode = (f: string) => (fs.statSync(f).mode & 0o777).toString(8);
    assert.equal(mode(file), '600');
    assert.equal(mode(`${file}-wal`), '600');
    b.close();
    fs.chmodSync(file, 0o644);
    const reopened = open(file);
    await reopened.create('/registry/core/configmaps/default/b', '{"data":2}');
    assert.equal(mode(file), '600');
    for (const f of [`${file}-wal`, `${file}-shm`]) if (fs.existsSync(f)) assert.equal(mode(f), '600', f);
    reopened.close();
  });
});

describe('sqlite backend: NOSPACE alarm', () => {
  // max_page_count fills the store the way a full disk does (SQLITE_FULL), without a filesystem to fill.
  const capped = () => openSqliteBackend({ file: tempDbFile(), logger: silent, maxSizeBytes: 2 * 1024 * 1024 });
  const value = (i: number) => JSON.stringify({ i, pad: 'p'.repeat(100_000) });

  test('once full: the alarm is raised, and writes resume by themselves once deletes have freed the space', async () => {
    const b = capped();
    let stored = 0;
    let refused: StorageError | undefined;
    for (; stored < 100; stored++) {
      try {
        await b.create(`/registry/core/configmaps/default/c${stored}`, value(stored));
      } catch (err) {
        refused = err as StorageError;
        break;
      }
    }
    assert.ok(refused instanceof StorageError && refused.code === 'NoSpace', `expected NoSpace after ${stored} creates, got ${String(refused)}`);
    assert.match(refused.message, /database space exceeded/);
    assert.ok(stored >= 5, `only ${stored} values fit`);
    assert.equal(b.spaceAlarm(), true);
    await rejectsWith(b.create('/registry/core/configmaps/default/tiny', '{}'), 'NoSpace');

    const revisionBefore = await b.currentRevision();
    for (let i = 0; i < stored && b.spaceAlarm(); i++) await b.delete(`/registry/core/configmaps/default/c${i}`);
    assert.equal(b.spaceAlarm(), false, 'deleting every value did not clear the alarm');
    assert.ok((await b.currentRevision()) > revisionBefore);
    const created = await b.create('/registry/core/configmaps/default/after', value(-1));
    assert.equal((await b.get('/registry/core/configmaps/default/after'))!.modRevision, created.modRevision);
    b.close();
  });

  test('a delete that itself meets the full store raises the alarm and still succeeds', async () => {
    const file = tempDbFile();
    const opts = { file, maxSizeBytes: 256 * 1024 };
    const filler = openSqliteBackend({ ...opts, logger: silent });
    let n = 0;
    // Small rows fill every page to the brim, so a tombstone needs a new page.
    for (; n < 10_000; n++) {
      try {
        await filler.create(`/registry/core/configmaps/default/s${String(n).padStart(5, '0')}`, JSON.stringify({ n, pad: 'q'.repeat(900) }));
      } catch (err) {
        assert.ok(err instanceof StorageError && err.code === 'NoSpace', String(err));
        break;
      }
    }
    filler.close();
    // Top up the last bits of room inside existing pages with tiny rows, so that any insert needs a new page.
    const raw = new Database(file);
    raw.pragma(`max_page_count = ${raw.pragma('page_count', { simple: true }) as number}`);
    const pad = raw.prepare("INSERT INTO kv (name, created, deleted, create_revision, prev_revision, value) VALUES (?, 1, 0, 0, 0, '')");
    for (let i = 0; i < 100_000; i++) {
      try {
        pad.run(`/pad/${i}`);
      } catch (err) {
        assert.equal((err as { code?: string }).code, 'SQLITE_FULL', String(err));
        break;
      }
    }
    raw.close();
    // A fresh process on the full store: no alarm yet, so the delete is the first write to meet SQLITE_FULL.
    const warnings: string[] = [];
    const logger = { warn: (_o: object, msg?: string) => void warnings.push(msg ?? ''), info: () => {} };
    const b = openSqliteBackend({ ...opts, logger });
    assert.equal(b.spaceAlarm(), false);
    const key = `/registry/core/configmaps/default/s${String(n - 1).padStart(5, '0')}`;
    const deleted = await b.delete(key);
    assert.equal(JSON.parse(deleted.value).n, n - 1);
    assert.equal(await b.get(key), undefined);
    assert.ok(warnings.some((w) => w.startsWith('storage alarm NOSPACE raised')), `the delete did not meet a full store: ${JSON.stringify(warnings)}`);
    b.close();
  });
});
