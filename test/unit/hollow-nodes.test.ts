import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../agent/clock.js';
import { HollowPods, podAddress } from '../../agent/hollow/hollow-pods.js';
import type { Pod } from '../../src/api/types.js';
import { boundPod, FakeClient } from './agent-fake-client.js';

const log = pino({ level: 'silent' });
const DELAY = 1000;

async function setup(opts: { pods?: Pod[]; cidr?: string } = {}) {
  const client = new FakeClient();
  const clock = new ManualClock();
  for (const p of opts.pods ?? []) client.put<Pod>('pods', p);
  const pods = new HollowPods({ client, nodeName: 'h1', hostIP: '127.0.0.1', podCidr: async () => opts.cidr ?? '10.244.3.0/24', startupDelayMs: DELAY, clock, log });
  await pods.start();
  await pods.idle();
  return { client, clock, pods };
}

const podOf = (client: FakeClient, name: string) => client.peek<Pod>('pods', 'default', name);

describe('hollow node pods', () => {
  it('reports a pod Pending with ContainerCreating at once, then Running and ready after the startup delay', async () => {
    const { client, clock, pods } = await setup({ pods: [boundPod({ name: 'web', nodeName: 'h1' })] });
    const pending = podOf(client, 'web')!;
    assert.equal(pending.status?.phase, 'Pending');
    assert.equal(pending.status?.hostIP, '127.0.0.1');
    assert.equal(pending.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    assert.equal(pending.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
    assert.equal(pods.runningCount(), 0);

    clock.advance(DELAY - 1);
    await pods.idle();
    assert.equal(podOf(client, 'web')!.status?.phase, 'Pending');
    clock.advance(1);
    await pods.idle();
    const running = podOf(client, 'web')!;
    assert.equal(running.status?.phase, 'Running');
    assert.equal(running.status?.podIP, '10.244.3.2');
    assert.deepEqual(running.status?.containerStatuses?.map((c) => [c.name, c.ready, Boolean(c.state?.running)]), [['app', true, true]]);
    assert.equal(running.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(pods.runningCount(), 1);
    assert.equal(pods.startFigures().count, 1);
    // Two status writes per pod, as a kubelet makes for a pod that starts cleanly.
    assert.equal(client.count('patch', 'pods', 'status'), 2);
    pods.stop();
  });

  it('leaves other nodes\' pods and finished pods alone', async () => {
    const done = boundPod({ name: 'done', nodeName: 'h1' });
    done.status = { phase: 'Succeeded' };
    const { client, clock, pods } = await setup({ pods: [boundPod({ name: 'elsewhere', nodeName: 'h2' }), done] });
    clock.advance(DELAY);
    await pods.idle();
    assert.equal(client.count('patch', 'pods', 'status'), 0);
    assert.equal(podOf(client, 'elsewhere')!.status, undefined);
    pods.stop();
  });

  it('removes a pod being deleted with grace 0 and its uid as precondition, and never reports it Running', async () => {
    const { client, clock, pods } = await setup({ pods: [boundPod({ name: 'web', nodeName: 'h1' })] });
    const uid = podOf(client, 'web')!.metadata.uid;
    await client.delete({ plural: 'pods' }, { namespace: 'default', name: 'web' });
    await pods.idle();
    assert.equal(podOf(client, 'web'), undefined);
    const del = client.calls.filter((c) => c.verb === 'delete').at(-1)!;
    assert.deepEqual(del.body, { gracePeriodSeconds: 0, preconditions: { uid } });
    clock.advance(DELAY);
    await pods.idle();
    assert.equal(client.count('patch', 'pods', 'status'), 1);
    assert.equal(pods.runningCount(), 0);
    pods.stop();
  });

  it('adopts a pod it already reported Running (a restarted hollow node) without writing', async () => {
    const first = await setup({ pods: [boundPod({ name: 'web', nodeName: 'h1' })] });
    first.clock.advance(DELAY);
    await first.pods.idle();
    first.pods.stop();
    const running = podOf(first.client, 'web')!;
    const again = await setup({ pods: [running] });
    again.clock.advance(DELAY);
    await again.pods.idle();
    assert.equal(again.client.count('patch', 'pods', 'status'), 0);
    assert.equal(again.pods.runningCount(), 1);
    again.pods.stop();
  });

  it('retries a failed status write after the retry delay', async () => {
    const client = new FakeClient();
    const clock = new ManualClock();
    client.put<Pod>('pods', boundPod({ name: 'web', nodeName: 'h1' }));
    const pods = new HollowPods({ client, nodeName: 'h1', hostIP: '127.0.0.1', podCidr: async () => undefined, startupDelayMs: 0, retryMs: 500, clock, log });
    await pods.start();
    client.failWith = new Error('connection reset');
    clock.advance(0);
    await new Promise((r) => setImmediate(r));
    client.failWith = undefined;
    clock.advance(500);
    await pods.idle();
    clock.advance(500);
    await pods.idle();
    const pod = podOf(client, 'web')!;
    assert.equal(pod.status?.phase, 'Running');
    // A refused write was sent again: more than the two writes of a clean start.
    assert.ok(client.count('patch', 'pods', 'status') > 2, `status writes: ${client.count('patch', 'pods', 'status')}`);
    // No pod range known yet: Running without an address rather than a made-up one.
    assert.equal(pod.status?.podIP, undefined);
    pods.stop();
  });

  it('hands out pod addresses from the node range, skipping the network address and the gateway', () => {
    assert.equal(podAddress('10.244.3.0/24', 0), '10.244.3.2');
    assert.equal(podAddress('10.244.3.0/24', 252), '10.244.3.254');
    assert.equal(podAddress('10.244.3.0/24', 253), '10.244.3.2');
    assert.equal(podAddress('10.0.0.0/8', 300), '10.0.1.46');
    assert.equal(podAddress('not a cidr', 0), undefined);
  });
});
