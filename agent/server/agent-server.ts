/**
 * The node agent's own HTTPS endpoint (the kubelet's port 10250): container logs, exec and attach for the
 * control plane, which proxies `kubectl logs` / `kubectl exec` to it. It answers nobody else: every request,
 * plain or upgrade, must carry `Authorization: Bearer <proxy secret>` (the secret the control plane got at
 * this node's join; only its sha256 is held here) or gets 401 and, for an upgrade, a closed socket. It serves
 * with a certificate the cluster CA issued for this node's name, which is how the control plane knows it is
 * talking to the right node.
 *
 * Routes:
 *   GET /containerLogs/{namespace}/{pod}/{container}?follow&tailLines&sinceSeconds&sinceTime&timestamps&previous&limitBytes
 *   GET|POST (upgrade) /exec/{namespace}/{pod}/{container}?command=…&stdin&stdout&stderr&tty
 *   GET|POST (upgrade) /attach/{namespace}/{pod}/{container}?stdin&stdout&stderr&tty
 *   GET|POST (upgrade) /portForward/{namespace}/{pod}[?port=P1,P2…] (`port` only for WebSocket channels)
 *   GET /metrics/resource (the kubelet's resource metrics, Prometheus text; agent/metrics/)
 * Exec and attach are served over WebSocket (v5 / v4.channel.k8s.io, remote-command.ts) and over SPDY/3.1
 * (v4.channel.k8s.io, remote-command-spdy.ts), as the kubelet serves both. Port-forward is SPDY/3.1
 * (portforward.k8s.io, port-forward.ts), upgraded directly or tunnelled in WebSocket messages
 * (`SPDY/3.1+portforward.k8s.io`, what kubectl 1.31+ tries first), and WebSocket channels
 * (v4.channel.k8s.io / v4.base64.channel.k8s.io, port-forward-websocket.ts, what the Python client speaks).
 * (plus podUID / containerID hints from the control plane, see container-lookup.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';
import { ApiError, errors, isApiError } from '../../src/api/errors.js';
import { readPodStreamOptions } from '../../src/api/query-parameters.js';
import { guardConnections, resolveConnectionLimits, serverTimeoutOptions, type ConnectionGuard, type ConnectionLimits } from '../../src/net/connection-hygiene.js';
import { identityFromLabels } from '../node/labels.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { findContainer, findInfraContainer } from './container-lookup.js';
import { serveContainerLogs, type ContainerTarget } from './container-logs.js';
import { chooseProtocol, runRemoteCommand } from './remote-command.js';
import { runSpdyRemoteCommand, SPDY_REMOTE_COMMAND_PROTOCOLS } from './remote-command-spdy.js';
import { runPortForward, SPDY_PORT_FORWARD_PROTOCOLS, WEBSOCKET_PORT_FORWARD_TUNNEL } from './port-forward.js';
import { choosePortForwardChannelProtocol, parsePortsQuery, PORT_FORWARD_CHANNEL_PROTOCOLS, PORTS_QUERY_PARAMETER, runWebSocketPortForward } from './port-forward-websocket.js';
import { acceptWebSocketTunnel, handshakeProblem, offeredSubprotocols } from './websocket-tunnel.js';
import { isSpdyUpgrade, negotiateStreamProtocol, SPDY_PROTOCOL, SpdySession, spdyUpgradeResponse, STREAM_PROTOCOL_HEADER } from './spdy.js';

/** The kubelet's port, which the agent takes by default. */
export const DEFAULT_AGENT_PORT = 10250;

export interface AgentServerCredentials {
  /** PEM certificate signed by the cluster CA for this node */
  servingCert: string;
  /** PEM private key of servingCert */
  servingKey: string;
  /** sha256 (hex) of the bearer secret the control plane presents */
  proxySecretSha256: string;
}

