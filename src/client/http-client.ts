/**
 * Owns talking to the API over HTTP(S): the Client contract on node:http(s) with keep-alive pools (one
 * of their own for watches), bearer tokens (fixed or rotating), Status bodies turned back into
 * ApiErrors, newline-delimited watch streams, and failing over between control-plane replicas,
 * resending only what cannot be applied twice. Which replica is in use is endpoints.ts's decision.
 */
import http from 'node:http';
import https from 'node:https';
import { ApiError, type StatusReason } from '../api/errors.js';
import type { KubeList, KubeObject, Status, WatchEvent } from '../api/types.js';
import {
  PATCH_CONTENT_TYPES,
  resourcePath,
  type Client,
  type DeleteRequest,
  type ListQuery,
  type PatchRequest,
  type ResourceRef,
  type WatchHandle,
  type WatchRequest,
} from './client.js';
import { ServerEndpoints, type EndpointMove } from './endpoints.js';

export interface HttpClientOptions {
  /**
   * e.g. https://127.0.0.1:6443, or several control-plane replicas in order of preference: requests
   * go to one at a time and move to the next when it fails (see ServerEndpoints)
   */
  server: string | readonly string[];
  /** bearer token; never logged */
  token?: string;
  /** read before every request instead of `token`: a credential that rotates (a projected service-account token) */
  tokenSource?: () => string | undefined;
  /** PEM of the CA that signed the server certificate */
  ca?: string;
  /** per-request timeout for non-watch calls */
  timeoutMs?: number;
  /** with several servers: how often the one in use is asked for /readyz (0 = never; default 2 s) */
  checkIntervalMs?: number;
  /** with several servers: a /readyz not answered 200 within this long fails the server (default 3 s) */
  checkTimeoutMs?: number;
  /** where moves between servers are reported */
  log?: { warn(obj: unknown, msg?: string): void };
}

/** Connection failures: the server (or the way to it) is down, not merely unhappy with a request. */
const CONNECTION_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED', 'ENOTFOUND', 'EAI_AGAIN', 'EMOVED']);
/** Failures before a connection existed: the request never reached a server, so any method may be sent again. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

function errorCode(e: unknown): string | undefined {
  return (e as { code?: string } | undefined)?.code;
}

function codedError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * A small Kubernetes API client over node:https with keep-alive. It is how agents talk to the
 * control plane — the same path an agent on another machine takes — and what tests use.
 */
export class HttpClient implements Client {
  /** the server list; one entry unless several replicas were given */
  readonly endpoints: ServerEndpoints;
  /** requests and watches in flight, by the server they went to: closed when the client moves away from it */
  private readonly open = new Map<http.ClientRequest, URL>();
  private readonly agent: http.Agent;
  /**
   * Watches hold their connection for as long as they run, so they get a pool of their own without a
   * cap: a node agent watches every ConfigMap and Secret its pods use one by one, and those streams
   * must never starve ordinary requests (status updates, heartbeats) of connections, nor each other.
   */
  private readonly watchAgent: http.Agent;
  private readonly mod: typeof http | typeof https;
  private readonly timeoutMs: number;

