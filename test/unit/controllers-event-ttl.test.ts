/**
 * Event TTL: sweeps against the bench's registry with the bench's clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../../src/api/types.js';
import { EventTTLController, eventLastSeen } from '../../src/controllers/event-ttl/event-ttl.js';
import { controllerEnv, T0, type ControllerEnv } from './controllers-env.js';

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function event(name: string, times: { lastTimestamp?: number; firstTimestamp?: number; eventTime?: number }, namespace = 'default'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace },
    involvedObject: { kind: 'Pod', namespace, name: 'web' },
    reason: 'Started',
    message: 'started',
    type: 'Normal',
    ...(times.lastTimestamp !== undefined ? { lastTimestamp: iso(times.lastTimestamp) } : {}),
    ...(times.firstTimestamp !== undefined ? { firstTimestamp: iso(times.firstTimestamp) } : {}),
    ...(times.eventTime !== undefined ? { eventTime: new Date(times.eventTime).toISOString().replace('Z', '000Z') } : {}),
  } as KubeObject;
}

const names = (env: ControllerEnv) => env.list('', 'events').map((e) => `${e.metadata.namespace}/${e.metadata.name}`).sort();

async function setup(ttlMs = HOUR) {
  const env = await controllerEnv();
  const ttl = new EventTTLController({ client: env.client, log: env.log, now: env.now, ttlMs });
  return { env, ttl };
}

describe('Event TTL controller', () => {
  it('deletes events last seen longer ago than the TTL, by lastTimestamp, eventTime or firstTimestamp', async () => {
    const { env, ttl } = await setup();
    await env.create('', 'events', event('old', { lastTimestamp: T0 - 2 * HOUR }));
    await env.create('', 'events', event('repeating', { firstTimestamp: T0 - 5 * HOUR, lastTimestamp: T0 - 10 * 60_000 }));
    await env.create('', 'events', event('new-style-old', { eventTime: T0 - HOUR - 1000 }));
    await env.create('', 'events', event('first-only', { firstTimestamp: T0 - 30 * 60_000 }));
    await env.create('', 'namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } });
    await env.create('', 'events', event('elsewhere-old', { lastTimestamp: T0 - 3 * HOUR }, 'other'));
    assert.equal(await ttl.sweep(), 3);
    assert.deepEqual(names(env), ['default/first-only', 'default/repeating']);
    env.clock.t += 25 * 60_000;
    assert.equal(await ttl.sweep(), 0, 'first seen 55 min ago: kept');
    env.clock.t += 10 * 60_000;
    assert.equal(await ttl.sweep(), 1);
    assert.deepEqual(names(env), ['default/repeating'], 'first seen 5 h ago but last seen 45 min ago: kept');
    env.clock.t += 20 * 60_000;
    assert.equal(await ttl.sweep(), 1);
    assert.deepEqual(names(env), []);
  });

  it('an event created now with no timestamps is aged by its creationTimestamp', async () => {
    const { env, ttl } = await setup(60_000);
    await env.create('', 'events', event('bare', {}));
    assert.equal(eventLastSeen(env.get('', 'events', 'bare')), T0);
    assert.equal(await ttl.sweep(), 0);
    env.clock.t += 60_001;
    assert.equal(await ttl.sweep(), 1);
  });

  it('walks every page of a long list', async () => {
    const { env, ttl } = await setup();
    for (let i = 0; i < 520; i++) await env.create('', 'events', event(`e${i}`, { lastTimestamp: T0 - 2 * HOUR }));
    assert.equal(await ttl.sweep(), 520);
    assert.equal(env.list('', 'events').length, 0);
  });

  it('sweeps on its own timer once started, and stops', async () => {
    const env = await controllerEnv();
    const ttl = new EventTTLController({ client: env.client, log: env.log, now: env.now, ttlMs: HOUR, intervalMs: 2 });
    await env.create('', 'events', event('old', { lastTimestamp: T0 - 2 * HOUR }));
    ttl.start();
    for (let i = 0; i < 200 && env.list('', 'events').length; i++) await new Promise((r) => setTimeout(r, 2));
    assert.deepEqual(names(env), []);
    await ttl.stop();
    await env.create('', 'events', event('after-stop', { lastTimestamp: T0 - 2 * HOUR }));
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(names(env), ['default/after-stop']);
  });
});
