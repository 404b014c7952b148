import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_OBJECT_BUDGET, estimateObjects, ObjectBudget, ObjectCounts, resolveObjectBudget, type ReadRequest } from '../../src/server/object-budget.js';

const list = (extra: Partial<ReadRequest> = {}): ReadRequest => ({ verb: 'list', filtered: false, singleObject: false, sendsInitialEvents: false, ...extra });
const watch = (sendsInitialEvents: boolean, extra: Partial<ReadRequest> = {}): ReadRequest => ({ verb: 'watch', filtered: false, singleObject: false, sendsInitialEvents, ...extra });

/** Timers that fire only when the test says so. */
function manualTimers() {
  const pending = new Map<number, () => void>();
  let next = 0;
  return {
    setTimer: (fn: () => void) => {
      pending.set(++next, fn);
      return next;
    },
    clearTimer: (id: unknown) => void pending.delete(id as number),
    fireAll: () => {
      const due = [...pending.values()];
      pending.clear();
      for (const fn of due) fn();
    },
    get pending() {
      return pending.size;
    },
  };
}

describe('read cost estimate', () => {
  it('charges a list by the objects stored under its collection, at least one', () => {
    assert.equal(estimateObjects(list(), 10_000), 10_000);
    assert.equal(estimateObjects(list(), 0), 1);
  });

  it('caps a list by its limit, unless a selector makes every object be read', () => {
    assert.equal(estimateObjects(list({ limit: 500 }), 10_000), 500);
    assert.equal(estimateObjects(list({ limit: 500 }), 20), 20);
    assert.equal(estimateObjects(list({ limit: 0 }), 10_000), 10_000);
    assert.equal(estimateObjects(list({ limit: 500, filtered: true }), 10_000), 10_000);
  });

  it('charges a watch by its initial events, and one that only follows changes nothing', () => {
    assert.equal(estimateObjects(watch(true), 10_000), 10_000);
    assert.equal(estimateObjects(watch(true), 0), 1);
    assert.equal(estimateObjects(watch(false), 10_000), 0);
  });

  it('charges one for a single named object', () => {
    assert.equal(estimateObjects(list({ singleObject: true, filtered: true }), 10_000), 1);
    assert.equal(estimateObjects(watch(true, { singleObject: true }), 10_000), 1);
  });
});

