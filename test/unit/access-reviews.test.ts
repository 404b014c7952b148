import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Authorizer, RequestAttributes } from '../../src/auth/authz.js';
import type { Identity, TokenAuthenticator } from '../../src/auth/tokens.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { reviewToken } from '../../src/requests/reviews/identity-reviews.js';
import { buildApp } from '../../src/server/app.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { envelope, msg, str } from './protobuf-encoder.js';

/** Bearer tokens the fake authenticator knows. */
const USERS: Record<string, Identity> = {
  admin: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
  jane: { username: 'jane', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a', 'b'] } },
  node: { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], nodeName: 'n1' },
};

/**
 * The authorizer the reviews consult, as a table: admin may do anything; jane may get pods in
 * "dev" and create reviews; everyone else nothing. Every question asked is recorded.
 */
class TableAuthorizer {
  asked: Array<{ who: Identity; attrs: RequestAttributes }> = [];
  rulesAsked: Array<{ who: string; namespace: string }> = [];
  authorize(who: Identity, attrs: RequestAttributes) {
    this.asked.push({ who, attrs });
    if (who.groups.includes('system:masters')) return { allowed: true };
    if (attrs.group === 'authorization.k8s.io' || attrs.group === 'authentication.k8s.io') return { allowed: attrs.verb === 'create' };
    if (who.username === 'jane' && attrs.resource === 'pods' && attrs.namespace === 'dev' && attrs.verb === 'get') return { allowed: true, reason: 'jane reads dev' };
    if (attrs.path === '/healthz' && attrs.verb === 'get') return { allowed: true };
    return { allowed: false, reason: who.nodeName ? `node ${who.nodeName} refused` : undefined };
  }
  rulesFor(who: Identity, namespace: string) {
    this.rulesAsked.push({ who: who.username, namespace });
    return { resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }], incomplete: false };
  }
}

function app(authorizer: TableAuthorizer): FastifyInstance {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  const auth = {
    authenticate: (header: string | undefined) => {
      const token = /^Bearer (\S+)$/.exec(header ?? '')?.[1];
      return token ? USERS[token] : undefined;
    },
  } as unknown as TokenAuthenticator;
  return buildApp({ registry, auth, caCert: '', logger: false, authorizer: authorizer as unknown as Authorizer });
}

const AZ = '/apis/authorization.k8s.io/v1';
const AN = '/apis/authentication.k8s.io/v1';

