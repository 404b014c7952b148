/**
 * Provisioning benchmark: how long a PersistentVolumeClaim of the default `local-path` class takes
 * from its create to `Bound`, when a pod that uses it is created with it (WaitForFirstConsumer: the
 * scheduler picks the node, the PV controller provisions a volume there and binds both halves).
 * Measured on a real `berth server` process over HTTPS with a Node object that no agent serves, so
 * only the control plane's part is timed (the directory itself is made later, by the node's agent,
 * when the pod starts). Two cases: one claim at a time (`--single N` runs), and `--burst N` claims
 * (each with its pod) created at once.
 *
 * Usage: node dist/scripts/bench-provisioning.js [--single 20] [--burst 50] [--json FILE]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { PERSISTENTVOLUMECLAIMS } from '../src/api/identities.js';
import type { Node, PersistentVolumeClaim, Pod } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { startCluster, TEST_IMAGE } from '../test/e2e/harness.js';
import { median, pct, round } from './bench-lib.js';

const { values } = parseArgs({ options: { single: { type: 'string' }, burst: { type: 'string' }, json: { type: 'string' } } });
const singleRuns = Math.min(Number(values.single ?? 20), 200);
const burst = Math.min(Number(values.burst ?? 50), 500);

const cluster = await startCluster({ agents: [] });
const { client } = cluster;
const ns = 'bench-provisioning';
const nodeName = 'bench-node';

try {
  await client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await client.create<Node>(CORE.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName, labels: { 'kubernetes.io/hostname': nodeName } }, spec: {} });
  await client.patch(CORE.nodes, {
    name: nodeName,
    type: 'merge',
    subresource: 'status',
    patch: { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date().toISOString() }], allocatable: { cpu: '64', memory: '256Gi', pods: '1000' }, capacity: { cpu: '64', memory: '256Gi', pods: '1000' } } },
  });

  // Bound times come from one watch, so a claim is timed by the first event that shows it Bound.
  const boundAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const watch = client.watch<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS, {
    namespace: ns,
    onEvent: (ev) => {
      const name = ev.object.metadata.name ?? '';
      if (ev.object.status?.phase !== 'Bound' || boundAt.has(name)) return;
      boundAt.set(name, performance.now());
      waiters.get(name)?.();
    },
  });
  const boundOf = (name: string) => new Promise<void>((resolve) => (boundAt.has(name) ? resolve() : waiters.set(name, resolve)));

  const claimAndPod = async (name: string): Promise<number> => {
    const started = performance.now();
    await client.create<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }, { namespace: ns });
    await client.create<Pod>(CORE.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: TEST_IMAGE }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: name } }] } }, { namespace: ns });
    await boundOf(name);
    return boundAt.get(name)! - started;
  };

  // Warm-up: the first claim also pays for the first lists of every informer involved.
  await claimAndPod('warmup');
  const single: number[] = [];
  for (let i = 0; i < singleRuns; i++) single.push(await claimAndPod(`one-${i}`));
  const burstStarted = performance.now();
  const many = await Promise.all(Array.from({ length: burst }, (_, i) => claimAndPod(`many-${i}`)));
  const burstTotal = performance.now() - burstStarted;
  watch.close();

  const summary = (xs: number[]) => ({ n: xs.length, p50Ms: round(median(xs)), p99Ms: round(pct(xs, 99)), maxMs: round(Math.max(...xs)) });
  const result = { single: summary(single), burst: { ...summary(many), allBoundMs: round(burstTotal) } };
  console.log(JSON.stringify(result, null, 2));
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(result, null, 2));
} finally {
  await cluster.stop();
}