  constructor(private readonly opts: HttpClientOptions) {
    this.endpoints = new ServerEndpoints({
      servers: typeof opts.server === 'string' ? [opts.server] : opts.server,
      ...(opts.checkIntervalMs !== undefined ? { checkIntervalMs: opts.checkIntervalMs } : {}),
      ...(opts.checkTimeoutMs !== undefined ? { checkTimeoutMs: opts.checkTimeoutMs } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    // One scheme for all: the pools below are per scheme, and replicas of one cluster share it.
    const schemes = new Set(this.endpoints.all().map((u) => u.protocol));
    if (schemes.size > 1) throw new Error('the servers of one client must all be https:// or all http://');
    const secure = this.endpoints.current().protocol === 'https:';
    this.mod = secure ? https : http;
    this.agent = secure
      ? new https.Agent({ keepAlive: true, ca: opts.ca, maxSockets: 64 })
      : new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.watchAgent = secure ? new https.Agent({ keepAlive: true, ca: opts.ca }) : new http.Agent({ keepAlive: true });
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.endpoints.onMove((move) => this.leave(move));
    this.endpoints.startChecking((server, timeoutMs) => this.ready(server, timeoutMs));
  }

  /** The server requests go to now. */
  get server(): string {
    return this.endpoints.current().origin;
  }

  close(): void {
    this.endpoints.stopChecking();
    this.agent.destroy();
    this.watchAgent.destroy();
  }

  /**
   * After a move: whatever is still open against the server left behind ends now, with an error, so
   * a request against a hung server fails over (GETs are sent again to the new one) instead of
   * waiting out its timeout, and every watch is re-established, from its last revision, on the new one.
   */
  private leave(move: EndpointMove): void {
    for (const [r, server] of this.open) {
      if (server.origin === move.from.origin) r.destroy(codedError(`moved from ${move.from.origin} to ${move.to.origin}: ${move.reason}`, 'EMOVED'));
    }
  }

  private track(r: http.ClientRequest, server: URL): void {
    this.open.set(r, server);
    r.once('close', () => this.open.delete(r));
  }

  /** Health of one replica: its /readyz answers 200 in time. */
  private async ready(server: URL, timeoutMs: number): Promise<boolean> {
    const res = await this.send(server, { method: 'GET', path: '/readyz', timeoutMs, track: false });
    return res.status === 200;
  }

  /**
   * Raw request; resolves with whatever status came back. With several servers, a connection failure
   * moves the client to the next one, and the request is sent there too when that cannot apply it
   * twice: a GET, or any request that never reached a server.
   */
  async raw(req: { method: string; path: string; body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number }): Promise<RawResponse> {
    for (let attempt = 1; ; attempt++) {
      const server = this.endpoints.current();
      try {
        return await this.send(server, req);
      } catch (e) {
        const code = errorCode(e);
        if (!code || !CONNECTION_FAILURES.has(code)) throw e;
        // A kept-alive socket the server had just closed as idle: the server is fine, the socket was stale.
        if (code === 'ECONNRESET' && (e as { reusedSocket?: boolean }).reusedSocket) {
          if ((req.method === 'GET' || req.method === 'HEAD') && attempt < 3) continue;
          throw e;
        }
        if (code !== 'EMOVED') this.endpoints.markFailed(server, (e as Error).message);
        const resend = NEVER_SENT.has(code) || req.method === 'GET' || req.method === 'HEAD';
        if (!resend || attempt >= this.endpoints.size || this.endpoints.current().origin === server.origin) throw e;
      }
    }
  }

  /** One request to one server. */
  private send(server: URL, req: { method: string; path: string; body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number; track?: boolean }): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
      const token = this.opts.tokenSource ? this.opts.tokenSource() : this.opts.token;
      if (token) headers.authorization = `Bearer ${token}`;
      if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
      const r = this.mod.request(
        { protocol: server.protocol, hostname: server.hostname, port: server.port, path: req.path, method: req.method, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      if (req.track !== false) this.track(r, server);
      r.setTimeout(req.timeoutMs ?? this.timeoutMs, () => r.destroy(codedError(`request ${req.method} ${req.path} to ${server.origin} timed out`, 'ETIMEDOUT')));
      r.on('error', (e) => reject(r.reusedSocket ? Object.assign(e, { reusedSocket: true }) : e));
      if (req.body !== undefined) r.write(req.body);
      r.end();
    });
  }

  /** JSON request: returns the decoded body on 2xx, throws ApiError (from the Status body) otherwise. */
  async request<T>(req: { method: string; path: string; body?: unknown; contentType?: string }): Promise<T> {
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = req.contentType ?? 'application/json';
    const res = await this.raw({ method: req.method, path: req.path, body, headers });
    const text = res.body.toString('utf8');
    if (res.status >= 200 && res.status < 300) return (text ? JSON.parse(text) : {}) as T;
    throw errorFromResponse(res.status, text);
  }

  get<T extends KubeObject>(res: ResourceRef, req: { namespace?: string; name: string; subresource?: string }): Promise<T> {
    return this.request<T>({ method: 'GET', path: resourcePath(res, req) });
  }

  list<T extends KubeObject>(res: ResourceRef, query: ListQuery = {}): Promise<KubeList<T>> {
    return this.request<KubeList<T>>({ method: 'GET', path: resourcePath(res, { namespace: query.namespace }) + queryString(query) });
  }

  create<T extends KubeObject>(res: ResourceRef, obj: T, opts: { namespace?: string; subresource?: string; name?: string } = {}): Promise<T> {
    const namespace = opts.namespace ?? obj.metadata.namespace;
    return this.request<T>({ method: 'POST', path: resourcePath(res, { namespace, name: opts.name, subresource: opts.subresource }), body: obj });
  }

  update<T extends KubeObject>(res: ResourceRef, obj: T, opts: { subresource?: string } = {}): Promise<T> {
    const path = resourcePath(res, { namespace: obj.metadata.namespace, name: obj.metadata.name, subresource: opts.subresource });
    return this.request<T>({ method: 'PUT', path, body: obj });
  }

  patch<T extends KubeObject>(res: ResourceRef, req: PatchRequest): Promise<T> {
    const q: Record<string, string> = {};
    if (req.fieldManager) q.fieldManager = req.fieldManager;
    if (req.force) q.force = 'true';
    const path = resourcePath(res, req) + queryString(q);
    return this.request<T>({ method: 'PATCH', path, body: req.patch, contentType: PATCH_CONTENT_TYPES[req.type] });
  }

  delete(res: ResourceRef, req: DeleteRequest): Promise<unknown> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (req.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = req.gracePeriodSeconds;
    if (req.propagationPolicy) body.propagationPolicy = req.propagationPolicy;
    if (req.preconditions) body.preconditions = req.preconditions;
    return this.request({ method: 'DELETE', path: resourcePath(res, req), body });
  }

  watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle {
    const query: Record<string, string | number | boolean | undefined> = {
      watch: 'true',
      labelSelector: req.labelSelector,
      fieldSelector: req.fieldSelector,
      resourceVersion: req.resourceVersion,
      allowWatchBookmarks: req.allowWatchBookmarks,
    };
    const path = resourcePath(res, { namespace: req.namespace }) + queryString(query);
    const headers: Record<string, string> = { accept: 'application/json' };
    const token = this.opts.tokenSource ? this.opts.tokenSource() : this.opts.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let closed = false;
    let finished = false;
    const finish = (err?: Error) => {
      if (finished) return;
      finished = true;
      if (!closed) req.onClose?.(err);
    };
    const server = this.endpoints.current();
    const fail = (e: Error) => {
      // Closed here, or already ended (an ERROR event): not the server's failure.
      if (closed || finished) return;
      // A stream cut by a dead server, or a server refusing connections: the next watch goes elsewhere.
      const code = errorCode(e);
      if (code && code !== 'EMOVED' && CONNECTION_FAILURES.has(code)) this.endpoints.markFailed(server, e.message);
      finish(e);
    };
    const r = this.mod.request(
      { protocol: server.protocol, hostname: server.hostname, port: server.port, path, method: 'GET', headers, agent: this.watchAgent },
      (resp) => {
        if ((resp.statusCode ?? 0) >= 300) {
          const chunks: Buffer[] = [];
          resp.on('data', (c: Buffer) => chunks.push(c));
          resp.on('end', () => finish(errorFromResponse(resp.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))));
          return;
        }
        let buffered = '';
        resp.setEncoding('utf8');
        resp.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (!line || closed) continue;
            let ev: WatchEvent<T>;
            try {
              ev = JSON.parse(line) as WatchEvent<T>;
            } catch {
              // A garbled stream cannot be trusted past this point: end it and let the caller re-watch.
              finish(new ApiError('InternalError', `malformed watch event: ${line.slice(0, 100)}`));
              r.destroy();
              return;
            }
            if (ev.type === 'ERROR') {
              // The server ends a watch it cannot continue (e.g. 410 Gone) with an ERROR event carrying a Status.
              const st: Status = ev.object;
              finish(new ApiError((st.reason as StatusReason) ?? 'InternalError', st.message ?? 'watch error'));
              r.destroy();
              return;
            }
            req.onEvent(ev);
          }
        });
        resp.on('end', () => finish());
        resp.on('error', fail);
        // A connection closed before the stream's last chunk (the server died) may end without 'error'.
        resp.on('close', () => {
          if (!resp.complete) fail(codedError(`watch stream from ${server.origin} was cut`, 'ECONNRESET'));
        });
      },
    );
    this.track(r, server);
    r.on('error', fail);
    r.end();
    return {
      close: () => {
        closed = true;
        r.destroy();
      },
    };
  }
}

/** Query string from defined values only. */
export function queryString(q: Record<string, string | number | boolean | undefined> | ListQuery): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === '' || k === 'namespace') continue;
    params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

function errorFromResponse(status: number, text: string): ApiError {
  try {
    const st = JSON.parse(text) as Partial<Status>;
    if (st.kind === 'Status' && st.reason) {
      return new ApiError(st.reason as StatusReason, st.message ?? `HTTP ${status}`, st.details);
    }
  } catch {
    // not JSON: fall through
  }
  const reason: StatusReason =
    status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : status === 404 ? 'NotFound' : status === 409 ? 'Conflict' : status === 410 ? 'Expired' : status >= 500 ? 'InternalError' : 'BadRequest';
  return new ApiError(reason, `HTTP ${status}: ${text.slice(0, 200)}`);
}
