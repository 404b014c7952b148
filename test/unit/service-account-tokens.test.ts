/**
 * Service-account tokens with an injected clock: the claims issued, what authenticates (signature,
 * issuer, audience, exp/nbf with leeway, the ServiceAccount and bound objects by uid), the signature
 * cache, the key kept in the data dir, the OIDC documents, the watch-fed index, and the TokenRequest
 * handler's checks (minimum lifetime, bindings, NodeRestriction's rule, the protobuf body).
 */
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { decodeJwt, SignJWT } from 'jose';
import { ApiError } from '../../src/api/errors.js';
import type { KubeObject } from '../../src/api/types.js';
import {
  BoundObjectIndex,
  EXTRA_CREDENTIAL_ID,
  EXTRA_POD_NAME,
  EXTRA_POD_UID,
  ServiceAccountTokens,
  type BoundKind,
  type BoundObjectLookup,
  type IndexedObject,
} from '../../src/auth/service-account-tokens.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { handleTokenRequest } from '../../src/requests/token-subresource.js';
import { resolveResourcePath } from '../../src/requests/request-path.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { envelope, int, msg, str } from './protobuf-encoder.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const T0 = Date.parse('2026-01-01T00:00:00Z');

class FakeObjects implements BoundObjectLookup {
  readonly items = new Map<string, IndexedObject>();
  isReady = true;
  set(kind: BoundKind, name: string, entry: IndexedObject | undefined): void {
    if (entry) this.items.set(`${kind}/default/${name}`, entry);
    else this.items.delete(`${kind}/default/${name}`);
  }
  lookup(kind: BoundKind, namespace: string, name: string): IndexedObject | undefined {
    return this.items.get(`${kind}/${namespace}/${name}`);
  }
  ready(): boolean {
    return this.isReady;
  }
}

function setup(extra: { apiAudiences?: string[]; dataDir?: string; issuer?: string } = {}) {
  const clock = { now: T0 };
  const objects = new FakeObjects();
  objects.set('serviceaccounts', 'robot', { uid: 'sa-uid' });
  const dataDir = extra.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'berth-sa-'));
  const tokens = new ServiceAccountTokens({ dataDir, issuer: extra.issuer ?? ISSUER, apiAudiences: extra.apiAudiences, objects, now: () => clock.now });
  return { clock, objects, tokens, dataDir };
}

const bearer = (t: string) => `Bearer ${t}`;
const robot = { namespace: 'default', serviceAccount: { name: 'robot', uid: 'sa-uid' }, audiences: [ISSUER] };

