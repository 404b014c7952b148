import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { resolveAgentOptions } from '../../agent/options.js';

const base = { server: 'https://127.0.0.1:6443', nodeName: 'n1', dataDir: '/tmp/x', logger: pino({ level: 'silent' }) };

test("the service proxy's table follows the pod range unless named; a name nft would refuse is refused up front", () => {
  // Unnamed, it is derived once the cluster CIDR is known (proxyTableFor, host-conflicts.test.ts).
  assert.equal(resolveAgentOptions(base).serviceProxyTable, undefined);
  assert.equal(resolveAgentOptions({ ...base, serviceProxyTable: 'berth-node-1' }).serviceProxyTable, 'berth-node-1');
  for (const bad of ['', '1berth', 'berth table', 'berth;flush ruleset', 'x'.repeat(65)]) {
    assert.throws(() => resolveAgentOptions({ ...base, serviceProxyTable: bad }), /not a valid nftables table name/, bad);
  }
});
