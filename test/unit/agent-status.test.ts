import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../agent/clock.js';
import { StatusManager } from '../../agent/pods/status-manager.js';
import type { Pod, PodStatus } from '../../src/api/types.js';
import { boundPod, FakeClient } from './agent-fake-client.js';

const log = pino({ level: 'silent' });

function setup(minIntervalMs = 0) {
  const client = new FakeClient();
  const clock = new ManualClock();
  const status = new StatusManager({ client, clock, log, minIntervalMs });
  const pod = client.put<Pod>('pods', boundPod({ name: 'web', nodeName: 'n1' }));
  status.podUpdated(pod);
  return { client, clock, status, pod };
}

const running: PodStatus = { phase: 'Running', podIP: '172.17.0.2' };

describe('status manager', () => {
  it('writes a changed status with PUT on the status subresource', async () => {
    const { client, status, pod } = setup();
    status.setStatus(pod, running);
    await status.idle();
    assert.equal(client.count('update', 'pods', 'status'), 1);
    assert.deepEqual(client.peek<Pod>('pods', 'default', 'web')!.status, running);
  });

  it('does not write when nothing changed', async () => {
    const { client, status, pod } = setup();
    status.setStatus(pod, running);
    await status.idle();
    status.setStatus(pod, structuredClone(running));
    status.setStatus(pod, { podIP: '172.17.0.2', phase: 'Running' }); // same content, other key order
    await status.idle();
    assert.equal(client.count('update', 'pods', 'status'), 1);
  });

  it('does not write a status the API already has (a restarted agent)', async () => {
    const { client, status } = setup();
    const withStatus = client.put<Pod>('pods', { ...client.peek<Pod>('pods', 'default', 'web')!, status: running });
    status.podUpdated(withStatus);
    status.setStatus(withStatus, structuredClone(running));
    await status.idle();
    assert.equal(client.count('update', 'pods', 'status'), 0);
  });

  it('re-reads and retries on a 409 from a stale resourceVersion', async () => {
    const { client, status, pod } = setup();
    // Someone else changes the pod after the agent last saw it.
    client.put<Pod>('pods', { ...client.peek<Pod>('pods', 'default', 'web')!, metadata: { ...pod.metadata, labels: { touched: 'yes' } } });
    status.setStatus(pod, running);
    await status.idle();
    assert.equal(client.count('update', 'pods', 'status'), 2);
    assert.equal(client.count('get', 'pods'), 1);
    const stored = client.peek<Pod>('pods', 'default', 'web')!;
    assert.deepEqual(stored.status, running);
    assert.equal(stored.metadata.labels?.touched, 'yes');
  });

  it('writes at most once per minimum interval, with the latest status', async () => {
    const { client, clock, status, pod } = setup(1000);
    status.setStatus(pod, { phase: 'Pending' });
    await status.idle();
    status.setStatus(pod, { phase: 'Running' });
    status.setStatus(pod, { phase: 'Running', podIP: '1.2.3.4' });
    await status.idle();
    assert.equal(client.count('update', 'pods', 'status'), 1);
    clock.advance(1000);
    await status.idle();
    assert.equal(client.count('update', 'pods', 'status'), 2);
    assert.deepEqual(client.peek<Pod>('pods', 'default', 'web')!.status, { phase: 'Running', podIP: '1.2.3.4' });
  });

  it('stops writing for a pod that is gone', async () => {
    const { client, status, pod } = setup();
    client.drop('pods', 'default', 'web');
    status.setStatus(pod, running);
    await status.idle();
    assert.equal(status.latestStatus(pod.metadata.uid!), undefined);
  });
});
