/**
 * Owns the shapes of probes and lifecycle handlers as they appear in a container spec (src/api/types.ts
 * keeps Container open for these fields), the Kubernetes defaults for probe timing, and port resolution
 * (a number, or the name of one of the container's ports). Pure; no I/O.
 */
import type { Container, Lifecycle, LifecycleHandler, Probe } from '../../src/api/types.js';

export type { ExecAction, HTTPGetAction, HTTPHeader, Lifecycle, Probe, TCPSocketAction } from '../../src/api/types.js';

/** What a probe or a hook does: one of these is set (`sleep` on lifecycle hooks only). */
export type Handler = Pick<LifecycleHandler, 'exec' | 'httpGet' | 'tcpSocket' | 'sleep'>;

export type ProbeKind = 'liveness' | 'readiness' | 'startup';

/** How a handler run ended: kubelet's Success/Failure plus the text it shows in events. */
export interface HandlerOutcome {
  ok: boolean;
  output: string;
}

/** A probe with the Kubernetes defaults applied, in milliseconds. */
export interface ResolvedProbe {
  handler: Handler;
  initialDelayMs: number;
  periodMs: number;
  timeoutMs: number;
  successThreshold: number;
  failureThreshold: number;
}

const FIELD: Record<ProbeKind, 'livenessProbe' | 'readinessProbe' | 'startupProbe'> = { liveness: 'livenessProbe', readiness: 'readinessProbe', startup: 'startupProbe' };

/** Display name used in events ("Liveness probe failed: …"). */
export const PROBE_LABEL: Record<ProbeKind, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

function positiveInt(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 1 ? Math.floor(v) : fallback;
}

/** The container's probe of that kind, if it has one with a handler the agent can run. */
export function probeOf(c: Container, kind: ProbeKind): Probe | undefined {
  const p = c[FIELD[kind]];
  if (!p || typeof p !== 'object') return undefined;
  return p.exec || p.httpGet || p.tcpSocket ? p : undefined;
}

/** Applies Kubernetes' defaults: initialDelaySeconds 0, timeoutSeconds 1, periodSeconds 10, thresholds 1 and 3. */
export function resolveProbe(p: Probe, kind: ProbeKind): ResolvedProbe {
  const delay = typeof p.initialDelaySeconds === 'number' && p.initialDelaySeconds > 0 ? p.initialDelaySeconds : 0;
  return {
    handler: p,
    initialDelayMs: delay * 1000,
    periodMs: positiveInt(p.periodSeconds, 10) * 1000,
    timeoutMs: positiveInt(p.timeoutSeconds, 1) * 1000,
    // Liveness and startup probes must use 1 (validation enforces it in Kubernetes); be lenient here.
    successThreshold: kind === 'readiness' ? positiveInt(p.successThreshold, 1) : 1,
    failureThreshold: positiveInt(p.failureThreshold, 3),
  };
}

export function lifecycleOf(c: Container): Lifecycle | undefined {
  const l = c.lifecycle;
  return l && typeof l === 'object' ? l : undefined;
}

/** A numeric port, or the containerPort of the container's port with that name; undefined if neither. */
export function resolvePort(port: number | string | undefined, c: Container): number | undefined {
  if (typeof port === 'number') return port >= 1 && port <= 65535 ? port : undefined;
  if (typeof port !== 'string' || port === '') return undefined;
  if (/^\d+$/.test(port)) return resolvePort(Number(port), c);
  return c.ports?.find((p) => p.name === port && (p.protocol ?? 'TCP') === 'TCP')?.containerPort;
}

/** A restartable init container (native sidecar). */
export function isSidecar(c: Container): boolean {
  return c.restartPolicy === 'Always';
}
