/**
 * The control plane's connections to node agents (as kube-apiserver's to kubelets): HTTPS to the node's
 * InternalIP and advertised port, the agent's certificate verified against the cluster CA *for the node's
 * name* (TLS servername), and the node's proxy secret as the bearer token. The caller's own credentials are
 * never forwarded.
 *
 * Upgrades are spliced byte for byte only after the agent answered 101 Switching Protocols; any other answer
 * is relayed as a plain HTTP error and both connections are closed, so a failed upgrade never leaves an open
 * tunnel to the agent (the CVE-2018-1002105 lesson).
 */
import type http from 'node:http';
import https from 'node:https';
import type { Duplex, Readable, Writable } from 'node:stream';
import { ApiError, errors, type StatusReason } from '../api/errors.js';

/** Where and how to reach one node's agent. */
export interface AgentTarget {
  nodeName: string;
  host: string;
  port: number;
  /** bearer secret for this node's agent */
  secret: string;
  /** cluster CA PEM */
  ca: string;
}

/** A node's agent endpoint as its status advertises it: InternalIP (else ExternalIP, Hostname) and daemonEndpoints.kubeletEndpoint.Port. */
export function agentAddressOf(node: { status?: { addresses?: Array<{ type: string; address: string }>; daemonEndpoints?: unknown } }): { host: string; port: number } | undefined {
  const addresses = node.status?.addresses ?? [];
  const host = (addresses.find((a) => a.type === 'InternalIP') ?? addresses.find((a) => a.type === 'ExternalIP') ?? addresses.find((a) => a.type === 'Hostname'))?.address;
  const port = Number((node.status?.daemonEndpoints as { kubeletEndpoint?: { Port?: unknown } } | undefined)?.kubeletEndpoint?.Port);
  if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  return { host, port };
}

/** Time allowed for TCP + TLS + the agent's response headers. */
const CONNECT_TIMEOUT_MS = 30_000;
/** After the agent closed an upgraded connection, how long the client gets to take what is still queued. */
const UPGRADE_DRAIN_MS = 5000;
/** Error bodies relayed from an agent are small Status objects; anything bigger is cut. */
const MAX_ERROR_BODY = 64 * 1024;

/** The WebSocket / SPDY handshake headers an upgrade carries to the agent. Nothing else is forwarded. */
const UPGRADE_HEADERS = ['sec-websocket-key', 'sec-websocket-version', 'sec-websocket-protocol', 'x-stream-protocol-version'];

function requestOptions(t: AgentTarget, method: string, path: string, headers: Record<string, string>): https.RequestOptions {
  return {
    host: t.host,
    port: t.port,
    method,
    path,
    headers: { ...headers, host: hostHeader(t), authorization: `Bearer ${t.secret}` },
    ca: t.ca,
    // The agent's certificate names the node; its IP alone would let one node's certificate pass for another's.
    servername: t.nodeName,
    agent: false,
    timeout: CONNECT_TIMEOUT_MS,
  };
}

function hostHeader(t: AgentTarget): string {
  return t.host.includes(':') ? `[${t.host}]:${t.port}` : `${t.host}:${t.port}`;
}

/** A connection failure as the API reports it (Kubernetes: 500 "error dialing backend"). */
function dialError(t: AgentTarget, err: Error): ApiError {
  const code = (err as NodeJS.ErrnoException).code;
  const why = code && /CERT|SELF_SIGNED|HOSTNAME|ALTNAME|SIGNATURE/.test(code) ? `the agent's certificate is not valid for node "${t.nodeName}" (${code})` : err.message;
  return errors.internal(`error dialing backend: node "${t.nodeName}" agent at ${hostHeader(t)}: ${why}`);
}

function readLimited(res: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(parts));
    res.on('data', (c: Buffer) => {
      if (size >= MAX_ERROR_BODY) return;
      parts.push(c.subarray(0, MAX_ERROR_BODY - size));
      size += c.length;
      if (size >= MAX_ERROR_BODY) {
        res.destroy();
        done();
      }
    });
    res.on('end', done);
    res.on('error', done);
    res.on('close', done);
  });
}

const REASON_BY_CODE: Record<number, StatusReason> = { 400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 503: 'ServiceUnavailable' };

/** An agent's non-2xx answer, as an ApiError with its message and code. */
async function agentError(res: http.IncomingMessage): Promise<ApiError> {
  const body = (await readLimited(res)).toString('utf8');
  const code = res.statusCode ?? 500;
  let message = body.trim() || `the node agent answered ${code}`;
  try {
    const st = JSON.parse(body) as { kind?: string; message?: string };
    if (st.kind === 'Status' && st.message) message = st.message;
  } catch {
    // not a Status: keep the text
  }
  // 401 from the agent means *our* credential for it is stale: to the user that is a server-side fault.
  if (code === 401) return errors.internal(`the node agent rejected the control plane's credential (re-join the node): ${message}`);
  return new ApiError(REASON_BY_CODE[code] ?? 'InternalError', message);
}

/**
 * GET a streaming resource from the agent. Resolves with the response once it is a 200; other answers
 * become ApiErrors. The caller owns the response stream (destroy it when the client goes away).
 */
