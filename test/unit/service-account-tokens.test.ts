/**
 * Projected ServiceAccount tokens in the agent: what is asked of the API (bound to the pod, audience,
 * lifetime), when a cached token is refreshed (past 80% of its life or 24 h old, less the jitter) on an
 * injected clock, failed refreshes keeping the current token with a doubling wait, and the volume rewritten
 * by the periodic check once the token changed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { Pod } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';
import { ManualClock } from '../../agent/clock.js';
import type { ConfigObjects } from '../../agent/volumes/config-objects.js';
import { PodPaths } from '../../agent/volumes/paths.js';
import { payloadFor } from '../../agent/volumes/projection.js';
import { clientTokenRequester, ServiceAccountTokens, type TokenSpec } from '../../agent/volumes/service-account-tokens.js';
import { VolumesHook } from '../../agent/prestart/volumes.js';
import { tokenVolumeSource } from '../../src/admission/plugins/service-account.js';

const log = pino({ level: 'silent' });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-sa-tokens-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fake API: every request gets a new token `t<n>` valid for the granted lifetime from the clock's now. */
function fakeApi(clock: ManualClock) {
  const requests: TokenSpec[] = [];
  let failing: Error | undefined;
  return {
    requests,
    fail(err: Error | undefined) {
      failing = err;
    },
    request: async (spec: TokenSpec) => {
      if (failing) throw failing;
      requests.push(spec);
      return { token: `t${requests.length}`, expiresAt: clock.now() + spec.expirationSeconds * 1000, expirationSeconds: spec.expirationSeconds };
    },
  };
}

const spec = (over: Partial<TokenSpec> = {}): TokenSpec => ({ namespace: 'team', serviceAccountName: 'default', audiences: [], expirationSeconds: 3607, pod: { name: 'web', uid: 'u1' }, ...over });

describe('service account token cache', () => {
  it('refreshes only once 80% of the lifetime has passed (no jitter)', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log, random: () => 0 });
    assert.equal(await tokens.token(spec()), 't1');
    // 80% of 3607 s is 2885.6 s; the kubelet counts the remaining 20% in whole seconds (721 s).
    clock.advance((3607 - 721) * 1000);
    assert.equal(await tokens.token(spec()), 't1', 'exactly at the threshold: still the same token');
    clock.advance(1000);
    assert.equal(await tokens.token(spec()), 't2', 'past it: a new token');
    assert.equal(api.requests.length, 2);
  });

  it('refreshes up to 10 s earlier with the jitter', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log, random: () => 0.999 });
    await tokens.token(spec());
    clock.advance((3607 - 721 - 9) * 1000 + 1);
    assert.equal(await tokens.token(spec()), 't2');
  });

  it('refreshes a long-lived token once it is 24 h old', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log, random: () => 0 });
    const year = 365 * 24 * 3600;
    await tokens.token(spec({ expirationSeconds: year }));
    clock.advance(24 * 3600 * 1000);
    assert.equal(await tokens.token(spec({ expirationSeconds: year })), 't1');
    clock.advance(1);
    assert.equal(await tokens.token(spec({ expirationSeconds: year })), 't2');
  });

  it('keeps one token per request: audience, lifetime and pod each ask anew', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log });
    await tokens.token(spec());
    await tokens.token(spec());
    await tokens.token(spec({ audiences: ['vault'] }));
    await tokens.token(spec({ expirationSeconds: 600 }));
    await tokens.token(spec({ pod: { name: 'web', uid: 'u2' } }));
    assert.equal(api.requests.length, 4);
    tokens.forgetPod('u1');
    assert.equal(tokens.size(), 1, 'the tokens of u1 are gone with it');
  });

  it('a failed refresh keeps the current token and waits a doubling delay before asking again', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    let attempts = 0;
    let down = false;
    const request = async (s: TokenSpec) => {
      attempts++;
      if (down) throw new Error('connection refused');
      return api.request(s);
    };
    const tokens = new ServiceAccountTokens({ request, clock, log, random: () => 0, backoffInitialMs: 1000, backoffMaxMs: 8000 });
    const short = spec({ expirationSeconds: 600 });
    await tokens.token(short);
    clock.advance(481_000); // past 80% of 600 s
    down = true;
    assert.equal(await tokens.token(short), 't1', 'the current token stays');
    assert.equal(attempts, 2);
    clock.advance(999);
    assert.equal(await tokens.token(short), 't1');
    assert.equal(attempts, 2, 'not again within the first second');
    clock.advance(1);
    await tokens.token(short);
    assert.equal(attempts, 3);
    clock.advance(1999);
    await tokens.token(short);
    assert.equal(attempts, 3, 'the wait doubled');
    clock.advance(1);
    await tokens.token(short);
    assert.equal(attempts, 4);
    down = false;
    clock.advance(4000);
    assert.equal(await tokens.token(short), 't2', 'the API answers again: a new token');
  });

  it('fails when there is no valid token to fall back on', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log });
    api.fail(new Error('forbidden'));
    await assert.rejects(tokens.token(spec()), /failed to fetch token: forbidden/);
    api.fail(undefined);
    await tokens.token(spec({ expirationSeconds: 600 }));
    clock.advance(600_000);
    api.fail(new Error('down'));
    await assert.rejects(tokens.token(spec({ expirationSeconds: 600 })), /expired and refresh failed: down/);
  });

  it('asks the API for a TokenRequest bound to the pod', async () => {
    const calls: unknown[] = [];
    const client = {
      create: async (res: unknown, obj: Record<string, any>, opts: unknown) => {
        calls.push({ res, obj: structuredClone(obj), opts });
        return { ...obj, spec: { ...obj.spec, expirationSeconds: 7200 }, status: { token: 'jwt', expirationTimestamp: '2030-01-01T00:00:00Z' } };
      },
    } as unknown as Client;
    const issued = await clientTokenRequester(client)(spec({ audiences: ['vault'] }));
    assert.deepEqual(issued, { token: 'jwt', expiresAt: Date.parse('2030-01-01T00:00:00Z'), expirationSeconds: 7200 });
    assert.deepEqual(calls, [
      {
        res: { plural: 'serviceaccounts' },
        obj: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          metadata: { name: 'default', namespace: 'team' },
          spec: { audiences: ['vault'], expirationSeconds: 3607, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'u1' } },
        },
        opts: { namespace: 'team', name: 'default', subresource: 'token' },
      },
    ]);
  });
});

