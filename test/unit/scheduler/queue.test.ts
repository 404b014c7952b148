/** The scheduling queue: priority order, backoff, moves on cluster events. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulingQueue } from '../../../src/controllers/scheduler/queue.js';

describe('SchedulingQueue', () => {
  it('pops higher priority first, then older first', async () => {
    const q = new SchedulingQueue();
    q.add('low-old', 0, 1);
    q.add('high', 1000, 5);
    q.add('low-new', 0, 2);
    q.add('mid', 10, 9);
    const order = [await q.pop(), await q.pop(), await q.pop(), await q.pop()];
    assert.deepEqual(order, ['high', 'mid', 'low-old', 'low-new']);
    q.close();
    assert.equal(await q.pop(), undefined);
  });

  it('an unschedulable pod waits for a cluster event, then for the rest of its backoff (1 s, doubling, 10 s at most)', async () => {
    let now = 0;
    const q = new SchedulingQueue({ now: () => now });
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => q.backoffMs(n)), [1000, 2000, 4000, 8000, 10000, 10000]);
    q.add('p', 0, 0);
    assert.equal(await q.pop(), 'p');
    q.unschedulableAttempt('p');
    assert.ok(q.isUnschedulable('p'));
    assert.equal(q.length, 0);
    q.moveAllToActiveOrBackoff();
    assert.equal(q.length, 0, 'still backing off');
    now = 1000;
    q.flushBackoff();
    assert.equal(q.length, 1);
    assert.equal(await q.pop(), 'p');
    q.close();
  });

  it('an event during the attempt sends the failed pod to backoff, not to wait for another event', async () => {
    let now = 0;
    const q = new SchedulingQueue({ now: () => now });
    q.add('p', 0, 0);
    await q.pop();
    q.moveAllToActiveOrBackoff();
    q.unschedulableAttempt('p');
    assert.ok(!q.isUnschedulable('p'));
    now = 1000;
    q.flushBackoff();
    assert.equal(await q.pop(), 'p');
    q.close();
  });

  it('a binding that failed after its attempt ended brings the pod back after its backoff, once, and not while an attempt is under way', async () => {
    let now = 0;
    const q = new SchedulingQueue({ now: () => now });
    q.add('p', 0, 0);
    assert.equal(await q.pop(), 'p');
    q.done('p');
    q.retryAfterError('p', 0, 0);
    q.retryAfterError('p', 0, 0);
    assert.equal(q.length, 0, 'backing off');
    now = 1000;
    q.flushBackoff();
    assert.equal(q.length, 1, 'back once');
    assert.equal(await q.pop(), 'p');
    q.retryAfterError('p', 0, 0);
    assert.equal(q.length, 0, 'an attempt is under way: it decides');
    q.done('p');
    now = 10_000;
    q.flushBackoff();
    assert.equal(q.length, 0);
    q.close();
  });

  it('a waiting pop is answered by the next add', async () => {
    const q = new SchedulingQueue();
    const next = q.pop();
    q.add('x', 0, 0);
    assert.equal(await next, 'x');
    q.close();
  });
});