describe('service-account tokens: issuing', () => {
  it('carries Kubernetes claims: iss, sub, aud, iat/nbf/exp from the clock, jti, and the kubernetes.io claim', async () => {
    const { tokens } = setup();
    const { token, expiresAt } = await tokens.issue({ ...robot, expirationSeconds: 3600, pod: { name: 'web', uid: 'pod-uid' } });
    const claims = decodeJwt(token) as Record<string, unknown>;
    assert.deepEqual({ ...claims, jti: typeof claims.jti }, {
      aud: [ISSUER],
      exp: T0 / 1000 + 3600,
      iat: T0 / 1000,
      iss: ISSUER,
      jti: 'string',
      'kubernetes.io': { namespace: 'default', serviceaccount: { name: 'robot', uid: 'sa-uid' }, pod: { name: 'web', uid: 'pod-uid' } },
      nbf: T0 / 1000,
      sub: 'system:serviceaccount:default:robot',
    });
    assert.equal(expiresAt, T0 + 3600_000);
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as Record<string, string>;
    assert.deepEqual(header, { alg: 'RS256', kid: tokens.keyId });
  });

  it('keeps the key in <dataDir>/pki/sa.key (0600) across restarts; kid is base64url(sha256(SPKI DER))', () => {
    const { tokens, dataDir } = setup();
    const file = path.join(dataDir, 'pki', 'sa.key');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const spki = createPublicKey(fs.readFileSync(file, 'utf8')).export({ type: 'spki', format: 'der' });
    assert.equal(tokens.keyId, createHash('sha256').update(spki).digest('base64url'));
    assert.equal(setup({ dataDir }).tokens.keyId, tokens.keyId, 'a restart signs with the same key');
  });

  it('serves the OIDC discovery document and the JWKS with the public key only', async () => {
    const { tokens } = setup();
    assert.deepEqual(tokens.openIdConfiguration(), {
      issuer: ISSUER,
      jwks_uri: `${ISSUER}/openid/v1/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
    });
    const { keys } = await tokens.jwks();
    assert.equal(keys.length, 1);
    assert.deepEqual([keys[0]!.kty, keys[0]!.use, keys[0]!.alg, keys[0]!.kid, keys[0]!.e], ['RSA', 'sig', 'RS256', tokens.keyId, 'AQAB']);
    assert.equal(keys[0]!.d, undefined, 'no private part');
  });
});

describe('service-account tokens: authentication', () => {
  it('a valid token is the service account: user name, uid, groups and the pod and credential extras', async () => {
    const { tokens, objects } = setup();
    objects.set('pods', 'web', { uid: 'pod-uid' });
    const { token, claims } = await tokens.issue({ ...robot, expirationSeconds: 600, pod: { name: 'web', uid: 'pod-uid' } });
    assert.deepEqual(await tokens.authenticate(bearer(token)), {
      username: 'system:serviceaccount:default:robot',
      uid: 'sa-uid',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
      extra: { [EXTRA_POD_NAME]: ['web'], [EXTRA_POD_UID]: ['pod-uid'], [EXTRA_CREDENTIAL_ID]: [`JTI=${claims.jti}`] },
    });
  });

  it('expires after exp (plus the 60 s leeway), and is not valid before nbf (minus the leeway)', async () => {
    const { tokens, clock } = setup();
    const { token } = await tokens.issue({ ...robot, expirationSeconds: 600 });
    clock.now = T0 + 600_000 + 59_000;
    assert.ok(await tokens.authenticate(bearer(token)), 'inside the leeway');
    clock.now += 1000;
    assert.equal(await tokens.authenticate(bearer(token)), undefined, 'past exp + leeway');
    clock.now = T0 - 61_000;
    assert.equal(await tokens.authenticate(bearer(token)), undefined, 'before nbf - leeway');
  });

  it('an expired token is refused even when its signature result is cached', async () => {
    const { tokens, clock } = setup();
    const { token } = await tokens.issue({ ...robot, expirationSeconds: 600 });
    assert.ok(await tokens.authenticate(bearer(token)));
    assert.equal(tokens.cachedTokens(), 1);
    clock.now = T0 + 3600_000;
    assert.equal(await tokens.authenticate(bearer(token)), undefined);
    assert.equal(tokens.cachedTokens(), 0, 'the expired entry is dropped');
  });

  it('refuses other audiences, other issuers, other keys, tampered claims and non-JWT bearer tokens', async () => {
    const { tokens, dataDir } = setup();
    assert.equal(await tokens.authenticate(bearer((await tokens.issue({ ...robot, audiences: ['vault'], expirationSeconds: 600 })).token)), undefined);
    const widened = setup({ dataDir, apiAudiences: [ISSUER, 'vault'] }).tokens;
    assert.ok(await widened.authenticate(bearer((await tokens.issue({ ...robot, audiences: ['vault'], expirationSeconds: 600 })).token)), '--api-audiences widens what the API accepts');
    const elsewhere = setup({ dataDir, issuer: 'https://elsewhere' }).tokens;
    assert.equal(await tokens.authenticate(bearer((await elsewhere.issue({ ...robot, expirationSeconds: 600 })).token)), undefined, 'another issuer');
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const forged = await new SignJWT({ iss: ISSUER, aud: [ISSUER], sub: 'system:serviceaccount:default:robot', 'kubernetes.io': { namespace: 'default', serviceaccount: { name: 'robot', uid: 'sa-uid' } } })
      .setProtectedHeader({ alg: 'RS256', kid: tokens.keyId })
      .sign(otherKey);
    assert.equal(await tokens.authenticate(bearer(forged)), undefined, 'signed by another key');
    const { token } = await tokens.issue({ ...robot, expirationSeconds: 600 });
    const [h, , s] = token.split('.');
    const claims = { ...decodeJwt(token), sub: 'system:serviceaccount:default:admin' };
    assert.equal(await tokens.authenticate(bearer(`${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`)), undefined, 'tampered');
    assert.equal(await tokens.authenticate(bearer('plain-opaque-token')), undefined);
    assert.equal(await tokens.authenticate(undefined), undefined);
  });

  it('the service account and bound objects must exist with the uids the token names', async () => {
    const { tokens, objects, clock } = setup();
    objects.set('pods', 'web', { uid: 'pod-uid' });
    objects.set('secrets', 'tok', { uid: 'secret-uid' });
    const plain = bearer((await tokens.issue({ ...robot, expirationSeconds: 600 })).token);
    const podBound = bearer((await tokens.issue({ ...robot, expirationSeconds: 600, pod: { name: 'web', uid: 'pod-uid' } })).token);
    const secretBound = bearer((await tokens.issue({ ...robot, secret: { name: 'tok', uid: 'secret-uid' } })).token);
    for (const t of [plain, podBound, secretBound]) assert.ok(await tokens.authenticate(t));

    objects.set('pods', 'web', { uid: 'another-pod-uid' });
    assert.equal(await tokens.authenticate(podBound), undefined, 'the pod was replaced');
    objects.set('pods', 'web', undefined);
    assert.equal(await tokens.authenticate(podBound), undefined, 'the pod is gone');
    objects.set('secrets', 'tok', undefined);
    assert.equal(await tokens.authenticate(secretBound), undefined, 'the secret is gone');
    assert.ok(await tokens.authenticate(plain));

    // Graceful deletion: the object vouches for its tokens for the leeway after deletion began.
    objects.set('serviceaccounts', 'robot', { uid: 'sa-uid', deletionTimestamp: new Date(T0 - 30_000).toISOString() });
    assert.ok(await tokens.authenticate(plain));
    clock.now = T0 + 31_000;
    assert.equal(await tokens.authenticate(plain), undefined);
    clock.now = T0;
    objects.set('serviceaccounts', 'robot', { uid: 'new-sa-uid' });
    assert.equal(await tokens.authenticate(plain), undefined, 'the service account was replaced');
    objects.set('serviceaccounts', 'robot', { uid: 'sa-uid' });
    objects.isReady = false;
    assert.equal(await tokens.authenticate(plain), undefined, 'nothing authenticates before the index is built');
  });
});

async function registry() {
  const r = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => T0 } });
  for (const s of ALL_STRATEGIES) r.register(s);
  await r.create(r.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return r;
}

describe('BoundObjectIndex', () => {
  it('follows service accounts, pods and secrets from watches: uids as stored, gone once deleted', async () => {
    const r = await registry();
    const sa = await r.create(r.lookup('', 'serviceaccounts')!.info, 'default', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'early' } } as KubeObject);
    const index = new BoundObjectIndex({ registry: r });
    assert.equal(index.ready(), false);
    await index.start();
    try {
      assert.equal(index.ready(), true);
      assert.deepEqual(index.lookup('serviceaccounts', 'default', 'early'), { uid: sa.metadata.uid });
      const secret = await r.create(r.lookup('', 'secrets')!.info, 'default', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } } as KubeObject);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(index.lookup('secrets', 'default', 's')?.uid, secret.metadata.uid);
      await r.delete(r.lookup('', 'serviceaccounts')!.info, 'default', 'early', {});
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(index.lookup('serviceaccounts', 'default', 'early'), undefined);
    } finally {
      index.stop();
    }
    assert.equal(index.ready(), false);
  });
});

describe('TokenRequest handler', () => {
  async function fixture() {
    const r = await registry();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-sa-'));
    const index = new BoundObjectIndex({ registry: r });
    const tokens = new ServiceAccountTokens({ dataDir, issuer: ISSUER, objects: index, now: () => T0, maxExpirationSeconds: 7200 });
    const sa = await r.create(r.lookup('', 'serviceaccounts')!.info, 'default', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot' } } as KubeObject);
    const pod = (name: string, nodeName: string | undefined) =>
      r.create(r.lookup('', 'pods')!.info, 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { serviceAccountName: 'robot', ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'busybox' }] } } as KubeObject);
    const post = (body: unknown, user = { username: 'admin', groups: ['system:masters'] }, contentType = 'application/json') =>
      handleTokenRequest(r, tokens, {
        method: 'POST',
        target: resolveResourcePath('', 'v1', 'namespaces/default/serviceaccounts/robot/token', (g, p) => r.lookup(g, p)?.info),
        query: {},
        contentType,
        body: Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)),
        user,
      });
    return { r, sa, pod, post };
  }
  const request = (spec: Record<string, unknown>) => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec });
  async function refused(p: Promise<unknown>, code: number, message: RegExp): Promise<ApiError> {
    try {
      await p;
    } catch (e) {
      assert.ok(e instanceof ApiError, String(e));
      assert.equal(e.code, code, e.message);
      assert.match(e.message, message);
      return e;
    }
    assert.fail('the request was accepted');
  }

  it('answers the TokenRequest with the token, its expiry, the default audiences and the max-expiration cut', async () => {
    const { post, sa } = await fixture();
    const res = await post(request({}));
    assert.equal(res.code, 201);
    const body = res.body as { spec: { audiences: string[]; expirationSeconds: number }; status: { token: string; expirationTimestamp: string } };
    assert.deepEqual(body.spec, { audiences: [ISSUER], expirationSeconds: 3600 });
    assert.equal(body.status.expirationTimestamp, '2026-01-01T01:00:00Z');
    assert.equal((decodeJwt(body.status.token) as Record<string, any>)['kubernetes.io'].serviceaccount.uid, sa.metadata.uid);
    const long = (await post(request({ expirationSeconds: 86400 }))).body as { spec: { expirationSeconds: number } };
    assert.equal(long.spec.expirationSeconds, 7200);
  });

  it('refuses a lifetime under the minimum with 422 naming spec.expirationSeconds', async () => {
    const { post } = await fixture();
    const e = await refused(post(request({ expirationSeconds: 599 })), 422, /spec\.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes/);
    assert.deepEqual(e.details?.causes?.map((c) => c.field), ['spec.expirationSeconds']);
  });

  it('binds to a pod by name, and refuses a missing pod, a replaced one (uid) and an unsupported kind', async () => {
    const { post, pod } = await fixture();
    const p = await pod('web', undefined);
    const res = await post(request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web' } }));
    const token = (res.body as { status: { token: string } }).status.token;
    assert.deepEqual((decodeJwt(token) as Record<string, any>)['kubernetes.io'].pod, { name: 'web', uid: p.metadata.uid });
    await refused(post(request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'nope' } })), 404, /pods "nope" not found/);
    await refused(post(request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'stale' } })), 409, /the UID in the bound object reference \(stale\) does not match/);
    await refused(post(request({ boundObjectRef: { kind: 'ConfigMap', apiVersion: 'v1', name: 'x' } })), 400, /cannot bind token to object of type/);
  });

  it('a node gets tokens only bound by uid to a pod bound to it', async () => {
    const { post, pod } = await fixture();
    const mine = await pod('mine', 'node-a');
    const theirs = await pod('theirs', 'node-b');
    const node = { username: 'system:node:node-a', groups: ['system:nodes', 'system:authenticated'] };
    await refused(post(request({}), node), 403, /node requested token not bound to a pod/);
    await refused(post(request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'mine' } }), node), 403, /without a uid/);
    await refused(post(request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'theirs', uid: theirs.metadata.uid } }), node), 403, /scheduled on a different node/);
    assert.equal((await post(request({ boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'mine', uid: mine.metadata.uid } }), node)).code, 201);
  });

  it('decodes the protobuf TokenRequest client-go sends (audiences 1, boundObjectRef 3, expirationSeconds 4)', async () => {
    const { post } = await fixture();
    const raw = Buffer.concat([msg(2, str(1, 'vault'), int(4, 1200))]);
    const res = await post(envelope('authentication.k8s.io/v1', 'TokenRequest', raw), undefined, 'application/vnd.kubernetes.protobuf');
    assert.deepEqual((res.body as { spec: unknown }).spec, { audiences: ['vault'], expirationSeconds: 1200 });
  });
});
