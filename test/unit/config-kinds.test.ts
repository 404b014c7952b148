import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import type { ConfigMap, KubeObject, Secret } from '../../src/api/types.js';
import {
  CONFIGMAP_RESOURCE,
  configMapStrategy,
  decodeBase64Strict,
  SECRET_RESOURCE,
  secretStrategy,
} from '../../src/registry/kinds/config.js';
import { configKeyErrors } from '../../src/api/validation/config.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const NS = BUILTIN_RESOURCES.find((r) => r.plural === 'namespaces')!;
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function fresh() {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return registry;
}

const err = (e: unknown) => e as ApiError;

describe('ConfigMap and Secret kinds', () => {
  it('are served as core/v1 configmaps (cm) and secrets', () => {
    const plurals = ALL_STRATEGIES.map((s) => s.info.plural);
    assert.ok(plurals.includes('configmaps') && plurals.includes('secrets'));
    assert.deepEqual(CONFIGMAP_RESOURCE.shortNames, ['cm']);
    assert.equal(SECRET_RESOURCE.namespaced, true);
  });

  it('merges stringData into data (stringData wins), defaults type to Opaque and never stores stringData', async () => {
    const r = await fresh();
    const created = (await r.create(SECRET_RESOURCE, 'default', {
      metadata: { name: 's' },
      data: { a: b64('from-data'), b: b64('kept') },
      stringData: { a: 'from-stringData', c: 'plain' },
    } as Secret)) as Secret;
    assert.equal(created.type, 'Opaque');
    assert.equal(created.stringData, undefined);
    assert.deepEqual(created.data, { a: b64('from-stringData'), b: b64('kept'), c: b64('plain') });
    const read = (await r.get(SECRET_RESOURCE, 'default', 's')) as Secret;
    assert.equal(read.stringData, undefined);
  });

  it('rejects bad base64 with a 400 that does not echo the value', async () => {
    const r = await fresh();
    await assert.rejects(r.create(SECRET_RESOURCE, 'default', { metadata: { name: 's' }, data: { k: 'not*base64!' } } as Secret), (e) => {
      assert.equal(err(e).code, 400);
      assert.match(err(e).message, /illegal base64 data at input byte 3/);
      assert.doesNotMatch(err(e).message, /not\*base64/);
      return true;
    });
    await assert.rejects(r.create(CONFIGMAP_RESOURCE, 'default', { metadata: { name: 'c' }, binaryData: { k: 'abc' } } as ConfigMap), (e) => err(e).code === 400);
    // Line breaks are allowed, as in Go; output is re-encoded canonically.
    const ok = (await r.create(SECRET_RESOURCE, 'default', { metadata: { name: 'wrapped' }, data: { k: 'aGVs\nbG8=' } } as Secret)) as Secret;
    assert.equal(ok.data?.k, b64('hello'));
  });

  it('decodes padded standard base64 only', () => {
    assert.equal(decodeBase64Strict('aGk=').toString(), 'hi');
    assert.throws(() => decodeBase64Strict('aGk'), /input byte 0/);
    assert.throws(() => decodeBase64Strict('a=Gk'), /input byte 2/);
    assert.throws(() => decodeBase64Strict('aG-k'), /input byte 2/);
  });

  it('validates keys as file names', async () => {
    assert.deepEqual(configKeyErrors('good.key_1-x'), []);
    assert.ok(configKeyErrors('..hidden').some((m) => m.includes("must not start with '..'")));
    assert.ok(configKeyErrors('a/b').length > 0);
    const r = await fresh();
    await assert.rejects(r.create(CONFIGMAP_RESOURCE, 'default', { metadata: { name: 'c' }, data: { 'a/b': 'x' } } as ConfigMap), (e) => {
      assert.equal(err(e).reason, 'Invalid');
      assert.match(err(e).message, /data\[a\/b\]/);
      return true;
    });
    await assert.rejects(
      r.create(CONFIGMAP_RESOURCE, 'default', { metadata: { name: 'c' }, data: { k: 'x' }, binaryData: { k: b64('y') } } as ConfigMap),
      (e) => /duplicate of key present in binaryData/.test(err(e).message),
    );
  });

  it('requires the keys of typed secrets', async () => {
    const r = await fresh();
    await assert.rejects(r.create(SECRET_RESOURCE, 'default', { metadata: { name: 't' }, type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c') } } as Secret), (e) => {
      assert.match(err(e).message, /data\[tls\.key\]: Required value/);
      return true;
    });
    await r.create(SECRET_RESOURCE, 'default', { metadata: { name: 't' }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.key': 'k' } } as Secret);
    await assert.rejects(
      r.create(SECRET_RESOURCE, 'default', { metadata: { name: 'd' }, type: 'kubernetes.io/dockerconfigjson', stringData: { '.dockerconfigjson': 'secret-not-json' } } as Secret),
      (e) => {
        assert.match(err(e).message, /<secret contents redacted>/);
        assert.doesNotMatch(err(e).message, /secret-not-json/);
        return true;
      },
    );
    await assert.rejects(r.create(SECRET_RESOURCE, 'default', { metadata: { name: 'b' }, type: 'kubernetes.io/basic-auth' } as Secret), (e) => /data\[username\]/.test(err(e).message));
  });

  it('refuses more than 1 MiB of data', async () => {
    const r = await fresh();
    const big = 'x'.repeat(1024 * 1024 + 1);
    await assert.rejects(r.create(CONFIGMAP_RESOURCE, 'default', { metadata: { name: 'big' }, data: { k: big } } as ConfigMap), (e) => /Too long/.test(err(e).message));
    await assert.rejects(r.create(SECRET_RESOURCE, 'default', { metadata: { name: 'big' }, stringData: { k: big } } as Secret), (e) => /Too long/.test(err(e).message));
    await r.create(CONFIGMAP_RESOURCE, 'default', { metadata: { name: 'fits' }, data: { k: 'x'.repeat(1024 * 1024) } } as ConfigMap);
  });

  it('refuses data changes once immutable, and the type of a secret never changes', async () => {
    const r = await fresh();
    const cm = (await r.create(CONFIGMAP_RESOURCE, 'default', { metadata: { name: 'c' }, data: { k: 'v' }, immutable: true } as ConfigMap)) as ConfigMap;
    await assert.rejects(r.update(CONFIGMAP_RESOURCE, 'default', 'c', { ...cm, data: { k: 'changed' } } as KubeObject), (e) => {
      assert.equal(err(e).reason, 'Invalid');
      assert.match(err(e).message, /data: Forbidden: field is immutable when `immutable` is set/);
      return true;
    });
    await assert.rejects(r.update(CONFIGMAP_RESOURCE, 'default', 'c', { ...cm, immutable: false } as KubeObject), (e) => /immutable: Forbidden/.test(err(e).message));
    // Labels may still change.
    await r.update(CONFIGMAP_RESOURCE, 'default', 'c', { ...cm, metadata: { ...cm.metadata, labels: { a: 'b' } } } as KubeObject);

    const s = (await r.create(SECRET_RESOURCE, 'default', { metadata: { name: 's' }, stringData: { k: 'v' }, immutable: true } as Secret)) as Secret;
    await assert.rejects(r.update(SECRET_RESOURCE, 'default', 's', { ...s, stringData: { k: 'w' } } as KubeObject), (e) => /data: Forbidden/.test(err(e).message));
    const m = (await r.create(SECRET_RESOURCE, 'default', { metadata: { name: 'm' }, stringData: { k: 'v' } } as Secret)) as Secret;
    await assert.rejects(r.update(SECRET_RESOURCE, 'default', 'm', { ...m, type: 'kubernetes.io/basic-auth' } as KubeObject), (e) => /type: Invalid value.*field is immutable/.test(err(e).message));
    // A mutable secret takes new data (stringData merged on update too).
    const updated = (await r.update(SECRET_RESOURCE, 'default', 'm', { ...m, stringData: { k: 'w' } } as KubeObject)) as Secret;
    assert.equal(updated.data?.k, b64('w'));
  });

  it('supports a field selector on secret type', async () => {
    const r = await fresh();
    await r.create(SECRET_RESOURCE, 'default', { metadata: { name: 'o' }, stringData: { a: '1' } } as Secret);
    await r.create(SECRET_RESOURCE, 'default', { metadata: { name: 't' }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.key': 'k' } } as Secret);
    const list = await r.list(SECRET_RESOURCE, 'default', { fieldSelector: 'type=kubernetes.io/tls' });
    assert.deepEqual(list.items.map((i) => i.metadata.name), ['t']);
  });

  it('prints DATA (and TYPE for secrets) columns', () => {
    const now = new Date('2026-01-01T00:01:00Z');
    const cm = { metadata: { name: 'c', creationTimestamp: '2026-01-01T00:00:00Z' }, data: { a: '1', b: '2' }, binaryData: { c: 'AA==' } };
    assert.deepEqual(configMapStrategy.table!.cells(cm, { now }), ['c', 3, '60s']);
    const s = { metadata: { name: 's', creationTimestamp: '2026-01-01T00:00:00Z' }, type: 'Opaque', data: { a: 'MQ==' } };
    assert.deepEqual(secretStrategy.table!.cells(s, { now }), ['s', 'Opaque', 1, '60s']);
    assert.deepEqual(secretStrategy.table!.columns.map((c) => c.name), ['Name', 'Type', 'Data', 'Age']);
  });
});