const CA = '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n';

function podWithTokenVolume(over: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'team', uid: 'pod-uid' },
    spec: { serviceAccountName: 'builder', containers: [{ name: 'main', image: 'busybox' }], volumes: [{ name: 'kube-api-access-abcde', projected: tokenVolumeSource() }], ...over },
  };
}

const objects = {
  configMap: async (namespace: string, name: string) => (namespace === 'team' && name === 'kube-root-ca.crt' ? { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { 'ca.crt': CA } } : undefined),
  secret: async () => undefined,
};

describe('projected serviceAccountToken volumes', () => {
  it('hold token, ca.crt and namespace with mode 0644, the token bound to the pod for its account', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log });
    const pod = podWithTokenVolume();
    const payload = await payloadFor('projected', pod.spec.volumes![0]!.projected as Record<string, unknown>, { pod, facts: { allocatable: {} }, objects, tokens });
    assert.deepEqual(
      [...payload].map(([p, f]) => [p, f.data.toString(), f.mode]),
      [
        ['token', 't1', 0o644],
        ['ca.crt', CA, 0o644],
        ['namespace', 'team', 0o644],
      ],
    );
    assert.deepEqual(api.requests, [{ namespace: 'team', serviceAccountName: 'builder', audiences: [], expirationSeconds: 3607, pod: { name: 'web', uid: 'pod-uid' } }]);
  });

  it('use the source\'s audience, and 0600 for the token under an fsGroup (which adds group read)', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log });
    const pod = podWithTokenVolume({ securityContext: { fsGroup: 2000 } });
    const source = { sources: [{ serviceAccountToken: { audience: 'vault', path: 'vault-token' } }] };
    const payload = await payloadFor('projected', source, { pod, facts: { allocatable: {} }, objects, tokens });
    assert.equal(payload.get('vault-token')?.mode, 0o600);
    assert.deepEqual(api.requests[0]!.audiences, ['vault']);
    assert.equal(api.requests[0]!.expirationSeconds, 3600, 'the API default lifetime when the source names none');
  });

  it('are rewritten by the periodic check once the token needs a refresh, and not before', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const tokens = new ServiceAccountTokens({ request: api.request, clock, log, random: () => 0 });
    const dataDir = fs.mkdtempSync(path.join(tmp, 'pods-'));
    const fakeObjects = { ...objects, onChange: () => () => undefined, use: () => undefined, release: () => undefined } as unknown as ConfigObjects;
    const hook = new VolumesHook({ paths: new PodPaths(dataDir), objects: fakeObjects, allocatable: () => ({}), claims: undefined, log, tokens: { cache: tokens, checkIntervalMs: 60_000, clock } });
    const pod = podWithTokenVolume();
    pod.spec.volumes![0]!.projected = { ...(pod.spec.volumes![0]!.projected as object), sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 600 } }] };
    await hook.syncPod(pod, () => undefined);
    const volume = path.join(new PodPaths(dataDir).volumeDir('pod-uid', 'kube-api-access-abcde'));
    const tokenFile = path.join(volume, 'token');
    assert.equal(fs.readFileSync(tokenFile, 'utf8'), 't1');
    const firstVersion = fs.readlinkSync(path.join(volume, '..data'));

    // Each check runs on the injected clock; before 80% of 600 s nothing is asked or written.
    for (let i = 0; i < 7; i++) {
      clock.advance(60_000);
      await hook.refreshTokens();
    }
    assert.equal(api.requests.length, 1);
    assert.equal(fs.readlinkSync(path.join(volume, '..data')), firstVersion);
    clock.advance(60_000); // 480 s: exactly 80% — not past it yet
    await hook.refreshTokens();
    assert.equal(fs.readFileSync(tokenFile, 'utf8'), 't1');
    clock.advance(60_000); // 540 s
    await settle();
    assert.equal(fs.readFileSync(tokenFile, 'utf8'), 't2', 'the timer-driven check swapped in a new token');
    assert.notEqual(fs.readlinkSync(path.join(volume, '..data')), firstVersion, 'as a new version (atomic swap)');

    await hook.cleanup('pod-uid');
    assert.equal(tokens.size(), 0, 'the pod\'s tokens are forgotten with it');
    hook.stop();
  });
});

/** Lets the check the clock's timer started finish (it does file I/O). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}
