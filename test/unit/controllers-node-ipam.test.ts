/**
 * Node IPAM: allocation passes over the bench's node cache; subnets read back from the registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node } from '../../src/api/types.js';
import { ANNOTATION_CLUSTER_CIDR } from '../../src/api/cluster-cidr.js';
import { NodeIpamController } from '../../src/controllers/node-ipam/node-ipam.js';
import { controllerEnv, type ControllerEnv } from './controllers-env.js';

async function setup(o: { clusterCidr?: string; nodeCidrMaskSize?: number } = {}) {
  const env = await controllerEnv();
  const ipam = new NodeIpamController({ client: env.client, informers: env.informers, log: env.log, ...o });
  return { env, ipam };
}

const addNode = (env: ControllerEnv, name: string, podCIDR?: string) =>
  env.create<Node>('', 'nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {} });
const cidrOf = (env: ControllerEnv, name: string) => env.get<Node>('', 'nodes', name, undefined).spec?.podCIDR;

describe('Node IPAM controller', () => {
  it('gives each node the lowest free subnet, with podCIDRs and the cluster CIDR annotation', async () => {
    const { env, ipam } = await setup();
    await addNode(env, 'b');
    await addNode(env, 'a');
    env.syncCaches();
    await ipam.allocate();
    assert.equal(cidrOf(env, 'a'), '10.244.0.0/24');
    assert.equal(cidrOf(env, 'b'), '10.244.1.0/24');
    const a = env.get<Node>('', 'nodes', 'a', undefined);
    assert.deepEqual(a.spec?.podCIDRs, ['10.244.0.0/24']);
    assert.equal(a.metadata.annotations?.[ANNOTATION_CLUSTER_CIDR], '10.244.0.0/16');
    env.syncCaches();
    env.clearActions();
    await ipam.allocate();
    assert.deepEqual(env.writes(), [], 'a second pass changes nothing');
  });

  it('never hands out a subnet in use, and a deleted node\'s subnet is free again', async () => {
    const { env, ipam } = await setup();
    await addNode(env, 'old', '10.244.0.0/24');
    await addNode(env, 'older', '10.244.2.0/24');
    await addNode(env, 'new1');
    await addNode(env, 'new2');
    env.syncCaches();
    await ipam.allocate();
    assert.equal(cidrOf(env, 'new1'), '10.244.1.0/24');
    assert.equal(cidrOf(env, 'new2'), '10.244.3.0/24');
    const all = env.list<Node>('', 'nodes').map((n) => n.spec?.podCIDR);
    assert.equal(new Set(all).size, all.length, 'no collisions');
    await env.registry.delete(env.info('', 'nodes'), undefined, 'older');
    await addNode(env, 'new3');
    env.syncCaches();
    await ipam.allocate();
    assert.equal(cidrOf(env, 'new3'), '10.244.2.0/24', 'the released subnet is reused');
  });

  it('a stale cache cannot cause a double allocation: the write re-reads the node', async () => {
    const { env, ipam } = await setup();
    await addNode(env, 'n');
    env.syncCaches();
    await ipam.allocate();
    // The cache still shows the node without a subnet; the next pass must not give it another.
    env.clearActions();
    await ipam.allocate();
    assert.deepEqual(env.writes(), []);
    assert.equal(cidrOf(env, 'n'), '10.244.0.0/24');
  });

  it('stops at exhaustion and leaves nodes outside the cluster CIDR alone', async () => {
    const { env, ipam } = await setup({ clusterCidr: '10.9.0.0/23', nodeCidrMaskSize: 24 });
    await addNode(env, 'foreign', '192.168.0.0/24');
    await addNode(env, 'n1');
    await addNode(env, 'n2');
    await addNode(env, 'n3');
    env.syncCaches();
    await ipam.allocate();
    assert.equal(cidrOf(env, 'foreign'), '192.168.0.0/24');
    assert.equal(cidrOf(env, 'n1'), '10.9.0.0/24');
    assert.equal(cidrOf(env, 'n2'), '10.9.1.0/24');
    assert.equal(cidrOf(env, 'n3'), undefined, 'cluster CIDR exhausted');
  });

  it('refuses a node mask that does not fit the cluster CIDR', async () => {
    await assert.rejects(setup({ clusterCidr: '10.0.0.0/24', nodeCidrMaskSize: 16 }), /does not fit/);
  });
});
