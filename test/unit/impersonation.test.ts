import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Authorizer, RequestAttributes } from '../../src/auth/authz.js';
import { impersonate } from '../../src/auth/impersonation.js';
import type { Identity, TokenAuthenticator } from '../../src/auth/tokens.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { buildApp } from '../../src/server/app.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const ADMIN: Identity = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
const OPERATOR: Identity = { username: 'op', groups: ['system:authenticated'] };

/** op may impersonate user jane, group dev, SAs in "ci", uid u-1 and extra "scopes" values; admin anything. */
function authorizer(asked: RequestAttributes[] = []) {
  return {
    authorize(who: Identity, attrs: RequestAttributes) {
      asked.push(attrs);
      if (who.groups.includes('system:masters')) return { allowed: true };
      if (attrs.verb !== 'impersonate') return { allowed: false };
      const ok =
        (attrs.resource === 'users' && attrs.group === '' && attrs.name === 'jane') ||
        (attrs.resource === 'groups' && attrs.group === '' && attrs.name === 'dev') ||
        (attrs.resource === 'serviceaccounts' && attrs.group === '' && attrs.namespace === 'ci') ||
        (attrs.resource === 'uids' && attrs.group === 'authentication.k8s.io' && attrs.name === 'u-1') ||
        (attrs.resource === 'userextras' && attrs.group === 'authentication.k8s.io' && attrs.subresource === 'scopes');
      return { allowed: ok };
    },
  };
}

