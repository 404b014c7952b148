/**
 * The core/v1 ServiceAccount kind as the registry serves it: its REST identity with the token
 * subresource, validation naming the field, the protobuf body `kubectl create serviceaccount` sends,
 * and kubectl's NAME, SECRETS, AGE columns.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import { decodeKubeProtobuf } from '../../src/api/protobuf/index.js';
import type { KubeObject } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { SERVICEACCOUNT_RESOURCE, serviceAccountStrategy } from '../../src/registry/kinds/serviceaccounts.js';
import { Registry } from '../../src/registry/registry.js';
import { toTable } from '../../src/server/tables.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { bool, envelope, msg, str } from './protobuf-encoder.js';

async function registry() {
  const r = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => Date.parse('2026-01-01T00:00:00Z') } });
  for (const s of ALL_STRATEGIES) r.register(s);
  await r.create(r.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return r;
}

const sa = (fields: Record<string, unknown>): KubeObject => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot' }, ...fields }) as KubeObject;

describe('ServiceAccount kind', () => {
  it('is served as core/v1 serviceaccounts, short name sa, with the token subresource', () => {
    const r = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) r.register(s);
    const info = r.lookup('', 'serviceaccounts')?.info;
    assert.deepEqual([info?.kind, info?.namespaced, info?.shortNames, info?.subresources], ['ServiceAccount', true, ['sa'], ['token']]);
  });

  it('stores secrets, imagePullSecrets and automountServiceAccountToken, and rejects wrong types naming the field', async () => {
    const r = await registry();
    const created = (await r.create(SERVICEACCOUNT_RESOURCE, 'default', sa({ secrets: [{ name: 's1' }], imagePullSecrets: [{ name: 'pull' }], automountServiceAccountToken: false }))) as KubeObject & Record<string, unknown>;
    assert.deepEqual([created.secrets, created.imagePullSecrets, created.automountServiceAccountToken], [[{ name: 's1' }], [{ name: 'pull' }], false]);
    assert.ok(created.metadata.uid);
    try {
      await r.create(SERVICEACCOUNT_RESOURCE, 'default', sa({ automountServiceAccountToken: 'yes', imagePullSecrets: [{ name: 3 }] }));
      assert.fail('the create was accepted');
    } catch (e) {
      assert.ok(e instanceof ApiError && e.code === 422, String(e));
      const fields = (e.details?.causes ?? []).map((c) => c.field).sort();
      assert.deepEqual(fields, ['automountServiceAccountToken', 'imagePullSecrets[0].name']);
    }
  });

  it('decodes the protobuf body client-go sends (generated.proto field numbers)', () => {
    const raw = Buffer.concat([msg(1, str(1, 'robot'), str(3, 'default')), msg(2, str(1, 'Secret'), str(3, 's1')), msg(3, str(1, 'pull')), bool(4, false)]);
    const kinds = [{ apiVersion: 'v1', kind: 'ServiceAccount', messages: serviceAccountStrategy.protobuf! }];
    assert.deepEqual(decodeKubeProtobuf(envelope('v1', 'ServiceAccount', raw), kinds), {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'robot', namespace: 'default' },
      secrets: [{ kind: 'Secret', name: 's1' }],
      imagePullSecrets: [{ name: 'pull' }],
      automountServiceAccountToken: false,
    });
  });

  it('table: NAME, SECRETS, AGE', () => {
    const obj = { ...sa({ secrets: [{ name: 'a' }, { name: 'b' }] }), metadata: { name: 'robot', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' } };
    const table = toTable({ columns: serviceAccountStrategy.table, objects: [obj], includeObject: 'None', now: new Date('2026-01-01T00:05:00Z') });
    assert.deepEqual(table.columnDefinitions.map((c) => c.name), ['Name', 'Secrets', 'Age']);
    assert.deepEqual(table.rows[0]?.cells, ['robot', 2, '5m']);
  });
});
