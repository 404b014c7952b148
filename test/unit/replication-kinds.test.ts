/**
 * ReplicationController, PodTemplate and APIService kinds: defaults, validation (Status errors
 * naming the field, as kube-apiserver words them), `kubectl get` cells and the RC's Scale view,
 * through a real registry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import { decodeKubeProtobuf } from '../../src/api/protobuf/index.js';
import type { APIService, KubeObject, PodTemplate, ReplicationController } from '../../src/api/types.js';
import { APISERVICE_INFO } from '../../src/registry/kinds/apiregistration.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { PODTEMPLATE_INFO, REPLICATIONCONTROLLER_INFO } from '../../src/registry/kinds/replication.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { toScale } from '../../src/requests/scale-subresource.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { envelope, int, map, msg, str } from './protobuf-encoder.js';

const NS = BUILTIN_RESOURCES.find((r) => r.plural === 'namespaces')!;
const NOW = new Date('2026-01-01T00:10:00Z');

async function fresh() {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => Date.parse('2026-01-01T00:00:00Z') } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NS, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return registry;
}

const podSpec = (extra: Record<string, unknown> = {}) => ({ containers: [{ name: 'main', image: 'busybox:1.36', command: ['sleep', '3600'] }], ...extra });

function rc(spec: Record<string, unknown>, name = 'web'): ReplicationController {
  return { apiVersion: 'v1', kind: 'ReplicationController', metadata: { name }, spec } as ReplicationController;
}

/** The causes of a 422, as `field: message`. */
async function invalid(p: Promise<unknown>): Promise<string[]> {
  try {
    await p;
  } catch (e) {
    const err = e as ApiError;
    assert.equal(err.code, 422, err.message);
    return (err.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
  }
  assert.fail('expected the object to be rejected');
}

function cells(registry: Registry, obj: KubeObject, info: typeof REPLICATIONCONTROLLER_INFO): unknown[] {
  const table = registry.lookup(info.group, info.plural)!.table!;
  return table.cells(obj, { now: NOW });
}

describe('ReplicationController kind', () => {
  it('defaults selector and labels from the template labels, replicas to 1, and the template pod spec', async () => {
    const r = await fresh();
    const created = (await r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ template: { metadata: { labels: { app: 'web', tier: 'front' } }, spec: podSpec() } }))) as ReplicationController;
    assert.deepEqual(created.spec.selector, { app: 'web', tier: 'front' });
    assert.deepEqual(created.metadata.labels, { app: 'web', tier: 'front' });
    assert.equal(created.spec.replicas, 1);
    assert.equal(created.spec.template?.spec.restartPolicy, 'Always');
    assert.equal(created.spec.template?.spec.containers[0]?.imagePullPolicy, 'IfNotPresent');
    assert.deepEqual(created.status, { replicas: 0 });
    assert.equal(created.metadata.generation, 1);
  });

  it('keeps a selector and labels that were given', async () => {
    const r = await fresh();
    const obj = rc({ replicas: 0, selector: { app: 'web' }, template: { metadata: { labels: { app: 'web', v: '2' } }, spec: podSpec() } });
    obj.metadata.labels = { owner: 'me' };
    const created = (await r.create(REPLICATIONCONTROLLER_INFO, 'default', obj)) as ReplicationController;
    assert.deepEqual(created.spec.selector, { app: 'web' });
    assert.deepEqual(created.metadata.labels, { owner: 'me' });
    assert.equal(created.spec.replicas, 0);
  });

  it('names each invalid field as kube-apiserver does', async () => {
    const r = await fresh();
    assert.deepEqual(await invalid(r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ template: { metadata: {}, spec: podSpec() } }))), ['spec.selector: Required value']);
    assert.deepEqual(await invalid(r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ selector: { app: 'web' } }))), ['spec.template: Required value']);
    assert.deepEqual(await invalid(r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ selector: { app: 'other' }, template: { metadata: { labels: { app: 'web' } }, spec: podSpec() } }))), [
      'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`',
    ]);
    assert.deepEqual(await invalid(r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ replicas: -1, template: { metadata: { labels: { app: 'web' } }, spec: podSpec({ restartPolicy: 'Never', activeDeadlineSeconds: 5 }) } }))), [
      'spec.replicas: Invalid value: -1: must be greater than or equal to 0',
      'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
      'spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported',
    ]);
    const causes = await invalid(r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ template: { metadata: { labels: { app: 'web' } }, spec: { containers: [] } } })));
    assert.deepEqual(causes, ['spec.template.spec.containers: Required value']);
  });

  it('lets the selector change on update (a ReplicaSet would refuse)', async () => {
    const r = await fresh();
    await r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ template: { metadata: { labels: { app: 'web', v: '1' } }, spec: podSpec() } }));
    const updated = (await r.modify(REPLICATIONCONTROLLER_INFO, 'default', 'web', (cur) => {
      (cur as ReplicationController).spec.selector = { app: 'web' };
      return cur;
    })) as ReplicationController;
    assert.deepEqual(updated.spec.selector, { app: 'web' });
    assert.equal(updated.metadata.generation, 2);
  });

  it('prints DESIRED CURRENT READY AGE, and CONTAINERS IMAGES SELECTOR wide', async () => {
    const r = await fresh();
    const created = (await r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ replicas: 3, template: { metadata: { labels: { app: 'web', tier: 'front' } }, spec: podSpec() } }))) as ReplicationController;
    created.status = { replicas: 2, readyReplicas: 1 };
    const table = r.lookup('', 'replicationcontrollers')!.table!;
    assert.deepEqual(table.columns.map((c) => `${c.name}/${c.priority}`), ['Name/0', 'Desired/0', 'Current/0', 'Ready/0', 'Age/0', 'Containers/1', 'Images/1', 'Selector/1']);
    assert.deepEqual(cells(r, created, REPLICATIONCONTROLLER_INFO), ['web', 3, 2, 1, '10m', 'main', 'busybox:1.36', 'app=web,tier=front']);
  });

  it('has a Scale view whose selector is the label map in selector syntax', async () => {
    const r = await fresh();
    const created = await r.create(REPLICATIONCONTROLLER_INFO, 'default', rc({ replicas: 2, template: { metadata: { labels: { tier: 'front', app: 'web' } }, spec: podSpec() } }));
    const scale = toScale(created, r.lookup('', 'replicationcontrollers')!.scalePaths);
    assert.deepEqual(scale.spec, { replicas: 2 });
    assert.deepEqual(scale.status, { replicas: 0, selector: 'app=web,tier=front' });
  });
});

