/**
 * Exec handler: runs the command inside the container through the runtime (docker exec). Exit 0 is
 * success; anything else, a timeout, or a container that cannot exec is a failure.
 */
import type { ContainerRuntime } from '../runtime/runtime.js';
import type { ExecAction, HandlerOutcome } from './types.js';

/** Probe output beyond this is cut (the kubelet keeps 10 KiB). */
const MAX_OUTPUT_BYTES = 10 * 1024;

export async function runExec(p: { runtime: ContainerRuntime; containerId: string; action: ExecAction; timeoutMs: number }): Promise<HandlerOutcome> {
  const cmd = p.action.command ?? [];
  if (!cmd.length) return { ok: false, output: 'exec handler has no command' };
  try {
    const r = await p.runtime.runInContainer(p.containerId, { cmd, timeoutMs: p.timeoutMs, maxOutputBytes: MAX_OUTPUT_BYTES });
    if (r.timedOut) return { ok: false, output: `command ${JSON.stringify(cmd.join(' '))} timed out` };
    if (r.exitCode === 0) return { ok: true, output: r.output };
    return { ok: false, output: r.output.trim() || `command ${JSON.stringify(cmd.join(' '))} exited with ${r.exitCode}` };
  } catch (err) {
    return { ok: false, output: `exec failed: ${(err as Error).message}` };
  }
}
