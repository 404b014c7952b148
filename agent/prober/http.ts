/**
 * HTTP GET handler, made by the agent from outside the container to the pod IP (or httpGet.host), so
 * images need no curl or wget. As the kubelet: 200–399 is success, certificates are not verified for
 * HTTPS, `User-Agent: kube-probe/<version>` and `Accept: *\/*` unless the spec sets those headers, a
 * `Host` header picks the virtual host. Redirects are not followed: a 3xx already counts as success.
 */
import http from 'node:http';
import https from 'node:https';
import { dialError } from './tcp.js';
import type { HandlerOutcome, HTTPGetAction } from './types.js';

/** Body bytes kept for the outcome text. */
const MAX_BODY_BYTES = 10 * 1024;
export const PROBE_USER_AGENT = 'kube-probe/1.32';

export function probeUrl(p: { scheme: 'HTTP' | 'HTTPS'; host: string; port: number; path: string }): string {
  const host = p.host.includes(':') ? `[${p.host}]` : p.host;
  const path = p.path.startsWith('/') ? p.path : `/${p.path}`;
  return `${p.scheme.toLowerCase()}://${host}:${p.port}${path}`;
}

export function runHttpGet(p: { action: HTTPGetAction; host: string; port: number; timeoutMs: number }): Promise<HandlerOutcome> {
  const scheme = p.action.scheme === 'HTTPS' ? 'HTTPS' : 'HTTP';
  const url = probeUrl({ scheme, host: p.host, port: p.port, path: p.action.path ?? '/' });
  const headers: Record<string, string> = {};
  let sawUserAgent = false;
  let sawAccept = false;
  for (const h of p.action.httpHeaders ?? []) {
    const name = h.name.toLowerCase();
    if (name === 'user-agent') sawUserAgent = true;
    if (name === 'accept') sawAccept = true;
    headers[h.name] = h.value;
  }
  if (!sawUserAgent) headers['User-Agent'] = PROBE_USER_AGENT;
  if (!sawAccept) headers.Accept = '*/*';
  headers.Connection = 'close';

  return new Promise((resolve) => {
    let done = false;
    const finish = (o: HandlerOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const lib = scheme === 'HTTPS' ? https : http;
    // agent: false — one connection per probe, closed after it; nothing pooled stays open between probes.
    const req = lib.get(url, { headers, agent: false, rejectUnauthorized: false } as https.RequestOptions, (res) => {
      const code = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        if (size < MAX_BODY_BYTES) chunks.push(b.subarray(0, MAX_BODY_BYTES - size));
        size += b.length;
        if (size >= MAX_BODY_BYTES) done1();
      });
      const done1 = () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (code >= 200 && code < 400) finish({ ok: true, output: body });
        else finish({ ok: false, output: `HTTP probe failed with statuscode: ${code}` });
      };
      res.on('end', done1);
      res.on('error', done1);
    });
    const timer = setTimeout(
      () => finish({ ok: false, output: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` }),
      Math.max(1, p.timeoutMs),
    );
    req.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, output: `Get "${url}": dial tcp ${p.host}:${p.port}: ${dialError(err)}` }));
  });
}
