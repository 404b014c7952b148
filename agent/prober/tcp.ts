/**
 * TCP handler: the agent opens a connection to the pod IP (the host reaches bridge addresses directly),
 * so images need no nc. Connected is success; the connection is closed at once.
 */
import net from 'node:net';
import type { HandlerOutcome } from './types.js';

/** Go-style wording for the common socket errors, as kubelet events read. */
export function dialError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connect: connection refused';
    case 'EHOSTUNREACH':
      return 'connect: no route to host';
    case 'ENETUNREACH':
      return 'connect: network is unreachable';
    case 'ECONNRESET':
      return 'read: connection reset by peer';
    default:
      return err.message;
  }
}

export function runTcp(p: { host: string; port: number; timeoutMs: number }): Promise<HandlerOutcome> {
  const where = `${p.host}:${p.port}`;
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: HandlerOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(o);
    };
    const socket = net.connect({ host: p.host, port: p.port });
    const timer = setTimeout(() => finish({ ok: false, output: `dial tcp ${where}: i/o timeout` }), Math.max(1, p.timeoutMs));
    socket.once('connect', () => finish({ ok: true, output: '' }));
    socket.once('error', (err: NodeJS.ErrnoException) => finish({ ok: false, output: `dial tcp ${where}: ${dialError(err)}` }));
  });
}
