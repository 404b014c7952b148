import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ManualClock } from '../../agent/clock.js';
import { NodeLease } from '../../agent/node/lease.js';
import type { Lease } from '../../src/api/types.js';
import { FakeClient } from './agent-fake-client.js';

const log = pino({ level: 'silent' });
const LEASES = { group: 'coordination.k8s.io', plural: 'leases' };

function setup() {
  const client = new FakeClient();
  const clock = new ManualClock();
  const lease = new NodeLease({ client, nodeName: 'n1', clock, log, renewIntervalMs: 10_000 });
  const stored = () => client.peek<Lease>('leases', 'kube-node-lease', 'n1')!;
  return { client, clock, lease, stored };
}

describe('node lease', () => {
  it('creates the Lease, then renews it with one update each time and no read', async () => {
    const { client, clock, lease, stored } = setup();
    await lease.renew();
    assert.equal(client.count('create', 'leases'), 1);
    const first = stored().spec!.renewTime;
    clock.advance(10_000);
    await lease.renew();
    clock.advance(10_000);
    await lease.renew();
    assert.equal(client.count('update', 'leases'), 2);
    assert.equal(client.count('get', 'leases'), 1, 'only the first renewal looked for an existing Lease');
    assert.notEqual(stored().spec!.renewTime, first);
    assert.equal(stored().spec!.holderIdentity, 'n1');
  });

  it('reads the Lease again when someone else changed it, and recreates it when it is gone', async () => {
    const { client, clock, lease, stored } = setup();
    await lease.renew();
    // Another writer moves the Lease on: the cached copy's resourceVersion is stale.
    const other = stored();
    await client.update(LEASES, { ...other, spec: { ...other.spec, holderIdentity: 'someone-else' } });
    clock.advance(10_000);
    await lease.renew();
    assert.equal(stored().spec!.holderIdentity, 'n1');
    assert.equal(client.count('get', 'leases'), 2, 'the conflicting update made it read the Lease again');
    const gets = client.count('get', 'leases');
    client.drop('leases', 'kube-node-lease', 'n1');
    clock.advance(10_000);
    await lease.renew();
    assert.ok(stored(), 'recreated');
    assert.equal(client.count('get', 'leases'), gets + 1);
    assert.equal(client.count('create', 'leases'), 2);
  });
});
