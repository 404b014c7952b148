/**
 * Owns the controllers' time: the one Clock (src/client/clock.ts) their queues' delays and
 * backoff and their now() read. The ControllerManager builds every controller inside
 * `withControllerClock` with the clock of its options (the real one by default), and what a
 * controller constructs there — its WorkQueue, its now() — takes that clock, as queues take the
 * metrics in scope (metrics.ts), so no controller's options need to carry it. Built outside a
 * manager (unit tests that construct a controller directly), they take the real clock.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { systemClock, type Clock } from '../../client/clock.js';

const scope = new AsyncLocalStorage<Clock>();

/** Runs `build` with `clock` as the controllers' clock. */
export function withControllerClock<T>(clock: Clock, build: () => T): T {
  return scope.run(clock, build);
}

/** The clock in scope where a queue or controller is constructed; the real clock outside a manager. */
export function controllerClock(): Clock {
  return scope.getStore() ?? systemClock;
}

/** now() of the clock in scope, bound (a controller keeps it as its `now`). */
export function controllerNow(): () => number {
  const clock = controllerClock();
  return () => clock.now();
}
