/**
 * The controller library — what Berth's own controllers are built from, and what you use to write
 * your own (the "Kubernetes programming paradigm": observe, compare desired with actual, act).
 *
 * The pieces:
 *  - `Informer` (list, then watch from that revision; a local cache with indexes; 410 → relist;
 *    optional periodic resync) and `SharedInformers` (one informer per resource, shared);
 *  - `WorkQueue` of `namespace/name` keys — never objects: a key queued twice is processed once,
 *    never by two workers at once, with per-key exponential backoff for retries;
 *  - `Controller`: N workers calling your `reconcile(key)`. Return nothing when done,
 *    `{requeueAfterMs}` to look again later, throw to retry with backoff, throw `TerminalError`
 *    to give up until the object changes again;
 *  - helpers: `Expectations` (don't act twice while your own writes are in flight),
 *    `slowStartBatch`, controller refs (`claimObjects`, `newControllerRef`), pod readiness;
 *  - `ControllerManager` (src/controllers/manager.ts): run several controllers over shared informers;
 *  - `LeaderElector`: Lease-based leader election (client-go's rules), so only one of several
 *    replicas runs them.
 *
 * reconcile re-reads the object from the informer's cache (never from the event that queued it),
 * never mutates cached objects, and is idempotent: it may run again for any reason.
 *
 * @example A controller that labels every ConfigMap with its data size, in a program of your own:
 * ```ts
 * import pino from 'pino';
 * import { HttpClient } from 'berth/dist/src/client/http-client.js';
 * import { Controller, SharedInformers, keyOf, type ReconcileResult } from 'berth/dist/src/controllers/runtime/index.js';
 *
 * const client = new HttpClient({ server: 'https://127.0.0.1:6443', token, ca });
 * const informers = new SharedInformers({ client });
 * const configMaps = informers.informerFor({ plural: 'configmaps' });
 * const controller = new Controller({
 *   name: 'size-labeller',
 *   log: pino(),
 *   workers: 2,
 *   async reconcile(key): Promise<ReconcileResult> {
 *     const cm = configMaps.get(key);            // from the cache
 *     if (!cm) return;                            // deleted: nothing to do
 *     const size = String(JSON.stringify(cm.data ?? {}).length);
 *     if (cm.metadata.labels?.size === size) return;
 *     const copy = structuredClone(cm);           // never mutate the cache
 *     copy.metadata.labels = { ...copy.metadata.labels, size };
 *     await client.update({ plural: 'configmaps' }, copy); // a Conflict throws → retried with backoff
 *   },
 * });
 * configMaps.addHandlers({ onAdd: (o) => controller.queue.add(keyOf(o)), onUpdate: (o) => controller.queue.add(keyOf(o)) });
 * await informers.start();
 * controller.start();
 * ```
 * Tests do not start anything: fill `informer.indexer` with `upsert(obj)`, call `reconcile(key)`,
 * and check what the client was asked to do.
 */
export { Controller, TerminalError, type ControllerOptions, type ReconcileResult } from './controller.js';
export { WorkQueue, type WorkQueueOptions } from './workqueue.js';
export { Expectations, type ExpectationsOptions } from './expectations.js';
export { slowStartBatch } from './slow-start.js';
export { SharedInformers, type SharedInformersOptions } from './informer-factory.js';
export {
  adoptObject,
  claimObjects,
  controllerRefOf,
  isAlreadyExists,
  isConflict,
  isControlledBy,
  isNotFound,
  newControllerRef,
  releaseObject,
  type ClaimOptions,
} from './controller-ref.js';
export { isPodActive, isPodAvailable, isPodReady, podReadySince, podRestarts } from './pod-util.js';
export {
  CONTROLLER_UID_INDEX,
  INDEX_FUNCS,
  Indexer,
  Informer,
  NAMESPACE_INDEX,
  OWNER_UID_INDEX,
  UID_INDEX,
  keyOf,
  splitKey,
  type IndexFunc,
  type InformerHandlers,
  type InformerOptions,
} from '../../client/informer.js';
export { ControllerManager, type ControllerContext, type ControllerRegistration, type ControllerStage, type ManagedController } from '../manager.js';
export {
  CONTROLLER_MANAGER_LOCK,
  LeaderElector,
  validateLeaderElectionTimings,
  type ElectionClock,
  type LeaderElectionTimings,
  type LeaderElectorOptions,
} from './leader-election.js';
