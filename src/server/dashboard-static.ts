/**
 * The built-in dashboard's static files at `/dashboard/`: the page, its stylesheet, its compiled
 * scripts and the browser build of `yaml`. The files carry no cluster data, so they are served
 * without authentication; everything with data is fetched by the page through the API with the
 * user's own token. Files are read from disk on each request (the browser caches them), so serving
 * the dashboard keeps nothing resident in the control plane. Every file is sent with a strict
 * Content-Security-Policy and may not be framed.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

export const DASHBOARD_PREFIX = '/dashboard/';

/** dist/src/server → repository (or installed package) root */
const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** URL prefix → directory; the first directory holding the file answers. */
export interface DashboardRoots {
  /** hand-written files: index.html, style.css */
  publicDir: string;
  /** the front end compiled by dashboard/tsconfig.json */
  scriptDir: string;
  /** the `yaml` package's browser build, served under vendor/yaml/ */
  yamlDir: string;
}

export const DEFAULT_DASHBOARD_ROOTS: DashboardRoots = {
  publicDir: path.join(PACKAGE_ROOT, 'dashboard', 'public'),
  scriptDir: path.join(PACKAGE_ROOT, 'dist', 'dashboard'),
  yamlDir: path.join(PACKAGE_ROOT, 'node_modules', 'yaml', 'browser', 'dist'),
};

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/** Is this request path one of the dashboard's (served without authentication)? */
export function isDashboardPath(urlPath: string): boolean {
  return urlPath === '/dashboard' || urlPath.startsWith(DASHBOARD_PREFIX);
}

/**
 * Maps a path below /dashboard/ to a file, or undefined when it names nothing servable: a segment
 * that is empty, `.`/`..`, hidden, or holds a separator or NUL never leaves its root directory.
 */
export function resolveDashboardFile(relative: string, roots: DashboardRoots = DEFAULT_DASHBOARD_ROOTS): string[] | undefined {
  let decoded: string;
  try {
    decoded = decodeURIComponent(relative === '' ? 'index.html' : relative);
  } catch {
    return undefined;
  }
  const segments = decoded.split('/');
  if (segments.some((s) => s === '' || s.startsWith('.') || s.includes('\\') || s.includes('\0'))) return undefined;
  if (!(path.extname(decoded) in CONTENT_TYPES)) return undefined;
  if (segments[0] === 'vendor') {
    if (segments[1] !== 'yaml' || segments.length < 3) return undefined;
    return [path.join(roots.yamlDir, ...segments.slice(2))];
  }
  return [path.join(roots.publicDir, ...segments), path.join(roots.scriptDir, ...segments)];
}

export function registerDashboard(app: FastifyInstance, roots: DashboardRoots = DEFAULT_DASHBOARD_ROOTS): void {
  app.get('/dashboard', async (_req, reply) => reply.redirect(DASHBOARD_PREFIX, 301));
  app.get(`${DASHBOARD_PREFIX}*`, async (req, reply) => {
    const relative = ((req.params as { '*': string })['*'] ?? '').split('?')[0] ?? '';
    const candidates = resolveDashboardFile(relative, roots);
    for (const file of candidates ?? []) {
      const body = await fs.readFile(file).catch(() => undefined);
      if (body) return send(reply, file, body);
    }
    return reply.code(404).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send('404 page not found\n');
  });
}

/** Inline `<script>` elements (no src): the import map and the module loader of index.html. */
const INLINE_SCRIPT = /<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g;

/**
 * The page's Content-Security-Policy: scripts, styles, images and API calls from this origin only,
 * the page's own inline scripts by their hashes (so an injected one never runs), no plugins, no
 * <base> or form redirection, and no framing by any other page (clickjacking).
 */
export function dashboardContentSecurityPolicy(html: string): string {
  const hashes = [...html.matchAll(INLINE_SCRIPT)].map((m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes.join(' ')}`.trim(),
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** For every file that is not the page: it may run nothing and be framed by nothing. */
const NON_PAGE_POLICY = "default-src 'none'; frame-ancestors 'none'";

function send(reply: FastifyReply, file: string, body: Buffer): FastifyReply {
  // The page is revalidated every time so a new build shows at once; scripts and styles briefly cached.
  const page = file.endsWith('.html');
  return reply
    .type(CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream')
    .header('cache-control', page ? 'no-cache' : 'public, max-age=300')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', page ? dashboardContentSecurityPolicy(body.toString('utf8')) : NON_PAGE_POLICY)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .send(body);
}
