/**
 * Service-account tokens on a real server over HTTPS with the newest kubectl under test (1.32 in CI;
 * `kubectl create token` needs ≥ 1.24, so a machine with only 1.20 skips those cases by name): `kubectl create sa` and
 * `kubectl create token` give a JWT that authenticates (today's authorizer then answers 403, not 401:
 * who the caller is was established), expiry, a deleted or replaced ServiceAccount and a deleted bound
 * pod make it 401, a legacy token Secret is filled and dies with the Secret, and an outside verifier
 * checks tokens with nothing but the OIDC discovery documents.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, customFetch, decodeJwt, jwtVerify } from 'jose';
import type { KubeObject } from '../../src/api/types.js';
import { CORE, type ResourceRef } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { availableKubectls, needsKubectl, podManifest, startCluster, TEST_IMAGE, waitFor, type Cluster } from './harness.js';

const SERVICE_ACCOUNTS: ResourceRef = { plural: 'serviceaccounts' };
const SECRETS: ResourceRef = { plural: 'secrets' };
const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The newest kubectl under test drives these cases: `kubectl create token` came with 1.24. */
const newest = availableKubectls()[0];
const needsCreateToken = newest ? needsKubectl(newest, '1.24', '`kubectl create token`, the TokenRequest command') : 'no kubectl here';

