/**
 * The storage Backend contract (src/storage/backend.ts) as one test suite, parameterised by backend:
 * every backend — SQLite in memory and on disk, the encrypting TransformingBackend, and later etcd —
 * runs `backendContract` against fresh stores of its own. Only behaviour the contract documents is
 * checked here; what one backend does beyond it (SQLite's files, reserve and alarm recovery) is
 * tested with that backend.
 *
 * Events are awaited with `until` rather than one event-loop turn, so a networked backend, whose
 * events arrive later, runs the same assertions.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_VALUE_BYTES, StorageError, type Backend, type StorageErrorCode, type StoreEvent } from '../../src/storage/backend.js';

export interface BackendUnderTest {
  /** names the describe block */
  name: string;
  /** a fresh, empty store */
  open(): Promise<Backend>;
  /** a fresh, empty store that runs out of space within a few megabytes (refusing with NoSpace) */
  openSmall(): Promise<Backend>;
  /** the largest plain value the store accepts (the limit applies to the stored form); default MAX_VALUE_BYTES */
  largestValueBytes?: number;
  /**
   * Stores from `open` share one revision counter with other stores (etcd: one member serves many
   * key prefixes), so a fresh store starts at whatever revision the counter has reached. Every
   * revision below is then relative to the revision the store started at; otherwise a fresh store
   * must start at 0.
   */
  sharedRevisions?: boolean;
}

