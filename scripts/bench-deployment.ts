/**
 * Workload benchmark (issue 4), not a timed test:
 *  1. A 30-replica Deployment from create until status.readyReplicas = 30 (seen through a watch),
 *     side by side with raw Docker starting the same 30 pods (infra + app container each) in
 *     parallel over the Engine API; rounds alternate, medians reported as a ratio.
 *  2. What the workload controllers cost in memory: control-plane RSS holding 30 Deployments
 *     (1 replica each, so 30 ReplicaSets and 30 pods) with the controllers on, against a second
 *     control plane holding the same 30 Deployments with replicaset, deployment and
 *     garbage-collector turned off.
 *
 * Usage: node dist/scripts/bench-deployment.js [--rounds N] [--json FILE]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { KubeObject, Pod } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { startCluster, TEST_IMAGE, waitFor, type Cluster } from '../test/e2e/harness.js';
import { cleanRaw, median, rawDockerRound, steadyRssMb } from './bench-lib.js';

const { values } = parseArgs({ options: { rounds: { type: 'string' }, json: { type: 'string' } } });
const rounds = Number(values.rounds ?? 2);
const DEPLOY = { group: 'apps', version: 'v1', plural: 'deployments' };

const deployment = (name: string, replicas: number) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'default', labels: { bench: 'yes' } },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name, bench: 'yes' } }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: TEST_IMAGE, command: ['sleep', '3600'] }] } },
  },
}) as KubeObject;

async function deploymentRound(c: Cluster, round: number): Promise<number> {
  const name = `bench-${round}`;
  const list = await c.client.list(DEPLOY, { namespace: 'default' });
  let done: () => void = () => undefined;
  const ready = new Promise<void>((r) => (done = r));
  const watch = c.client.watch<KubeObject & { status?: { readyReplicas?: number } }>(DEPLOY, {
    namespace: 'default',
    resourceVersion: list.metadata.resourceVersion,
    onEvent: (ev) => {
      if (ev.object.metadata.name === name && ev.object.status?.readyReplicas === 30) done();
    },
  });
  const t0 = performance.now();
  await c.client.create(DEPLOY, deployment(name, 30));
  await ready;
  const ms = performance.now() - t0;
  watch.close();
  await c.client.delete(DEPLOY, { namespace: 'default', name, propagationPolicy: 'Foreground' });
  await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default' })).items.length === 0, 180_000, 'bench pods gone');
  return ms;
}

async function thirtyDeployments(c: Cluster): Promise<void> {
  for (let i = 0; i < 30; i++) await c.client.create(DEPLOY, deployment(`mem-${i}`, 1));
}

async function main(): Promise<void> {
  await cleanRaw();
  const c = await startCluster({ agents: ['deploy-bench'] });
  const report: Record<string, unknown> = { date: new Date().toISOString(), rounds };
  try {
    const berth: number[] = [];
    const raw: number[] = [];
    for (let r = 0; r < rounds; r++) {
      raw.push(await rawDockerRound(30, r));
      berth.push(await deploymentRound(c, r));
    }
    report.deployment30 = { berthMs: Math.round(median(berth)), dockerMs: Math.round(median(raw)), ratio: Math.round((median(berth) / median(raw)) * 100) / 100, berthAll: berth.map(Math.round), dockerAll: raw.map(Math.round) };

    await thirtyDeployments(c);
    await waitFor(async () => {
      const pods = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
      return pods.items.filter((p) => p.status?.phase === 'Running').length === 30;
    }, 300_000, '30 pods of 30 Deployments running');
    await new Promise((r) => setTimeout(r, 5000));
    const withControllers = await steadyRssMb(c.serverPid());

    const bare = await startCluster({ agents: [], serverArgs: ['--disable-controllers', 'replicaset,deployment,garbage-collector'] });
    try {
      await thirtyDeployments(bare);
      await new Promise((r) => setTimeout(r, 5000));
      const without = await steadyRssMb(bare.serverPid());
      report.controllerMemory = { withControllersMb: withControllers, withoutControllersMb: without, addedMb: Math.round((withControllers - without) * 10) / 10 };
    } finally {
      await bare.stop();
    }
  } finally {
    await cleanRaw();
    await c.stop();
  }
  console.log(JSON.stringify(report, null, 2));
  const d = report.deployment30 as { berthMs: number; dockerMs: number; ratio: number };
  const m = report.controllerMemory as { withControllersMb: number; withoutControllersMb: number; addedMb: number };
  console.log('\n| measurement | Berth | baseline | result | target |');
  console.log('|---|---|---|---|---|');
  console.log(`| 30-replica Deployment fully ready | ${d.berthMs} ms | raw Docker, 30 pods: ${d.dockerMs} ms | ${d.ratio}× | ≤ 1.5× |`);
  console.log(`| control plane with 30 Deployments | ${m.withControllersMb} MB | controllers off: ${m.withoutControllersMb} MB | +${m.addedMb} MB | ≤ +40 MB |`);
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(report, null, 2));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
