/**
 * The controller library: indexed cache, informer handler replay, work queue timing, expectations,
 * slow-start batches, controller-ref claiming, and the reconcile result contract.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { labelSelectorFromObject } from '../../src/api/selectors.js';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, Indexer, Informer, OWNER_UID_INDEX, splitKey } from '../../src/client/informer.js';
import { Controller, Expectations, TerminalError, WorkQueue, claimObjects, slowStartBatch } from '../../src/controllers/runtime/index.js';
import { controllerEnv } from './controllers-env.js';
import { REPLICASETS } from '../../src/api/identities.js';

const obj = (name: string, extra: Partial<KubeObject['metadata']> = {}): KubeObject => ({ metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '1', ...extra } });

describe('Indexer', () => {
  it('keeps secondary indexes in step with upserts and removals, including indexes added later', () => {
    const idx = new Indexer<KubeObject>();
    idx.upsert(obj('a', { ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'owner-1', controller: true }] }));
    idx.upsert(obj('b', { ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'owner-1' }] }));
    idx.addIndex(OWNER_UID_INDEX, INDEX_FUNCS[OWNER_UID_INDEX]!);
    idx.addIndex(CONTROLLER_UID_INDEX, INDEX_FUNCS[CONTROLLER_UID_INDEX]!);
    assert.deepEqual(idx.byIndex(OWNER_UID_INDEX, 'owner-1').map((o) => o.metadata.name).sort(), ['a', 'b']);
    assert.deepEqual(idx.byIndex(CONTROLLER_UID_INDEX, 'owner-1').map((o) => o.metadata.name), ['a']);
    // Re-pointing b's owner moves it between index buckets.
    idx.upsert(obj('b', { ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'p', uid: 'owner-2' }] }));
    assert.deepEqual(idx.byIndex(OWNER_UID_INDEX, 'owner-1').map((o) => o.metadata.name), ['a']);
    assert.deepEqual(idx.byIndex(OWNER_UID_INDEX, 'owner-2').map((o) => o.metadata.name), ['b']);
    idx.remove('ns/a');
    assert.deepEqual(idx.byIndex(OWNER_UID_INDEX, 'owner-1'), []);
    assert.deepEqual(idx.byIndex('namespace', 'ns').map((o) => o.metadata.name), ['b']);
    assert.throws(() => idx.byIndex('nope', 'x'));
  });

  it('splits keys back into namespace and name', () => {
    assert.deepEqual(splitKey('ns/a'), { namespace: 'ns', name: 'a' });
    assert.deepEqual(splitKey('node-1'), { namespace: '', name: 'node-1' });
  });
});

describe('Informer', () => {
  it('replays the cache as adds to handlers registered after the first list', async () => {
    const env = await controllerEnv();
    await env.create('', 'pods', { metadata: { name: 'p1' }, spec: { containers: [{ name: 'c', image: 'i:1' }] } } as Pod);
    const informer = new Informer<Pod>({ client: env.client, resource: CORE.pods });
    await informer.start();
    const seen: string[] = [];
    informer.addHandlers({ onAdd: (p) => seen.push(p.metadata.name!) });
    assert.deepEqual(seen, ['p1']);
    assert.equal(informer.listNamespace('default').length, 1);
    informer.stop();
  });
});

describe('WorkQueue', () => {
  it('hands a key to one worker at a time and re-queues a key added while it is processed', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('a');
    assert.equal(q.len(), 1, 'a key queued twice is processed once');
    const k = await q.get();
    assert.equal(k, 'a');
    q.add('a');
    assert.equal(q.len(), 0, 'not handed out again while being processed');
    q.done('a');
    assert.equal(q.len(), 1, 'requeued once processing ends');
    q.shutdown();
  });

  it('keeps the earliest of several delayed adds for a key', async () => {
    const q = new WorkQueue();
    q.addAfter('k', 60_000);
    q.addAfter('k', 1);
    const got = await Promise.race([q.get(), new Promise((r) => setTimeout(() => r('timeout'), 2000))]);
    assert.equal(got, 'k');
    q.shutdown();
  });
});

describe('Expectations', () => {
  it('is unsatisfied until every expected creation and deletion is observed, once each', () => {
    const clock = { t: 0 };
    const e = new Expectations({ now: () => clock.t, ttlMs: 1000 });
    assert.equal(e.satisfied('rs'), true);
    e.expect('rs', { adds: 2, deleteKeys: ['ns/p1'] });
    e.creationObserved('rs');
    assert.equal(e.satisfied('rs'), false);
    e.creationObserved('rs');
    e.deletionObserved('rs', 'ns/other');
    assert.equal(e.satisfied('rs'), false, 'an unrelated deletion does not count');
    e.deletionObserved('rs', 'ns/p1');
    e.deletionObserved('rs', 'ns/p1');
    assert.equal(e.satisfied('rs'), true);
    e.expect('rs', { adds: 1 });
    clock.t = 1001;
    assert.equal(e.satisfied('rs'), true, 'a stale record no longer blocks');
  });
});

describe('slowStartBatch', () => {
  it('runs batches of 1, 2, 4 … and stops after the first batch with a failure', async () => {
    const calls: number[] = [];
    const r = await slowStartBatch({
      count: 20,
      fn: async (i) => {
        calls.push(i);
        if (i === 4) throw new Error('quota');
      },
    });
    // Batches: [0], [1,2], [3,4,5,6] — the third fails at 4, so nothing after 6 is tried.
    assert.deepEqual(calls.sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6]);
    assert.equal(r.succeeded, 6);
    assert.equal((r.error as Error).message, 'quota');
    const ok = await slowStartBatch({ count: 5, fn: async () => undefined });
    assert.deepEqual(ok, { succeeded: 5 });
  });
});

describe('claimObjects', () => {
  it('adopts matching orphans, keeps its own, releases what stopped matching, ignores others', async () => {
    const env = await controllerEnv();
    const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'rs', namespace: 'default', uid: 'rs-uid' } } as KubeObject;
    const mk = async (name: string, labels: Record<string, string>, ownerUid?: string) =>
      env.create('', 'pods', {
        metadata: { name, labels, ...(ownerUid ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'x', uid: ownerUid, controller: true }] } : {}) },
        spec: { containers: [{ name: 'c', image: 'i:1' }] },
      } as Pod);
    await mk('orphan', { app: 'a' });
    await mk('mine', { app: 'a' }, 'rs-uid');
    await mk('strayed', { app: 'b' }, 'rs-uid');
    await mk('theirs', { app: 'a' }, 'other-uid');
    await mk('unrelated', { app: 'b' });
    const claimed = await claimObjects<Pod>({
      client: env.client,
      resource: CORE.pods,
      owner,
      ownerKind: REPLICASETS,
      selector: labelSelectorFromObject({ matchLabels: { app: 'a' } }),
      candidates: env.list<Pod>('', 'pods'),
    });
    assert.deepEqual(claimed.map((p) => p.metadata.name).sort(), ['mine', 'orphan']);
    assert.equal(env.get<Pod>('', 'pods', 'orphan').metadata.ownerReferences?.[0]?.uid, 'rs-uid');
    assert.equal(env.get<Pod>('', 'pods', 'orphan').metadata.ownerReferences?.[0]?.blockOwnerDeletion, true);
    assert.equal(env.get<Pod>('', 'pods', 'strayed').metadata.ownerReferences, undefined, 'released');
    assert.equal(env.get<Pod>('', 'pods', 'theirs').metadata.ownerReferences?.[0]?.uid, 'other-uid');
    assert.deepEqual(env.writes().map((a) => `${a.verb} ${a.name}`).sort(), ['update orphan', 'update strayed']);
  });

  it('adopts nothing for an owner that is being deleted, and nothing when the recheck refuses', async () => {
    const env = await controllerEnv();
    await env.create('', 'pods', { metadata: { name: 'orphan', labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } } as Pod);
    const selector = labelSelectorFromObject({ matchLabels: { app: 'a' } });
    const base = { client: env.client, resource: CORE.pods, ownerKind: REPLICASETS, selector, candidates: env.list<Pod>('', 'pods') };
    const deleting = { metadata: { name: 'rs', namespace: 'default', uid: 'u', deletionTimestamp: '2026-01-01T00:00:00Z' } } as KubeObject;
    assert.deepEqual(await claimObjects<Pod>({ ...base, owner: deleting }), []);
    const owner = { metadata: { name: 'rs', namespace: 'default', uid: 'u' } } as KubeObject;
    await assert.rejects(claimObjects<Pod>({ ...base, owner, recheckOwner: async () => { throw new Error('gone'); } }), /gone/);
    assert.equal(env.writes().length, 0);
  });
});

describe('Controller', () => {
  it('retries thrown errors with backoff, requeues after a time, and drops terminal errors', async () => {
    const calls = new Map<string, number>();
    const controller = new Controller({
      name: 't',
      log: pino({ level: 'silent' }),
      queue: new WorkQueue({ baseDelayMs: 1 }),
      reconcile: async (key) => {
        const n = (calls.get(key) ?? 0) + 1;
        calls.set(key, n);
        if (key === 'flaky' && n < 3) throw new Error('try again');
        if (key === 'bad') throw new TerminalError('never works');
        if (key === 'later' && n === 1) return { requeueAfterMs: 5 };
      },
    });
    controller.start();
    for (const k of ['flaky', 'bad', 'later']) controller.queue.add(k);
    const deadline = Date.now() + 3000;
    while ((calls.get('flaky') ?? 0) < 3 || (calls.get('later') ?? 0) < 2) {
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    await controller.stop();
    assert.equal(calls.get('flaky'), 3);
    assert.equal(calls.get('later'), 2);
    assert.equal(calls.get('bad'), 1, 'a terminal error is not retried');
  });
});
