/**
 * The NetworkPolicy enforcer (agent/network-policy/enforcer.ts) against a fake API and a recording nft:
 * one full build at start, then a transaction per batch of changes to policies, pods or namespace
 * labels, and a rebuild after a refused transaction.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { Namespace, NetworkPolicy, Pod } from '../../src/api/types.js';
import type { NftExecutor } from '../../agent/proxy/nft-executor.js';
import { PolicyEnforcer } from '../../agent/network-policy/enforcer.js';
import { FakeClient } from './agent-fake-client.js';

const log = pino({ level: 'silent' });

class RecordingNft implements NftExecutor {
  readonly scripts: string[] = [];
  failNext = 0;
  async apply(script: string): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('nft: simulated failure');
    }
    this.scripts.push(script);
  }
  async deleteTable(): Promise<void> {
    throw new Error('the enforcer never deletes its table');
  }
}

const ns = (name: string, labels: Record<string, string> = {}): Namespace => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
const pod = (namespace: string, name: string, ip: string, nodeName: string, labels: Record<string, string>): Pod =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name, labels }, spec: { nodeName, containers: [{ name: 'c', image: 'i' }] }, status: { phase: 'Running', podIP: ip } }) as Pod;
const allowFromTeamB: NetworkPolicy = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: 'team-a', name: 'from-b', uid: 'u1' },
  spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }] }] },
};

async function setup() {
  const client = new FakeClient();
  const nft = new RecordingNft();
  client.put('namespaces', ns('team-a'));
  client.put('namespaces', ns('team-b'));
  client.put('pods', pod('team-a', 'server', '10.244.0.10', 'n1', { app: 'server' }));
  client.put('pods', pod('team-b', 'client', '10.244.1.20', 'n2', { app: 'client' }));
  client.put('networkpolicies', allowFromTeamB);
  const enforcer = new PolicyEnforcer({ client, nodeName: 'n1', table: 'berth-np', executor: nft, log, retryMs: 5, bridgeNetfilter: false });
  await enforcer.start();
  return { client, nft, enforcer };
}

const peerElements = (e: PolicyEnforcer) => [...e.state.sets].filter(([n]) => n.startsWith('peer-')).map(([, s]) => s.elements);

test('start builds the whole table once; a namespace label change is one transaction of set elements', async () => {
  const { client, nft, enforcer } = await setup();
  assert.equal(nft.scripts.length, 1);
  assert.ok(nft.scripts[0]!.startsWith('add table ip berth-np\ndelete table ip berth-np\n'));
  assert.deepEqual([...enforcer.state.ingress.keys()], ['10.244.0.10'], 'the local pod the policy selects');
  assert.deepEqual(peerElements(enforcer), [[]], 'no namespace has team=b yet');

  client.put('namespaces', ns('team-b', { team: 'b' }));
  await new Promise((r) => setImmediate(r));
  await enforcer.idle();
  assert.equal(nft.scripts.length, 2);
  assert.match(nft.scripts[1]!, /^add element ip berth-np peer-[0-9a-f]{8} \{ 10\.244\.1\.20 \}\n$/);
  assert.deepEqual(peerElements(enforcer), [['10.244.1.20']]);
  enforcer.stop();
});

test('pod events follow: a new peer, a pod that finished, a policy deleted', async () => {
  const { client, nft, enforcer } = await setup();
  client.put('namespaces', ns('team-b', { team: 'b' }));
  client.put('pods', pod('team-b', 'second', '10.244.1.21', 'n2', {}));
  await new Promise((r) => setImmediate(r));
  await enforcer.idle();
  assert.deepEqual(peerElements(enforcer), [['10.244.1.20-10.244.1.21']]);

  client.put('pods', { ...pod('team-b', 'second', '10.244.1.21', 'n2', {}), status: { phase: 'Succeeded', podIP: '10.244.1.21' } });
  await new Promise((r) => setImmediate(r));
  await enforcer.idle();
  assert.deepEqual(peerElements(enforcer), [['10.244.1.20']], 'a finished pod is no peer');

  client.drop('networkpolicies', 'team-a', 'from-b');
  await new Promise((r) => setImmediate(r));
  await enforcer.idle();
  assert.equal(enforcer.state.ingress.size, 0);
  assert.match(nft.scripts.at(-1)!, /delete element ip berth-np ingress-pods \{ 10\.244\.0\.10 \}\ndelete chain ip berth-np in-\w+\ndelete set ip berth-np peer-\w+\n$/);
  enforcer.stop();
});

test('a refused transaction is retried as a full rebuild', async () => {
  const { client, nft, enforcer } = await setup();
  nft.failNext = 1;
  client.put('namespaces', ns('team-b', { team: 'b' }));
  const before = nft.scripts.length;
  for (let i = 0; i < 100 && nft.scripts.length === before; i++) await new Promise((r) => setTimeout(r, 5));
  await enforcer.idle();
  assert.equal(nft.scripts.length, before + 1);
  assert.ok(nft.scripts.at(-1)!.startsWith('add table ip berth-np\ndelete table ip berth-np\n'));
  assert.deepEqual(peerElements(enforcer), [['10.244.1.20']]);
  enforcer.stop();
});
