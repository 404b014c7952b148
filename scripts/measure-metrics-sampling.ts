/**
 * What resource-metrics sampling costs the agent (a script, not a timed test): N app containers
 * labelled as one node's pods run on the real Docker engine, and the agent's ResourceSampler (the
 * Docker runtime's list, each container's cgroup located once, then the cgroup files read every
 * sample) samples them repeatedly. Prints the CPU time (user + system of this process) per sample and
 * what that is, as a share of one core, at the default 15 s interval and at 1 s. Containers are removed
 * on exit, SIGINT and SIGTERM.
 *
 * Usage (root, after `npm run build`): node dist/scripts/measure-metrics-sampling.js [--pods 30] [--samples 200]
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { labelsFor } from '../agent/node/labels.js';
import { DEFAULT_METRICS_SAMPLE_INTERVAL_MS, ResourceSampler, resourceMetricsText } from '../agent/metrics/resource-sampler.js';
import { DockerRuntime } from '../agent/runtime/docker.js';

const { values } = parseArgs({ options: { pods: { type: 'string' }, samples: { type: 'string' } } });
const pods = Number(values.pods ?? 30);
const samples = Number(values.samples ?? 200);
const nodeName = `sampling-bench-${randomBytes(3).toString('hex')}`;
const IMAGE = 'berth/busybox:test';

const ids: string[] = [];
const cleanup = () => {
  if (ids.length) execFileSync('docker', ['rm', '-f', ...ids.splice(0)], { stdio: 'ignore' });
};
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => (cleanup(), process.exit(130)));

try {
  for (let i = 0; i < pods; i++) {
    const labels = labelsFor({ podUid: `uid-${i}`, podName: `pod-${i}`, podNamespace: 'bench', containerName: 'app', type: 'app', hash: 'h', restartCount: 0, nodeName, terminationGraceSeconds: 0 });
    const args = ['run', '-d', '--name', `${nodeName}-${i}`, ...Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]), IMAGE, 'sleep', '3600'];
    ids.push(execFileSync('docker', args, { encoding: 'utf8' }).trim());
  }
  const runtime = new DockerRuntime({ log: pino({ level: 'silent' }) });
  const sampler = new ResourceSampler({ runtime, nodeName, intervalMs: 0, log: pino({ level: 'warn' }) });
  const first = await sampler.sample();
  if (first.containers.length !== pods) throw new Error(`sampled ${first.containers.length} of ${pods} containers`);
  // Warm-up done (cgroups located); now the steady state the agent runs in.
  const before = process.cpuUsage();
  const wallStart = performance.now();
  for (let i = 0; i < samples; i++) {
    await sampler.sample();
    resourceMetricsText(sampler.current());
  }
  const used = process.cpuUsage(before);
  const perSampleMs = (used.user + used.system) / 1000 / samples;
  console.log(`pods ${pods}, samples ${samples}: ${perSampleMs.toFixed(2)} ms CPU per sample (+ /metrics/resource text), ${((performance.now() - wallStart) / samples).toFixed(2)} ms wall`);
  console.log(`share of one core: ${((perSampleMs / DEFAULT_METRICS_SAMPLE_INTERVAL_MS) * 100).toFixed(3)}% at the default 15 s interval, ${((perSampleMs / 1000) * 100).toFixed(2)}% at 1 s`);
  runtime.close();
} finally {
  cleanup();
}
