/**
 * The controller manager running every registered controller: one list+watch (one cache) per
 * resource however many controllers read it, the serving stage first, names derived from the
 * registrations.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { KubeList, KubeObject } from '../../src/api/types.js';
import type { Client, ListQuery, ResourceRef, WatchHandle, WatchRequest } from '../../src/client/client.js';
import { LocalClient } from '../../src/client/local-client.js';
import { CONTROLLER_NAMES, disabledControllerSet } from '../../src/controller-names.js';
import { ControllerManager } from '../../src/controllers/manager.js';
import { CONTROLLER_REGISTRATIONS, type ControllerSettings } from '../../src/controllers/registrations.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BoundObjectIndex, ServiceAccountTokens } from '../../src/auth/service-account-tokens.js';

/** Forwards to the registry and counts watches per resource. */
class CountingClient extends LocalClient {
  readonly watches = new Map<string, number>();
  override watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle {
    const id = `${res.group ?? ''}/${res.plural}`;
    this.watches.set(id, (this.watches.get(id) ?? 0) + 1);
    return super.watch(res, req);
  }
  override list<T extends KubeObject>(res: ResourceRef, query?: ListQuery): Promise<KubeList<T>> {
    return super.list<T>(res, query);
  }
}

async function setup(disabled: string[] = []) {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  const client = new CountingClient(registry);
  const serviceAccountTokens = new ServiceAccountTokens({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'berth-cm-')), issuer: 'https://kubernetes.default.svc.cluster.local', objects: new BoundObjectIndex({ registry }) });
  const manager = new ControllerManager<ControllerSettings>({ client: client as Client, log: pino({ level: 'silent' }), disabled, settings: { registry, nodeMonitorPeriodMs: 60_000, serviceAccountTokens } });
  for (const reg of CONTROLLER_REGISTRATIONS) manager.register(reg);
  return { registry, client, manager };
}

describe('Controller manager', () => {
  it('runs every controller and the scheduler on one list+watch per resource: pods and nodes are cached once', async () => {
    const { client, manager } = await setup();
    await manager.start();
    try {
      assert.deepEqual(manager.enabled(), CONTROLLER_REGISTRATIONS.map((r) => r.name));
      for (const name of ['scheduler', 'node-lifecycle', 'node-ipam', 'namespace', 'crd', 'replicaset', 'daemonset']) assert.ok(manager.controller(name), name);
      const repeated = [...client.watches].filter(([, n]) => n !== 1);
      assert.deepEqual(repeated, [], 'every resource is watched exactly once');
      assert.equal(client.watches.get('/pods'), 1);
      assert.equal(client.watches.get('/nodes'), 1);
      assert.equal(client.watches.get('coordination.k8s.io/leases'), 1);
      assert.equal(client.watches.get('apiextensions.k8s.io/customresourcedefinitions'), 1);
      assert.equal(client.watches.size, manager.informers.all().size, 'one informer per watched resource');
      const scheduler = manager.controller('scheduler') as unknown as { pods: unknown; nodes: unknown };
      const lifecycle = manager.controller('node-lifecycle') as unknown as { pods: unknown; nodes: unknown };
      const ipam = manager.controller('node-ipam') as unknown as { nodes: unknown };
      const rs = manager.controller('replicaset') as unknown as { pods: unknown };
      assert.equal(scheduler.pods, rs.pods);
      assert.equal(lifecycle.pods, rs.pods);
      assert.equal(scheduler.nodes, lifecycle.nodes);
      assert.equal(ipam.nodes, lifecycle.nodes);
    } finally {
      await manager.stop();
    }
  });

  it('starts the serving stage (CRDs) first: custom resources are served before any other controller is built', async () => {
    const { registry, client, manager } = await setup();
    await registry.create(registry.lookup('apiextensions.k8s.io', 'customresourcedefinitions')!.info, undefined, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
    } as KubeObject);
    await manager.start('serving');
    try {
      assert.ok(registry.lookup('example.com', 'widgets'), 'served as soon as the serving stage started');
      assert.deepEqual([...client.watches.keys()], ['apiextensions.k8s.io/customresourcedefinitions']);
      assert.equal(manager.controller('scheduler'), undefined);
      await manager.start('background');
      assert.ok(manager.controller('scheduler'));
      assert.equal(client.watches.get('apiextensions.k8s.io/customresourcedefinitions'), 1, 'the CRD informer is shared, not listed again');
    } finally {
      await manager.stop();
    }
  });

  it('leaves disabled controllers unbuilt, but never the CRD controller', async () => {
    const { manager } = await setup(['scheduler', 'node-lifecycle', 'crd']);
    assert.ok(!manager.enabled().includes('scheduler'));
    assert.ok(!manager.enabled().includes('node-lifecycle'));
    assert.ok(manager.enabled().includes('crd'));
    await manager.start();
    try {
      assert.equal(manager.controller('scheduler'), undefined);
      assert.equal(manager.controller('node-lifecycle'), undefined);
      assert.ok(manager.controller('crd'));
      assert.ok(manager.controller('node-ipam'));
    } finally {
      await manager.stop();
    }
  });

  it('derives the --disable-controllers names from the registrations and refuses others', () => {
    assert.deepEqual([...CONTROLLER_NAMES], CONTROLLER_REGISTRATIONS.map((r) => r.name).filter((n) => n !== 'crd'));
    assert.ok(CONTROLLER_NAMES.includes('scheduler'));
    assert.deepEqual([...disabledControllerSet(['scheduler', 'event-ttl'])], ['scheduler', 'event-ttl']);
    assert.throws(() => disabledControllerSet(['schedular']), /unknown controller "schedular" \(choose from scheduler, /);
    assert.throws(() => disabledControllerSet(['crd']), /unknown controller "crd"/);
  });
});
