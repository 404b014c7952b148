import http from 'node:http';
import https from 'node:https';
import type { FastifyInstance } from 'fastify';

/** Serve a (never-listening) fastify app on our own http/https server. */
export async function listen(app: FastifyInstance, o: { port: number; host: string; tls: { cert: string; key: string } | undefined }): Promise<http.Server> {
  await app.ready();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => app.routing(req, res);
  const server = o.tls ? https.createServer({ cert: o.tls.cert, key: o.tls.key }, handler) : http.createServer(handler);
  server.keepAliveTimeout = 65_000;
  // Upgrade requests (kubectl exec/attach) never reach app.routing; whoever registered for them on the app's
  // own server handles them (pod-streams.ts), anything else is refused by closing the connection.
  server.on('upgrade', (req, socket, head) => {
    if (!app.server.emit('upgrade', req, socket, head)) socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return server;
}

