/**
 * HTTP GET handler, made by the agent from outside the container to the pod IP (or httpGet.host), so
 * images need no curl or wget. As the kubelet: 200–399 is success, certificates are not verified for
 * HTTPS, `User-Agent: kube-probe/<version>` and `Accept: *\/*` unless the spec sets those headers, a
 * `Host` header picks the virtual host. Redirects are not followed: a 3xx already counts as success.
 *
 * Plain HTTP is spoken over a bare socket: one request with `Connection: close`, and the verdict comes
 * from the status line, so the connection is dropped as soon as it arrives. A node runs dozens of probes
 * a second; Node's full HTTP client (parser, IncomingMessage, agent bookkeeping) costs several times
 * more CPU per probe and reads nothing a probe needs. HTTPS (rare) goes through node:https.
 */
import net from 'node:net';
import type https from 'node:https';
import { dialError } from './tcp.js';
import type { HandlerOutcome, HTTPGetAction } from './types.js';

/** Bytes of response head looked at before giving up on finding a status line. */
const MAX_STATUS_LINE_BYTES = 8 * 1024;
/** Body bytes kept for the outcome text of an HTTPS probe. */
const MAX_BODY_BYTES = 10 * 1024;
export const PROBE_USER_AGENT = 'kube-probe/1.32';

/** node:https (and TLS) loads only once an HTTPS probe needs it: most agents never do, and it costs memory. */
let httpsModule: Promise<typeof https> | undefined;

export function probeUrl(p: { scheme: 'HTTP' | 'HTTPS'; host: string; port: number; path: string }): string {
  const host = p.host.includes(':') ? `[${p.host}]` : p.host;
  return `${p.scheme.toLowerCase()}://${host}:${p.port}${requestPath(p.path)}`;
}

/** The request target: leading '/', and nothing that could end the request line early. */
function requestPath(path: string): string {
  const withSlash = path.startsWith('/') ? path : `/${path}`;
  return withSlash.replace(/[\x00-\x20\x7f]/g, (ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`);
}

/** The request headers: the spec's (minus any that would break the request), then the defaults it left out. */
function requestHeaders(action: HTTPGetAction, hostHeader: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const seen = new Set<string>();
  for (const h of action.httpHeaders ?? []) {
    if (!h.name || /[\r\n:]/.test(h.name) || /[\r\n]/.test(h.value ?? '')) continue;
    seen.add(h.name.toLowerCase());
    out.push([h.name, h.value ?? '']);
  }
  if (!seen.has('host')) out.unshift(['Host', hostHeader]);
  if (!seen.has('user-agent')) out.push(['User-Agent', PROBE_USER_AGENT]);
  if (!seen.has('accept')) out.push(['Accept', '*/*']);
  out.push(['Connection', 'close']);
  return out;
}

function verdict(code: number, body: string): HandlerOutcome {
  if (code >= 200 && code < 400) return { ok: true, output: body };
  return { ok: false, output: `HTTP probe failed with statuscode: ${code}` };
}

export async function runHttpGet(p: { action: HTTPGetAction; host: string; port: number; timeoutMs: number }): Promise<HandlerOutcome> {
  const scheme = p.action.scheme === 'HTTPS' ? 'HTTPS' : 'HTTP';
  const url = probeUrl({ scheme, host: p.host, port: p.port, path: p.action.path ?? '/' });
  const hostHeader = `${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}`;
  const headers = requestHeaders(p.action, hostHeader);
  const timeout: HandlerOutcome = { ok: false, output: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` };
  const failed = (err: NodeJS.ErrnoException): HandlerOutcome => {
    const dial = err.syscall === 'connect' || err.code === 'ECONNREFUSED' || err.code === 'EHOSTUNREACH' || err.code === 'ENETUNREACH';
    return { ok: false, output: dial ? `Get "${url}": dial tcp ${p.host}:${p.port}: ${dialError(err)}` : `Get "${url}": ${dialError(err)}` };
  };
  if (scheme === 'HTTPS') return httpsGet({ url, headers, timeoutMs: p.timeoutMs, timeout, failed });

  const request = `GET ${requestPath(p.action.path ?? '/')} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return new Promise((resolve) => {
    let done = false;
    let head = '';
    const finish = (o: HandlerOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(o);
    };
    const socket = net.connect({ host: p.host, port: p.port });
    const timer = setTimeout(() => finish(timeout), Math.max(1, p.timeoutMs));
    socket.once('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const eol = head.indexOf('\n');
      if (eol < 0) {
        if (head.length > MAX_STATUS_LINE_BYTES) finish({ ok: false, output: `Get "${url}": malformed HTTP response` });
        return;
      }
      const m = /^HTTP\/\d(?:\.\d)?\s+(\d{3})/.exec(head.slice(0, eol));
      finish(m ? verdict(Number(m[1]), '') : { ok: false, output: `Get "${url}": malformed HTTP response ${JSON.stringify(head.slice(0, Math.min(eol, 64)))}` });
    });
    socket.once('end', () => finish({ ok: false, output: `Get "${url}": EOF` }));
    socket.once('error', (err: NodeJS.ErrnoException) => finish(failed(err)));
  });
}

async function httpsGet(p: {
  url: string;
  headers: Array<[string, string]>;
  timeoutMs: number;
  timeout: HandlerOutcome;
  failed: (err: NodeJS.ErrnoException) => HandlerOutcome;
}): Promise<HandlerOutcome> {
  const lib = await (httpsModule ??= import('node:https').then((m) => m.default));
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: HandlerOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const headers = Object.fromEntries(p.headers);
    // agent: false — one connection per probe; insecureHTTPParser — tolerate what Go's client tolerates.
    const req = lib.get(p.url, { headers, agent: false, rejectUnauthorized: false, insecureHTTPParser: true }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const end = () => finish(verdict(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
      res.on('data', (b: Buffer) => {
        if (size < MAX_BODY_BYTES) chunks.push(b.subarray(0, MAX_BODY_BYTES - size));
        size += b.length;
        if (size >= MAX_BODY_BYTES) end();
      });
      res.on('end', end);
      res.on('error', end);
    });
    const timer = setTimeout(() => finish(p.timeout), Math.max(1, p.timeoutMs));
    req.on('error', (err: NodeJS.ErrnoException) => finish(p.failed(err)));
  });
}