describe('protobuf bodies', () => {
  const kinds = ALL_STRATEGIES.flatMap((s) => (s.protobuf && s.info.group === '' ? [{ apiVersion: 'v1', kind: s.info.kind, messages: s.protobuf }] : []));
  const templateBytes = (no: number) => msg(no, msg(1, map(11, { app: 'web' })), msg(2, msg(2, str(1, 'main'), str(2, 'busybox'))));
  const template = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'main', image: 'busybox' }] } };

  it('decodes a ReplicationController and a PodTemplate with the messages their module declares', () => {
    const rcBody = envelope('v1', 'ReplicationController', Buffer.concat([msg(1, str(1, 'web')), msg(2, int(1, 2), map(2, { app: 'web' }), templateBytes(3))]));
    assert.deepEqual(decodeKubeProtobuf(rcBody, kinds), { apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'web' }, spec: { replicas: 2, selector: { app: 'web' }, template } });
    const ptBody = envelope('v1', 'PodTemplate', Buffer.concat([msg(1, str(1, 'tpl')), templateBytes(2)]));
    assert.deepEqual(decodeKubeProtobuf(ptBody, kinds), { apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'tpl' }, template });
  });
});

describe('PodTemplate kind', () => {
  const pt = (template: unknown): PodTemplate => ({ apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'tpl' }, template } as PodTemplate);

  it('validates its template as a pod template, at `template`', async () => {
    const r = await fresh();
    assert.deepEqual(await invalid(r.create(PODTEMPLATE_INFO, 'default', pt(undefined))), ['template.spec.containers: Required value']);
    const causes = await invalid(r.create(PODTEMPLATE_INFO, 'default', pt({ metadata: { labels: { 'bad key!': 'x' } }, spec: { containers: [{ name: 'Main', image: 'busybox' }] } })));
    assert.ok(causes.some((c) => c.startsWith('template.metadata.labels: Invalid value: "bad key!"')), causes.join('\n'));
    assert.ok(causes.some((c) => c.startsWith('template.spec.containers[0].name: Invalid value: "Main"')), causes.join('\n'));
  });

  it('defaults the pod spec, keeps any restartPolicy, and prints NAME CONTAINERS IMAGES POD LABELS', async () => {
    const r = await fresh();
    const created = (await r.create(PODTEMPLATE_INFO, 'default', pt({ metadata: { labels: { b: '2', a: '1' } }, spec: podSpec({ restartPolicy: 'Never' }) }))) as PodTemplate;
    assert.equal(created.template?.spec.restartPolicy, 'Never');
    assert.equal(created.template?.spec.dnsPolicy, 'ClusterFirst');
    const table = r.lookup('', 'podtemplates')!.table!;
    assert.deepEqual(table.columns.map((c) => c.name), ['Name', 'Containers', 'Images', 'Pod Labels']);
    assert.deepEqual(cells(r, created, PODTEMPLATE_INFO), ['tpl', 'main', 'busybox:1.36', 'a=1,b=2']);
    assert.deepEqual(cells(r, { ...created, template: { spec: podSpec() } } as PodTemplate, PODTEMPLATE_INFO), ['tpl', 'main', 'busybox:1.36', '<none>']);
  });
});