describe('access and identity reviews', () => {
  const authorizer = new TableAuthorizer();
  let server: FastifyInstance;
  before(async () => {
    server = app(authorizer);
    await server.ready();
  });
  after(() => server.close());

  const post = (url: string, body: unknown, token = 'jane', headers: Record<string, string> = {}) =>
    server.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });

  it('lists the reviews in discovery as create-only, LocalSubjectAccessReview namespaced', async () => {
    const res = await server.inject({ method: 'GET', url: AZ, headers: { authorization: 'Bearer admin' } });
    const byName = new Map((res.json().resources as Array<{ name: string; verbs: string[]; namespaced: boolean; kind: string }>).map((r) => [r.name, r]));
    assert.deepEqual([...byName.keys()].sort(), ['localsubjectaccessreviews', 'selfsubjectaccessreviews', 'selfsubjectrulesreviews', 'subjectaccessreviews']);
    for (const r of byName.values()) assert.deepEqual(r.verbs, ['create']);
    assert.equal(byName.get('localsubjectaccessreviews')!.namespaced, true);
    assert.equal(byName.get('selfsubjectaccessreviews')!.namespaced, false);
    const authn = await server.inject({ method: 'GET', url: AN, headers: { authorization: 'Bearer admin' } });
    assert.deepEqual(authn.json().resources.map((r: { name: string }) => r.name).sort(), ['selfsubjectreviews', 'tokenreviews']);
  });

  it('answers a SelfSubjectAccessReview for the caller, echoing the spec', async () => {
    authorizer.asked = [];
    const spec = { resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'pods', name: 'web' } };
    const res = await post(`${AZ}/selfsubjectaccessreviews`, { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.equal(body.kind, 'SelfSubjectAccessReview');
    assert.deepEqual(body.spec, spec);
    assert.deepEqual(body.status, { allowed: true, reason: 'jane reads dev' });
    // The first question is whether jane may create the review; the second is the review itself.
    assert.deepEqual(authorizer.asked.at(-1), { who: USERS.jane, attrs: { verb: 'get', group: '', resource: 'pods', namespace: 'dev', name: 'web' } });
    const denied = await post(`${AZ}/selfsubjectaccessreviews`, { spec: { resourceAttributes: { namespace: 'prod', verb: 'get', resource: 'pods' } } });
    assert.equal(denied.statusCode, 201);
    assert.deepEqual(denied.json().status, { allowed: false });
  });

  it('asks about subresources and non-resource paths as such', async () => {
    authorizer.asked = [];
    await post(`${AZ}/selfsubjectaccessreviews`, { spec: { resourceAttributes: { namespace: 'dev', verb: 'create', group: 'apps', resource: 'deployments', subresource: 'scale' } } });
    assert.deepEqual(authorizer.asked.at(-1)!.attrs, { verb: 'create', group: 'apps', resource: 'deployments', subresource: 'scale', namespace: 'dev' });
    const res = await post(`${AZ}/selfsubjectaccessreviews`, { spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } } });
    assert.deepEqual(authorizer.asked.at(-1)!.attrs, { verb: 'get', group: '', resource: '', path: '/healthz' });
    assert.equal(res.json().status.allowed, true);
  });

  it('refuses malformed access reviews with 422 naming the field', async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ spec: {} }, 'spec.resourceAttributes', 'exactly one of nonResourceAttributes or resourceAttributes must be specified'],
      [{ spec: { resourceAttributes: { verb: 'get' }, nonResourceAttributes: { path: '/x', verb: 'get' } } }, 'spec.nonResourceAttributes', 'cannot be specified in combination with resourceAttributes'],
      [{ metadata: { name: 'x' }, spec: { resourceAttributes: { verb: 'get' } } }, 'metadata', 'must be empty'],
      [{ spec: { resourceAttributes: { verb: 5 } } }, 'spec.resourceAttributes.verb', 'must be a string'],
    ];
    for (const [body, field, detail] of cases) {
      const res = await post(`${AZ}/selfsubjectaccessreviews`, body);
      assert.equal(res.statusCode, 422, `${JSON.stringify(body)}: ${res.body}`);
      const status = res.json();
      assert.equal(status.reason, 'Invalid');
      assert.ok(status.details.causes.some((c: { field: string; message: string }) => c.field === field && c.message.includes(detail)), res.body);
    }
    // client-go sends an unset creationTimestamp as null: still empty metadata.
    const ok = await post(`${AZ}/selfsubjectaccessreviews`, { metadata: { creationTimestamp: null }, spec: { resourceAttributes: { verb: 'get' } } });
    assert.equal(ok.statusCode, 201, ok.body);
  });

  it('answers a SubjectAccessReview for the user it names, a node user as that node', async () => {
    authorizer.asked = [];
    const res = await post(`${AZ}/subjectaccessreviews`, { spec: { user: 'jane', groups: ['dev'], uid: 'u-1', extra: { scopes: ['a'] }, resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'pods' } } }, 'admin');
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().status.allowed, true);
    assert.deepEqual(authorizer.asked.at(-1)!.who, { username: 'jane', groups: ['dev'], uid: 'u-1', extra: { scopes: ['a'] } });
    const node = await post(`${AZ}/subjectaccessreviews`, { spec: { user: 'system:node:n2', groups: ['system:nodes'], resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'x', name: 's' } } }, 'admin');
    assert.equal(authorizer.asked.at(-1)!.who.nodeName, 'n2');
    assert.deepEqual(node.json().status, { allowed: false, reason: 'node n2 refused' });
    const nobody = await post(`${AZ}/subjectaccessreviews`, { spec: { resourceAttributes: { verb: 'get' } } }, 'admin');
    assert.equal(nobody.statusCode, 422);
    assert.equal(nobody.json().details.causes[0].field, 'spec.user');
    assert.match(nobody.json().message, /at least one of user or group must be specified/);
  });

  it('decodes a SubjectAccessReview sent as protobuf, extra values included', async () => {
    authorizer.asked = [];
    const extra = msg(5, str(1, 'scopes'), msg(2, str(1, 'x'), str(1, 'y')));
    const spec = msg(2, msg(1, str(1, 'dev'), str(2, 'get'), str(5, 'pods')), str(3, 'jane'), str(4, 'dev'), extra);
    const res = await server.inject({
      method: 'POST',
      url: `${AZ}/subjectaccessreviews`,
      headers: { authorization: 'Bearer admin', 'content-type': 'application/vnd.kubernetes.protobuf' },
      payload: envelope('authorization.k8s.io/v1', 'SubjectAccessReview', spec),
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().spec, { resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'pods' }, user: 'jane', groups: ['dev'], extra: { scopes: ['x', 'y'] } });
    assert.deepEqual(authorizer.asked.at(-1)!.who, { username: 'jane', groups: ['dev'], extra: { scopes: ['x', 'y'] } });
  });

  it('keeps a LocalSubjectAccessReview to its namespace', async () => {
    const url = `${AZ}/namespaces/dev/localsubjectaccessreviews`;
    const ok = await post(url, { spec: { user: 'jane', resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'pods' } } }, 'admin');
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(ok.json().metadata.namespace, 'dev');
    assert.equal(ok.json().status.allowed, true);
    const other = await post(url, { spec: { user: 'jane', resourceAttributes: { namespace: 'prod', verb: 'get', resource: 'pods' } } }, 'admin');
    assert.equal(other.statusCode, 422);
    assert.equal(other.json().details.causes[0].field, 'spec.resourceAttributes.namespace');
    assert.match(other.json().message, /must match metadata\.namespace/);
    const nonResource = await post(url, { spec: { user: 'jane', nonResourceAttributes: { path: '/healthz', verb: 'get' } } }, 'admin');
    assert.equal(nonResource.statusCode, 422);
    assert.ok(nonResource.json().details.causes.some((c: { field: string }) => c.field === 'spec.nonResourceAttributes'));
    const wrongBody = await post(url, { metadata: { namespace: 'prod' }, spec: { user: 'jane', resourceAttributes: { namespace: 'prod', verb: 'get' } } }, 'admin');
    assert.equal(wrongBody.statusCode, 400);
    assert.match(wrongBody.json().message, /does not match the namespace sent on the request/);
  });

  it('answers a SelfSubjectRulesReview with the caller’s rules in the namespace asked', async () => {
    authorizer.rulesAsked = [];
    const res = await post(`${AZ}/selfsubjectrulesreviews`, { spec: { namespace: 'dev' } });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(authorizer.rulesAsked, [{ who: 'jane', namespace: 'dev' }]);
    assert.deepEqual(res.json().status, {
      resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }],
      nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
      incomplete: false,
    });
    const none = await post(`${AZ}/selfsubjectrulesreviews`, { spec: {} });
    assert.equal(none.statusCode, 400);
    assert.equal(none.json().message, 'no namespace on request');
  });

  it('serves only create on the reviews: other verbs are 405', async () => {
    for (const [method, url] of [
      ['GET', `${AZ}/selfsubjectaccessreviews`],
      ['GET', `${AZ}/selfsubjectaccessreviews/x`],
      ['DELETE', `${AZ}/selfsubjectaccessreviews/x`],
      ['GET', `${AN}/tokenreviews?watch=true`],
    ] as const) {
      const res = await server.inject({ method, url, headers: { authorization: 'Bearer admin' } });
      assert.equal(res.statusCode, 405, `${method} ${url}: ${res.body}`);
      assert.equal(res.json().reason, 'MethodNotAllowed');
    }
  });

  it('tells the caller who they are (SelfSubjectReview), without server-side fields', async () => {
    const res = await post(`${AN}/selfsubjectreviews`, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().status, { userInfo: { username: 'jane', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a', 'b'] } } });
    const node = await post(`${AN}/selfsubjectreviews`, {}, 'node');
    assert.deepEqual(node.json().status.userInfo, { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] });
  });

  it('reviews a token through the server’s authenticator', async () => {
    const good = await post(`${AN}/tokenreviews`, { spec: { token: 'node' } }, 'admin');
    assert.equal(good.statusCode, 201, good.body);
    assert.deepEqual(good.json().status, { authenticated: true, user: { username: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] } });
    const bad = await post(`${AN}/tokenreviews`, { spec: { token: 'nope' } }, 'admin');
    assert.equal(bad.json().status.authenticated, false);
    const empty = await post(`${AN}/tokenreviews`, { spec: {} }, 'admin');
    assert.equal(empty.statusCode, 400);
    assert.equal(empty.json().message, 'token is required for TokenReview in authentication');
    const typed = await post(`${AN}/tokenreviews`, { spec: { token: 'x', audiences: 'api' } }, 'admin');
    assert.equal(typed.statusCode, 422);
    assert.equal(typed.json().details.causes[0].field, 'spec.audiences');
  });

  it('checks a token review’s audiences against what the token is valid for', async () => {
    const user = { username: 'sa', groups: ['system:authenticated'] };
    const bound = async () => ({ user, audiences: ['vault', 'api'] });
    const review = (audiences?: string[]) => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec: { token: 't', audiences } });
    const both = await reviewToken(review(['vault', 'other']), { authenticate: bound, apiAudiences: ['api'] });
    assert.deepEqual(both.status, { authenticated: true, user, audiences: ['vault'] });
    const none = await reviewToken(review(['other']), { authenticate: bound, apiAudiences: ['api'] });
    assert.equal(none.status!.authenticated, false);
    // No audiences asked: the API's own; a credential bound to no audience is valid for those.
    const agnostic = await reviewToken(review(), { authenticate: async () => ({ user }), apiAudiences: ['api'] });
    assert.deepEqual(agnostic.status, { authenticated: true, user, audiences: ['api'] });
    const agnosticOther = await reviewToken(review(['vault']), { authenticate: async () => ({ user }), apiAudiences: ['api'] });
    assert.equal(agnosticOther.status!.authenticated, false);
  });

  it('authorizes creating a review like any create', async () => {
    const refusing = new TableAuthorizer();
    refusing.authorize = () => ({ allowed: false, reason: undefined });
    const other = app(refusing);
    await other.ready();
    try {
      const res = await other.inject({ method: 'POST', url: `${AZ}/selfsubjectaccessreviews`, headers: { authorization: 'Bearer jane', 'content-type': 'application/json' }, payload: '{"spec":{"resourceAttributes":{"verb":"get"}}}' });
      assert.equal(res.statusCode, 403);
    } finally {
      await other.close();
    }
  });
});
