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

export interface HttpClientOptions {
  /** e.g. https://127.0.0.1:6443 */
  server: string;
  /** bearer token; never logged */
  token?: string;
  /** read before every request instead of `token`: a credential that rotates (a projected service-account token) */
  tokenSource?: () => string | undefined;
  /** PEM of the CA that signed the server certificate */
  ca?: string;
  /** per-request timeout for non-watch calls */
  timeoutMs?: number;
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
  private readonly base: URL;
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
    this.base = new URL(opts.server);
    const secure = this.base.protocol === 'https:';
    this.mod = secure ? https : http;
    this.agent = secure
      ? new https.Agent({ keepAlive: true, ca: opts.ca, maxSockets: 64 })
      : new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.watchAgent = secure ? new https.Agent({ keepAlive: true, ca: opts.ca }) : new http.Agent({ keepAlive: true });
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }

  /** Raw request; resolves with whatever status came back. */
  raw(req: { method: string; path: string; body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number }): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
      const token = this.opts.tokenSource ? this.opts.tokenSource() : this.opts.token;
      if (token) headers.authorization = `Bearer ${token}`;
      if (req.body !== undefined) headers['content-length'] = String(Buffer.byteLength(req.body));
      const r = this.mod.request(
        { protocol: this.base.protocol, hostname: this.base.hostname, port: this.base.port, path: req.path, method: req.method, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      r.setTimeout(req.timeoutMs ?? this.timeoutMs, () => r.destroy(new Error(`request ${req.method} ${req.path} timed out`)));
      r.on('error', reject);
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
    const r = this.mod.request(
      { protocol: this.base.protocol, hostname: this.base.hostname, port: this.base.port, path, method: 'GET', headers, agent: this.watchAgent },
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
              const st = ev.object as unknown as Status;
              finish(new ApiError((st.reason as StatusReason) ?? 'InternalError', st.message ?? 'watch error'));
              r.destroy();
              return;
            }
            req.onEvent(ev);
          }
        });
        resp.on('end', () => finish());
        resp.on('error', (e) => finish(e));
      },
    );
    r.on('error', (e) => finish(e));
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