describe('APIService kind', () => {
  const svc = (name: string, spec: Record<string, unknown>): APIService => ({ apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name }, spec } as unknown as APIService);
  const remote = { service: { namespace: 'kube-system', name: 'metrics' }, group: 'metrics.example.com', version: 'v1beta1', groupPriorityMinimum: 100, versionPriority: 100 };

  it('defaults the service port to 443 and starts with an empty status', async () => {
    const r = await fresh();
    const created = (await r.create(APISERVICE_INFO, undefined, svc('v1beta1.metrics.example.com', remote))) as APIService;
    assert.equal(created.spec.service?.port, 443);
    assert.deepEqual(created.status, {});
  });

  it('rejects what kube-aggregator rejects, naming the field', async () => {
    const r = await fresh();
    assert.deepEqual(await invalid(r.create(APISERVICE_INFO, undefined, svc('v1.wrong', remote))), ['metadata.name: Invalid value: "v1.wrong": must be `spec.version+"."+spec.group`: "v1beta1.metrics.example.com"']);
    assert.deepEqual(await invalid(r.create(APISERVICE_INFO, undefined, svc('v1beta1.metrics.example.com', { ...remote, groupPriorityMinimum: 0, versionPriority: 1001, service: { name: 'm', port: 70000 } }))), [
      'spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000',
      'spec.versionPriority: Invalid value: 1001: must be positive and less than 1000',
      'spec.service.namespace: Required value',
      'spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive',
    ]);
    assert.deepEqual(await invalid(r.create(APISERVICE_INFO, undefined, svc('v2.', { version: 'v2', groupPriorityMinimum: 1, versionPriority: 1, caBundle: Buffer.from('pem').toString('base64') }))), [
      'spec.group: Required value: only v1 may have an empty group and it better be legacy kube',
      'spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle',
    ]);
  });

  it('prints NAME SERVICE AVAILABLE AGE', async () => {
    const r = await fresh();
    const local = (await r.create(APISERVICE_INFO, undefined, svc('v1.apps', { group: 'apps', version: 'v1', groupPriorityMinimum: 17800, versionPriority: 15 }))) as APIService;
    const away = (await r.create(APISERVICE_INFO, undefined, svc('v1beta1.metrics.example.com', remote))) as APIService;
    local.status = { conditions: [{ type: 'Available', status: 'True', reason: 'Local' }] };
    away.status = { conditions: [{ type: 'Available', status: 'False', reason: 'ServiceNotFound' }] };
    const table = r.lookup('apiregistration.k8s.io', 'apiservices')!.table!;
    assert.deepEqual(table.columns.map((c) => c.name), ['Name', 'Service', 'Available', 'Age']);
    assert.deepEqual(table.cells(local, { now: NOW }), ['v1.apps', 'Local', 'True', '10m']);
    assert.deepEqual(table.cells(away, { now: NOW }), ['v1beta1.metrics.example.com', 'kube-system/metrics', 'False (ServiceNotFound)', '10m']);
    assert.equal(table.cells({ ...away, status: {} } as APIService, { now: NOW })[2], 'Unknown');
  });
});
