/**
 * A whole agent on a fake runtime, a fake API client and a manual clock, for lifecycle unit tests:
 * `settle()` waits until syncs, probes, status and event writes are done; `advance(ms)` moves time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startAgent, type RunningAgent } from '../../agent/agent.js';
import { ManualClock } from '../../agent/clock.js';
import { FakeRuntime } from '../../agent/runtime/fake.js';
import type { ContainerInfo } from '../../agent/runtime/runtime.js';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { FakeClient } from './agent-fake-client.js';

export interface AgentEnv {
  clock: ManualClock;
  client: FakeClient;
  runtime: FakeRuntime;
  agent: RunningAgent;
  dataDir: string;
  settle(): Promise<void>;
  advance(ms: number): Promise<void>;
  /** advances in steps so timers set by work a step started also fire */
  advanceBy(totalMs: number, stepMs?: number): Promise<void>;
  pod(name: string): Pod | undefined;
  /** containers of one pod and name, oldest first */
  containers(uid: string, name?: string): ContainerInfo[];
  events(reason?: string): Array<KubeObject & { reason?: string; message?: string; count?: number; type?: string; involvedObject?: Record<string, string>; source?: Record<string, string> }>;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

export async function bootAgent(o: { backoffBaseMs?: number } = {}): Promise<AgentEnv> {
  const clock = new ManualClock();
  const client = new FakeClient();
  const runtime = new FakeRuntime(clock);
  runtime.addImage('berth/busybox:test');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'berth-agent-lifecycle-'));
  const start = () =>
    startAgent({
      server: 'http://127.0.0.1:9',
      nodeName: 'n1',
      dataDir,
      nodeIP: '10.0.0.5',
      client,
      clusterId: 'unit-test-cluster',
      runtime,
      clock,
      logger: pino({ level: 'silent' }),
      intervals: { heartbeatMs: 10_000, relistMs: 1_000_000, statusMinIntervalMs: 0, retryMs: 1000 },
      ...(o.backoffBaseMs ? { backoff: { baseMs: o.backoffBaseMs } } : {}),
    });
  const env: AgentEnv = {
    clock,
    client,
    runtime,
    dataDir,
    agent: await start(),
    settle: async () => {
      for (let i = 0; i < 8; i++) {
        await env.agent.idle();
        await new Promise((r) => setImmediate(r));
      }
    },
    advance: async (ms) => {
      clock.advance(ms);
      await env.settle();
    },
    advanceBy: async (total, step = 100) => {
      for (let t = 0; t < total; t += step) await env.advance(Math.min(step, total - t));
    },
    pod: (name) => client.peek<Pod>('pods', 'default', name),
    containers: (uid, name) => runtime.podContainers(uid, name).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)),
    events: (reason) =>
      [...client.objects.entries()]
        .filter(([k]) => k.startsWith('events/'))
        .map(([, v]) => v as KubeObject & { reason?: string })
        .filter((e) => reason === undefined || e.reason === reason),
    stop: async () => {
      await env.agent.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    restart: async () => {
      await env.agent.stop();
      env.agent = await start();
      await env.settle();
    },
  };
  await env.settle();
  return env;
}
