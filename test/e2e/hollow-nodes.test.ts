/**
 * A small scale run kept in CI: a real `berth server` and `berth hollow-nodes --count 20` (twenty node agents
 * in one process, no containers), then a Deployment of 200 replicas applied with kubectl.
 *
 * Proves: every hollow node joins with its own credential and turns Ready; the scheduler spreads the 200
 * pods over them; every pod reaches Running (as seen by the API, with a pod IP from its node's range);
 * every node stays Ready throughout (its Ready condition never changed since it turned Ready) and renews
 * its Lease; the command reports what the nodes cost. No latency bound: the bounds are
 * scripts/bench-scale.ts's.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Lease, Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { LEASES } from '../../src/api/identities.js';
import { BERTH_BIN, startCluster, waitFor, type Cluster } from './harness.js';

const NODES = 20;
const PODS = 200;
const PREFIX = `hollow-${process.pid}`;

function ready(node: Node): boolean {
  return node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

describe(`hollow nodes: ${NODES} nodes × ${PODS / NODES} pods`, () => {
  let cluster: Cluster;
  let hollow: ChildProcess;
  let output = '';
  /** Ready's lastTransitionTime of each node once all were Ready */
  const readySince = new Map<string, string>();

  before(async () => {
    cluster = await startCluster({ agents: [] });
    hollow = spawn(process.execPath, [
      ...NODE_FLAGS, BERTH_BIN, 'hollow-nodes', '--count', String(NODES), '--server', cluster.url, '--token-file', path.join(cluster.dir, 'server', 'node-token'),
      '--data-dir', path.join(cluster.dir, 'hollow'), '--name-prefix', PREFIX, '--startup-delay-ms', '500', '--cost-window-seconds', '2', '--report-interval-seconds', '0',
      '--join-concurrency', '8', '--output', 'json',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    hollow.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    hollow.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  });

  after(async () => {
    if (hollow && hollow.exitCode === null && hollow.signalCode === null) {
      const exited = new Promise((r) => hollow.once('exit', r));
      hollow.kill('SIGTERM');
      await exited;
    }
    await cluster?.stop();
  });

  it('every node joins and turns Ready, and the command prints its per-node cost', async () => {
    await waitFor(async () => {
      const nodes = (await cluster.client.list<Node>(CORE.nodes)).items.filter((n) => n.metadata.name!.startsWith(PREFIX));
      return nodes.length === NODES && nodes.every(ready);
    }, 30_000, () => `hollow nodes did not all turn Ready; output:\n${output.slice(-3000)}`);
    for (const n of (await cluster.client.list<Node>(CORE.nodes)).items) {
      readySince.set(n.metadata.name!, n.status!.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime!);
    }
    await waitFor(() => output.includes('"event":"cost"'), 20_000, () => `no cost line; output:\n${output.slice(-3000)}`);
    const cost = JSON.parse(output.split('\n').find((l) => l.includes('"event":"cost"'))!) as { nodes: number; rssPerNodeMb: number; cpuPerNodeCores: number };
    assert.equal(cost.nodes, NODES);
    assert.ok(cost.rssPerNodeMb > 0 && Number.isFinite(cost.cpuPerNodeCores), output);
  });

  it(`a Deployment of ${PODS} replicas runs every pod, spread over every node`, async () => {
    const manifest = cluster.writeFile('hollow-deploy.yaml', `apiVersion: apps/v1
kind: Deployment
metadata: {name: density, namespace: default}
spec:
  replicas: ${PODS}
  selector: {matchLabels: {app: density}}
  template:
    metadata: {labels: {app: density}}
    spec:
      containers: [{name: pause, image: registry.k8s.io/pause:3.9}]
`);
    const applied = await cluster.kubectl(['apply', '-f', manifest]);
    assert.equal(applied.code, 0, applied.stderr);
    let pods: Pod[] = [];
    await waitFor(async () => {
      pods = (await cluster.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=density' })).items;
      return pods.length === PODS && pods.every((p) => p.status?.phase === 'Running');
    }, 60_000, () => `${pods.filter((p) => p.status?.phase === 'Running').length}/${PODS} pods Running (${pods.length} exist); output:\n${output.slice(-2000)}`);
    const perNode = new Map<string, number>();
    for (const p of pods) {
      assert.ok(p.status?.podIP, `${p.metadata.name} has no pod IP`);
      assert.equal(p.status?.containerStatuses?.[0]?.ready, true);
      perNode.set(p.spec.nodeName!, (perNode.get(p.spec.nodeName!) ?? 0) + 1);
    }
    assert.equal(perNode.size, NODES, `pods landed on ${perNode.size} nodes: ${JSON.stringify([...perNode])}`);
    const nodes = (await cluster.client.list<Node>(CORE.nodes)).items;
    for (const n of nodes) {
      const range = n.spec?.podCIDR?.split('.').slice(0, 3).join('.');
      for (const p of pods.filter((q) => q.spec.nodeName === n.metadata.name)) assert.ok(range && p.status!.podIP!.startsWith(range + '.'), `${p.status?.podIP} outside ${n.spec?.podCIDR}`);
    }
    const kubectlView = await cluster.kubectl(['get', 'pods', '-l', 'app=density', '--no-headers']);
    assert.equal(kubectlView.stdout.trim().split('\n').filter((l) => /\s1\/1\s+Running\s/.test(l)).length, PODS, kubectlView.stdout.slice(0, 2000));
  });

  it('every node stayed Ready throughout and holds a fresh Lease', async () => {
    const nodes = (await cluster.client.list<Node>(CORE.nodes)).items.filter((n) => n.metadata.name!.startsWith(PREFIX));
    assert.equal(nodes.length, NODES);
    for (const n of nodes) {
      assert.ok(ready(n), `${n.metadata.name} is not Ready`);
      assert.equal(n.status!.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime, readySince.get(n.metadata.name!), `${n.metadata.name}'s Ready changed`);
      const lease = await cluster.client.get<Lease>(LEASES, { namespace: 'kube-node-lease', name: n.metadata.name! });
      assert.ok(Date.now() - Date.parse(lease.spec!.renewTime!) < 30_000, `${n.metadata.name}'s Lease was renewed at ${lease.spec!.renewTime}`);
    }
    assert.ok(fs.existsSync(path.join(cluster.dir, 'hollow', `${PREFIX}-0`, 'credentials.json')), 'each node keeps its own credentials');
  });
});
