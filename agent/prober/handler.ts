/**
 * Runs one handler (probe or lifecycle hook) against a container: picks the exec, httpGet or tcpSocket
 * implementation and resolves the host (pod IP unless the spec names one) and port (number or name).
 */
import type { Container } from '../../src/api/types.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { runExec } from './exec.js';
import { runHttpGet } from './http.js';
import { runTcp } from './tcp.js';
import { resolvePort, type Handler, type HandlerOutcome } from './types.js';

export interface HandlerTarget {
  runtime: ContainerRuntime;
  containerId: string;
  container: Container;
  /** undefined until the pod has an address (network handlers then fail) */
  podIP: string | undefined;
  timeoutMs: number;
}

export async function runHandler(h: Handler, t: HandlerTarget): Promise<HandlerOutcome> {
  if (h.exec) return runExec({ runtime: t.runtime, containerId: t.containerId, action: h.exec, timeoutMs: t.timeoutMs });
  const net = h.httpGet ?? h.tcpSocket;
  if (net) {
    const port = resolvePort(net.port, t.container);
    if (port === undefined) return { ok: false, output: `unable to resolve port ${JSON.stringify(net.port)} of container ${t.container.name}` };
    const host = net.host || t.podIP;
    if (!host) return { ok: false, output: 'the pod has no IP address yet' };
    if (h.httpGet) return runHttpGet({ action: h.httpGet, host, port, timeoutMs: t.timeoutMs });
    return runTcp({ host, port, timeoutMs: t.timeoutMs });
  }
  return { ok: false, output: 'handler has no exec, httpGet or tcpSocket action' };
}