export interface AgentServerOptions {
  runtime: ContainerRuntime;
  nodeName: string;
  credentials: AgentServerCredentials;
  /** 0 = any free port */
  port: number;
  /** default: all interfaces, as the kubelet */
  bindAddress?: string;
  /** when the port is taken, take any free one instead of failing (the port is advertised in the Node) */
  fallbackToFreePort?: boolean;
  /**
   * Timeouts and the open-connection cap (kube-apiserver's defaults). Per-client in-flight limits are not
   * applied here: the only client is the API server, which limits each of its own callers.
   */
  connectionLimits?: Partial<ConnectionLimits>;
  /** how long a SPDY client may take to open its streams (default: the kubelet's 30 s) */
  streamCreationTimeoutMs?: number;
  /** serves GET /metrics to the control plane and to bearer tokens `access` allows */
  metrics?: AgentServerMetrics;
  /** the body of GET /metrics/resource; without it that path is 404 */
  resourceMetrics?: () => string;
  log: Logger;
}

export interface AgentServerMetrics {
  scrape(): Promise<{ contentType: string; body: string }>;
  /** whether a bearer token other than the proxy secret may read /metrics (delegated to the API server) */
  access(token: string): Promise<'allowed' | 'unauthenticated' | 'forbidden'>;
}

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** Splits `/{route}/{ns}/{pod}/{container}`; undefined when the path has another shape. */
function parseTarget(pathname: string): { route: string; target: ContainerTarget } | undefined {
  const parts = pathname.split('/');
  if (parts.length !== 5 || parts[0] !== '') return undefined;
  return parseNames(parts);
}

/** Splits `/portForward/{ns}/{pod}` (a pod, no container); undefined when the path has another shape. */
function parsePodTarget(pathname: string): { namespace: string; pod: string } | undefined {
  const parts = pathname.split('/');
  if (parts.length !== 4 || parts[0] !== '' || parts[1] !== 'portForward') return undefined;
  // The container slot is unused here; any valid name fills it.
  const parsed = parseNames([...parts, 'pod']);
  return parsed && { namespace: parsed.target.namespace, pod: parsed.target.pod };
}

function parseNames(parts: string[]): { route: string; target: ContainerTarget } | undefined {
  let decoded: string[];
  try {
    decoded = parts.slice(1).map((p) => decodeURIComponent(p));
  } catch {
    return undefined;
  }
  const [route, namespace, pod, container] = decoded as [string, string, string, string];
  if (![namespace, pod, container].every((s) => NAME.test(s))) return undefined;
  return { route, target: { namespace, pod, container } };
}

function statusBody(err: ApiError): string {
  return JSON.stringify(err.toStatus());
}

function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  const e = err as { statusCode?: number; json?: { message?: string }; message?: string };
  const message = e.json?.message ?? e.message ?? String(err);
  if (e.statusCode === 404) return new ApiError('NotFound', message);
  if (e.statusCode === 409) return errors.badRequest(message);
  return errors.internal(message);
}