describe('service-account tokens', () => {
  let c: Cluster;
  let caCert: string;

  /** the status a request for pods in default gets with this bearer token */
  const statusWith = async (token: string, path = '/api/v1/namespaces/default/pods'): Promise<{ status: number; body: string }> => {
    const client = new HttpClient({ server: c.url, token, ca: caCert });
    try {
      const r = await client.raw({ method: 'GET', path });
      return { status: r.status, body: r.body.toString() };
    } finally {
      client.close();
    }
  };
  const kubectl = async (args: string[]) => {
    const r = await c.kubectl(args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };

  before(async () => {
    // No agents: nothing here runs a container, and an unscheduled pod is deleted at once.
    const cluster = await startCluster({ agents: [], serverArgs: ['--service-account-min-token-expiration', '1s', '--service-account-token-leeway', '0s'] });
    c = newest ? cluster.forKubectl(newest) : cluster;
    caCert = (await c.client.raw({ method: 'GET', path: '/cacerts' })).body.toString();
  });
  after(async () => {
    await c?.stop();
  });

  it('kubectl create sa and kubectl create token: the token authenticates as the service account', { skip: needsCreateToken }, async () => {
    await kubectl(['create', 'serviceaccount', 'robot']);
    const table = await kubectl(['get', 'sa', 'robot']);
    assert.match(table, /^NAME\s+SECRETS\s+AGE\nrobot\s+0\s+\S+$/);
    const token = await kubectl(['create', 'token', 'robot']);
    const claims = decodeJwt(token) as Record<string, any>;
    const sa = await c.client.get<KubeObject>(SERVICE_ACCOUNTS, { namespace: 'default', name: 'robot' });
    assert.equal(claims.iss, ISSUER);
    assert.equal(claims.sub, 'system:serviceaccount:default:robot');
    assert.deepEqual(claims.aud, [ISSUER]);
    assert.equal(claims.exp - claims.iat, 3600, 'the default lifetime is an hour');
    assert.deepEqual(claims['kubernetes.io'], { namespace: 'default', serviceaccount: { name: 'robot', uid: sa.metadata.uid } });
    assert.ok(typeof claims.jti === 'string' && claims.jti.length > 0);

    const r = await statusWith(token);
    assert.equal(r.status, 403, r.body);
    assert.match((JSON.parse(r.body) as { message: string }).message, /^pods is forbidden: User "system:serviceaccount:default:robot" cannot list resource "pods"/);
    // A token whose signature does not hold is nobody.
    const [h, p, s] = token.split('.') as [string, string, string];
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'system:serviceaccount:default:other' })).toString('base64url')}.${s}`;
    assert.equal((await statusWith(tampered)).status, 401);
    assert.equal((await statusWith(`${h}.${p}.${s.slice(0, -4)}AAAA`)).status, 401);
  });

  it('the token expires: 401 after exp; expirationSeconds below the minimum is refused naming the field', { skip: needsCreateToken }, async () => {
    const token = await kubectl(['create', 'token', 'robot', '--duration=2s']);
    const claims = decodeJwt(token);
    assert.equal(claims.exp! - claims.iat!, 2);
    assert.equal((await statusWith(token)).status, 403);
    await sleep((claims.exp! + 1) * 1000 - Date.now());
    assert.equal((await statusWith(token)).status, 401, 'an expired token is refused');

    const raw = await c.client.raw({
      method: 'POST',
      path: '/api/v1/namespaces/default/serviceaccounts/robot/token',
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 0 } }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(raw.status, 422, raw.body.toString());
    const status = JSON.parse(raw.body.toString()) as { message: string; details: { causes: Array<{ field: string }> } };
    assert.deepEqual(status.details.causes.map((x) => x.field), ['spec.expirationSeconds']);
    assert.match(status.message, /may not specify a duration less than 1 second/);
  });

  it('--audience sets aud, and a token for another audience does not authenticate to the API', { skip: needsCreateToken }, async () => {
    const token = await kubectl(['create', 'token', 'robot', '--audience', 'vault']);
    assert.deepEqual(decodeJwt(token).aud, ['vault']);
    assert.equal((await statusWith(token)).status, 401);
  });

  it('TokenReview: another system checks a token for its own audience; the API\'s audience is not it', { skip: needsCreateToken }, async () => {
    await kubectl(['create', 'serviceaccount', 'reviewed']);
    const vault = await kubectl(['create', 'token', 'reviewed', '--audience', 'vault']);
    const api = await kubectl(['create', 'token', 'reviewed']);
    type Review = KubeObject & { status: { authenticated?: boolean; user?: { username: string; groups: string[] }; audiences?: string[] } };
    const review = async (token: string, audiences?: string[]) =>
      (
        await c.client.create<Review>({ group: 'authentication.k8s.io', version: 'v1', plural: 'tokenreviews' }, {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          metadata: {},
          spec: { token, ...(audiences ? { audiences } : {}) },
        } as unknown as Review)
      ).status;
    const forVault = await review(vault, ['vault']);
    assert.equal(forVault.authenticated, true);
    assert.equal(forVault.user?.username, 'system:serviceaccount:default:reviewed');
    assert.ok(forVault.user?.groups.includes('system:serviceaccounts:default'));
    assert.deepEqual(forVault.audiences, ['vault']);
    assert.equal((await review(vault)).authenticated, false, 'a vault token is not good for the API');
    const forApi = await review(api);
    assert.equal(forApi.authenticated, true);
    assert.deepEqual(forApi.audiences, [ISSUER]);
  });

  it('a token bound to a pod stops working when the pod is deleted', { skip: needsCreateToken }, async () => {
    await c.client.create(CORE.pods, podManifest('bound', { serviceAccountName: 'robot', containers: [{ name: 'main', image: TEST_IMAGE }] }), { namespace: 'default' });
    const pod = await c.client.get<KubeObject>(CORE.pods, { namespace: 'default', name: 'bound' });
    const token = await kubectl(['create', 'token', 'robot', '--bound-object-kind', 'Pod', '--bound-object-name', 'bound']);
    assert.deepEqual((decodeJwt(token) as Record<string, any>)['kubernetes.io'].pod, { name: 'bound', uid: pod.metadata.uid });
    assert.equal((await statusWith(token)).status, 403);
    // A pod running as another service account cannot carry this one's token.
    await kubectl(['create', 'serviceaccount', 'other']);
    const other = await c.kubectl(['create', 'token', 'other', '--bound-object-kind', 'Pod', '--bound-object-name', 'bound'], { allowFail: true });
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /cannot bind token for serviceaccount "other" to pod running with different serviceaccount name/);

    await c.client.delete(CORE.pods, { namespace: 'default', name: 'bound', gracePeriodSeconds: 0 });
    await waitFor(async () => (await c.client.list(CORE.pods, { namespace: 'default' })).items.length === 0, 10_000, 'the pod to be gone');
    assert.equal((await statusWith(token)).status, 401, 'the bound pod is gone');
    const missing = await c.kubectl(['create', 'token', 'robot', '--bound-object-kind', 'Pod', '--bound-object-name', 'bound'], { allowFail: true });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /pods "bound" not found/);
  });

  it('deleting the service account invalidates its tokens, and a new one of the same name does not revive them', { skip: needsCreateToken }, async () => {
    await kubectl(['create', 'serviceaccount', 'doomed']);
    const token = await kubectl(['create', 'token', 'doomed']);
    assert.equal((await statusWith(token)).status, 403);
    await kubectl(['delete', 'serviceaccount', 'doomed']);
    assert.equal((await statusWith(token)).status, 401);
    await kubectl(['create', 'serviceaccount', 'doomed']);
    assert.equal((await statusWith(token)).status, 401, 'the new ServiceAccount has another uid');
    assert.equal((await statusWith(await kubectl(['create', 'token', 'doomed']))).status, 403);
  });

  it('a kubernetes.io/service-account-token Secret gets a token that lives as long as the Secret', async () => {
    // An account of its own, so this case stands alone (the ones before may be skipped).
    const sa = await c.client.create<KubeObject>(SERVICE_ACCOUNTS, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'legacy' } }, { namespace: 'default' });
    await c.client.create(
      SECRETS,
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'robot-token', annotations: { 'kubernetes.io/service-account.name': 'legacy' } }, type: 'kubernetes.io/service-account-token' } as KubeObject,
      { namespace: 'default' },
    );
    let secret: KubeObject & { data?: Record<string, string> } = await c.client.get(SECRETS, { namespace: 'default', name: 'robot-token' });
    await waitFor(async () => {
      secret = await c.client.get(SECRETS, { namespace: 'default', name: 'robot-token' });
      return !!secret.data?.token;
    }, 10_000, 'the token to be filled in');
    const decoded = (k: string) => Buffer.from(secret.data![k]!, 'base64').toString();
    assert.equal(decoded('namespace'), 'default');
    assert.equal(decoded('ca.crt'), caCert);
    assert.equal(secret.metadata.annotations?.['kubernetes.io/service-account.uid'], sa.metadata.uid);
    const token = decoded('token');
    const claims = decodeJwt(token) as Record<string, any>;
    assert.equal(claims.exp, undefined, 'legacy tokens do not expire');
    assert.deepEqual(claims['kubernetes.io'].secret, { name: 'robot-token', uid: secret.metadata.uid });
    assert.equal((await statusWith(token)).status, 403);
    await c.client.delete(SECRETS, { namespace: 'default', name: 'robot-token' });
    assert.equal((await statusWith(token)).status, 401);
  });

  it('an outside verifier checks tokens with the OIDC discovery document and JWKS alone', { skip: needsCreateToken }, async () => {
    const config = await c.client.request<Record<string, unknown>>({ method: 'GET', path: '/.well-known/openid-configuration' });
    assert.deepEqual(config, {
      issuer: ISSUER,
      jwks_uri: `${ISSUER}/openid/v1/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
    });
    // The issuer's name resolves only inside the cluster; from here the same path is fetched on the server's own address.
    const jwksUrl = new URL('/openid/v1/jwks', c.url);
    const jwks = createRemoteJWKSet(jwksUrl, {
      [customFetch]: async (url: string, init: RequestInit) => {
        const r = await c.client.raw({ method: 'GET', path: new URL(url).pathname, headers: Object.fromEntries(new Headers(init.headers).entries()) });
        return new Response(new Uint8Array(r.body), { status: r.status, headers: { 'content-type': String(r.headers['content-type'] ?? '') } });
      },
    });
    const token = await kubectl(['create', 'token', 'robot', '--audience', 'outside']);
    const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: ISSUER, audience: 'outside' });
    assert.equal(payload.sub, 'system:serviceaccount:default:robot');
    assert.equal(protectedHeader.alg, 'RS256');
    // A token signed by another key is refused by the same verifier.
    const forged = token.split('.').slice(0, 2).join('.') + '.' + Buffer.alloc(256, 1).toString('base64url');
    await assert.rejects(jwtVerify(forged, jwks, { issuer: ISSUER, audience: 'outside' }));
  });

  it('discovery lists serviceaccounts (short name sa) and its token subresource', async () => {
    const resources = await kubectl(['api-resources', '--api-group=', '-o', 'name']);
    assert.ok(resources.split('\n').includes('serviceaccounts'), resources);
    const list = await c.client.request<{ resources: Array<{ name: string; verbs: string[]; shortNames?: string[]; group?: string; kind: string }> }>({ method: 'GET', path: '/api/v1' });
    assert.deepEqual(list.resources.find((r) => r.name === 'serviceaccounts')?.shortNames, ['sa']);
    const token = list.resources.find((r) => r.name === 'serviceaccounts/token');
    assert.deepEqual([token?.kind, token?.verbs, token?.group], ['TokenRequest', ['create'], 'authentication.k8s.io']);
  });
});
