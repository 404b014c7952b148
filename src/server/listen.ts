/**
 * The API server's listener: serves a (never-listening) fastify app on our own http/https server, with the
 * connection defences of src/net/connection-hygiene.ts (timeouts for silent and idle connections, a cap on
 * open connections). Per-client in-flight limits are a request concern and live in app.ts.
 */
import http from 'node:http';
import https from 'node:https';
import type { FastifyInstance } from 'fastify';
import { guardConnections, serverTimeoutOptions, type ConnectionGuard, type ConnectionLimits } from '../net/connection-hygiene.js';

export interface ListenOptions {
  port: number;
  host: string;
  /** clientCa: ask clients for a certificate issued by it, without requiring one (src/auth/client-certificates.ts checks it) */
  tls: { cert: string; key: string; clientCa?: string } | undefined;
  limits: ConnectionLimits;
}

export interface Listener {
  server: http.Server;
  connections: ConnectionGuard;
}

export async function listen(app: FastifyInstance, o: ListenOptions): Promise<Listener> {
  await app.ready();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => app.routing(req, res);
  const options = serverTimeoutOptions(o.limits);
  const server = o.tls ? https.createServer({ ...options, cert: o.tls.cert, key: o.tls.key, ...clientCertificateOptions(o.tls.clientCa) }, handler) : http.createServer(options, handler);
  const connections = guardConnections(server, { limits: o.limits, warn: (fields, message) => app.log.warn(fields, message) });
  // Upgrade requests (kubectl exec/attach) never reach app.routing; whoever registered for them on the app's
  // own server handles them (pod-streams.ts), anything else is refused by closing the connection.
  server.on('upgrade', (req, socket, head) => {
    if (!app.server.emit('upgrade', req, socket, head)) socket.destroy();
  });
  // Failed handshakes (scanners, clients that gave up, the handshake timeout) are not worth a log line each.
  server.on('tlsClientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return { server, connections };
}

/**
 * Asking for a client certificate without requiring one: clients without a certificate (tokens) go on
 * as before, and a presented one is judged per request, with the server's clock, not at the handshake.
 */
function clientCertificateOptions(clientCa: string | undefined): https.ServerOptions {
  return clientCa ? { requestCert: true, rejectUnauthorized: false, ca: clientCa } : {};
}
