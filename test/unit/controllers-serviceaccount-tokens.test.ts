/**
 * The serviceaccount-token controller (legacy token Secrets) against the real registry, with the real
 * token signer on the bench's injected clock: a `kubernetes.io/service-account-token` Secret naming an
 * existing ServiceAccount is filled with a token bound to that Secret (which authenticates as the
 * ServiceAccount until the Secret goes), ca.crt, namespace and the ServiceAccount's uid; a Secret
 * whose ServiceAccount is missing or was replaced is deleted; other Secrets are left alone.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { KubeObject } from '../../src/api/types.js';
import { BoundObjectIndex, ServiceAccountTokens } from '../../src/auth/service-account-tokens.js';
import { SharedInformers } from '../../src/controllers/runtime/informer-factory.js';
import {
  LegacyTokenController,
  SERVICE_ACCOUNT_NAME_ANNOTATION,
  SERVICE_ACCOUNT_TOKEN_TYPE,
  SERVICE_ACCOUNT_UID_ANNOTATION,
} from '../../src/controllers/serviceaccount-tokens/legacy-tokens.js';
import { controllerEnv, T0 } from './controllers-env.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const CA = '-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n';

interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string | undefined) => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8'));

async function waitFor(cond: () => unknown, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) assert.fail('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function bench() {
  const env = await controllerEnv();
  // What authenticates the tokens: the real index of ServiceAccounts, Pods and Secrets, fed by watches.
  const index = new BoundObjectIndex({ registry: env.registry });
  await index.start();
  const tokens = new ServiceAccountTokens({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'berth-legacy-tokens-')), issuer: ISSUER, objects: index, now: env.now });
  const ca = { pem: CA as string | undefined };

  /** A controller with caches of its own (as after a restart), started: its first pass is done. */
  const start = async () => {
    const informers = new SharedInformers({ client: env.client });
    const controller = new LegacyTokenController({ client: env.client, informers, log: env.log, tokens, caCert: () => ca.pem });
    await controller.start();
    return {
      controller,
      stop: async () => {
        await controller.stop();
        informers.stop();
      },
    };
  };
  const pass = async () => (await start()).stop();

  const serviceAccount = (name: string, namespace = 'default') =>
    env.create<KubeObject>('', 'serviceaccounts', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  const secret = (name: string, fields: { type?: string; annotations?: Record<string, string>; data?: Record<string, string> }) =>
    env.create<Secret>('', 'secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default', ...(fields.annotations ? { annotations: fields.annotations } : {}) }, type: fields.type ?? SERVICE_ACCOUNT_TOKEN_TYPE, ...(fields.data ? { data: fields.data } : {}) } as Secret);
  const getSecret = (name: string) => env.tryGet<Secret>('', 'secrets', name);
  const close = () => index.stop();
  return { env, tokens, index, ca, start, pass, serviceAccount, secret, getSecret, close };
}

