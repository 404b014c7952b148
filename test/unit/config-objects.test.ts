/**
 * The agent's ConfigMap/Secret cache under node authorization: it watches exactly the objects its pods
 * use, each by name (a node may not list a namespace), reports changes of those only, and stops a watch
 * once no pod uses the object.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { ResourceRef } from '../../src/client/client.js';
import { objectKey } from '../../agent/container/config-reader.js';
import { ConfigObjects } from '../../agent/volumes/config-objects.js';
import { FakeClient } from './agent-fake-client.js';

const SECRETS: ResourceRef = { plural: 'secrets' };
const secret = (name: string, value: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { k: Buffer.from(value).toString('base64') } });
const settle = () => new Promise((r) => setImmediate(r));

describe('ConfigObjects', () => {
  it('watches each used object by name, reports only its changes, and stops once no pod uses it', async () => {
    const client = new FakeClient();
    await client.create(SECRETS, secret('used', 'one'), { namespace: 'default' });
    await client.create(SECRETS, secret('other', 'x'), { namespace: 'default' });
    const objects = new ConfigObjects({ client, log: pino({ level: 'silent' }), retryMs: 10 });
    const seen: string[] = [];
    objects.onChange((key) => seen.push(key));
    const usedKey = objectKey('secrets', 'default', 'used');
    objects.use('pod-1', [usedKey]);

    assert.equal((await objects.secret('default', 'used'))?.metadata.name, 'used');
    const lists = client.calls.filter((c) => c.verb === 'list' || c.verb === 'watch');
    assert.ok(lists.length >= 1 && lists.every((c) => c.plural === 'secrets'));
    seen.length = 0;

    await client.patch(SECRETS, { namespace: 'default', name: 'other', type: 'merge', patch: { data: { k: 'eQ==' } } });
    await client.patch(SECRETS, { namespace: 'default', name: 'used', type: 'merge', patch: { data: { k: 'dHdv' } } });
    await settle();
    assert.deepEqual(seen, [usedKey], 'a change of an object no pod uses is not even seen');
    assert.equal((await objects.secret('default', 'used'))?.data?.k, 'dHdv');

    objects.release('pod-1');
    seen.length = 0;
    await client.patch(SECRETS, { namespace: 'default', name: 'used', type: 'merge', patch: { data: { k: 'dGhyZWU=' } } });
    await settle();
    assert.deepEqual(seen, [], 'the watch ended with its last user');
    objects.stop();
  });
});
