/**
 * Owns the text of the ingress nginx's configuration: one nginx.conf rendered from a RoutingTable
 * (routes.ts) and the controller's settings, with every path under the agent's ingress directory (its
 * pid, logs, temp files and certificates), so it never touches the system nginx's files. Pure; the
 * same table always renders the same text, which is how the controller knows nothing changed.
 *
 * How the API's rules become nginx locations:
 * - Exact `/p` → `location = /p`; Prefix `/p` → `location = /p` and `location ^~ /p/` (element-wise),
 *   Prefix `/` → `location /`; ImplementationSpecific `/p` → `location /p` (a string prefix). nginx
 *   takes `=` first, then the longest prefix, which is the API's precedence;
 * - each host is a `server`; `*.example.com` becomes a regex matching one label; rules without a host
 *   and requests for no known host go to the default server, which answers 404 unless an Ingress
 *   has a defaultBackend;
 * - upstreams list pod endpoints with keep-alive connections; a backend with no ready endpoint answers 503;
 * - TLS hosts listen on the HTTPS port with their Secret's certificate (SNI picks the server) and
 *   redirect plain HTTP with 308, as ingress-nginx does unless its ssl-redirect annotation is "false".
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Route, RoutingTable, VirtualHost } from './routes.js';

export interface NginxConfigOptions {
  /** the ingress directory: nginx's prefix; pid, logs/, tmp/ and certs/ live here */
  dir: string;
  httpPort: number;
  httpsPort: number;
  /** nginx worker processes; default `auto` (one per core) */
  workers?: number | 'auto';
  /** nginx's user for workers when started as root; default nobody/nogroup */
  user?: string;
}