describe('impersonation', () => {
  it('leaves a request without impersonation headers as its caller', () => {
    assert.equal(impersonate(OPERATOR, { accept: ['*/*'] }, authorizer()), OPERATOR);
  });

  it('runs as the impersonated user, in system:authenticated, once each attribute is allowed', () => {
    const asked: RequestAttributes[] = [];
    const who = impersonate(OPERATOR, { 'impersonate-user': ['jane'], 'impersonate-group': ['dev'], 'impersonate-uid': ['u-1'], 'impersonate-extra-scopes': ['x', 'y'] }, authorizer(asked));
    assert.deepEqual(who, { username: 'jane', groups: ['dev', 'system:authenticated'], uid: 'u-1', extra: { scopes: ['x', 'y'] } });
    assert.deepEqual(asked, [
      { verb: 'impersonate', group: '', resource: 'users', name: 'jane' },
      { verb: 'impersonate', group: '', resource: 'groups', name: 'dev' },
      { verb: 'impersonate', group: 'authentication.k8s.io', resource: 'userextras', subresource: 'scopes', name: 'x' },
      { verb: 'impersonate', group: 'authentication.k8s.io', resource: 'userextras', subresource: 'scopes', name: 'y' },
      { verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: 'u-1' },
    ]);
  });

  it('checks a service account as a serviceaccount in its namespace and implies its groups', () => {
    const asked: RequestAttributes[] = [];
    const who = impersonate(OPERATOR, { 'impersonate-user': ['system:serviceaccount:ci:builder'] }, authorizer(asked));
    assert.deepEqual(asked, [{ verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: 'ci', name: 'builder' }]);
    assert.deepEqual(who.groups, ['system:serviceaccounts', 'system:serviceaccounts:ci', 'system:authenticated']);
    // Named groups replace the implied ones.
    const withGroup = impersonate(OPERATOR, { 'impersonate-user': ['system:serviceaccount:ci:builder'], 'impersonate-group': ['dev'] }, authorizer());
    assert.deepEqual(withGroup.groups, ['dev', 'system:authenticated']);
  });

  it('refuses with upstream’s message the first attribute not allowed', () => {
    assert.throws(() => impersonate(OPERATOR, { 'impersonate-user': ['bob'] }, authorizer()), (e: Error & { code?: number; details?: unknown }) => {
      assert.equal(e.code, 403);
      assert.equal(e.message, 'users "bob" is forbidden: User "op" cannot impersonate resource "users" in API group "" at the cluster scope');
      assert.deepEqual(e.details, { name: 'bob', group: undefined, kind: 'users' });
      return true;
    });
    assert.throws(() => impersonate(OPERATOR, { 'impersonate-user': ['jane'], 'impersonate-group': ['system:masters'] }, authorizer()), /groups "system:masters" is forbidden: User "op" cannot impersonate resource "groups"/);
    assert.throws(() => impersonate(OPERATOR, { 'impersonate-user': ['system:serviceaccount:prod:x'] }, authorizer()), {
      message: 'serviceaccounts "x" is forbidden: User "op" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "prod"',
    });
    assert.throws(() => impersonate(OPERATOR, { 'impersonate-user': ['jane'], 'impersonate-extra-other': ['v'] }, authorizer()), {
      message: 'userextras.authentication.k8s.io "v" is forbidden: User "op" cannot impersonate resource "userextras/other" in API group "authentication.k8s.io" at the cluster scope',
    });
  });

  it('refuses groups, uid or extras without a user (500, as upstream)', () => {
    assert.throws(() => impersonate(ADMIN, { 'impersonate-group': ['dev'] }, authorizer()), (e: Error & { code?: number }) => {
      assert.equal(e.code, 500);
      assert.match(e.message, /requested \[group "dev"\] without impersonating a user/);
      return true;
    });
  });

  it('unescapes extra keys and makes a node user that node', () => {
    const who = impersonate(ADMIN, { 'impersonate-user': ['system:node:n1'], 'impersonate-group': ['system:nodes'], 'impersonate-extra-example.com%2fteam': ['a'] }, authorizer());
    assert.deepEqual(who, { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], extra: { 'example.com/team': ['a'] }, nodeName: 'n1' });
    const anonymous = impersonate(ADMIN, { 'impersonate-user': ['system:anonymous'] }, authorizer());
    assert.deepEqual(anonymous.groups, ['system:unauthenticated']);
  });

  describe('through the API server', () => {
    let server: FastifyInstance;
    before(async () => {
      const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
      for (const s of ALL_STRATEGIES) registry.register(s);
      const auth = { authenticate: (h: string | undefined) => (h === 'Bearer admin' ? ADMIN : h === 'Bearer op' ? OPERATOR : undefined) } as unknown as TokenAuthenticator;
      const base = authorizer();
      // Beyond impersonating: admin anything; jane may create self reviews.
      const az = { authorize: (who: Identity, attrs: RequestAttributes) => (who.username === 'jane' && attrs.resource === 'selfsubjectreviews' ? { allowed: true } : base.authorize(who, attrs)) };
      server = buildApp({ registry, auth, caCert: '', logger: false, authorizer: az as unknown as Authorizer });
      await server.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => server.close());

    /** An exec upgrade request, answered by the upgrade path (it never reaches the routes). */
    const execUpgrade = (token: string, headers: Record<string, string>) =>
      new Promise<{ code: number; body: string }>((resolve, reject) => {
        const { port } = server.server.address() as AddressInfo;
        const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/namespaces/dev/pods/web/exec?command=sh', headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', authorization: `Bearer ${token}`, ...headers } });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
        });
        req.on('upgrade', () => reject(new Error('upgraded')));
        req.on('error', reject);
        req.end();
      });

    it('impersonates on the exec/attach upgrade path too', async () => {
      const refused = await execUpgrade('op', { 'impersonate-user': 'bob' });
      assert.equal(refused.code, 403);
      assert.match(refused.body, /users \\"bob\\" is forbidden: User \\"op\\" cannot impersonate resource \\"users\\"/);
      // Allowed to act as jane, the exec is then decided for jane (who may not exec).
      const asJane = await execUpgrade('op', { 'impersonate-user': 'jane' });
      assert.equal(asJane.code, 403);
      assert.match(asJane.body, /User \\"jane\\" cannot create resource \\"pods\/exec\\"/);
    });

    const whoami = (token: string, headers: Record<string, string | string[]>) =>
      server.inject({ method: 'POST', url: '/apis/authentication.k8s.io/v1/selfsubjectreviews', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, payload: '{}' });

    it('serves the request as the impersonated user, each repeated group header kept', async () => {
      const res = await whoami('op', { 'impersonate-user': 'jane', 'impersonate-group': ['dev', 'dev'] });
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(res.json().status.userInfo, { username: 'jane', groups: ['dev', 'dev', 'system:authenticated'] });
    });

    it('answers 403 with upstream’s message when impersonation is not allowed', async () => {
      const res = await whoami('op', { 'impersonate-user': 'bob' });
      assert.equal(res.statusCode, 403);
      assert.equal(res.json().message, 'users "bob" is forbidden: User "op" cannot impersonate resource "users" in API group "" at the cluster scope');
    });
  });
});
