/**
 * Join tokens as bootstrap tokens: their format, the Secret data kubeadm writes, and the join
 * endpoint's decision — a live token admits a join; a wrong secret, an expired, deleted or
 * non-authentication token is refused with one 401 that says nothing about which.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { bootstrapTokenData, bootstrapTokenRefusal, newBootstrapToken, parseBootstrapToken } from '../../src/api/bootstrap-tokens.js';
import { ApiError } from '../../src/api/errors.js';
import { TokenAuthenticator } from '../../src/auth/tokens.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const CA = '-----BEGIN CERTIFICATE-----\nnot parsed\n-----END CERTIFICATE-----\n';
const NOW = Date.parse('2026-11-28T12:00:00Z');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('bootstrap tokens', () => {
  it('are <6>.<16> characters of [a-z0-9]; anything else is not one', () => {
    const t = newBootstrapToken();
    assert.match(`${t.id}.${t.secret}`, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    assert.deepEqual(parseBootstrapToken(`${t.id}.${t.secret}`), t);
    for (const bad of ['abcdef.0123456789abcde', 'ABCDEF.0123456789abcdef', 'abcdef0123456789abcdef', 'abcdef.0123456789abcdefg']) assert.equal(parseBootstrapToken(bad), undefined, bad);
  });

  it("store kubeadm's keys; refuse a wrong secret, another usage, and an expired token", () => {
    const token = { id: 'abcdef', secret: '0123456789abcdef' };
    const data = bootstrapTokenData({ ...token, expiresAt: new Date(NOW + 3600_000), description: 'lab' });
    assert.deepEqual(data, { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', expiration: '2026-11-28T13:00:00Z', description: 'lab', 'usage-bootstrap-authentication': 'true' });
    assert.equal(bootstrapTokenRefusal(data, token, NOW), undefined);
    assert.equal(bootstrapTokenRefusal(data, { ...token, secret: 'fedcba9876543210' }, NOW), 'wrong token secret');
    assert.equal(bootstrapTokenRefusal(data, token, NOW + 3600_000), 'token expired');
    assert.equal(bootstrapTokenRefusal({ ...data, 'usage-bootstrap-authentication': 'false' }, token, NOW), 'token not usable for joining');
    assert.equal(bootstrapTokenRefusal({ ...data, expiration: 'soon' }, token, NOW), 'token expired');
    const forever = bootstrapTokenData(token);
    assert.equal(forever.expiration, undefined);
    assert.equal(bootstrapTokenRefusal(forever, token, NOW + 100 * 365 * 86400_000), undefined);
  });

  it('admit a join while live; once expired or deleted the join endpoint answers one 401', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-bootstrap-tokens-'));
    dirs.push(dataDir);
    const backend = openSqliteBackend({ file: ':memory:' });
    const secrets = new Map<string, Record<string, string>>();
    let now = NOW;
    const auth = await TokenAuthenticator.open({ dataDir, backend, caCert: CA, bootstrapToken: async (id) => secrets.get(id), now: () => now });
    try {
      const token = newBootstrapToken();
      secrets.set(token.id, bootstrapTokenData({ ...token, expiresAt: new Date(NOW + 60_000) }));
      const joined = await auth.joinNode(`Bearer ${token.id}.${token.secret}`, { nodeName: 'n1', nodePassword: 'p'.repeat(43) });
      assert.equal(auth.authenticate(`Bearer ${joined.token}`)?.nodeName, 'n1');
      const refusedWith = async (authorization: string) => {
        try {
          await auth.joinNode(authorization, { nodeName: 'n2', nodePassword: 'q'.repeat(43) });
        } catch (e) {
          assert.ok(e instanceof ApiError);
          return `${e.code} ${e.message}`;
        }
        return 'accepted';
      };
      const REFUSED = '401 invalid join token: unknown, deleted or expired';
      assert.equal(await refusedWith(`Bearer ${token.id}.${'0'.repeat(16)}`), REFUSED);
      now = NOW + 60_000;
      assert.equal(await refusedWith(`Bearer ${token.id}.${token.secret}`), REFUSED);
      now = NOW;
      secrets.delete(token.id);
      assert.equal(await refusedWith(`Bearer ${token.id}.${token.secret}`), REFUSED);
      assert.equal(await refusedWith('Bearer not-a-token'), REFUSED);
      // The node that joined keeps its credential.
      assert.equal(auth.authenticate(`Bearer ${joined.token}`)?.nodeName, 'n1');
    } finally {
      auth.close();
      backend.close();
    }
  });
});
