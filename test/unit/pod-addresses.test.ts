import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PodAddressPool } from '../../agent/network/pod-addresses.js';
import { hostVethName, podMacAddress } from '../../agent/network/sandbox-network.js';

/** A pool over a runtime whose sandboxes' addresses the test sets; counts how often it was asked. */
function poolOver(podCidr: string, runtimeHolds: Set<string>, now = () => 0) {
  const asked = { count: 0 };
  const pool = new PodAddressPool({
    podCidr,
    now,
    held: async () => {
      asked.count++;
      return [...runtimeHolds];
    },
  });
  return { pool, asked };
}

describe('pod address pool', () => {
  it('never hands out the network address, the gateway or the broadcast address', async () => {
    const { pool } = poolOver('10.1.2.0/29', new Set());
    assert.equal(pool.gateway, '10.1.2.1');
    assert.equal(pool.prefixLength, 29);
    const got = [];
    for (let i = 0; i < 5; i++) got.push(await pool.allocate());
    assert.deepEqual(got, ['10.1.2.2', '10.1.2.3', '10.1.2.4', '10.1.2.5', '10.1.2.6']);
    await assert.rejects(pool.allocate(), /no free pod address left in 10\.1\.2\.0\/29/);
  });

  it('goes round-robin: a freed address comes back only after the rest of the range', async () => {
    const holds = new Set<string>();
    const { pool, asked } = poolOver('10.1.2.0/29', holds, () => 1_000_000);
    const first = await pool.allocate();
    holds.add(first);
    pool.settle(first); // its sandbox was made
    assert.equal(asked.count, 1, 'read once at the start');
    holds.delete(first); // its sandbox is gone
    const next = await pool.allocate();
    assert.notEqual(next, first);
    for (const ip of [next, ...(await Promise.all([pool.allocate(), pool.allocate(), pool.allocate()]))]) {
      holds.add(ip);
      pool.settle(ip);
    }
    // Wrapped around: the runtime is asked again and the freed first address is handed out.
    assert.equal(await pool.allocate(), first);
    assert.equal(asked.count, 2);
  });

  it('counts an address handed out moments ago as held, though no container shows it yet', async () => {
    let clock = 0;
    const { pool } = poolOver('10.1.2.0/30', new Set(), () => clock);
    assert.equal(await pool.allocate(), '10.1.2.2');
    await assert.rejects(pool.allocate(), /no free pod address/, 'the only address is in flight');
    clock = 61_000; // never settled (an agent stuck mid-create): after the in-flight window it is free again
    assert.equal(await pool.allocate(), '10.1.2.2');
    pool.settle('10.1.2.2'); // its create failed and the runtime shows nothing: free at the next resync
    assert.equal(await pool.allocate(), '10.1.2.2');
  });

  it('after a restart skips what the runtime holds and starts past the highest', async () => {
    const { pool } = poolOver('10.1.2.0/24', new Set(['10.1.2.7', '10.1.2.3', '10.9.9.9']));
    assert.equal(await pool.allocate(), '10.1.2.8');
    assert.equal(await pool.allocate(), '10.1.2.9');
  });

  it('hands out distinct addresses to concurrent callers', async () => {
    const { pool } = poolOver('10.1.2.0/24', new Set());
    const got = await Promise.all(Array.from({ length: 50 }, () => pool.allocate()));
    assert.equal(new Set(got).size, 50);
  });

  it('refuses a podCIDR with no room for pods', () => {
    assert.throws(() => poolOver('10.1.2.0/31', new Set()), /too small/);
  });
});

describe('sandbox wiring names', () => {
  it('derives a locally administered MAC from the address and a 15-character host interface name', () => {
    assert.equal(podMacAddress('10.244.1.5'), '0a:58:0a:f4:01:05');
    assert.equal(hostVethName('0123456789abcdef0123'), 'veth0123456789a');
    assert.ok(hostVethName('f'.repeat(64)).length <= 15);
  });
});
