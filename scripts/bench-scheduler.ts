/**
 * Scheduler throughput benchmark: pods/s the scheduler's own code places when a burst of pending pods
 * meets a cluster of fake nodes, in process (no API server: the time is the queue, the cache, the
 * default profile's plugins and the assume step, which is what bounds kube-scheduler's figure too).
 *
 * 500 nodes (4 cpu, 16Gi, 110 pods, spread over 3 zones) and 5,000 pending pods, each 100m/128Mi,
 * 50 ReplicaSets of 100 (so the default topology spreading is active). Scenarios:
 *  - plain: no affinity;
 *  - anti-affinity: every pod has required anti-affinity on kubernetes.io/hostname against its own
 *    ReplicaSet's pods (at most one replica per node).
 * Every pod must be placed; the script fails otherwise (and, for anti-affinity, if two replicas share a node).
 *
 * Usage: node dist/scripts/bench-scheduler.js [--nodes N] [--pods N] [--json FILE]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { Node, Pod } from '../src/api/types.js';
import { SchedulerCache } from '../src/controllers/scheduler/cache.js';
import { Cycle, schedulePod } from '../src/controllers/scheduler/framework.js';
import { defaultProfile } from '../src/controllers/scheduler/profile.js';
import { SchedulingQueue } from '../src/controllers/scheduler/queue.js';

const { values } = parseArgs({ options: { nodes: { type: 'string' }, pods: { type: 'string' }, json: { type: 'string' } } });
const NODES = Number(values.nodes ?? 500);
const PODS = Number(values.pods ?? 5000);
const PER_SET = 100;

interface Result {
  podsPerSecond: number;
  seconds: number;
  /** CPU time of this process over the run: the figure a loaded machine does not distort */
  cpuSeconds: number;
  podsPerCpuSecond: number;
}

function fakeNode(i: number): Node {
  const name = `hollow-${String(i).padStart(4, '0')}`;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'topology.kubernetes.io/zone': `zone-${i % 3}` } },
    spec: {},
    status: { conditions: [{ type: 'Ready', status: 'True' }], allocatable: { cpu: '4', memory: '16Gi', pods: '110' } },
  };
}

function pendingPod(i: number, antiAffinity: boolean): Pod {
  const set = `rs-${Math.floor(i / PER_SET)}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${set}-${i}`,
      namespace: 'bench',
      uid: `uid-${i}`,
      labels: { app: set },
      creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: set, uid: `uid-${set}`, controller: true }],
    },
    spec: {
      containers: [{ name: 'main', image: 'berth/busybox:test', resources: { requests: { cpu: '100m', memory: '128Mi' } } }],
      ...(antiAffinity ? { affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: set } }, topologyKey: 'kubernetes.io/hostname' }] } } } : {}),
    },
  };
}

async function main(): Promise<void> {
  const results: Record<string, Result> = {};
  for (const [name, anti] of [['plain', false], ['anti-affinity', true]] as const) {
    results[name] = await run(anti);
    const r = results[name]!;
    console.log(`${name}: ${PODS} pods on ${NODES} nodes in ${r.seconds.toFixed(2)} s = ${r.podsPerSecond.toFixed(0)} pods/s (${r.cpuSeconds.toFixed(2)} s of CPU = ${r.podsPerCpuSecond.toFixed(0)} pods per CPU-second)`);
  }
  if (values.json) fs.writeFileSync(values.json, JSON.stringify({ nodes: NODES, pods: PODS, results }, null, 2));
}

/** Drains the queue as the scheduler's loop does: pop, attempt against the cache, assume. */
async function run(antiAffinity: boolean): Promise<Result> {
  const plugins = defaultProfile();
  const cache = new SchedulerCache();
  for (let i = 0; i < NODES; i++) cache.setNode(fakeNode(i));
  const queue = new SchedulingQueue();
  const pods = new Map<string, Pod>();
  for (let i = 0; i < PODS; i++) {
    const pod = pendingPod(i, antiAffinity);
    const key = `bench/${pod.metadata.name}`;
    pods.set(key, pod);
    queue.add(key, 0, Date.parse(pod.metadata.creationTimestamp!));
  }
  const placed = new Map<string, string>();
  let startIndex = 0;
  const started = performance.now();
  const cpuStarted = process.cpuUsage();
  while (queue.length) {
    const key = (await queue.pop())!;
    const pod = pods.get(key)!;
    const cycle = new Cycle(pod, cache.snapshotFor(key, 0));
    const result = schedulePod(plugins, cycle, { startIndex });
    startIndex = result.nextStartIndex;
    if (!result.node) throw new Error(`${key} fit nowhere: ${[...result.rejected.values()][0]?.reasons}`);
    cache.assume(key, pod, result.node.name);
    queue.done(key);
    placed.set(key, result.node.name);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuStarted);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  if (placed.size !== PODS) throw new Error(`placed ${placed.size} of ${PODS}`);
  if (antiAffinity) {
    const seen = new Set<string>();
    for (const [key, node] of placed) {
      const pair = `${pods.get(key)!.metadata.labels!.app}@${node}`;
      if (seen.has(pair)) throw new Error(`two replicas of one set on ${node}`);
      seen.add(pair);
    }
  }
  return { podsPerSecond: PODS / seconds, seconds, cpuSeconds, podsPerCpuSecond: PODS / cpuSeconds };
}

await main();