/** A string nginx reads literally inside double quotes. */
function quoted(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The server_name of a host: exact, a one-label regex for `*.`, `_` for the catch-all. */
export function serverName(host: string): string {
  if (host === '') return '_';
  if (host.startsWith('*.')) return `"~^[^.]+${host.slice(1).replace(/\./g, '\\.')}$"`;
  return host;
}

/** Where a certificate's files live (written 0600 by the controller). */
export function certificateFiles(dir: string, key: string): { cert: string; key: string } {
  return { cert: path.join(dir, 'certs', `${key}.crt`), key: path.join(dir, 'certs', `${key}.key`) };
}

function proxyTo(upstream: string, ingress: string, live: ReadonlySet<string>, indent: string): string[] {
  const lines = [`${indent}  set $berth_ingress ${quoted(ingress)};`];
  // An upstream with no ready endpoint has no block (nginx refuses an empty one): its requests get 503.
  lines.push(live.has(upstream) ? `${indent}  proxy_pass http://${upstream};` : `${indent}  return 503;`);
  return lines;
}

/** The locations of one route, keyed so a location two routes would both produce is written once (the first wins). */
function locationsOf(route: Route): Array<{ key: string; head: string }> {
  if (route.match === 'Exact') return [{ key: `= ${route.path}`, head: `= ${quoted(route.path)}` }];
  if (route.match === 'Prefix') {
    if (route.path === '/') return [{ key: '/', head: '/' }];
    return [
      { key: `= ${route.path}`, head: `= ${quoted(route.path)}` },
      { key: `${route.path}/`, head: `^~ ${quoted(`${route.path}/`)}` },
    ];
  }
  return [{ key: route.path, head: quoted(route.path) }];
}

function renderServer(vh: VirtualHost, o: NginxConfigOptions, live: ReadonlySet<string>, isDefault: boolean): string[] {
  const out: string[] = ['  server {'];
  const def = isDefault ? ' default_server' : '';
  out.push(`    listen ${o.httpPort}${def};`);
  const tlsKey = vh.tls ?? (isDefault ? 'default' : undefined);
  if (tlsKey !== undefined) {
    const files = certificateFiles(o.dir, tlsKey);
    out.push(`    listen ${o.httpsPort} ssl${def};`, `    ssl_certificate ${quoted(files.cert)};`, `    ssl_certificate_key ${quoted(files.key)};`);
  }
  out.push(`    server_name ${serverName(vh.host)};`, `    set $berth_ingress "-";`);
  if (vh.tls !== undefined && vh.sslRedirect) {
    const target = o.httpsPort === 443 ? 'https://$host$request_uri' : `https://$host:${o.httpsPort}$request_uri`;
    out.push(`    if ($scheme = http) {`, `      return 308 ${target};`, `    }`);
  }
  const written = new Set<string>();
  for (const route of vh.routes) {
    for (const loc of locationsOf(route)) {
      if (written.has(loc.key)) continue;
      written.add(loc.key);
      out.push(`    location ${loc.head} {`, ...proxyTo(route.upstream, route.ingress, live, '    '), '    }');
    }
  }
  if (!written.has('/')) {
    out.push('    location / {');
    if (vh.fallback) out.push(...proxyTo(vh.fallback.upstream, vh.fallback.ingress, live, '    '));
    else out.push('      default_type text/plain;', '      return 404 "default backend - 404\\n";');
    out.push('    }');
  }
  out.push('  }');
  return out;
}

export function renderNginxConfig(table: RoutingTable, o: NginxConfigOptions): string {
  const d = (p: string) => quoted(path.join(o.dir, p));
  const live = new Set(table.upstreams.filter((u) => u.servers.length > 0).map((u) => u.name));
  const lines: string[] = [
    '# Written by the Berth agent\'s ingress controller from the cluster\'s Ingresses; rewritten on every change.',
    // nginx reads certificates when it loads the configuration: a rotated one must change the text, so it reloads.
    ...table.certificates.map((c) => `# certificate ${c.key} ${createHash('sha256').update(c.cert).update(c.privateKey).digest('hex').slice(0, 16)}`),
    `user ${o.user ?? 'nobody nogroup'};`,
    `worker_processes ${o.workers ?? 'auto'};`,
    `pid ${d('nginx.pid')};`,
    `error_log ${d('logs/error.log')} warn;`,
    'events {',
    '  worker_connections 4096;',
    '}',
    'http {',
    '  default_type application/octet-stream;',
    '  server_tokens off;',
    '  sendfile on;',
    '  tcp_nodelay on;',
    '  keepalive_timeout 75s;',
    '  keepalive_requests 10000;',
    '  server_names_hash_bucket_size 128;',
    // The combined format plus what ingress-nginx's upstream log adds: the Ingress, the upstream and its status.
    `  log_format berth '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$berth_ingress] $upstream_addr $upstream_status';`,
    `  access_log ${d('logs/access.log')} berth buffer=64k flush=1s;`,
    `  client_body_temp_path ${d('tmp/client_body')};`,
    `  proxy_temp_path ${d('tmp/proxy')};`,
    `  fastcgi_temp_path ${d('tmp/fastcgi')};`,
    `  uwsgi_temp_path ${d('tmp/uwsgi')};`,
    `  scgi_temp_path ${d('tmp/scgi')};`,
    '  map $http_upgrade $berth_connection {',
    "    default upgrade;",
    "    '' '';",
    '  }',
    '  proxy_http_version 1.1;',
    '  proxy_set_header Connection $berth_connection;',
    '  proxy_set_header Upgrade $http_upgrade;',
    '  proxy_set_header Host $host;',
    '  proxy_set_header X-Real-IP $remote_addr;',
    '  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    '  proxy_set_header X-Forwarded-Proto $scheme;',
    '  proxy_set_header X-Forwarded-Host $host;',
    '  proxy_set_header X-Forwarded-Port $server_port;',
    '  proxy_connect_timeout 5s;',
    '  proxy_read_timeout 60s;',
    '  proxy_send_timeout 60s;',
    // A pod that went away between two reloads refuses the connection: the request moves to another.
    '  proxy_next_upstream error timeout http_502 http_503;',
    '  ssl_protocols TLSv1.2 TLSv1.3;',
    '  ssl_session_cache shared:berth_ssl:10m;',
    '  ssl_session_timeout 10m;',
  ];
  for (const u of table.upstreams) {
    if (u.servers.length === 0) continue;
    lines.push(`  upstream ${u.name} {`);
    for (const s of u.servers) lines.push(`    server ${s} max_fails=0;`);
    lines.push('    keepalive 64;', '  }');
  }
  const catchAll = table.hosts.find((h) => h.host === '') ?? { host: '', routes: [], sslRedirect: false };
  lines.push(...renderServer(catchAll, o, live, true));
  for (const vh of table.hosts) if (vh.host !== '') lines.push(...renderServer(vh, o, live, false));
  lines.push('}', '');
  return lines.join('\n');
}