/** Answers an upgrade request with an HTTP error and closes the connection: nothing is ever tunnelled. */
function refuseUpgrade(socket: Duplex, err: ApiError): void {
  const body = statusBody(err);
  socket.end(
    `HTTP/1.1 ${err.code} ${httpReason(err.code)}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
}

function httpReason(code: number): string {
  const reasons: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 500: 'Internal Server Error', 501: 'Not Implemented', 503: 'Service Unavailable' };
  return reasons[code] ?? 'Error';
}

export class AgentServer {
  private readonly server: https.Server;
  private readonly log: Logger;
  private proxyDigest: Buffer;
  private wss: WebSocketServer | undefined;
  /** the WebSocket subprotocol each upgrade was checked for, answered by the WebSocket server */
  private readonly chosenSubprotocols = new WeakMap<http.IncomingMessage, string>();
  /** open connections, so close() does not wait for follow streams and shells to end on their own */
  private readonly sockets = new Set<Duplex>();
  private boundPort = 0;
  /** open and refused connection counts */
  readonly connections: ConnectionGuard;

  constructor(private readonly opts: AgentServerOptions) {
    this.log = opts.log.child({ component: 'agent-server' });
    this.proxyDigest = Buffer.from(opts.credentials.proxySecretSha256, 'hex');
    const limits = resolveConnectionLimits(opts.connectionLimits);
    this.server = https.createServer({ ...serverTimeoutOptions(limits), cert: opts.credentials.servingCert, key: opts.credentials.servingKey, minVersion: 'TLSv1.2' }, (req, res) => {
      void this.onRequest(req, res);
    });
    this.connections = guardConnections(this.server, { limits, warn: (fields, message) => this.log.warn(fields, message) });
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.onUpgrade(req, socket, head);
    });
    this.server.on('secureConnection', (socket: Duplex) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // TLS handshakes from port scanners and the like: not worth a log line each.
    this.server.on('tlsClientError', (err) => this.log.debug({ err: err.message }, 'TLS handshake failed'));
  }

  /** The port it listens on (after listen()). */
  get port(): number {
    return this.boundPort;
  }

  /** Starts listening; resolves with the port. */
  async listen(): Promise<number> {
    const host = this.opts.bindAddress ?? '0.0.0.0';
    try {
      await this.listenOn(this.opts.port, host);
    } catch (err) {
      if (!(this.opts.fallbackToFreePort && (err as NodeJS.ErrnoException).code === 'EADDRINUSE')) throw err;
      this.log.warn({ port: this.opts.port }, 'agent port is taken (another agent on this host?); using a free port, advertised in the Node status');
      await this.listenOn(0, host);
    }
    this.boundPort = (this.server.address() as AddressInfo).port;
    this.log.info({ port: this.boundPort }, 'agent endpoint listening');
    return this.boundPort;
  }

  private listenOn(port: number, host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
  }

  /** New credentials after a re-join; connections made from now on use them. */
  setCredentials(c: AgentServerCredentials): void {
    this.proxyDigest = Buffer.from(c.proxySecretSha256, 'hex');
    this.server.setSecureContext({ cert: c.servingCert, key: c.servingKey, minVersion: 'TLSv1.2' });
  }

  /** Stops listening and ends every open stream and session. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.wss?.close();
    await closed;
  }

  private authenticated(req: http.IncomingMessage): boolean {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m || this.proxyDigest.length !== 32) return false;
    const presented = createHash('sha256').update(m[1]!).digest();
    return timingSafeEqual(presented, this.proxyDigest);
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const reply = (err: ApiError) => {
      if (res.headersSent) return void res.destroy();
      const body = statusBody(err);
      res.writeHead(err.code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    try {
      if (this.opts.metrics && (req.url === '/metrics' || req.url?.startsWith('/metrics?'))) return await this.serveMetrics(req, res, this.opts.metrics, reply);
      if (!this.authenticated(req)) return reply(errors.unauthorized());
      const url = new URL(req.url ?? '/', 'https://agent');
      if (url.pathname === '/metrics/resource' && this.opts.resourceMetrics) {
        if (req.method !== 'GET') return reply(errors.methodNotAllowed(`${req.method} is not allowed on /metrics/resource`));
        const body = this.opts.resourceMetrics();
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': Buffer.byteLength(body) });
        return void res.end(body);
      }
      if (parsePodTarget(url.pathname)) return reply(errors.badRequest('Upgrade request required'));
      const parsed = parseTarget(url.pathname);
      if (!parsed) return reply(new ApiError('NotFound', 'the server could not find the requested resource'));
      if (parsed.route === 'exec' || parsed.route === 'attach') return reply(errors.badRequest('Upgrade request required'));
      if (parsed.route !== 'containerLogs') return reply(new ApiError('NotFound', 'the server could not find the requested resource'));
      if (req.method !== 'GET') return reply(errors.methodNotAllowed(`${req.method} is not allowed on containerLogs`));
      await serveContainerLogs({ runtime: this.opts.runtime, nodeName: this.opts.nodeName, log: this.log }, parsed.target, url.searchParams, res);
    } catch (err) {
      const apiErr = toApiError(err);
      if (apiErr.code >= 500) this.log.warn({ err: apiErr.message, url: redactQuery(req.url) }, 'agent endpoint request failed');
      reply(apiErr);
    }
  }

  /** /metrics: the control plane's secret, or any token the API server says may `get nodes/metrics` here. */
  private async serveMetrics(req: http.IncomingMessage, res: http.ServerResponse, metrics: AgentServerMetrics, reply: (err: ApiError) => void): Promise<void> {
    if (req.method !== 'GET') return reply(errors.methodNotAllowed(`${req.method} is not allowed on /metrics`));
    if (!this.authenticated(req)) {
      const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
      const access = token ? await metrics.access(token) : 'unauthenticated';
      if (access === 'unauthenticated') return reply(errors.unauthorized());
      if (access === 'forbidden') return reply(errors.forbidden(`cannot get nodes/metrics on node ${this.opts.nodeName}`));
    }
    const { contentType, body } = await metrics.scrape();
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  private async onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    try {
      if (!this.authenticated(req)) return refuseUpgrade(socket, errors.unauthorized());
      const url = new URL(req.url ?? '/', 'https://agent');
      const podTarget = parsePodTarget(url.pathname);
      if (podTarget) return await this.portForward(req, socket, head, podTarget, url.searchParams);
      const parsed = parseTarget(url.pathname);
      if (!parsed || (parsed.route !== 'exec' && parsed.route !== 'attach')) return refuseUpgrade(socket, new ApiError('NotFound', 'the server could not find the requested resource'));
      if (req.method !== 'GET' && req.method !== 'POST') return refuseUpgrade(socket, errors.methodNotAllowed(`${req.method} is not allowed`));
      const q = url.searchParams;
      // The API server's rules for these parameters (src/api/query-parameters.ts), whoever calls.
      const streamOptions = readPodStreamOptions(q);
      const exec = parsed.route === 'exec';
      const command = streamOptions.command;
      if (exec && command.length === 0) return refuseUpgrade(socket, errors.badRequest('you must specify at least 1 command'));
      const io = { stdin: streamOptions.stdin, stdout: streamOptions.stdout, stderr: streamOptions.stderr, tty: streamOptions.tty };
      if (!io.stdin && !io.stdout && !io.stderr) return refuseUpgrade(socket, errors.badRequest('you must specify at least 1 of stdin, stdout, stderr'));
      if (io.tty && io.stderr) io.stderr = false; // a terminal merges stderr into stdout
      const streams = this.opts.runtime.streams;
      if (!streams) return refuseUpgrade(socket, new ApiError('ServiceUnavailable', 'this node\'s container runtime cannot exec or attach'));
      const lookup: Parameters<typeof findContainer>[1] = { nodeName: this.opts.nodeName, ...parsed.target };
      const podUID = q.get('podUID');
      if (podUID) lookup.podUID = podUID;
      const container = await findContainer(this.opts.runtime, lookup);
      if (container.state !== 'running') return refuseUpgrade(socket, errors.badRequest(`container ${parsed.target.container} is not running`));
      const log = this.log.child({ pod: `${parsed.target.namespace}/${parsed.target.pod}`, container: parsed.target.container, route: parsed.route });
      const start = () => (exec ? streams.exec(container.id, { command, ...io }) : streams.attach(container.id, io));
      // The transport is checked after everything else so a client falling back from WebSocket to SPDY sees the same errors.
      if (isSpdyUpgrade(req.headers)) {
        const spdyProtocol = negotiateStreamProtocol(req.headers, SPDY_REMOTE_COMMAND_PROTOCOLS);
        if (!spdyProtocol) {
          const offered = String(req.headers[STREAM_PROTOCOL_HEADER.toLowerCase()] ?? '');
          return refuseUpgrade(socket, errors.forbidden(`unable to upgrade: unable to negotiate protocol: client supports [${offered}], server accepts [${SPDY_REMOTE_COMMAND_PROTOCOLS.join(' ')}]`));
        }
        socket.write(spdyUpgradeResponse(spdyProtocol));
        const session = new SpdySession({ socket, head });
        log.debug({ tty: io.tty, stdin: io.stdin, protocol: spdyProtocol }, 'remote command session opened (SPDY)');
        void runSpdyRemoteCommand({ session, io, command, reportExitCode: exec, log, start, streamCreationTimeoutMs: this.opts.streamCreationTimeoutMs }).then(() =>
          log.debug('remote command session closed'),
        );
        return;
      }
      if (!/\bwebsocket\b/i.test(req.headers.upgrade ?? '')) {
        return refuseUpgrade(socket, errors.badRequest(`unable to upgrade: the Upgrade header must be websocket or ${SPDY_PROTOCOL}`));
      }
      const protocol = chooseProtocol(req.headers['sec-websocket-protocol']);
      if (!protocol) return refuseUpgrade(socket, errors.badRequest('no supported subprotocol: offer v5.channel.k8s.io or v4.channel.k8s.io'));
      const wss = await this.webSocketServer();
      this.chosenSubprotocols.set(req, protocol);
      wss.handleUpgrade(req, socket, head, (ws) => {
        log.debug({ tty: io.tty, stdin: io.stdin, protocol }, 'remote command session opened');
        void runRemoteCommand({ ws, protocol, command, reportExitCode: exec, log, start }).then(() => log.debug('remote command session closed'));
      });
    } catch (err) {
      const apiErr = toApiError(err);
      if (apiErr.code >= 500) this.log.warn({ err: apiErr.message }, 'agent endpoint upgrade failed');
      refuseUpgrade(socket, apiErr);
    }
  }

  /**
   * `kubectl port-forward`: the pod's infra container holds the network namespace every connection is
   * dialled in. Checks come before the transport, so WebSocket and SPDY clients see the same errors.
   */
  private async portForward(req: http.IncomingMessage, socket: Duplex, head: Buffer, target: { namespace: string; pod: string }, q: URLSearchParams): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'POST') return refuseUpgrade(socket, errors.methodNotAllowed(`${req.method} is not allowed`));
    const webSocket = !isSpdyUpgrade(req.headers) && /\bwebsocket\b/i.test(req.headers.upgrade ?? '');
    const offered = offeredSubprotocols(req.headers);
    const channels = webSocket && !offered.includes(WEBSOCKET_PORT_FORWARD_TUNNEL);
    // As the kubelet: WebSocket channel requests name their ports, checked before anything else.
    const ports = channels ? parsePortsQuery(q.getAll(PORTS_QUERY_PARAMETER)) : [];
    if (typeof ports === 'string') return refuseUpgrade(socket, errors.badRequest(ports));
    const streams = this.opts.runtime.streams;
    if (!streams) return refuseUpgrade(socket, new ApiError('ServiceUnavailable', "this node's container runtime cannot forward ports"));
    const lookup: Parameters<typeof findInfraContainer>[1] = { nodeName: this.opts.nodeName, ...target };
    const podUID = q.get('podUID');
    if (podUID) lookup.podUID = podUID;
    const infra = await findInfraContainer(this.opts.runtime, lookup);
    const log = this.log.child({ pod: `${target.namespace}/${target.pod}`, route: 'portForward' });
    const pod = { sandboxId: infra.id, podUID: identityFromLabels(infra.labels)?.podUid ?? '', log };
    /** Runs a session with a dialer into the pod's network namespace, made at once and released at the end. */
    const serve = async (transport: string, run: (dial: (port: number) => Promise<Duplex>) => Promise<void>) => {
      log.debug({ transport }, 'port-forward session opened');
      let dialer: Awaited<ReturnType<typeof streams.portDialer>> | undefined;
      let dialerFailure: Error | undefined;
      const dialerReady = streams.portDialer(infra.id).then(
        (d) => (dialer = d),
        (err: Error) => (dialerFailure = err),
      );
      const dial = async (port: number) => {
        await dialerReady;
        if (!dialer) throw dialerFailure ?? new Error('no dialer');
        return dialer.dial(port);
      };
      await run(dial);
      await dialerReady;
      dialer?.close();
      log.debug('port-forward session closed');
    };
    const serveSpdy = (session: SpdySession, transport: string) =>
      serve(transport, (dial) => runPortForward({ session, dial, ...pod, streamCreationTimeoutMs: this.opts.streamCreationTimeoutMs }));
    if (isSpdyUpgrade(req.headers)) {
      const protocol = negotiateStreamProtocol(req.headers, SPDY_PORT_FORWARD_PROTOCOLS);
      if (!protocol) {
        const offeredSpdy = String(req.headers[STREAM_PROTOCOL_HEADER.toLowerCase()] ?? '');
        return refuseUpgrade(socket, errors.forbidden(`unable to upgrade: unable to negotiate protocol: client supports [${offeredSpdy}], server accepts [${SPDY_PORT_FORWARD_PROTOCOLS.join(' ')}]`));
      }
      socket.write(spdyUpgradeResponse(protocol));
      void serveSpdy(new SpdySession({ socket, head }), 'SPDY');
      return;
    }
    if (!webSocket) {
      return refuseUpgrade(socket, errors.badRequest(`unable to upgrade: the Upgrade header must be websocket or ${SPDY_PROTOCOL}`));
    }
    const problem = handshakeProblem(req.headers);
    if (problem) return refuseUpgrade(socket, errors.badRequest(`unable to upgrade: ${problem}`));
    if (!channels) {
      const tunnel = acceptWebSocketTunnel({ socket, head, key: String(req.headers['sec-websocket-key']), subprotocol: WEBSOCKET_PORT_FORWARD_TUNNEL });
      void serveSpdy(new SpdySession({ socket: tunnel }), 'WebSocket');
      return;
    }
    const protocol = choosePortForwardChannelProtocol(offered);
    if (protocol === undefined) {
      // The kubelet's WebSocket handshake refuses unknown subprotocols with 403.
      const served = [WEBSOCKET_PORT_FORWARD_TUNNEL, ...PORT_FORWARD_CHANNEL_PROTOCOLS].join(' ');
      return refuseUpgrade(socket, errors.forbidden(`unable to upgrade: requested protocol(s) are not supported: [${offered.join(' ')}]; supports [${served}]`));
    }
    const wss = await this.webSocketServer();
    if (protocol) this.chosenSubprotocols.set(req, protocol);
    wss.handleUpgrade(req, socket, head, (ws) => {
      void serve(`WebSocket channels ${protocol || '(no subprotocol)'}`, (dial) => runWebSocketPortForward({ ws, protocol, ports, dial, ...pod }));
    });
  }

  /** `ws` is loaded on the first session: most agents never serve one, and it stays out of their heap. */
  private async webSocketServer(): Promise<WebSocketServer> {
    if (!this.wss) {
      const { WebSocketServer: Server } = await import('ws');
      this.wss ??= new Server({
        noServer: true,
        perMessageDeflate: false,
        maxPayload: 4 << 20,
        // The subprotocol was chosen (and checked) before the upgrade; answer with the same one.
        handleProtocols: (_offered: Set<string>, req: http.IncomingMessage) => this.chosenSubprotocols.get(req) ?? false,
      });
    }
    return this.wss;
  }
}

/** Command lines can carry secrets; logs keep the path only. */
function redactQuery(url: string | undefined): string {
  return (url ?? '').split('?')[0] ?? '';
}