describe('serviceaccount-token controller (legacy token Secrets)', () => {
  it('fills a token Secret of an existing ServiceAccount: a token bound to the Secret, ca.crt, namespace, the uid annotation', async () => {
    const b = await bench();
    try {
      const sa = await b.serviceAccount('robot');
      const created = await b.secret('robot-token', { annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot', keep: 'me' } });
      await b.pass();

      const filled = b.getSecret('robot-token')!;
      assert.equal(filled.metadata.uid, created.metadata.uid, 'the same Secret, updated');
      assert.deepEqual(filled.metadata.annotations, { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot', keep: 'me', [SERVICE_ACCOUNT_UID_ANNOTATION]: sa.metadata.uid });
      assert.deepEqual(Object.keys(filled.data ?? {}).sort(), ['ca.crt', 'namespace', 'token']);
      assert.equal(unb64(filled.data!['ca.crt']), CA);
      assert.equal(unb64(filled.data!.namespace), 'default');

      const token = unb64(filled.data!.token)!;
      const claims = decodeJwt(token);
      assert.equal(claims.exp, undefined, 'a legacy token does not expire');
      assert.equal(claims.iat, T0 / 1000);
      assert.equal(claims.sub, 'system:serviceaccount:default:robot');
      assert.deepEqual(claims.aud, [ISSUER]);
      assert.deepEqual(claims['kubernetes.io'], { namespace: 'default', serviceaccount: { name: 'robot', uid: sa.metadata.uid }, secret: { name: 'robot-token', uid: created.metadata.uid } });

      // It authenticates as the ServiceAccount while the Secret lives, and not once it is deleted.
      const identity = await b.tokens.authenticate(`Bearer ${token}`);
      assert.equal(identity?.username, 'system:serviceaccount:default:robot');
      assert.equal(identity?.uid, sa.metadata.uid);
      await b.env.registry.delete(b.env.info('', 'secrets'), 'default', 'robot-token');
      await waitFor(() => b.index.lookup('secrets', 'default', 'robot-token') === undefined);
      assert.equal(await b.tokens.authenticate(`Bearer ${token}`), undefined);
    } finally {
      b.close();
    }
  });

  it('deletes a token Secret whose ServiceAccount is missing, or was replaced since the Secret was filled', async () => {
    const b = await bench();
    try {
      await b.secret('orphan-token', { annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'nobody' } });
      await b.serviceAccount('robot');
      await b.secret('stale-token', { annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot', [SERVICE_ACCOUNT_UID_ANNOTATION]: 'uid-of-an-earlier-robot' }, data: { token: b64('old') } });
      await b.pass();
      assert.equal(b.getSecret('orphan-token'), undefined);
      assert.equal(b.getSecret('stale-token'), undefined);
      assert.deepEqual(b.env.writes().map((w) => `${w.verb} ${w.name}`).sort(), ['delete orphan-token', 'delete stale-token']);
    } finally {
      b.close();
    }
  });

  it('leaves other Secrets alone: other types, and token Secrets already being deleted', async () => {
    const b = await bench();
    try {
      await b.serviceAccount('robot');
      await b.secret('opaque', { type: 'Opaque', annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot' }, data: { a: b64('1') } });
      const held = await b.secret('held-token', { annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot' } });
      held.metadata.finalizers = ['example.com/hold'];
      await b.env.registry.update(b.env.info('', 'secrets'), 'default', 'held-token', held);
      await b.env.registry.delete(b.env.info('', 'secrets'), 'default', 'held-token');
      assert.ok(b.getSecret('held-token')?.metadata.deletionTimestamp);
      await b.pass();
      assert.deepEqual(b.env.writes(), []);
      assert.deepEqual(b.getSecret('opaque')?.data, { a: b64('1') });
      assert.equal(b.getSecret('held-token')?.data, undefined, 'a Secret on its way out gets no token');
    } finally {
      b.close();
    }
  });

  it('keeps a token it finds, adds ca.crt once the CA is known, and changes nothing once complete', async () => {
    const b = await bench();
    try {
      const sa = await b.serviceAccount('robot');
      await b.secret('robot-token', { annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot' } });
      b.ca.pem = undefined;
      await b.pass();
      const first = b.getSecret('robot-token')!;
      assert.deepEqual(Object.keys(first.data ?? {}).sort(), ['namespace', 'token'], 'no CA yet, no ca.crt');
      assert.equal(first.metadata.annotations?.[SERVICE_ACCOUNT_UID_ANNOTATION], sa.metadata.uid);

      b.ca.pem = CA;
      b.env.clearActions();
      await b.pass();
      const second = b.getSecret('robot-token')!;
      assert.equal(second.data?.token, first.data?.token, 'the token is kept, not issued again');
      assert.equal(unb64(second.data?.['ca.crt']), CA);
      assert.deepEqual(b.env.writes().map((w) => `${w.verb} ${w.name}`), ['update robot-token']);

      b.env.clearActions();
      await b.pass();
      assert.deepEqual(b.env.writes(), [], 'nothing to do for a complete Secret');
      assert.equal(b.getSecret('robot-token')?.metadata.resourceVersion, second.metadata.resourceVersion);
    } finally {
      b.close();
    }
  });

  it('running, fills a Secret created later and deletes it once its ServiceAccount is deleted', async () => {
    const b = await bench();
    const running = await b.start();
    try {
      await b.serviceAccount('robot');
      await b.secret('robot-token', { annotations: { [SERVICE_ACCOUNT_NAME_ANNOTATION]: 'robot' } });
      await waitFor(() => b.getSecret('robot-token')?.data?.token);
      await b.env.registry.delete(b.env.info('', 'serviceaccounts'), 'default', 'robot');
      await waitFor(() => b.getSecret('robot-token') === undefined);
    } finally {
      await running.stop();
      b.close();
    }
  });
});
