import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pino from 'pino';
import { StorageError, type StoreEvent, type StorageErrorCode } from '../../src/storage/backend.js';
import {
  MAX_VALUE_BYTES,
  openSqliteBackend,
  prefixUpperBound,
  startCompactor,
  type SqliteBackend,
} from '../../src/storage/sqlite.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-storage-'));
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

let dbCounter = 0;
function tempDbFile(): string {
  return path.join(tmpRoot, `store-${++dbCounter}`, 'berth.db');
}

const silent = pino({ level: 'silent' });
const open = (file = tempDbFile()): SqliteBackend => openSqliteBackend({ file, logger: silent });

function throwsStorage(fn: () => unknown, code: StorageErrorCode): StorageError {
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

/** Lets queued microtasks (watch delivery) run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const summarize = (ev: StoreEvent): string => `${ev.type} ${ev.kv.key}@${ev.kv.modRevision}=${ev.kv.value}`;

describe('sqlite backend: key semantics', () => {
  test('create, get, update, delete and their errors', () => {
    const s = open();
    try {
      assert.equal(s.currentRevision(), 0);
      assert.equal(s.get('/a'), undefined);

      const a1 = s.create('/a', 'v1');
      assert.deepEqual(a1, { key: '/a', value: 'v1', createRevision: 1, modRevision: 1 });
      assert.deepEqual(s.get('/a'), a1);
      const dup = throwsStorage(() => s.create('/a', 'again'), 'AlreadyExists');
      assert.deepEqual(dup.current, a1);

      const a2 = s.update('/a', 'v2', 1);
      assert.deepEqual(a2, { key: '/a', value: 'v2', createRevision: 1, modRevision: 2 });
      const conflict = throwsStorage(() => s.update('/a', 'v3', 1), 'Conflict');
      assert.deepEqual(conflict.current, a2);
      throwsStorage(() => s.update('/missing', 'x', 1), 'NotFound');

      throwsStorage(() => s.delete('/a', 1), 'Conflict');
      const deleted = s.delete('/a', 2);
      assert.deepEqual(deleted, { ...a2, modRevision: 3 }, 'delete returns the value as it was, at the deletion revision');
      assert.equal(s.currentRevision(), 3);
      assert.equal(s.get('/a'), undefined);
      throwsStorage(() => s.delete('/a'), 'NotFound');
      throwsStorage(() => s.update('/a', 'x', 3), 'NotFound');

      const again = s.create('/a', 'reborn');
      assert.deepEqual(again, { key: '/a', value: 'reborn', createRevision: 4, modRevision: 4 });
      s.delete('/a'); // unconditional
      assert.equal(s.get('/a'), undefined);
      assert.equal(s.currentRevision(), 5);
    } finally {
      s.close();
    }
  });

  test('failed writes do not consume revisions; revisions increase by one per write', () => {
    const s = open();
    try {
      const seen: number[] = [];
      for (let i = 0; i < 20; i++) {
        seen.push(s.create(`/k/${i}`, String(i)).modRevision);
        throwsStorage(() => s.create(`/k/${i}`, 'dup'), 'AlreadyExists');
      }
      assert.deepEqual(seen, Array.from({ length: 20 }, (_, i) => i + 1));
      assert.equal(s.currentRevision(), 20);
    } finally {
      s.close();
    }
  });

  test('values over 1.5 MiB are rejected with TooLarge; exactly 1.5 MiB is accepted', () => {
    const s = open();
    try {
      const limit = 'x'.repeat(MAX_VALUE_BYTES);
      s.create('/big/ok', limit);
      throwsStorage(() => s.create('/big/no', limit + 'y'), 'TooLarge');
      // multi-byte characters count as bytes, not UTF-16 units
      throwsStorage(() => s.update('/big/ok', 'é'.repeat(MAX_VALUE_BYTES / 2 + 1), 1), 'TooLarge');
      assert.equal(s.currentRevision(), 1);
      assert.equal(s.get('/big/no'), undefined);
    } finally {
      s.close();
    }
  });

  test('a disk-full failure is StorageError NoSpace and leaves no partial record', () => {
    const file = tempDbFile();
    const s = openSqliteBackend({ file, logger: silent, maxSizeBytes: 256 * 1024 });
    let failedAt = -1;
    try {
      const chunk = 'z'.repeat(60 * 1024);
      for (let i = 0; i < 50; i++) {
        try {
          s.create(`/full/${i}`, chunk);
        } catch (err) {
          assert.ok(err instanceof StorageError && err.code === 'NoSpace', String(err));
          failedAt = i;
          break;
        }
      }
      assert.ok(failedAt > 0, 'the size cap should be reached');
      assert.equal(s.currentRevision(), failedAt);
      assert.equal(s.get(`/full/${failedAt}`), undefined);
      assert.equal(s.count('/full/'), failedAt);
      // the store stays usable after the failure
      s.delete('/full/0');
      assert.equal(s.currentRevision(), failedAt + 1);
    } finally {
      s.close();
    }
    const reopened = open(file);
    try {
      assert.equal(reopened.count('/full/'), failedAt - 1);
    } finally {
      reopened.close();
    }
  });
});

describe('sqlite backend: list', () => {
  test('prefix ranges are exact for keys containing _ and %', () => {
    const s = open();
    try {
      for (const k of ['/a_b/1', '/aXb/1', '/a%b/1', '/a%/2', '/ab/1', '/a_/3', '/b/1']) s.create(k, k);
      const keys = (p: string): string[] => s.list(p).items.map((i) => i.key);
      assert.deepEqual(keys('/a_'), ['/a_/3', '/a_b/1']);
      assert.deepEqual(keys('/a%'), ['/a%/2', '/a%b/1']);
      assert.deepEqual(keys('/a'), ['/a%/2', '/a%b/1', '/aXb/1', '/a_/3', '/a_b/1', '/ab/1']);
      assert.deepEqual(keys(''), ['/a%/2', '/a%b/1', '/aXb/1', '/a_/3', '/a_b/1', '/ab/1', '/b/1']);
      assert.equal(s.count('/a_'), 2);
      assert.equal(s.count(''), 7);
      assert.equal(prefixUpperBound(''), undefined);
      assert.equal(prefixUpperBound('/pods/'), '/pods0');
      assert.equal(prefixUpperBound('a\u{10ffff}'), 'b');
      assert.equal(prefixUpperBound('a\ud7ff'), 'a\ue000');
    } finally {
      s.close();
    }
  });

  test('list as of a past revision shows the state then', () => {
    const s = open();
    try {
      s.create('/p/a', 'a1');
      s.create('/p/b', 'b1');
      const r = s.currentRevision();
      s.update('/p/a', 'a2', 1);
      s.delete('/p/b');
      s.create('/p/c', 'c1');
      const then = s.list('/p/', { revision: r });
      assert.equal(then.revision, r);
      assert.deepEqual(
        then.items.map((i) => `${i.key}=${i.value}@${i.modRevision}`),
        ['/p/a=a1@1', '/p/b=b1@2'],
      );
      const now = s.list('/p/');
      assert.equal(now.revision, 5);
      assert.deepEqual(now.items.map((i) => `${i.key}=${i.value}`), ['/p/a=a2', '/p/c=c1']);
      // asking for a revision that does not exist yet reads the present
      assert.equal(s.list('/p/', { revision: 999 }).revision, 5);
    } finally {
      s.close();
    }
  });

  test('paging with limit + startAfter at a fixed revision is one consistent snapshot', () => {
    const s = open();
    try {
      for (let i = 0; i < 10; i++) s.create(`/pg/${i}`, `orig${i}`);
      s.create('/pgz/outside', 'x');
      const first = s.list('/pg/', { limit: 3 });
      assert.equal(first.items.length, 3);
      assert.equal(first.more, true);
      assert.equal(first.remaining, 7);
      const snapshot = first.revision;

      const collected = [...first.items];
      let cursor = first.items[2]!.key;
      let step = 0;
      for (;;) {
        // writes between pages must not leak into the snapshot
        s.update(`/pg/${9 - step}`, 'changed', s.get(`/pg/${9 - step}`)!.modRevision);
        s.delete(`/pg/${4 + step}`);
        s.create(`/pg/${5 + step}x`, 'new');
        step++;
        const page = s.list('/pg/', { limit: 3, startAfter: cursor, revision: snapshot });
        assert.equal(page.revision, snapshot);
        collected.push(...page.items);
        if (!page.more) {
          assert.equal(page.remaining, 0);
          break;
        }
        assert.equal(page.remaining, 10 - collected.length);
        cursor = page.items[page.items.length - 1]!.key;
      }
      assert.deepEqual(
        collected.map((i) => `${i.key}=${i.value}`),
        Array.from({ length: 10 }, (_, i) => `/pg/${i}=orig${i}`),
      );
      // an exact-fit last page reports no more
      const all = s.list('/pg/', { limit: 10, revision: snapshot });
      assert.equal(all.more, false);
      assert.equal(all.items.length, 10);
    } finally {
      s.close();
    }
  });

  test('list at a compacted revision fails with Compacted; at the compacted revision it works', () => {
    const s = open();
    try {
      s.create('/c/a', '1');
      s.update('/c/a', '2', 1);
      s.create('/c/b', '1');
      s.update('/c/a', '3', 2);
      s.compact(3);
      assert.equal(s.compactedRevision(), 3);
      throwsStorage(() => s.list('/c/', { revision: 2 }), 'Compacted');
      assert.deepEqual(
        s.list('/c/', { revision: 3 }).items.map((i) => `${i.key}=${i.value}`),
        ['/c/a=2', '/c/b=1'],
      );
      assert.deepEqual(s.list('/c/').items.map((i) => `${i.key}=${i.value}`), ['/c/a=3', '/c/b=1']);
    } finally {
      s.close();
    }
  });
});

describe('sqlite backend: watch', () => {
  test('replays history after fromRevision, then live events, in order, exactly once, prefix-filtered', async () => {
    const s = open();
    try {
      s.create('/w/a', 'a1'); // 1
      s.create('/other/x', 'x1'); // 2
      s.update('/w/a', 'a2', 1); // 3
      s.create('/w/b', 'b1'); // 4
      s.delete('/w/a'); // 5

      const got: StoreEvent[] = [];
      const watcher = s.watch('/w/', { fromRevision: 1, onEvent: (ev) => got.push(ev) });
      s.create('/w/c', 'c1'); // 6, committed before the backlog is delivered
      s.create('/other/y', 'y1'); // 7
      await settle();
      s.update('/w/b', 'b2', 4); // 8
      await settle();

      assert.deepEqual(got.map(summarize), [
        'update /w/a@3=a2',
        'create /w/b@4=b1',
        'delete /w/a@5=a2',
        'create /w/c@6=c1',
        'update /w/b@8=b2',
      ]);
      assert.deepEqual(got[0]!.prev, { key: '/w/a', value: 'a1', createRevision: 1, modRevision: 1 });
      assert.deepEqual(got[2]!.prev, { key: '/w/a', value: 'a2', createRevision: 1, modRevision: 3 });
      assert.equal(got[2]!.kv.createRevision, 1);
      assert.deepEqual(got[4]!.prev, { key: '/w/b', value: 'b1', createRevision: 4, modRevision: 4 });

      watcher.close();
      watcher.close();
      s.create('/w/d', 'd1');
      await settle();
      assert.equal(got.length, 5, 'no events after close');
      assert.equal(s.watcherCount(), 0);
    } finally {
      s.close();
    }
  });

  test('from the current revision gets only live events; a future fromRevision skips until then', async () => {
    const s = open();
    try {
      s.create('/f/a', '1');
      const live: number[] = [];
      const future: number[] = [];
      s.watch('/f/', { fromRevision: s.currentRevision(), onEvent: (ev) => live.push(ev.kv.modRevision) });
      s.watch('/f/', { fromRevision: 3, onEvent: (ev) => future.push(ev.kv.modRevision) });
      s.create('/f/b', '1');
      s.create('/f/c', '1');
      s.create('/f/d', '1');
      await settle();
      assert.deepEqual(live, [2, 3, 4]);
      assert.deepEqual(future, [4]);
    } finally {
      s.close();
    }
  });

  test('handlers that write or throw keep every watcher in strict revision order', async () => {
    const s = open();
    try {
      const reactor: string[] = [];
      const observer: number[] = [];
      // reacts to each create by writing a status key, as a controller would
      s.watch('/r/', {
        fromRevision: 0,
        onEvent: (ev) => {
          reactor.push(summarize(ev));
          if (ev.type === 'create' && ev.kv.key.startsWith('/r/obj')) s.create(`/r/status-${ev.kv.key.slice(3)}`, 'ok');
        },
      });
      s.watch('/r/', {
        fromRevision: 0,
        onEvent: () => {
          throw new Error('broken handler');
        },
      });
      s.watch('', { fromRevision: 0, onEvent: (ev) => observer.push(ev.kv.modRevision) });
      s.create('/r/obj1', '1');
      s.create('/r/obj2', '1');
      await settle();
      assert.deepEqual(observer, [1, 2, 3, 4]);
      assert.deepEqual(reactor, [
        'create /r/obj1@1=1',
        'create /r/obj2@2=1',
        'create /r/status-obj1@3=ok',
        'create /r/status-obj2@4=ok',
      ]);
    } finally {
      s.close();
    }
  });

  test('watch from a compacted revision fails with Compacted; from the compacted revision it works', async () => {
    const s = open();
    try {
      s.create('/wc/a', '1'); // 1
      s.update('/wc/a', '2', 1); // 2
      s.update('/wc/a', '3', 2); // 3
      s.create('/wc/b', '1'); // 4
      s.delete('/wc/b'); // 5
      s.update('/wc/a', '4', 3); // 6
      s.compact(4);
      throwsStorage(() => s.watch('/wc/', { fromRevision: 3, onEvent: () => {} }), 'Compacted');
      const got: StoreEvent[] = [];
      s.watch('/wc/', { fromRevision: 4, onEvent: (ev) => got.push(ev) });
      await settle();
      assert.deepEqual(got.map(summarize), ['delete /wc/b@5=1', 'update /wc/a@6=4']);
      assert.equal(got[0]!.prev?.modRevision, 4, 'prev of an uncompacted event survives compaction');
      assert.equal(got[1]!.prev?.value, '3');
    } finally {
      s.close();
    }
  });
});

describe('sqlite backend: compaction and restart', () => {
  test('compaction bounds the log: 5000 writes to one key leave one row', () => {
    const s = open();
    try {
      let kv = s.create('/hot', '0');
      for (let i = 1; i < 5000; i++) kv = s.update('/hot', String(i), kv.modRevision);
      for (let i = 0; i < 50; i++) s.create(`/gone/${i}`, 'x');
      for (let i = 0; i < 50; i++) s.delete(`/gone/${i}`);
      assert.equal(s.logRowCount(), 5100);
      s.compact(s.currentRevision());
      assert.equal(s.logRowCount(), 1, 'only the live value remains');
      assert.equal(s.get('/hot')?.value, '4999');
      assert.equal(s.count('/gone/'), 0);
      // compacting again, or backwards, is a no-op
      s.compact(10);
      assert.equal(s.compactedRevision(), 5100);
    } finally {
      s.close();
    }
  });

  test('startCompactor compacts to the previous tick, keeping the newest revisions', async () => {
    const s = open();
    const stop = startCompactor(s, { intervalMs: 15, keepRevisions: 10, logger: silent });
    try {
      let kv = s.create('/auto', '0');
      for (let i = 1; i < 300; i++) kv = s.update('/auto', String(i), kv.modRevision);
      const deadline = Date.now() + 2000;
      while (s.compactedRevision() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(s.compactedRevision() > 0, 'compacted');
      assert.ok(s.compactedRevision() <= s.currentRevision() - 10, 'keeps the newest revisions');
      assert.ok(s.logRowCount() <= 11);
    } finally {
      stop();
      s.close();
    }
  });

  test('reopen keeps data, compacted revision and revision, even when compaction removed the newest row', () => {
    const file = tempDbFile();
    const first = open(file);
    first.create('/keep/a', 'a');
    first.create('/keep/b', 'b');
    first.update('/keep/a', 'a2', 1);
    first.create('/keep/tmp', 't');
    first.delete('/keep/tmp'); // revision 5, a tombstone: the newest row
    first.compact(5);
    assert.equal(first.logRowCount(), 2);
    first.close();
    throwsStorage(() => first.get('/keep/a'), 'Failed');

    const second = open(file);
    try {
      assert.equal(second.currentRevision(), 5, 'revision does not go backwards');
      assert.equal(second.compactedRevision(), 5);
      assert.deepEqual(second.list('/keep/').items.map((i) => `${i.key}=${i.value}@${i.modRevision}`), [
        '/keep/a=a2@3',
        '/keep/b=b@2',
      ]);
      throwsStorage(() => second.list('/keep/', { revision: 4 }), 'Compacted');
      assert.equal(second.create('/keep/c', 'c').modRevision, 6);
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

  test('a damaged database fails integrity check at open with an error naming the file', () => {
    const file = tempDbFile();
    const s = open(file);
    for (let i = 0; i < 2000; i++) s.create(`/dmg/${String(i).padStart(5, '0')}`, 'v'.repeat(50));
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
        const kv = s.get(key!);
        assert.ok(kv, `acknowledged ${key} is missing`);
        assert.equal(kv.modRevision, Number(rev));
      }
      const lastUpdate = updates[updates.length - 1]!.split(' ');
      const counter = s.get('/crash/counter')!;
      assert.ok(counter.modRevision >= Number(lastUpdate[2]));
      assert.ok(Number(counter.value) >= Number(lastUpdate[3]));
      const maxAcked = Math.max(...lines.map((l) => Number(l.split(' ')[2])));
      assert.ok(s.currentRevision() >= maxAcked);
      assert.ok(s.create('/crash/after', 'x').modRevision > maxAcked);
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
  test('the database and its WAL are readable by the owner only, also when an older file was 0644', () => {
    const file = tempDbFile();
    const b = open(file);
    b.create('/registry/core/configmaps/default/a', '{"data":1}');
    const mode = (f: string) => (fs.statSync(f).mode & 0o777).toString(8);
    assert.equal(mode(file), '600');
    assert.equal(mode(`${file}-wal`), '600');
    b.close();
    fs.chmodSync(file, 0o644);
    const reopened = open(file);
    reopened.create('/registry/core/configmaps/default/b', '{"data":2}');
    assert.equal(mode(file), '600');
    for (const f of [`${file}-wal`, `${file}-shm`]) if (fs.existsSync(f)) assert.equal(mode(f), '600', f);
    reopened.close();
  });
});

describe('sqlite backend: NOSPACE alarm', () => {
  // max_page_count fills the store the way a full disk does (SQLITE_FULL), without a filesystem to fill.
  const capped = () => openSqliteBackend({ file: tempDbFile(), logger: silent, maxSizeBytes: 2 * 1024 * 1024 });
  const value = (i: number) => JSON.stringify({ i, pad: 'p'.repeat(100_000) });

  test('once full: creates and updates are refused with NoSpace, reads and deletes work, and writes resume after deletes', () => {
    const b = capped();
    let stored = 0;
    let refused: StorageError | undefined;
    for (; stored < 100; stored++) {
      try {
        b.create(`/registry/core/configmaps/default/c${stored}`, value(stored));
      } catch (err) {
        refused = err as StorageError;
        break;
      }
    }
    assert.ok(refused instanceof StorageError && refused.code === 'NoSpace', `expected NoSpace after ${stored} creates, got ${String(refused)}`);
    assert.match(refused.message, /database space exceeded/);
    assert.ok(stored >= 5, `only ${stored} values fit`);
    assert.equal(b.spaceAlarm(), true);
    const first = b.get('/registry/core/configmaps/default/c0')!;
    assert.equal(JSON.parse(first.value).i, 0);
    throwsStorage(() => b.update(first.key, '{"small":true}', first.modRevision), 'NoSpace');
    throwsStorage(() => b.create('/registry/core/configmaps/default/tiny', '{}'), 'NoSpace');
    assert.equal(b.list('/registry/core/configmaps/').items.length, stored);

    const revisionBefore = b.currentRevision();
    for (let i = 0; i < stored && b.spaceAlarm(); i++) b.delete(`/registry/core/configmaps/default/c${i}`);
    assert.equal(b.spaceAlarm(), false, 'deleting every value did not clear the alarm');
    assert.ok(b.currentRevision() > revisionBefore);
    const created = b.create('/registry/core/configmaps/default/after', value(-1));
    assert.equal(b.get('/registry/core/configmaps/default/after')!.modRevision, created.modRevision);
    b.close();
  });

  test('a delete that itself meets the full store raises the alarm and still succeeds', () => {
    const file = tempDbFile();
    const opts = { file, maxSizeBytes: 256 * 1024 };
    const filler = openSqliteBackend({ ...opts, logger: silent });
    let n = 0;
    // Small rows fill every page to the brim, so a tombstone needs a new page.
    for (; n < 10_000; n++) {
      try {
        filler.create(`/registry/core/configmaps/default/s${String(n).padStart(5, '0')}`, JSON.stringify({ n, pad: 'q'.repeat(900) }));
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
    const deleted = b.delete(key);
    assert.equal(JSON.parse(deleted.value).n, n - 1);
    assert.equal(b.get(key), undefined);
    assert.ok(warnings.some((w) => w.startsWith('storage alarm NOSPACE raised')), `the delete did not meet a full store: ${JSON.stringify(warnings)}`);
    b.close();
  });
});
