/**
 * The dashboard's static route on its own: which paths map to files, content types, caching, the
 * redirect, and 404 for anything outside its directories (traversal in every spelling).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { dashboardContentSecurityPolicy, isDashboardPath, registerDashboard, resolveDashboardFile, type DashboardRoots } from '../../src/server/dashboard-static.js';

describe('dashboard static files', () => {
  let dir: string;
  let roots: DashboardRoots;
  let app: FastifyInstance;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-dashboard-static-'));
    roots = { publicDir: path.join(dir, 'public'), scriptDir: path.join(dir, 'scripts'), yamlDir: path.join(dir, 'yaml') };
    for (const d of Object.values(roots)) fs.mkdirSync(d);
    fs.writeFileSync(path.join(roots.publicDir, 'index.html'), '<!doctype html><title>t</title>');
    fs.writeFileSync(path.join(roots.publicDir, 'style.css'), 'body{}');
    fs.writeFileSync(path.join(roots.scriptDir, 'main.js'), 'export {};');
    fs.writeFileSync(path.join(roots.yamlDir, 'index.js'), 'export const y = 1;');
    fs.writeFileSync(path.join(dir, 'secret.js'), 'secret');
    fs.writeFileSync(path.join(roots.publicDir, 'notes.txt'), 'not a served type');
    app = Fastify();
    registerDashboard(app, roots);
    await app.ready();
  });
  after(async () => {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('knows its own paths', () => {
    assert.ok(isDashboardPath('/dashboard'));
    assert.ok(isDashboardPath('/dashboard/main.js'));
    assert.ok(!isDashboardPath('/dashboards'));
    assert.ok(!isDashboardPath('/api/v1/pods'));
  });

  it('maps names into its roots only', () => {
    assert.deepEqual(resolveDashboardFile('', roots), [path.join(roots.publicDir, 'index.html'), path.join(roots.scriptDir, 'index.html')]);
    assert.deepEqual(resolveDashboardFile('vendor/yaml/index.js', roots), [path.join(roots.yamlDir, 'index.js')]);
    for (const bad of ['../secret.js', '..%2fsecret.js', '%2e%2e/secret.js', 'vendor/yaml/../../secret.js', 'vendor/other/x.js', 'a//b.js', '.x.js', '..\\secret.js', 'main.js%00.js', 'notes.txt', '%E0%A4%A.js']) {
      assert.equal(resolveDashboardFile(bad, roots), undefined, bad);
    }
  });

  it('serves files with their content type and cache policy, redirects /dashboard, 404s the rest', async () => {
    const redirect = await app.inject({ method: 'GET', url: '/dashboard' });
    assert.equal(redirect.statusCode, 301);
    assert.equal(redirect.headers.location, '/dashboard/');
    const index = await app.inject({ method: 'GET', url: '/dashboard/' });
    assert.equal(index.statusCode, 200);
    assert.equal(index.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(index.headers['cache-control'], 'no-cache');
    const script = await app.inject({ method: 'GET', url: '/dashboard/main.js?v=1' });
    assert.equal(script.statusCode, 200);
    assert.equal(script.body, 'export {};');
    assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(script.headers['cache-control'], 'public, max-age=300');
    assert.equal(script.headers['x-content-type-options'], 'nosniff');
    assert.equal((await app.inject({ method: 'GET', url: '/dashboard/vendor/yaml/index.js' })).body, 'export const y = 1;');
    for (const url of ['/dashboard/../secret.js', '/dashboard/%2e%2e/secret.js', '/dashboard/vendor/yaml/..%2f..%2fsecret.js', '/dashboard/missing.js', '/dashboard/notes.txt']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
      assert.notEqual(res.body, 'secret');
    }
  });

  it("sends a strict Content-Security-Policy naming the page's inline scripts by hash, and forbids framing", async () => {
    const html = '<html><head><script type="importmap">{"imports":{}}</script><script src="x.js"></script></head><body><script>\n  go();\n</script></body></html>';
    const policy = dashboardContentSecurityPolicy(html);
    const hashOf = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    assert.equal(
      policy,
      `default-src 'none'; script-src 'self' ${hashOf('{"imports":{}}')} ${hashOf('\n  go();\n')}; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    const index = await app.inject({ method: 'GET', url: '/dashboard/' });
    assert.equal(index.headers['content-security-policy'], dashboardContentSecurityPolicy('<!doctype html><title>t</title>'));
    assert.equal(index.headers['x-frame-options'], 'DENY');
    const script = await app.inject({ method: 'GET', url: '/dashboard/main.js' });
    assert.equal(script.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
    assert.equal(script.headers['x-frame-options'], 'DENY');
  });
});
