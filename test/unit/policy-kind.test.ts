/**
 * The policy/v1 PodDisruptionBudget kind as the registry serves it: validation errors naming the
 * field as Kubernetes does, status owned by the controller, generation, and its table columns.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import type { KubeObject, PodDisruptionBudget } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { PDB_INFO, pdbStrategy } from '../../src/registry/kinds/policy.js';
import { Registry } from '../../src/registry/registry.js';
import { toTable } from '../../src/server/tables.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { scaledIntOrPercent } from '../../src/api/disruption-budget.js';

async function registry() {
  const r = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => Date.parse('2026-01-01T00:00:00Z') } });
  for (const s of ALL_STRATEGIES) r.register(s);
  await r.create(r.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return r;
}

const pdb = (spec: Record<string, unknown>, status?: Record<string, unknown>): KubeObject =>
  ({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web' }, spec, ...(status ? { status } : {}) }) as KubeObject;

/** The causes of the Invalid error a create fails with, as "field: message". */
async function causesOf(spec: Record<string, unknown>): Promise<string[]> {
  const r = await registry();
  try {
    await r.create(PDB_INFO, 'default', pdb(spec));
  } catch (e) {
    assert.ok(e instanceof ApiError && e.code === 422, String(e));
    return (e.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
  }
  assert.fail('the create was accepted');
}

describe('PodDisruptionBudget kind', () => {
  it('is served as policy/v1 poddisruptionbudgets, short name pdb, with a status subresource', () => {
    assert.deepEqual([PDB_INFO.group, PDB_INFO.version, PDB_INFO.plural, PDB_INFO.shortNames, PDB_INFO.subresources, PDB_INFO.namespaced], ['policy', 'v1', 'poddisruptionbudgets', ['pdb'], ['status'], true]);
  });

  it('minAvailable and maxUnavailable are exclusive (error on spec, as upstream)', async () => {
    const causes = await causesOf({ minAvailable: 1, maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } });
    assert.equal(causes.length, 1);
    assert.match(causes[0]!, /^spec: Invalid value: .*: minAvailable and maxUnavailable cannot be both set$/);
  });

  it('int-or-percent values: non-negative integers, percentages up to 100%', async () => {
    assert.deepEqual(await causesOf({ minAvailable: -1 }), ['spec.minAvailable: Invalid value: -1: must be greater than or equal to 0']);
    assert.deepEqual(await causesOf({ maxUnavailable: '101%' }), ['spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%']);
    const [bad] = await causesOf({ minAvailable: 'half' });
    assert.match(bad!, /^spec\.minAvailable: Invalid value: "half": a valid percent string must be a numeric string followed by an ending '%'/);
    assert.equal((await registry().then((r) => r.create(PDB_INFO, 'default', pdb({ minAvailable: '100%' })))).metadata.name, 'web');
  });

  it('the selector and unhealthyPodEvictionPolicy are checked', async () => {
    const causes = await causesOf({ minAvailable: 1, selector: { matchExpressions: [{ key: 'app', operator: 'Near' }] }, unhealthyPodEvictionPolicy: 'Sometimes' });
    assert.ok(causes.some((c) => c.startsWith('spec.selector.matchExpressions[0].operator: ')), causes.join('\n'));
    assert.ok(causes.includes('spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "IfHealthyBudget", "AlwaysAllow"'), causes.join('\n'));
  });

  it('status belongs to the controller: zero counts on create, kept on spec writes, counts never negative', async () => {
    const r = await registry();
    const created = (await r.create(PDB_INFO, 'default', pdb({ minAvailable: 1 }, { disruptionsAllowed: 9 }))) as PodDisruptionBudget;
    assert.deepEqual(created.status, { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 });
    assert.equal(created.metadata.generation, 1);
    const specChange = (await r.modify(PDB_INFO, 'default', 'web', (o) => {
      ((o as PodDisruptionBudget).spec ??= {}).minAvailable = 2;
      (o as PodDisruptionBudget).status!.disruptionsAllowed = 5;
      return o;
    })) as PodDisruptionBudget;
    assert.equal(specChange.metadata.generation, 2);
    assert.equal(specChange.status?.disruptionsAllowed, 0, 'a spec write cannot set status');
    const statusChange = (await r.modify(PDB_INFO, 'default', 'web', (o) => {
      (o as PodDisruptionBudget).status!.disruptionsAllowed = 1;
      return o;
    }, { subresource: 'status' })) as PodDisruptionBudget;
    assert.equal(statusChange.metadata.generation, 2, 'a status write is not a spec change');
    await assert.rejects(
      r.modify(PDB_INFO, 'default', 'web', (o) => {
        (o as PodDisruptionBudget).status!.currentHealthy = -1;
        return o;
      }, { subresource: 'status' }),
      (e) => e instanceof ApiError && e.code === 422 && (e.details?.causes ?? []).some((c) => c.field === 'status.currentHealthy'),
    );
  });

  it('percentages scale up or down as intstr does', () => {
    assert.equal(scaledIntOrPercent('30%', 4, true), 2);
    assert.equal(scaledIntOrPercent('30%', 4, false), 1);
    assert.equal(scaledIntOrPercent(3, 10, true), 3);
  });

  it('table: NAME, MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED DISRUPTIONS, AGE with N/A for the unset bound', () => {
    const obj = { ...pdb({ maxUnavailable: '25%' }, { disruptionsAllowed: 1 }), metadata: { name: 'web', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' } };
    const table = toTable({ columns: pdbStrategy.table, objects: [obj], includeObject: 'None', now: new Date('2026-01-01T00:05:00Z') });
    assert.deepEqual(table.columnDefinitions.map((c) => c.name), ['Name', 'Min Available', 'Max Unavailable', 'Allowed Disruptions', 'Age']);
    assert.deepEqual(table.rows[0]?.cells, ['web', 'N/A', '25%', 1, '5m']);
  });
});
