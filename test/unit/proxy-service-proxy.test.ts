import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { NftExecutor } from '../../agent/proxy/nft-executor.js';
import { ServiceProxy } from '../../agent/proxy/service-proxy.js';
import { FakeClient } from './agent-fake-client.js';
import { NftModel } from './proxy-nft-model.js';
import { endpoint, HTTP_PORT, service, slice } from './proxy-fixtures.js';

const log = pino({ level: 'silent' });
const NODE = 'n1';
/** the ClusterIP's element leads to web's svc chain (its name carries a hash of its rules) */
const WEB_SVC_CHAIN = /^goto svc-[0-9a-f]{8}-default\/web\/tcp\/http$/;

/** nft as the model: scripts are applied (or refused) in order; `failNext` makes the next one fail. */
class ModelExecutor implements NftExecutor {
  readonly model = new NftModel();
  failNext = 0;
  async apply(script: string): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('nft: simulated failure');
    }
    this.model.apply(script);
  }
  async deleteTable(): Promise<void> {
    throw new Error('the proxy must never delete its table');
  }
}

async function setup(opts: { retryMs?: number } = {}) {
  const client = new FakeClient();
  const nft = new ModelExecutor();
  const proxy = new ServiceProxy({ client, nodeName: NODE, executor: nft, log, table: 'berth-test', retryMs: opts.retryMs ?? 5, fullSyncMs: 0, staleDeleteDelayMs: 10 });
  return { client, nft, proxy };
}

const isFull = (s: string) => s.startsWith('add table ip berth-test\ndelete table ip berth-test\n');

test('start: one full rebuild from what the informers listed; later changes go as incremental transactions', async () => {
  const { client, nft, proxy } = await setup();
  client.put('services', service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT }));
  client.put('endpointslices', slice('web', [endpoint('10.1.0.2', NODE)]));
  await proxy.start();
  assert.equal(nft.model.scripts.length, 1);
  assert.ok(isFull(nft.model.scripts[0]!));
  assert.match(nft.model.tables.get('berth-test')!.maps.get('service-ips')!.get('10.96.0.20 . tcp . 80')!, WEB_SVC_CHAIN);

  client.put('endpointslices', slice('web', [endpoint('10.1.0.2', NODE), endpoint('10.1.0.3', 'n2')]));
  await proxy.idle();
  assert.equal(nft.model.scripts.length, 2);
  assert.ok(!isFull(nft.model.scripts[1]!));
  const svcChain = nft.model.tables.get('berth-test')!.maps.get('service-ips')!.get('10.96.0.20 . tcp . 80')!.slice('goto '.length);
  assert.match(nft.model.tables.get('berth-test')!.chains.get(svcChain)![0]!, /numgen random mod 2 0 goto ep-/);
  proxy.stop();
});

test('events that arrive together are coalesced into one transaction', async () => {
  const { client, nft, proxy } = await setup();
  await proxy.start();
  const before = nft.model.scripts.length;
  for (let i = 0; i < 20; i++) {
    client.put('services', service(`s${i}`, { clusterIP: `10.96.1.${i}`, ports: HTTP_PORT }));
    client.put('endpointslices', slice(`s${i}`, [endpoint(`10.1.1.${i}`, NODE)]));
  }
  await proxy.idle();
  assert.equal(nft.model.scripts.length - before, 1);
  assert.equal(nft.model.tables.get('berth-test')!.maps.get('service-ips')!.size, 20);
  proxy.stop();
});

test('deleting the Service removes its rules; stopping the proxy leaves the table in place', async () => {
  const { client, nft, proxy } = await setup();
  client.put('services', service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT }));
  client.put('endpointslices', slice('web', [endpoint('10.1.0.2', NODE)]));
  await proxy.start();
  client.drop('services', 'default', 'web');
  await proxy.idle();
  const webChains = () => [...nft.model.tables.get('berth-test')!.chains].filter(([c]) => c.includes('default/web'));
  // At once: no element leads to the Service's chains; shortly after, the chains are gone.
  assert.equal(nft.model.tables.get('berth-test')!.maps.get('service-ips')!.size, 0);
  assert.ok(webChains().length > 0);
  for (let i = 0; i < 100 && webChains().length > 0; i++) await new Promise((r) => setTimeout(r, 5));
  await proxy.idle();
  assert.deepEqual(webChains(), []);
  assert.ok(!/delete chain/.test(nft.model.scripts.at(-2)!) && /^delete chain/.test(nft.model.scripts.at(-1)!));
  client.put('services', service('api', { clusterIP: '10.96.0.21', ports: HTTP_PORT }));
  client.put('endpointslices', slice('api', [endpoint('10.1.0.4', NODE)], undefined, 'api-x'));
  await proxy.idle();
  const n = nft.model.scripts.length;
  proxy.stop();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(nft.model.scripts.length, n);
  assert.equal(nft.model.tables.get('berth-test')!.maps.get('service-ips')!.size, 1);
});

test('a failed transaction is retried as a full rebuild that includes the change', async () => {
  const { client, nft, proxy } = await setup({ retryMs: 5 });
  await proxy.start();
  nft.failNext = 1;
  client.put('services', service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT }));
  client.put('endpointslices', slice('web', [endpoint('10.1.0.2', NODE)]));
  for (let i = 0; i < 100 && proxy.stats.syncs < 2; i++) await new Promise((r) => setTimeout(r, 5));
  await proxy.idle();
  assert.equal(proxy.stats.failures, 1);
  assert.ok(isFull(nft.model.scripts.at(-1)!));
  assert.match(nft.model.tables.get('berth-test')!.maps.get('service-ips')!.get('10.96.0.20 . tcp . 80')!, WEB_SVC_CHAIN);
  proxy.stop();
});

test('a restarted proxy rebuilds the table from the current state, replacing what an earlier one left', async () => {
  const { client, nft, proxy } = await setup();
  client.put('services', service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT }));
  client.put('endpointslices', slice('web', [endpoint('10.1.0.2', NODE)]));
  await proxy.start();
  proxy.stop();
  // While no proxy runs, the Service goes away and another appears.
  client.drop('services', 'default', 'web');
  client.put('services', service('api', { clusterIP: '10.96.0.21', ports: HTTP_PORT }));
  client.put('endpointslices', slice('api', [endpoint('10.1.0.4', NODE)], undefined, 'api-x'));
  const again = new ServiceProxy({ client, nodeName: NODE, executor: nft, log, table: 'berth-test', fullSyncMs: 0 });
  await again.start();
  const ips = nft.model.tables.get('berth-test')!.maps.get('service-ips')!;
  assert.deepEqual([...ips.keys()], ['10.96.0.21 . tcp . 80']);
  again.stop();
});

test('Services labelled service.kubernetes.io/service-proxy-name get no rules', async () => {
  const { client, nft, proxy } = await setup();
  client.put('services', service('kube-dns', { clusterIP: '10.96.0.10', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] }, { metadata: { name: 'kube-dns', namespace: 'default', labels: { 'service.kubernetes.io/service-proxy-name': 'berth-node-dns' } } }));
  client.put('endpointslices', slice('kube-dns', [endpoint('10.1.0.2', NODE)], [{ name: 'dns', port: 53, protocol: 'UDP' }]));
  await proxy.start();
  const t = nft.model.tables.get('berth-test')!;
  for (const m of t.maps.values()) assert.equal(m.size, 0);
  proxy.stop();
});
