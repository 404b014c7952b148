/**
 * Encryption at rest: the EncryptionConfiguration parser, the aesgcm / secretbox / identity
 * providers in upstream's stored format, key rotation, and the transforming backend that applies
 * them per resource between the registry and the store.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nacl from 'tweetnacl';
import pino from 'pino';
import { StorageError, type StoreEvent } from '../../src/storage/backend.js';
import {
  DEFAULT_ENCRYPTION_CONFIG_FILE,
  loadEncryptionConfig,
  parseEncryptionConfiguration,
  resourceOfKey,
  transformerForKeys,
} from '../../src/storage/encryption.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { TransformingBackend } from '../../src/storage/transforming-backend.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-encryption-'));
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

const KEY_A = randomBytes(32);
const KEY_B = randomBytes(32);
const SECRET_KEY = '/registry/core/secrets/default/db-password';

function config(providers: string): string {
  return `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
${providers}`;
}
const aesgcm = (name: string, key: Buffer) => `      - aesgcm:\n          keys:\n            - name: ${name}\n              secret: ${key.toString('base64')}\n`;
const secretbox = (name: string, key: Buffer) => `      - secretbox:\n          keys:\n            - name: ${name}\n              secret: ${key.toString('base64')}\n`;
const identity = '      - identity: {}\n';

const chainOf = (text: string) => parseEncryptionConfiguration(text).chainFor('', 'secrets')!;

describe('aesgcm provider', () => {
  test("stores k8s:enc:aesgcm:v1:<key>: + 12-byte nonce + GCM ciphertext and tag, with the storage key as AAD", () => {
    const chain = chainOf(config(aesgcm('key1', KEY_A)));
    const stored = chain.toStorage('{"data":{"password":"c2VjcmV0"}}', SECRET_KEY);
    const prefix = 'k8s:enc:aesgcm:v1:key1:';
    assert.ok(stored.startsWith(prefix), stored.slice(0, 40));
    assert.doesNotMatch(stored, /c2VjcmV0|password/);
    // Opened here with Node's AES-GCM directly, to pin the layout rather than round-trip our own code.
    const sealed = Buffer.from(stored.slice(prefix.length), 'base64');
    const d = createDecipheriv('aes-256-gcm', KEY_A, sealed.subarray(0, 12));
    d.setAAD(Buffer.from(SECRET_KEY));
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    const plain = Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()]).toString();
    assert.equal(plain, '{"data":{"password":"c2VjcmV0"}}');
    assert.equal(chain.fromStorage(stored, SECRET_KEY), plain);
    // Nonces are random: the same value seals differently each time.
    assert.notEqual(chain.toStorage(plain, SECRET_KEY), stored);
  });

  test('a value moved to another key does not open (authenticated data), nor does a tampered one', () => {
    const chain = chainOf(config(aesgcm('key1', KEY_A)));
    const stored = chain.toStorage('{"a":1}', SECRET_KEY);
    assert.throws(() => chain.fromStorage(stored, '/registry/core/secrets/default/other'), /authentication failed/);
    const bytes = Buffer.from(stored.slice('k8s:enc:aesgcm:v1:key1:'.length), 'base64');
    bytes[14]! ^= 1;
    assert.throws(() => chain.fromStorage('k8s:enc:aesgcm:v1:key1:' + bytes.toString('base64'), SECRET_KEY), /authentication failed/);
  });

  test('16- and 24-byte keys select AES-128 and AES-192', () => {
    for (const size of [16, 24]) {
      const key = randomBytes(size);
      const stored = chainOf(config(aesgcm('k', key))).toStorage('v', SECRET_KEY);
      const sealed = Buffer.from(stored.slice('k8s:enc:aesgcm:v1:k:'.length), 'base64');
      const d = createDecipheriv(`aes-${size * 8}-gcm` as 'aes-128-gcm', key, sealed.subarray(0, 12));
      d.setAAD(Buffer.from(SECRET_KEY));
      d.setAuthTag(sealed.subarray(sealed.length - 16));
      assert.equal(Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()]).toString(), 'v');
    }
  });
});

describe('secretbox provider', () => {
  test('stores k8s:enc:secretbox:v1:<key>: + 24-byte nonce + NaCl secretbox', () => {
    const chain = chainOf(config(secretbox('sb', KEY_B)));
    const stored = chain.toStorage('{"data":{"token":"dG9r"}}', SECRET_KEY);
    const prefix = 'k8s:enc:secretbox:v1:sb:';
    assert.ok(stored.startsWith(prefix));
    const sealed = Buffer.from(stored.slice(prefix.length), 'base64');
    const opened = nacl.secretbox.open(sealed.subarray(24), sealed.subarray(0, 24), KEY_B);
    assert.ok(opened);
    assert.equal(Buffer.from(opened).toString(), '{"data":{"token":"dG9r"}}');
    assert.equal(chain.fromStorage(stored, SECRET_KEY), '{"data":{"token":"dG9r"}}');
  });
});

describe('provider lists: rotation and identity', () => {
  test('writes with the first provider and key, reads with any', () => {
    const old = chainOf(config(aesgcm('old', KEY_A)));
    const oldValue = old.toStorage('{"v":"old"}', SECRET_KEY);
    const oldBox = chainOf(config(secretbox('box', KEY_B))).toStorage('{"v":"box"}', SECRET_KEY);
    const rotated = chainOf(config(`      - aesgcm:\n          keys:\n            - name: new\n              secret: ${randomBytes(32).toString('base64')}\n            - name: old\n              secret: ${KEY_A.toString('base64')}\n` + secretbox('box', KEY_B)));
    assert.equal(rotated.fromStorage(oldValue, SECRET_KEY), '{"v":"old"}');
    assert.equal(rotated.fromStorage(oldBox, SECRET_KEY), '{"v":"box"}');
    assert.ok(rotated.toStorage('x', SECRET_KEY).startsWith('k8s:enc:aesgcm:v1:new:'));
  });

  test('plaintext rows are readable only when identity is listed; identity first stores plaintext', () => {
    const withIdentity = chainOf(config(aesgcm('k', KEY_A) + identity));
    assert.equal(withIdentity.fromStorage('{"plain":true}', SECRET_KEY), '{"plain":true}');
    const without = chainOf(config(aesgcm('k', KEY_A)));
    assert.throws(() => without.fromStorage('{"plain":true}', SECRET_KEY), /not encrypted and the provider list has no identity/);
    const identityFirst = chainOf(config(identity + aesgcm('k', KEY_A)));
    assert.equal(identityFirst.toStorage('{"p":1}', SECRET_KEY), '{"p":1}');
    assert.equal(identityFirst.fromStorage(withIdentity.toStorage('{"e":1}', SECRET_KEY), SECRET_KEY), '{"e":1}');
  });

  test('an encrypted value whose key is gone is an error naming the provider and key, not garbage', () => {
    const stored = chainOf(config(aesgcm('gone', KEY_A))).toStorage('{}', SECRET_KEY);
    assert.throws(() => chainOf(config(aesgcm('other', KEY_B) + identity)).fromStorage(stored, SECRET_KEY), /k8s:enc:aesgcm:v1:gone:/);
  });
});

describe('EncryptionConfiguration parsing', () => {
  test('errors name the field', () => {
    const cases: Array<[string, RegExp]> = [
      ['apiVersion: v1\nkind: EncryptionConfiguration\nresources: []', /apiVersion: must be apiserver.config.k8s.io\/v1/],
      [config('      - aescbc:\n          keys: [{name: k, secret: ' + KEY_A.toString('base64') + '}]\n'), /resources\[0\]\.providers\[0\]\.aescbc: unsupported provider/],
      [config(aesgcm('k', randomBytes(20))), /resources\[0\]\.providers\[0\]\.aesgcm\.keys\[0\]\.secret: must be base64 of 16, 24, 32 bytes/],
      [config(secretbox('k', randomBytes(16))), /providers\[0\]\.secretbox\.keys\[0\]\.secret: must be base64 of 32 bytes/],
      [config('      - aesgcm:\n          keys: []\n'), /providers\[0\]\.aesgcm\.keys: Required/],
      [config('      - {aesgcm: {keys: [{name: a, secret: ' + KEY_A.toString('base64') + '}]}, identity: {}}\n'), /providers\[0\]: must name exactly one provider/],
    ];
    for (const [text, re] of cases) assert.throws(() => parseEncryptionConfiguration(text, 'enc.yaml'), re, text);
  });

  test('resources match by name, group and wildcard, first rule wins; unlisted resources are not transformed', () => {
    const cfg = parseEncryptionConfiguration(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [events]
    providers: [{identity: {}}]
  - resources: [secrets, widgets.example.com]
    providers: [{aesgcm: {keys: [{name: a, secret: ${KEY_A.toString('base64')}}]}}]
  - resources: ['*.apps']
    providers: [{secretbox: {keys: [{name: b, secret: ${KEY_B.toString('base64')}}]}}]
`);
    assert.equal(cfg.chainFor('', 'secrets')?.writer, 'aesgcm');
    assert.equal(cfg.chainFor('example.com', 'widgets')?.writer, 'aesgcm');
    assert.equal(cfg.chainFor('apps', 'deployments')?.writer, 'secretbox');
    assert.equal(cfg.chainFor('', 'events')?.writer, 'identity');
    assert.equal(cfg.chainFor('', 'configmaps'), undefined);
    assert.deepEqual(resourceOfKey('/registry/core/secrets/ns/n'), { group: '', plural: 'secrets' });
    assert.deepEqual(resourceOfKey('/registry/apps/deployments/ns/n'), { group: 'apps', plural: 'deployments' });
    assert.equal(resourceOfKey('/berth/credentials/nodes/n'), undefined);
  });

  test('without a file the data dir gets its own 0600 config with a fresh 32-byte AES-GCM key, kept across restarts', () => {
    const dir = fs.mkdtempSync(path.join(tmpRoot, 'data-'));
    const first = loadEncryptionConfig({ dataDir: dir });
    assert.equal(first.generated, true);
    assert.equal(first.file, path.join(dir, DEFAULT_ENCRYPTION_CONFIG_FILE));
    assert.equal(fs.statSync(first.file).mode & 0o777, 0o600);
    const text = fs.readFileSync(first.file, 'utf8');
    const secret = /secret: (\S+)/.exec(text)![1]!;
    assert.equal(Buffer.from(secret, 'base64').length, 32);
    assert.equal(first.config.chainFor('', 'secrets')?.writer, 'aesgcm');
    const stored = first.config.chainFor('', 'secrets')!.toStorage('{}', SECRET_KEY);
    const second = loadEncryptionConfig({ dataDir: dir });
    assert.equal(second.generated, false);
    assert.equal(fs.readFileSync(second.file, 'utf8'), text);
    assert.equal(second.config.chainFor('', 'secrets')!.fromStorage(stored, SECRET_KEY), '{}');
    // A second data dir gets a different key.
    const other = loadEncryptionConfig({ dataDir: fs.mkdtempSync(path.join(tmpRoot, 'data-')) });
    assert.notEqual(/secret: (\S+)/.exec(fs.readFileSync(other.file, 'utf8'))![1], secret);
  });
});

describe('transforming backend', () => {
  const setup = () => {
    const inner = openSqliteBackend({ file: ':memory:', logger: pino({ level: 'silent' }) });
    const cfg = parseEncryptionConfiguration(config(aesgcm('k', KEY_A) + identity));
    const backend = new TransformingBackend({
      inner,
      transformerFor: transformerForKeys(cfg, { extraPrefixes: [{ prefix: '/berth/credentials/nodes/', group: '', plural: 'secrets' }] }),
    });
    return { inner, backend };
  };

  test('only the configured resources are stored encrypted; reads, lists, deletes return plain values', async () => {
    const { inner, backend } = setup();
    const secret = '{"kind":"Secret","data":{"k":"SECRETVALUE"}}';
    const created = await backend.create(SECRET_KEY, secret);
    assert.equal(created.value, secret);
    await backend.create('/registry/core/configmaps/default/cm', '{"kind":"ConfigMap"}');
    await backend.create('/berth/credentials/nodes/n1', '{"proxySecret":"PROXY"}');
    assert.ok((await inner.get(SECRET_KEY))!.value.startsWith('k8s:enc:aesgcm:v1:k:'));
    assert.ok((await inner.get('/berth/credentials/nodes/n1'))!.value.startsWith('k8s:enc:aesgcm:v1:k:'));
    assert.equal((await inner.get('/registry/core/configmaps/default/cm'))!.value, '{"kind":"ConfigMap"}');
    assert.equal((await backend.get(SECRET_KEY))!.value, secret);
    assert.equal((await backend.get('/berth/credentials/nodes/n1'))!.value, '{"proxySecret":"PROXY"}');
    assert.deepEqual((await backend.list('/registry/core/secrets/')).items.map((kv) => kv.value), [secret]);
    const updated = await backend.update(SECRET_KEY, '{"v":2}', created.modRevision);
    assert.equal(updated.value, '{"v":2}');
    assert.equal((await backend.delete(SECRET_KEY)).value, '{"v":2}');
    backend.close();
  });

  test('plaintext rows written before encryption stay readable and are encrypted on their next write', async () => {
    const { inner, backend } = setup();
    const old = await inner.create(SECRET_KEY, '{"legacy":true}');
    assert.equal((await backend.get(SECRET_KEY))!.value, '{"legacy":true}');
    await backend.update(SECRET_KEY, '{"legacy":true}', old.modRevision);
    assert.ok((await inner.get(SECRET_KEY))!.value.startsWith('k8s:enc:aesgcm:v1:k:'));
    backend.close();
  });

  test('watch events (history and live) and conflict reports carry plain values', async () => {
    const { backend } = setup();
    const first = await backend.create(SECRET_KEY, '{"v":1}');
    const events: StoreEvent[] = [];
    const w = await backend.watch('/registry/core/secrets/', { fromRevision: 0, onEvent: (ev) => events.push(ev) });
    await backend.update(SECRET_KEY, '{"v":2}', first.modRevision);
    await backend.delete(SECRET_KEY);
    await new Promise((r) => setTimeout(r, 20));
    w.close();
    assert.deepEqual(events.map((e) => [e.type, e.kv.value, e.prev?.value]), [
      ['create', '{"v":1}', undefined],
      ['update', '{"v":2}', '{"v":1}'],
      ['delete', '{"v":2}', '{"v":2}'],
    ]);
    const again = await backend.create(SECRET_KEY, '{"v":3}');
    const conflict = await backend.update(SECRET_KEY, '{"v":4}', again.modRevision - 1).then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(conflict instanceof StorageError && conflict.code === 'Conflict');
    assert.equal(conflict.current?.value, '{"v":3}');
    backend.close();
  });

  test('a watcher that takes errors ends at an event it cannot be given; one that does not skips it', async () => {
    const { inner, backend } = setup();
    const told: StoreEvent[] = [];
    const untold: StoreEvent[] = [];
    const errors: StorageError[] = [];
    await backend.watch('/registry/core/secrets/', { fromRevision: 0, onEvent: (ev) => told.push(ev), onError: (err) => errors.push(err) });
    await backend.watch('/registry/core/secrets/', { fromRevision: 0, onEvent: (ev) => untold.push(ev) });
    await backend.create(`${SECRET_KEY}-1`, '{"v":1}');
    await inner.create(`${SECRET_KEY}-2`, 'k8s:enc:aesgcm:v1:k:' + randomBytes(40).toString('base64'));
    await backend.create(`${SECRET_KEY}-3`, '{"v":3}');
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(told.map((e) => e.kv.value), ['{"v":1}']);
    assert.equal(errors.length, 1);
    assert.ok(errors[0]!.code === 'Failed' && errors[0]!.message.includes(`${SECRET_KEY}-2`), errors[0]!.message);
    assert.deepEqual(untold.map((e) => e.kv.value), ['{"v":1}', '{"v":3}']);
    backend.close();
  });

  test('a value that cannot be decrypted is a storage failure naming the key', async () => {
    const { inner, backend } = setup();
    await inner.create(SECRET_KEY, 'k8s:enc:aesgcm:v1:k:' + randomBytes(40).toString('base64'));
    await assert.rejects(backend.get(SECRET_KEY), (err: unknown) => err instanceof StorageError && err.code === 'Failed' && err.message.includes(SECRET_KEY));
    backend.close();
  });
});