describe('object budget', () => {
  it('resolves partial limits against the defaults', () => {
    assert.deepEqual(resolveObjectBudget(), { ...DEFAULT_OBJECT_BUDGET });
    assert.deepEqual(resolveObjectBudget({ maxObjectsInFlightPerUser: 7 }), { maxObjectsInFlight: DEFAULT_OBJECT_BUDGET.maxObjectsInFlight, maxObjectsInFlightPerUser: 7 });
  });

  it('refuses what does not fit a user’s budget, and lets another user in', () => {
    const budget = new ObjectBudget({ maxObjectsInFlight: 100, maxObjectsInFlightPerUser: 50 });
    const first = budget.tryCharge('alice', 30);
    assert.ok(first);
    assert.equal(budget.tryCharge('alice', 30), undefined, 'alice would hold 60 of her 50');
    assert.ok(budget.tryCharge('alice', 20), 'exactly her budget fits');
    assert.ok(budget.tryCharge('bob', 50));
    assert.deepEqual(budget.inFlight('alice'), { server: 100, user: 50, waiting: 0 });
  });

  it('refuses what does not fit the server-wide budget whoever asks', () => {
    const budget = new ObjectBudget({ maxObjectsInFlight: 100, maxObjectsInFlightPerUser: 60 });
    assert.ok(budget.tryCharge('a', 60));
    assert.ok(budget.tryCharge('b', 40));
    assert.equal(budget.tryCharge('c', 1), undefined);
  });

  it('gives back a charge once, however often it is released', () => {
    const budget = new ObjectBudget({ maxObjectsInFlight: 100, maxObjectsInFlightPerUser: 100 });
    const release = budget.tryCharge('alice', 80)!;
    const other = budget.tryCharge('bob', 20)!;
    release();
    release();
    assert.deepEqual(budget.inFlight('alice'), { server: 20, user: 0, waiting: 0 });
    other();
    assert.deepEqual(budget.inFlight('bob'), { server: 0, user: 0, waiting: 0 });
  });

  it('charges a request larger than a whole budget that budget: it runs alone', () => {
    const budget = new ObjectBudget({ maxObjectsInFlight: 100, maxObjectsInFlightPerUser: 50 });
    const huge = budget.tryCharge('alice', 1_000_000);
    assert.ok(huge, 'it runs while alice has nothing else in flight');
    assert.deepEqual(budget.inFlight('alice'), { server: 50, user: 50, waiting: 0 });
    assert.equal(budget.tryCharge('alice', 1), undefined);
    huge();
    assert.ok(budget.tryCharge('alice', 1));
  });

  it('limits nothing when both limits are 0', () => {
    const budget = new ObjectBudget({ maxObjectsInFlight: 0, maxObjectsInFlightPerUser: 0 });
    assert.ok(budget.tryCharge('alice', 1_000_000));
    assert.ok(budget.tryCharge('alice', 1_000_000));
    assert.ok(budget.hasRoom('alice'));
  });

  it('lets a request that does not fit wait, and admits it when a charge is released', async () => {
    const timers = manualTimers();
    const budget = new ObjectBudget({ maxObjectsInFlight: 100, maxObjectsInFlightPerUser: 100 }, { maxWaiting: 10, maxWaitMs: 5000, ...timers });
    const first = budget.tryCharge('alice', 80)!;
    let admitted: (() => void) | undefined;
    const waiting = budget.charge('bob', 50).then((r) => (admitted = r));
    assert.deepEqual(budget.inFlight('bob'), { server: 80, user: 0, waiting: 1 });
    first();
    await waiting;
    assert.ok(admitted, 'bob got in once alice was done');
    assert.deepEqual(budget.inFlight('bob'), { server: 50, user: 50, waiting: 0 });
    assert.equal(timers.pending, 0, 'its wait timer was cleared');
  });

  it('admits waiting requests in arrival order as each fits, passing over one that still does not', async () => {
    const timers = manualTimers();
    const budget = new ObjectBudget({ maxObjectsInFlight: 100, maxObjectsInFlightPerUser: 60 }, { maxWaiting: 10, maxWaitMs: 5000, ...timers });
    const a1 = budget.tryCharge('alice', 60)!;
    const b1 = budget.tryCharge('bob', 40)!;
    const order: string[] = [];
    const aliceWaits = budget.charge('alice', 30).then((r) => (order.push('alice'), r));
    const carolWaits = budget.charge('carol', 30).then((r) => (order.push('carol'), r));
    // Bob leaves 40 free: alice is still at her own limit, carol fits.
    b1();
    const carol = await carolWaits;
    assert.ok(carol);
    assert.deepEqual(order, ['carol']);
    a1();
    assert.ok(await aliceWaits);
    assert.deepEqual(order, ['carol', 'alice']);
  });

  it('refuses a waiting request after the longest wait, and at once when the wait is full', async () => {
    const timers = manualTimers();
    const budget = new ObjectBudget({ maxObjectsInFlight: 10, maxObjectsInFlightPerUser: 10 }, { maxWaiting: 1, maxWaitMs: 5000, ...timers });
    const held = budget.tryCharge('alice', 10)!;
    const waiting = budget.charge('bob', 5);
    assert.equal(await budget.charge('carol', 5), undefined, 'no room to wait');
    assert.equal(budget.hasRoom('carol'), false);
    timers.fireAll();
    assert.equal(await waiting, undefined, 'bob waited too long');
    held();
    assert.deepEqual(budget.inFlight('bob'), { server: 0, user: 0, waiting: 0 });
    assert.ok(await budget.charge('bob', 5), 'a later request fits at once');
  });
});

describe('object counts', () => {
  it('reuses a count for its lifetime, then asks the store again', async () => {
    let now = 0;
    let asked = 0;
    const counts = new ObjectCounts({ maxAgeMs: 1000, now: () => now });
    const count = async () => ++asked * 100;
    assert.equal(await counts.get('configmaps/ns', count), 100);
    now = 999;
    assert.equal(await counts.get('configmaps/ns', count), 100);
    assert.equal(await counts.get('configmaps/other', count), 200, 'each collection is counted apart');
    now = 1000;
    assert.equal(await counts.get('configmaps/ns', count), 300);
  });

  it('shares one count among concurrent callers and forgets a failed one', async () => {
    let asked = 0;
    const counts = new ObjectCounts({ maxAgeMs: 1000, now: () => 0 });
    let finish!: (n: number) => void;
    const slow = () => {
      asked++;
      return new Promise<number>((resolve) => (finish = resolve));
    };
    const both = Promise.all([counts.get('pods/', slow), counts.get('pods/', slow)]);
    finish(7);
    assert.deepEqual(await both, [7, 7]);
    assert.equal(asked, 1);

    await assert.rejects(counts.get('nodes/', async () => Promise.reject(new Error('store down'))));
    assert.equal(await counts.get('nodes/', async () => 3), 3, 'the failure was not remembered');
  });

  it('remembers a bounded number of collections', async () => {
    let now = 0;
    const counts = new ObjectCounts({ maxAgeMs: 1000, maxEntries: 3, now: () => now });
    for (let i = 0; i < 10; i++) {
      now = i;
      await counts.get(`secrets/ns-${i}`, async () => i);
    }
    assert.equal(counts.size, 3);
  });
});