/** Resolves with what `promise` rejected with, failing unless it is a StorageError with that code. */
export async function rejectsWith(promise: Promise<unknown>, code: StorageErrorCode): Promise<StorageError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof StorageError, `expected StorageError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

/** Waits (bounded) until `done()` holds; events of a networked store arrive after a round trip. */
export async function until(done: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

export const summarize = (ev: StoreEvent): string => `${ev.type} ${ev.kv.key}@${ev.kv.modRevision}=${ev.kv.value}`;

export function backendContract(sut: BackendUnderTest): void {
  /**
   * Runs `body` on a fresh store and closes it whatever happens. `r(n)` is the revision of the
   * store's n-th write (n itself for a store of its own, which starts at 0).
   */
  const withStore = (body: (b: Backend, r: (n: number) => number) => Promise<void>, open = sut.open) => async () => {
    const b = await open();
    try {
      const base = await b.currentRevision();
      if (!sut.sharedRevisions) assert.equal(base, 0, 'a fresh store starts at revision 0');
      await body(b, (n) => base + n);
    } finally {
      b.close();
    }
  };

  describe(`backend contract: ${sut.name}`, () => {
    describe('keys and revisions', () => {
      test('create, get, update, delete and their errors; errors carry the current value', withStore(async (s, r) => {
        assert.equal(await s.currentRevision(), r(0));
        assert.equal(s.observedRevision(), r(0));
        assert.equal(await s.get('/a'), undefined);

        const a1 = await s.create('/a', 'v1');
        assert.deepEqual(a1, { key: '/a', value: 'v1', createRevision: r(1), modRevision: r(1) });
        assert.deepEqual(await s.get('/a'), a1);
        const dup = await rejectsWith(s.create('/a', 'again'), 'AlreadyExists');
        assert.deepEqual(dup.current, a1);

        const a2 = await s.update('/a', 'v2', r(1));
        assert.deepEqual(a2, { key: '/a', value: 'v2', createRevision: r(1), modRevision: r(2) });
        const conflict = await rejectsWith(s.update('/a', 'v3', r(1)), 'Conflict');
        assert.deepEqual(conflict.current, a2);
        await rejectsWith(s.update('/missing', 'x', r(1)), 'NotFound');

        const deleteConflict = await rejectsWith(s.delete('/a', r(1)), 'Conflict');
        assert.deepEqual(deleteConflict.current, a2);
        const deleted = await s.delete('/a', r(2));
        assert.deepEqual(deleted, { ...a2, modRevision: r(3) }, 'delete returns the value as it was, at the deletion revision');
        assert.equal(await s.currentRevision(), r(3));
        assert.equal(await s.get('/a'), undefined);
        await rejectsWith(s.delete('/a'), 'NotFound');
        await rejectsWith(s.update('/a', 'x', r(3)), 'NotFound');

        const again = await s.create('/a', 'reborn');
        assert.deepEqual(again, { key: '/a', value: 'reborn', createRevision: r(4), modRevision: r(4) }, 'a new incarnation has its own createRevision');
        await s.delete('/a'); // unconditional
        assert.equal(await s.get('/a'), undefined);
        assert.equal(await s.currentRevision(), r(5));
      }));

      test('failed writes do not consume revisions; revisions increase by one per write', withStore(async (s, r) => {
        const seen: number[] = [];
        for (let i = 0; i < 20; i++) {
          seen.push((await s.create(`/k/${i}`, String(i))).modRevision);
          await rejectsWith(s.create(`/k/${i}`, 'dup'), 'AlreadyExists');
          await rejectsWith(s.update(`/k/${i}`, 'stale', r(0)), 'Conflict');
        }
        assert.deepEqual(seen, Array.from({ length: 20 }, (_, i) => r(i + 1)));
        assert.equal(await s.currentRevision(), r(20));
      }));

      test('the observed revision follows the store: at or below the current one, and caught up once events are delivered', withStore(async (s, r) => {
        const seen: number[] = [];
        await s.watch('/', { fromRevision: r(0), onEvent: (ev) => seen.push(ev.kv.modRevision) });
        for (let i = 0; i < 5; i++) await s.create(`/o/${i}`, 'x');
        await until(() => seen.length === 5, 'five events');
        assert.ok(s.observedRevision() <= (await s.currentRevision()));
        await until(() => s.observedRevision() === r(5), 'the observed revision to reach the fifth write');
      }));

      test('waitObserved resolves once the stream reaches a revision, and false for one it does not reach in time', withStore(async (s, r) => {
        await s.create('/w/own', 'x');
        assert.equal(await s.waitObserved(r(1), 5000), true);
        assert.ok(s.observedRevision() >= r(1));
        assert.equal(await s.waitObserved((await s.currentRevision()) + 1000, 100), false);
      }));

      test('a keysOnly list has the keys and revisions of a full one, at the revision asked for', withStore(async (s, r) => {
        for (let i = 0; i < 5; i++) await s.create(`/ko/${i}`, `value-${i}`);
        await s.update('/ko/2', 'changed', r(3));
        await s.delete('/ko/4');
        const full = await s.list('/ko/', { revision: r(6) });
        const keys = await s.list('/ko/', { revision: r(6), keysOnly: true });
        assert.equal(keys.revision, r(6));
        assert.deepEqual(keys.items.map((kv) => [kv.key, kv.modRevision, kv.createRevision]), full.items.map((kv) => [kv.key, kv.modRevision, kv.createRevision]));
        const older = await s.list('/ko/', { revision: r(5), keysOnly: true });
        assert.deepEqual(older.items.map((kv) => [kv.key, kv.modRevision]), [['/ko/0', r(1)], ['/ko/1', r(2)], ['/ko/2', r(3)], ['/ko/3', r(4)], ['/ko/4', r(5)]]);
      }));

      test('modRevisionOf gives the live key revision without its value, and nothing for absent or deleted keys', withStore(async (s, r) => {
        const created = await s.create('/k', 'v1');
        assert.equal(await s.modRevisionOf('/k'), created.modRevision);
        const updated = await s.update('/k', 'v2', created.modRevision);
        assert.equal(await s.modRevisionOf('/k'), updated.modRevision);
        await s.delete('/k');
        assert.equal(await s.modRevisionOf('/k'), undefined);
        assert.equal(await s.modRevisionOf('/absent'), undefined);
      }));

      test('values over the limit are refused with TooLarge and leave no trace; the largest accepted value is stored whole', withStore(async (s, r) => {
        const largest = 'x'.repeat(sut.largestValueBytes ?? MAX_VALUE_BYTES);
        const ok = await s.create('/big/ok', largest);
        assert.equal((await s.get('/big/ok'))!.value.length, largest.length);
        await rejectsWith(s.create('/big/no', 'y'.repeat(MAX_VALUE_BYTES + 1)), 'TooLarge');
        // multi-byte characters count as bytes, not UTF-16 units
        await rejectsWith(s.update('/big/ok', 'é'.repeat(MAX_VALUE_BYTES / 2 + 1), ok.modRevision), 'TooLarge');
        assert.equal(await s.currentRevision(), r(1));
        assert.equal(await s.get('/big/no'), undefined);
      }));

      test('failures are rejections, never synchronous throws; a closed store fails with Failed', async () => {
        const s = await sut.open();
        await s.create('/x', '1');
        s.close();
        s.close(); // idempotent
        const pending = [s.get('/x'), s.list('/'), s.count('/'), s.create('/y', '1'), s.update('/x', '2', 1), s.delete('/x'), s.watch('/', { fromRevision: 0, onEvent: () => {} }), s.modRevisionOf('/x')];
        for (const p of pending) assert.ok(p instanceof Promise);
        for (const p of pending) await rejectsWith(p, 'Failed');
      });
    });

    describe('list', () => {
      test('prefix ranges are exact for keys containing _ and %; count agrees', withStore(async (s, r) => {
        for (const k of ['/a_b/1', '/aXb/1', '/a%b/1', '/a%/2', '/ab/1', '/a_/3', '/b/1']) await s.create(k, k);
        const keys = async (p: string): Promise<string[]> => (await s.list(p)).items.map((i) => i.key);
        assert.deepEqual(await keys('/a_'), ['/a_/3', '/a_b/1']);
        assert.deepEqual(await keys('/a%'), ['/a%/2', '/a%b/1']);
        assert.deepEqual(await keys('/a'), ['/a%/2', '/a%b/1', '/aXb/1', '/a_/3', '/a_b/1', '/ab/1']);
        assert.deepEqual(await keys(''), ['/a%/2', '/a%b/1', '/aXb/1', '/a_/3', '/a_b/1', '/ab/1', '/b/1']);
        assert.equal(await s.count('/a_'), 2);
        assert.equal(await s.count(''), 7);
        await s.delete('/b/1');
        assert.equal(await s.count(''), 6, 'deleted keys are not counted');
      }));

      test('list as of a past revision shows the state then; without one, the latest state and its revision', withStore(async (s, r) => {
        await s.create('/p/a', 'a1');
        await s.create('/p/b', 'b1');
        const snapshot = await s.currentRevision();
        await s.update('/p/a', 'a2', r(1));
        await s.delete('/p/b');
        await s.create('/p/c', 'c1');
        const then = await s.list('/p/', { revision: snapshot });
        assert.equal(then.revision, snapshot);
        assert.deepEqual(then.items.map((i) => `${i.key}=${i.value}@${i.modRevision}/${i.createRevision}`), [`/p/a=a1@${r(1)}/${r(1)}`, `/p/b=b1@${r(2)}/${r(2)}`]);
        const now = await s.list('/p/');
        assert.equal(now.revision, r(5));
        assert.equal(now.more, false);
        assert.deepEqual(now.items.map((i) => `${i.key}=${i.value}@${i.modRevision}/${i.createRevision}`), [`/p/a=a2@${r(3)}/${r(1)}`, `/p/c=c1@${r(5)}/${r(5)}`]);
      }));

      test('paging with limit + startAfter at a fixed revision is one consistent snapshot, with more and remaining', withStore(async (s, r) => {
        for (let i = 0; i < 10; i++) await s.create(`/pg/${i}`, `orig${i}`);
        await s.create('/pgz/outside', 'x');
        const first = await s.list('/pg/', { limit: 3 });
        assert.equal(first.items.length, 3);
        assert.equal(first.more, true);
        assert.equal(first.remaining, 7);
        const snapshot = first.revision;

        const collected = [...first.items];
        let cursor = first.items[2]!.key;
        for (let step = 0; ; step++) {
          // writes between pages must not leak into the snapshot
          const victim = `/pg/${9 - step}`;
          await s.update(victim, 'changed', (await s.get(victim))!.modRevision);
          await s.delete(`/pg/${4 + step}`);
          await s.create(`/pg/${5 + step}x`, 'new');
          const page = await s.list('/pg/', { limit: 3, startAfter: cursor, revision: snapshot });
          assert.equal(page.revision, snapshot);
          collected.push(...page.items);
          if (!page.more) {
            assert.equal(page.remaining, 0);
            break;
          }
          assert.equal(page.remaining, 10 - collected.length);
          cursor = page.items[page.items.length - 1]!.key;
        }
        assert.deepEqual(collected.map((i) => `${i.key}=${i.value}`), Array.from({ length: 10 }, (_, i) => `/pg/${i}=orig${i}`));
        const exactFit = await s.list('/pg/', { limit: 10, revision: snapshot });
        assert.equal(exactFit.more, false, 'an exact-fit last page reports no more');
        assert.equal(exactFit.items.length, 10);
      }));

      test('a list below the compacted revision fails with Compacted; at the compacted revision it works', withStore(async (s, r) => {
        await s.create('/c/a', '1'); // 1
        await s.update('/c/a', '2', r(1)); // 2
        await s.create('/c/b', '1'); // 3
        await s.update('/c/a', '3', r(2)); // 4
        await s.compact(r(3));
        const err = await rejectsWith(s.list('/c/', { revision: r(2) }), 'Compacted');
        if (err.compactedRevision !== undefined) assert.equal(err.compactedRevision, r(3));
        assert.deepEqual((await s.list('/c/', { revision: r(3) })).items.map((i) => `${i.key}=${i.value}`), ['/c/a=2', '/c/b=1']);
        assert.deepEqual((await s.list('/c/')).items.map((i) => `${i.key}=${i.value}`), ['/c/a=3', '/c/b=1']);
        await s.compact(r(2)); // backwards: a no-op
        assert.deepEqual((await s.list('/c/', { revision: r(3) })).items.length, 2);
      }));

      test('compaction keeps every live key at its latest value, and revisions go on from where they were', withStore(async (s, r) => {
        let kv = await s.create('/hot', '0');
        for (let i = 1; i < 300; i++) kv = await s.update('/hot', String(i), kv.modRevision);
        for (let i = 0; i < 20; i++) await s.create(`/gone/${i}`, 'x');
        for (let i = 0; i < 20; i++) await s.delete(`/gone/${i}`);
        await s.create('/kept', 'k');
        const before = await s.currentRevision();
        await s.compact(before);
        await s.compact(before + 100); // past the latest: compacts to the latest
        assert.equal((await s.get('/hot'))!.value, '299');
        assert.equal((await s.get('/hot'))!.modRevision, kv.modRevision);
        assert.equal((await s.get('/kept'))!.value, 'k');
        assert.equal(await s.count('/gone/'), 0);
        assert.equal(await s.currentRevision(), before);
        assert.equal((await s.create('/after', 'a')).modRevision, before + 1);
      }));
    });

    describe('watch', () => {
      test('replays history after fromRevision, then live events, in order, exactly once, prefix-filtered, with prev values', withStore(async (s, r) => {
        await s.create('/w/a', 'a1'); // 1
        await s.create('/other/x', 'x1'); // 2
        await s.update('/w/a', 'a2', r(1)); // 3
        await s.create('/w/b', 'b1'); // 4
        await s.delete('/w/a'); // 5

        const got: StoreEvent[] = [];
        const watcher = await s.watch('/w/', { fromRevision: r(1), onEvent: (ev) => got.push(ev) });
        await s.create('/w/c', 'c1'); // 6
        await s.create('/other/y', 'y1'); // 7
        await s.update('/w/b', 'b2', r(4)); // 8
        await until(() => got.length >= 5, 'five events');

        assert.deepEqual(got.map(summarize), [`update /w/a@${r(3)}=a2`, `create /w/b@${r(4)}=b1`, `delete /w/a@${r(5)}=a2`, `create /w/c@${r(6)}=c1`, `update /w/b@${r(8)}=b2`]);
        assert.equal(got[0]!.prev?.value, 'a1');
        assert.equal(got[0]!.prev?.modRevision, r(1));
        assert.equal(got[2]!.prev?.value, 'a2');
        assert.equal(got[2]!.prev?.modRevision, r(3));
        assert.equal(got[2]!.kv.createRevision, r(1));
        assert.equal(got[4]!.prev?.value, 'b1');
        assert.equal(got[3]!.prev, undefined, 'a create has no prev');

        // Closing is idempotent and final: a watcher still open sees the next write, the closed one does not.
        watcher.close();
        watcher.close();
        const sentinel: StoreEvent[] = [];
        await s.watch('/w/', { fromRevision: await s.currentRevision(), onEvent: (ev) => sentinel.push(ev) });
        await s.create('/w/d', 'd1');
        await until(() => sentinel.length === 1, 'the sentinel event');
        assert.equal(got.length, 5, 'no events after close');
      }));

      test('writes racing the start of a watch are each delivered exactly once, in revision order', withStore(async (s, r) => {
        const writes: Promise<unknown>[] = [];
        for (let i = 0; i < 40; i++) writes.push(s.create(`/race/${i}`, String(i)));
        const got: number[] = [];
        const opening = s.watch('/race/', { fromRevision: r(0), onEvent: (ev) => got.push(ev.kv.modRevision) });
        for (let i = 40; i < 80; i++) writes.push(s.create(`/race/${i}`, String(i)));
        await Promise.all(writes);
        await opening;
        for (let i = 80; i < 100; i++) await s.create(`/race/${i}`, String(i));
        await until(() => got.length >= 100, '100 events');
        assert.deepEqual(got, Array.from({ length: 100 }, (_, i) => r(i + 1)));
      }));

      test('from the current revision: only live events; a fromRevision in the future skips until then', withStore(async (s, r) => {
        await s.create('/f/a', '1');
        const live: number[] = [];
        const future: number[] = [];
        await s.watch('/f/', { fromRevision: await s.currentRevision(), onEvent: (ev) => live.push(ev.kv.modRevision) });
        await s.watch('/f/', { fromRevision: r(3), onEvent: (ev) => future.push(ev.kv.modRevision) });
        await s.create('/f/b', '1');
        await s.create('/f/c', '1');
        await s.create('/f/d', '1');
        await until(() => live.length >= 3 && future.length >= 1, 'live events');
        assert.deepEqual(live, [r(2), r(3), r(4)]);
        assert.deepEqual(future, [r(4)]);
      }));

      test('events are never delivered from inside watch(); handlers that write or throw keep every watcher in revision order', withStore(async (s, r) => {
        await s.create('/r/pre', '0');
        const reactor: string[] = [];
        const observer: number[] = [];
        const writes: Promise<unknown>[] = [];
        let insideWatchCall = true;
        let deliveredInside = false;
        // reacts to each create by writing a status key, as a controller would
        const opening = s.watch('/r/', {
          fromRevision: r(0),
          onEvent: (ev) => {
            if (insideWatchCall) deliveredInside = true;
            reactor.push(summarize(ev));
            if (ev.type === 'create' && ev.kv.key.startsWith('/r/obj')) writes.push(s.create(`/r/status-${ev.kv.key.slice(3)}`, 'ok'));
          },
        });
        insideWatchCall = false;
        await opening;
        await s.watch('/r/', {
          fromRevision: r(0),
          onEvent: () => {
            throw new Error('broken handler');
          },
        });
        await s.watch('', { fromRevision: r(0), onEvent: (ev) => observer.push(ev.kv.modRevision) });
        await s.create('/r/obj1', '1');
        await s.create('/r/obj2', '1');
        await until(() => observer.length >= 5, 'five events');
        await Promise.all(writes);
        assert.equal(deliveredInside, false, 'the history was delivered from inside watch()');
        assert.deepEqual(observer, [r(1), r(2), r(3), r(4), r(5)]);
        const revisionOf = (line: string) => Number(/@(\d+)=/.exec(line)![1]);
        assert.deepEqual(reactor.map(revisionOf), [r(1), r(2), r(3), r(4), r(5)], 'the reacting watcher saw its own writes in revision order too');
        assert.deepEqual(reactor.map((line) => line.replace(/@\d+=/, '=')).sort(), ['create /r/obj1=1', 'create /r/obj2=1', 'create /r/pre=0', 'create /r/status-obj1=ok', 'create /r/status-obj2=ok']);
      }));

      test('a watch from before the compacted revision is refused with Compacted; from the compacted revision it works, prev values included', withStore(async (s, r) => {
        await s.create('/wc/a', '1'); // 1
        await s.update('/wc/a', '2', r(1)); // 2
        await s.update('/wc/a', '3', r(2)); // 3
        await s.create('/wc/b', '1'); // 4
        await s.delete('/wc/b'); // 5
        await s.update('/wc/a', '4', r(3)); // 6
        await s.compact(r(4));
        const err = await rejectsWith(s.watch('/wc/', { fromRevision: r(2), onEvent: () => {} }), 'Compacted');
        if (err.compactedRevision !== undefined) assert.equal(err.compactedRevision, r(4));
        const got: StoreEvent[] = [];
        await s.watch('/wc/', { fromRevision: r(4), onEvent: (ev) => got.push(ev) });
        await until(() => got.length >= 2, 'two events');
        assert.deepEqual(got.map(summarize), [`delete /wc/b@${r(5)}=1`, `update /wc/a@${r(6)}=4`]);
        assert.equal(got[0]!.prev?.modRevision, r(4), 'prev of an uncompacted event survives compaction');
        assert.equal(got[1]!.prev?.value, '3');
      }));
    });

    describe('out of space', () => {
      test('NoSpace: creates and updates are refused and consume no revision; reads, lists and deletes keep working', withStore(async (s, r) => {
        const value = (i: number) => JSON.stringify({ i, pad: 'p'.repeat(100_000) });
        let stored = 0;
        let refused: StorageError | undefined;
        for (; stored < 400; stored++) {
          try {
            await s.create(`/full/c${stored}`, value(stored));
          } catch (err) {
            refused = err as StorageError;
            break;
          }
        }
        assert.ok(refused instanceof StorageError && refused.code === 'NoSpace', `expected NoSpace after ${stored} creates, got ${String(refused)}`);
        assert.ok(stored >= 5, `only ${stored} values fit`);
        const revision = await s.currentRevision();
        assert.equal(revision, r(stored), 'the refused create took no revision');
        const first = (await s.get('/full/c0'))!;
        assert.equal(JSON.parse(first.value).i, 0);
        await rejectsWith(s.update(first.key, '{"small":true}', first.modRevision), 'NoSpace');
        await rejectsWith(s.create('/full/tiny', '{}'), 'NoSpace');
        assert.equal(await s.currentRevision(), revision);
        assert.equal((await s.list('/full/')).items.length, stored);
        assert.equal(await s.get(`/full/c${stored}`), undefined);
        const deleted = await s.delete('/full/c1');
        assert.equal(JSON.parse(deleted.value).i, 1);
        assert.equal(await s.count('/full/'), stored - 1);
      }, sut.openSmall));
    });
  });
}
