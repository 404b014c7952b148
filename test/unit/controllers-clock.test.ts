/**
 * The controllers' one clock: a work queue's delays and backoff, and a controller's now(), follow
 * the Clock the ControllerManager is given, so tests move minutes of controller time without
 * sleeping; outside a manager they follow real time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../agent/clock.js';
import { systemClock } from '../../src/client/clock.js';
import type { Client } from '../../src/client/client.js';
import { ControllerManager } from '../../src/controllers/manager.js';
import { controllerClock, controllerNow } from '../../src/controllers/runtime/clock.js';
import { Controller, WorkQueue } from '../../src/controllers/runtime/index.js';

const log = pino({ level: 'silent' });

describe('controller clock', () => {
  it('a queue on a manual clock releases a delayed key only when the clock reaches it, and backs off by it', () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock, baseDelayMs: 100 });
    queue.addAfter('ns/a', 5_000);
    clock.advance(4_999);
    assert.equal(queue.len(), 0);
    clock.advance(1);
    assert.equal(queue.len(), 1);

    // Backoff doubles per failure, measured on the same clock: 100 ms, then 200 ms.
    queue.addRateLimited('ns/b');
    clock.advance(99);
    assert.equal(queue.len(), 1);
    clock.advance(1);
    assert.equal(queue.len(), 2);
    queue.addRateLimited('ns/c');
    queue.addRateLimited('ns/c');
    clock.advance(100);
    assert.equal(queue.len(), 3, 'the first retry of ns/c is due; the earliest of two pending delays wins');
    queue.shutdown();
    assert.equal(clock.pending(), 0, 'shutdown cancels the delayed adds on the clock');
  });

  it('the manager builds controllers on its clock: their queue delays and now() follow it', async () => {
    const clock = new ManualClock(Date.UTC(2030, 0, 1));
    const reconciled: Array<{ key: string; at: number }> = [];
    let controller: Controller | undefined;
    let now: (() => number) | undefined;
    const manager = new ControllerManager({ client: {} as Client, log, clock });
    manager.register('clocked', () => {
      now = controllerNow();
      controller = new Controller({ name: 'clocked', log, reconcile: async (key) => void reconciled.push({ key, at: now!() }) });
      return controller;
    });
    await manager.start();
    try {
      assert.equal(now!(), Date.UTC(2030, 0, 1));
      controller!.queue.addAfter('ns/x', 60_000);
      clock.advance(59_999);
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(reconciled, []);
      clock.advance(1);
      for (let i = 0; i < 10 && !reconciled.length; i++) await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(reconciled, [{ key: 'ns/x', at: Date.UTC(2030, 0, 1) + 60_000 }]);
    } finally {
      await manager.stop();
    }
  });

  it('outside a manager, controllers take the real clock', () => {
    assert.equal(controllerClock(), systemClock);
    const before = Date.now();
    const t = controllerNow()();
    assert.ok(t >= before && t <= Date.now());
  });
});