export function agentGet(t: AgentTarget, path: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = https.request(requestOptions(t, 'GET', path, { accept: 'text/plain, application/json' }));
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => reject(dialError(t, err)));
    req.on('response', (res) => {
      // Connected and answered: a follow stream may now stay quiet for as long as the container does.
      req.setTimeout(0);
      if (res.statusCode === 200) return resolve(res);
      void agentError(res).then(reject);
    });
    req.end();
  });
}

/** Writes an HTTP error on a not-yet-upgraded client connection and closes it. */
export function refuseUpgrade(socket: Duplex, err: ApiError): void {
  writeAndClose(socket, err.code, 'application/json', Buffer.from(err.toStatusJson()));
}

function writeAndClose(socket: Duplex, code: number, contentType: string, body: Buffer): void {
  if (socket.destroyed) return;
  socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${code} ${statusText(code)}\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`), body]));
  // end() lets the response drain; a client that never reads must not pin the socket.
  setTimeout(() => socket.destroy(), 5000).unref();
}

function statusText(code: number): string {
  const t: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 500: 'Internal Server Error', 503: 'Service Unavailable' };
  return t[code] ?? 'Error';
}

/**
 * Proxies an upgrade request (WebSocket or SPDY/3.1; the agent serves both) to the agent
 * and, once the agent switched protocols, splices the two connections until either side closes.
 */
export function proxyUpgrade(t: AgentTarget, clientReq: http.IncomingMessage, client: Duplex, head: Buffer, path: string): void {
  const headers: Record<string, string> = { connection: 'Upgrade', upgrade: clientReq.headers.upgrade ?? '' };
  for (const h of UPGRADE_HEADERS) {
    const v = clientReq.headers[h];
    if (v !== undefined) headers[h] = Array.isArray(v) ? v.join(', ') : v;
  }
  const req = https.request(requestOptions(t, clientReq.method ?? 'GET', path, headers));
  let settled = false;
  const onClientGone = () => {
    if (!settled) req.destroy();
  };
  client.once('close', onClientGone);
  req.on('timeout', () => req.destroy(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)));
  req.on('error', (err) => {
    if (settled) return;
    settled = true;
    refuseUpgrade(client, dialError(t, err));
  });
  req.on('response', (res) => {
    // Anything but 101: relay the refusal and close. The client connection is never turned into a tunnel.
    settled = true;
    void agentError(res).then((err) => {
      req.destroy();
      refuseUpgrade(client, err);
    });
  });
  req.on('upgrade', (res, upstream: Duplex & { setTimeout?(ms: number): void; setNoDelay?(b: boolean): void }, upstreamHead: Buffer) => {
    settled = true;
    client.off('close', onClientGone);
    upstream.setTimeout?.(0);
    if (client.destroyed) return void upstream.destroy();
    // The agent's 101 goes to the client as it came (Sec-WebSocket-Accept / -Protocol included).
    const lines = [`HTTP/1.1 101 ${res.statusMessage || 'Switching Protocols'}`];
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
    client.write(lines.join('\r\n') + '\r\n\r\n');
    if (upstreamHead.length) client.write(upstreamHead);
    if (head.length) upstream.write(head);
    upstream.setNoDelay?.(true);
    (client as Duplex & { setNoDelay?(b: boolean): void }).setNoDelay?.(true);
    const teardown = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', teardown);
    // The agent finished: what it sent last (the exit status, the end of a `kubectl cp` tar) may still be
    // queued for the client, so the client side is ended once it is written, not destroyed; a client that
    // stops reading gets a few seconds.
    upstream.on('close', () => setTimeout(teardown, UPGRADE_DRAIN_MS).unref());
    client.on('error', teardown);
    upstream.on('error', teardown);
    client.pipe(upstream);
    copyEachChunkApart(upstream, client);
  });
  req.end();
}

/** Chunks from the agent queued for a client that is slow to take them, before the agent is no longer read. */
const MAX_QUEUED_CHUNKS = 64;

/**
 * Copies `from` to `to` with one write per chunk read, never two chunks in one write, and ends `to`
 * once `from` has ended or closed and everything read is written.
 *
 * Why not pipe(): chunks that queue behind a pending write are written together, and over TLS that is
 * one record. A chunk from the agent is one of its TLS records, that is one or more whole WebSocket
 * frames, so merging them joins frames the agent sent apart. The Python client reads one frame each
 * time its socket polls readable, and a frame already decrypted into its TLS buffer does not make the
 * socket readable: with an exit status and the close frame in one record it waited out its timeout
 * and reported no exit code (CI run P). kube-apiserver's proxy (Go's io.Copy) writes each read apart.
 */
export function copyEachChunkApart(from: Readable, to: Writable): void {
  const queue: Buffer[] = [];
  let writing = false;
  let fromDone = false;
  let paused = false;
  const next = () => {
    if (writing) return;
    const chunk = queue.shift();
    if (chunk) {
      writing = true;
      to.write(chunk, () => {
        writing = false;
        next();
      });
      return;
    }
    if (fromDone) to.end();
    else if (paused) {
      paused = false;
      from.resume();
    }
  };
  from.on('data', (chunk: Buffer) => {
    queue.push(chunk);
    if (queue.length >= MAX_QUEUED_CHUNKS && !paused) {
      paused = true;
      from.pause();
    }
    next();
  });
  const done = () => {
    if (fromDone) return;
    fromDone = true;
    next();
  };
  from.on('end', done);
  from.on('close', done);
}
