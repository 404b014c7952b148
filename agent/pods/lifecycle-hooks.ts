/**
 * Owns container lifecycle hooks. postStart runs right after the container started (the pod's sync waits
 * for it, as the kubelet's does); if it fails the container is killed and restarted per policy. preStop
 * runs before the stop signal and may use the grace period; whatever it leaves is the stop's grace.
 * Handlers are the probes' (exec through the runtime, httpGet from the agent to the pod IP) plus `sleep`.
 */
import type { Container, Pod } from '../../src/api/types.js';
import type { Clock } from '../clock.js';
import { runHandler } from '../prober/handler.js';
import { lifecycleOf, type Handler } from '../prober/types.js';
import type { ContainerRuntime } from '../runtime/runtime.js';

/** postStart has no timeout in Kubernetes; a bound keeps one stuck hook from holding the pod's worker forever. */
export const POST_START_TIMEOUT_MS = 120_000;

export interface HookContext {
  runtime: ContainerRuntime;
  clock: Clock;
  pod: Pod;
  container: Container;
  containerId: string;
  podIP: string | undefined;
}

export interface HookResult {
  ok: boolean;
  /** kubelet-style description of the failure */
  message: string;
}

function describe(h: Handler): string {
  if (h.exec) return `Exec lifecycle hook (${JSON.stringify(h.exec.command ?? [])})`;
  if (h.httpGet) return `HTTP lifecycle hook (${h.httpGet.path ?? '/'})`;
  if (h.sleep) return `Sleep lifecycle hook (${h.sleep.seconds})`;
  return 'lifecycle hook';
}

async function run(h: Handler, ctx: HookContext, timeoutMs: number): Promise<HookResult> {
  if (h.sleep) {
    const ms = Math.min(Math.max(0, h.sleep.seconds * 1000), timeoutMs);
    await new Promise<void>((resolve) => ctx.clock.setTimeout(resolve, ms));
    return { ok: true, message: '' };
  }
  if (h.tcpSocket && !h.exec && !h.httpGet) return { ok: true, message: '' }; // accepted, never run (as the kubelet)
  const outcome = await runHandler(h, { runtime: ctx.runtime, containerId: ctx.containerId, container: ctx.container, podIP: ctx.podIP, timeoutMs });
  if (outcome.ok) return { ok: true, message: '' };
  const m = ctx.pod.metadata;
  return {
    ok: false,
    message: `${describe(h)} for Container "${ctx.container.name}" in Pod "${m.name}_${m.namespace}(${m.uid})" failed - error: ${outcome.output}`,
  };
}

export function hasPostStart(c: Container): boolean {
  return lifecycleOf(c)?.postStart !== undefined;
}

export function hasPreStop(c: Container): boolean {
  return lifecycleOf(c)?.preStop !== undefined;
}

export async function runPostStart(ctx: HookContext): Promise<HookResult> {
  const h = lifecycleOf(ctx.container)?.postStart;
  return h ? run(h, ctx, POST_START_TIMEOUT_MS) : { ok: true, message: '' };
}

/** Runs preStop within `graceMs`; resolves when it finished or the grace ran out. */
export async function runPreStop(ctx: HookContext, graceMs: number): Promise<HookResult> {
  const h = lifecycleOf(ctx.container)?.preStop;
  if (!h) return { ok: true, message: '' };
  let timer: unknown;
  const expired = new Promise<HookResult>((resolve) => {
    timer = ctx.clock.setTimeout(() => resolve({ ok: false, message: `PreStop hook for container "${ctx.container.name}" did not complete in ${Math.round(graceMs / 1000)}s` }), graceMs);
  });
  try {
    return await Promise.race([run(h, ctx, graceMs), expired]);
  } finally {
    ctx.clock.clearTimeout(timer);
  }
}
