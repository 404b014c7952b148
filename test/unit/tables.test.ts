import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectFields, type ContainerStatus, type CustomResourceDefinition, type Event, type KubeObject, type Namespace, type Node, type Pod } from '../../src/api/types.js';

/** A custom resource as its CRD's schema leaves it: spec and status untyped. */
type CustomResource = KubeObject & { spec?: unknown; status?: unknown };
import { CRDController } from '../../src/controllers/crd/crd-controller.js';
import { customResourceStrategy } from '../../src/registry/kinds/apiextensions.js';
import { eventStrategy, namespaceStrategy, nodeRoles, nodeStatusText, nodeStrategy, podStrategy, summarizePod } from '../../src/registry/kinds/core.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import type { KindStrategy } from '../../src/registry/strategy.js';
import { ageSince, humanDuration, printerColumnsProvider } from '../../src/registry/table-columns.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { renderTable, tableRowRenderer } from '../../src/server/kubectl-routes.js';
import { columnProviderFor, toTable, wantsTable } from '../../src/server/tables.js';
import { controllerEnv } from './controllers-env.js';
import type { ResourceInfo } from '../../src/api/identities.js';

const NOW = new Date('2025-06-01T12:00:00Z');
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString();
const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const POD_COLUMNS = podStrategy.table;
const NODE_COLUMNS = nodeStrategy.table;

function pod(overrides: { spec?: Partial<Pod['spec']>; status?: Pod['status']; deletionTimestamp?: string } = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      namespace: 'default',
      creationTimestamp: ago(5 * MIN),
      ...(overrides.deletionTimestamp ? { deletionTimestamp: overrides.deletionTimestamp } : {}),
    },
    spec: { containers: [{ name: 'app', image: 'nginx' }], ...overrides.spec },
    ...(overrides.status ? { status: overrides.status } : {}),
  };
}

function cs(name: string, state: ContainerStatus['state'], extra: Partial<ContainerStatus> = {}): ContainerStatus {
  return { name, state, lastState: {}, ready: false, restartCount: 0, image: 'nginx', imageID: '', ...extra };
}

describe('humanDuration (kubectl AGE)', () => {
  const cases: Array<[number, string]> = [
    [0, '0s'],
    [-1500, '0s'],
    [-3 * SEC, '<invalid>'],
    [5 * SEC, '5s'],
    [119 * SEC, '119s'],
    [2 * MIN, '2m'],
    [200 * SEC, '3m20s'],
    [9 * MIN + 59 * SEC, '9m59s'],
    [12 * MIN, '12m'],
    [179 * MIN, '179m'],
    [3 * HOUR, '3h'],
    [5 * HOUR, '5h'],
    [5 * HOUR + 30 * MIN, '5h30m'],
    [10 * HOUR, '10h'],
    [47 * HOUR, '47h'],
    [51 * HOUR, '2d3h'],
    [3 * DAY, '3d'],
    [12 * DAY, '12d'],
    [400 * DAY, '400d'],
    [2 * 365 * DAY + 30 * DAY, '2y30d'],
    [3 * 365 * DAY, '3y'],
    [9 * 365 * DAY, '9y'],
  ];
  for (const [ms, text] of cases) {
    it(`${ms}ms -> ${text}`, () => assert.equal(humanDuration(ms), text));
  }
  it('ageSince handles missing and bad timestamps', () => {
    assert.equal(ageSince(undefined, NOW), '<unknown>');
    assert.equal(ageSince('not a time', NOW), '<unknown>');
    assert.equal(ageSince(ago(90 * SEC), NOW), '90s');
  });
});

describe('wantsTable', () => {
  it("recognizes kubectl get's Accept header", () => {
    assert.equal(
      wantsTable('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'),
      'v1',
    );
    assert.equal(wantsTable('application/json;as=Table;v=v1beta1;g=meta.k8s.io'), 'v1beta1');
  });
  it('plain JSON (or nothing) is not a table request', () => {
    assert.equal(wantsTable('application/json'), undefined);
    assert.equal(wantsTable('application/json, */*'), undefined);
    assert.equal(wantsTable(undefined), undefined);
    assert.equal(wantsTable('application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io'), undefined);
  });
});

describe('summarizePod (STATUS / READY / RESTARTS)', () => {
  const status = (p: Pod) => summarizePod(p, NOW).status;

  it('phase when nothing else is known', () => {
    assert.equal(status(pod({ status: { phase: 'Pending' } })), 'Pending');
    assert.equal(summarizePod(pod({ status: { phase: 'Pending' } }), NOW).ready, '0/1');
    assert.equal(status(pod()), '');
  });
  it('status.reason overrides the phase', () => {
    assert.equal(status(pod({ status: { phase: 'Failed', reason: 'Evicted' } })), 'Evicted');
  });
  it('Running and ready', () => {
    const p = pod({ status: { phase: 'Running', containerStatuses: [cs('app', { running: {} }, { ready: true })] } });
    assert.deepEqual(summarizePod(p, NOW), { ready: '1/1', status: 'Running', restarts: '0' });
  });
  it('waiting reasons: ContainerCreating, ErrImagePull, ImagePullBackOff', () => {
    for (const reason of ['ContainerCreating', 'ErrImagePull', 'ImagePullBackOff']) {
      assert.equal(status(pod({ status: { phase: 'Pending', containerStatuses: [cs('app', { waiting: { reason } })] } })), reason);
    }
  });
  it('CrashLoopBackOff with restarts shown as "N (age ago)"', () => {
    const p = pod({
      status: {
        phase: 'Running',
        containerStatuses: [
          cs('app', { waiting: { reason: 'CrashLoopBackOff' } }, {
            restartCount: 3,
            lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: ago(5 * MIN) } },
          }),
        ],
      },
    });
    assert.deepEqual(summarizePod(p, NOW), { ready: '0/1', status: 'CrashLoopBackOff', restarts: '3 (5m ago)' });
  });
  it('restarts without a known termination time print as a bare number', () => {
    const p = pod({ status: { phase: 'Running', containerStatuses: [cs('app', { running: {} }, { ready: true, restartCount: 2 })] } });
    assert.equal(summarizePod(p, NOW).restarts, '2');
  });
  it('terminated: Completed, Error, ExitCode:N, Signal:N', () => {
    const term = (t: { exitCode: number; reason?: string; signal?: number }) =>
      status(pod({ status: { phase: 'Succeeded', containerStatuses: [cs('app', { terminated: t })] } }));
    assert.equal(term({ exitCode: 0, reason: 'Completed' }), 'Completed');
    assert.equal(term({ exitCode: 1, reason: 'Error' }), 'Error');
    assert.equal(term({ exitCode: 2 }), 'ExitCode:2');
    assert.equal(term({ exitCode: 137, signal: 9 }), 'Signal:9');
  });
  it('the first container wins when several report reasons', () => {
    const p = pod({
      spec: { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'y' }] },
      status: {
        phase: 'Pending',
        containerStatuses: [cs('a', { waiting: { reason: 'ErrImagePull' } }), cs('b', { waiting: { reason: 'ContainerCreating' } })],
      },
    });
    assert.deepEqual(summarizePod(p, NOW), { ready: '0/2', status: 'ErrImagePull', restarts: '0' });
  });
  it('Completed turns back into Running/NotReady while another container still runs', () => {
    const base = {
      spec: { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'y' }] },
    };
    const statuses = [cs('a', { terminated: { exitCode: 0, reason: 'Completed' } }), cs('b', { running: {} }, { ready: true })];
    const ready = pod({
      ...base,
      status: { phase: 'Running', containerStatuses: statuses, conditions: [{ type: 'Ready', status: 'True' }] },
    });
    assert.deepEqual(summarizePod(ready, NOW), { ready: '1/2', status: 'Running', restarts: '0' });
    const notReady = pod({ ...base, status: { phase: 'Running', containerStatuses: statuses } });
    assert.equal(summarizePod(notReady, NOW).status, 'NotReady');
  });
  it('init containers: Init:N/M, Init:<reason>, Init:ExitCode:N, Init:Signal:N', () => {
    const spec = { initContainers: [{ name: 'i1', image: 'x' }, { name: 'i2', image: 'x' }] };
    const init = (statuses: ContainerStatus[]) => status(pod({ spec, status: { phase: 'Pending', initContainerStatuses: statuses } }));
    assert.equal(init([cs('i1', { running: {} }), cs('i2', { waiting: { reason: 'PodInitializing' } })]), 'Init:0/2');
    assert.equal(init([cs('i1', { terminated: { exitCode: 0, reason: 'Completed' } }), cs('i2', { running: {} })]), 'Init:1/2');
    assert.equal(init([cs('i1', { waiting: { reason: 'CrashLoopBackOff' } })]), 'Init:CrashLoopBackOff');
    assert.equal(init([cs('i1', { terminated: { exitCode: 1, reason: 'Error' } })]), 'Init:Error');
    assert.equal(init([cs('i1', { terminated: { exitCode: 3 } })]), 'Init:ExitCode:3');
    assert.equal(init([cs('i1', { terminated: { exitCode: 143, signal: 15 } })]), 'Init:Signal:15');
  });
  it('init restarts count until the pod is initialized', () => {
    const p = pod({
      spec: { initContainers: [{ name: 'i1', image: 'x' }] },
      status: {
        phase: 'Pending',
        initContainerStatuses: [
          cs('i1', { waiting: { reason: 'CrashLoopBackOff' } }, {
            restartCount: 4,
            lastState: { terminated: { exitCode: 1, finishedAt: ago(30 * SEC) } },
          }),
        ],
      },
    });
    assert.deepEqual(summarizePod(p, NOW), { ready: '0/1', status: 'Init:CrashLoopBackOff', restarts: '4 (30s ago)' });
  });
  it('restartable init containers (sidecars) count toward READY', () => {
    const p = pod({
      spec: { initContainers: [{ name: 'side', image: 'x', restartPolicy: 'Always' }] },
      status: {
        phase: 'Running',
        conditions: [{ type: 'Initialized', status: 'True' }],
        initContainerStatuses: [cs('side', { running: {} }, { started: true, ready: true })],
        containerStatuses: [cs('app', { running: {} }, { ready: true })],
      },
    });
    assert.deepEqual(summarizePod(p, NOW), { ready: '2/2', status: 'Running', restarts: '0' });
  });
  it('Terminating when a deletionTimestamp is set, unless terminal; Unknown for NodeLost', () => {
    const running = { phase: 'Running' as const, containerStatuses: [cs('app', { running: {} }, { ready: true })] };
    assert.equal(status(pod({ status: running, deletionTimestamp: ago(SEC) })), 'Terminating');
    assert.equal(status(pod({ status: { phase: 'Succeeded', containerStatuses: [cs('app', { terminated: { exitCode: 0, reason: 'Completed' } })] }, deletionTimestamp: ago(SEC) })), 'Completed');
    assert.equal(status(pod({ status: { ...running, reason: 'NodeLost' }, deletionTimestamp: ago(SEC) })), 'Unknown');
  });
  it('SchedulingGated from the PodScheduled condition', () => {
    assert.equal(
      status(pod({ status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] } })),
      'SchedulingGated',
    );
  });
});

describe('toTable', () => {
  const running = pod({
    spec: { nodeName: 'n1' },
    status: {
      phase: 'Running',
      podIP: '10.1.0.5',
      podIPs: [{ ip: '10.1.0.5' }],
      containerStatuses: [cs('app', { running: {} }, { ready: true })],
    },
  });

  it('pods: kubectl columns, wide columns at priority 1, cells in order', () => {
    const table = toTable({ columns: POD_COLUMNS, objects: [running], includeObject: 'None', now: NOW, resourceVersion: '42' });
    assert.equal(table.kind, 'Table');
    assert.equal(table.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(table.metadata, { resourceVersion: '42' });
    assert.deepEqual(
      table.columnDefinitions.map((c) => [c.name, c.priority]),
      [
        ['Name', 0],
        ['Ready', 0],
        ['Status', 0],
        ['Restarts', 0],
        ['Age', 0],
        ['IP', 1],
        ['Node', 1],
        ['Nominated Node', 1],
        ['Readiness Gates', 1],
      ],
    );
    assert.equal(table.columnDefinitions[0]?.format, 'name');
    for (const c of table.columnDefinitions) {
      assert.equal(typeof c.type, 'string');
      assert.equal(typeof c.description, 'string');
    }
    assert.deepEqual(table.rows[0]?.cells, ['web', '1/1', 'Running', '0', '5m', '10.1.0.5', 'n1', '<none>', '<none>']);
    assert.equal(table.rows[0]?.object, undefined);
  });

  it('includeObject=Metadata embeds PartialObjectMetadata; Object embeds the object', () => {
    const meta = toTable({ columns: POD_COLUMNS, objects: [running], includeObject: 'Metadata', now: NOW });
    assert.deepEqual(meta.rows[0]?.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: running.metadata });
    const full = toTable({ columns: POD_COLUMNS, objects: [running], includeObject: 'Object', now: NOW });
    assert.equal(full.rows[0]?.object, running);
  });

  it('stamps v1beta1 when that is what the client asked for', () => {
    const t = toTable({ columns: POD_COLUMNS, objects: [], includeObject: 'None', now: NOW, tableVersion: 'v1beta1' });
    assert.equal(t.apiVersion, 'meta.k8s.io/v1beta1');
  });

  it('carries continue and remainingItemCount', () => {
    const t = toTable({ columns: POD_COLUMNS, objects: [], includeObject: 'None', now: NOW, resourceVersion: '7', continue: 'abc', remainingItemCount: 3 });
    assert.deepEqual(t.metadata, { resourceVersion: '7', continue: 'abc', remainingItemCount: 3 });
    assert.deepEqual(t.rows, []);
  });

  it('finished pods get the Completed row condition', () => {
    const done = pod({ status: { phase: 'Succeeded', containerStatuses: [cs('app', { terminated: { exitCode: 0, reason: 'Completed' } })] } });
    const failed = pod({ status: { phase: 'Failed' } });
    const t = toTable({ columns: POD_COLUMNS, objects: [done, failed, running], includeObject: 'None', now: NOW });
    assert.deepEqual(t.rows[0]?.conditions, [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod has completed successfully.' }]);
    assert.equal(t.rows[1]?.conditions?.[0]?.reason, 'Failed');
    assert.equal(t.rows[2]?.conditions, undefined);
  });

  it('readiness gates count true conditions', () => {
    const gated = pod({
      spec: { readinessGates: [{ conditionType: 'a' }, { conditionType: 'b' }] },
      status: { phase: 'Running', conditions: [{ type: 'a', status: 'True' }, { type: 'b', status: 'False' }] },
    });
    const t = toTable({ columns: POD_COLUMNS, objects: [gated], includeObject: 'None', now: NOW });
    assert.equal(t.rows[0]?.cells[8], '1/2');
  });

  it('nodes: status, roles, version and wide columns', () => {
    const node: Node = {
      metadata: {
        name: 'n1',
        creationTimestamp: ago(51 * HOUR),
        labels: { 'node-role.kubernetes.io/control-plane': '', 'node-role.kubernetes.io/worker': '', 'kubernetes.io/role': 'edge' },
      },
      spec: { unschedulable: true },
      status: {
        conditions: [{ type: 'Ready', status: 'True' }],
        addresses: [
          { type: 'Hostname', address: 'n1' },
          { type: 'InternalIP', address: '10.0.0.5' },
        ],
        nodeInfo: {
          machineID: '',
          systemUUID: '',
          bootID: '',
          kernelVersion: '6.1.0',
          osImage: 'Debian GNU/Linux 12',
          containerRuntimeVersion: 'docker://27.0.1',
          kubeletVersion: 'v1.32.0-berth',
          kubeProxyVersion: '',
          operatingSystem: 'linux',
          architecture: 'amd64',
        },
      },
    };
    const t = toTable({ columns: NODE_COLUMNS, objects: [node], includeObject: 'None', now: NOW });
    assert.deepEqual(
      t.columnDefinitions.map((c) => [c.name, c.priority]),
      [
        ['Name', 0],
        ['Status', 0],
        ['Roles', 0],
        ['Age', 0],
        ['Version', 0],
        ['Internal-IP', 1],
        ['External-IP', 1],
        ['OS-Image', 1],
        ['Kernel-Version', 1],
        ['Container-Runtime', 1],
      ],
    );
    assert.deepEqual(t.rows[0]?.cells, [
      'n1',
      'Ready,SchedulingDisabled',
      'control-plane,edge,worker',
      '2d3h',
      'v1.32.0-berth',
      '10.0.0.5',
      '<none>',
      'Debian GNU/Linux 12',
      '6.1.0',
      'docker://27.0.1',
    ]);
  });

  it('node status: Ready, NotReady, Unknown, SchedulingDisabled; roles default <none>', () => {
    const n = (conditions: Array<{ type: string; status: 'True' | 'False' | 'Unknown' }>, unschedulable = false): Node => ({
      metadata: { name: 'x' },
      spec: { unschedulable },
      status: { conditions },
    });
    assert.equal(nodeStatusText(n([{ type: 'Ready', status: 'True' }])), 'Ready');
    assert.equal(nodeStatusText(n([{ type: 'Ready', status: 'False' }])), 'NotReady');
    assert.equal(nodeStatusText(n([{ type: 'Ready', status: 'Unknown' }])), 'NotReady');
    assert.equal(nodeStatusText(n([])), 'Unknown');
    assert.equal(nodeStatusText(n([], true)), 'Unknown,SchedulingDisabled');
    assert.deepEqual(nodeRoles(n([])), []);
    const t = toTable({ columns: NODE_COLUMNS, objects: [n([])], includeObject: 'None', now: NOW });
    assert.deepEqual(t.rows[0]?.cells.slice(0, 5), ['x', 'Unknown', '<none>', '<unknown>', '']);
    assert.deepEqual(t.rows[0]?.cells.slice(5), ['<none>', '<none>', '<unknown>', '<unknown>', '<unknown>']);
  });

  it('namespaces: Name, Status, Age', () => {
    const ns: Namespace = { metadata: { name: 'default', creationTimestamp: ago(12 * DAY) }, status: { phase: 'Active' } };
    const t = toTable({ columns: namespaceStrategy.table, objects: [ns], includeObject: 'None', now: NOW });
    assert.deepEqual(t.columnDefinitions.map((c) => c.name), ['Name', 'Status', 'Age']);
    assert.deepEqual(t.rows[0]?.cells, ['default', 'Active', '12d']);
  });

  it('events: kubectl event columns', () => {
    const ev: Event = {
      metadata: { name: 'web.123', creationTimestamp: ago(3 * MIN) },
      involvedObject: { kind: 'Pod', name: 'web', fieldPath: 'spec.containers{app}' },
      reason: 'Pulled',
      message: 'Container image "nginx" already present on machine\n',
      type: 'Normal',
      source: { component: 'kubelet', host: 'n1' },
      firstTimestamp: ago(3 * MIN),
      lastTimestamp: ago(20 * SEC),
      count: 2,
    };
    const t = toTable({ columns: eventStrategy.table, objects: [ev], includeObject: 'None', now: NOW });
    assert.deepEqual(t.columnDefinitions.map((c) => c.name), [
      'Last Seen', 'Type', 'Reason', 'Object', 'Subobject', 'Source', 'Message', 'First Seen', 'Count', 'Name',
    ]);
    assert.deepEqual(t.rows[0]?.cells, [
      '20s', 'Normal', 'Pulled', 'pod/web', 'spec.containers{app}', 'kubelet, n1',
      'Container image "nginx" already present on machine', '3m', 2, 'web.123',
    ]);
  });

  it('a kind without columns gets Name and Age', () => {
    const obj: KubeObject = { metadata: { name: 'cm', creationTimestamp: ago(45 * SEC) } };
    const t = toTable({ objects: [obj], includeObject: 'None', now: NOW });
    assert.deepEqual(t.columnDefinitions.map((c) => c.name), ['Name', 'Age']);
    assert.deepEqual(t.rows[0]?.cells, ['cm', '45s']);
  });

  it('printerColumnsProvider evaluates CRD additionalPrinterColumns', () => {
    const provider = printerColumnsProvider([
      { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'First', type: 'string', jsonPath: '.spec.items[0].name', priority: 1 },
      { name: 'Names', type: 'string', jsonPath: '.spec.items[*].name' },
      { name: 'Missing', type: 'string', jsonPath: '.spec.nothing' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ]);
    const obj: CustomResource = {
      metadata: { name: 'w', creationTimestamp: ago(2 * HOUR) },
      spec: { replicas: 3, items: [{ name: 'a' }, { name: 'b' }] },
      status: { conditions: [{ type: 'Synced', status: 'False' }, { type: 'Ready', status: 'True' }] },
    };
    assert.deepEqual(provider.columns.map((c) => [c.name, c.priority]), [
      ['Name', 0], ['Replicas', 0], ['Ready', 0], ['First', 1], ['Names', 0], ['Missing', 0], ['Age', 0],
    ]);
    assert.deepEqual(provider.cells(obj, { now: NOW }), ['w', 3, 'True', 'a', 'a,b', null, '120m']);
  });
});

describe('columns live with their kind', () => {
  const fresh = () => new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });

  it('every built-in kind kubectl prints with its own columns carries them in its strategy', () => {
    const withColumns = ALL_STRATEGIES.filter((s) => s.table).map((s) => `${s.info.group}/${s.info.kind}`).sort();
    assert.deepEqual(withColumns, [
      '/ConfigMap', '/Endpoints', '/Event', '/LimitRange', '/Namespace', '/Node', '/PersistentVolume', '/PersistentVolumeClaim', '/Pod', '/PodTemplate', '/ReplicationController', '/ResourceQuota', '/Secret', '/Service', '/ServiceAccount',
      'apiregistration.k8s.io/APIService', 'apps/ControllerRevision', 'apps/DaemonSet', 'apps/Deployment', 'apps/ReplicaSet', 'apps/StatefulSet', 'autoscaling/HorizontalPodAutoscaler',
      'batch/CronJob', 'batch/Job', 'certificates.k8s.io/CertificateSigningRequest', 'coordination.k8s.io/Lease', 'discovery.k8s.io/EndpointSlice', 'networking.k8s.io/Ingress', 'networking.k8s.io/IngressClass', 'networking.k8s.io/NetworkPolicy', 'policy/PodDisruptionBudget',
      'rbac.authorization.k8s.io/ClusterRole', 'rbac.authorization.k8s.io/ClusterRoleBinding', 'rbac.authorization.k8s.io/Role', 'rbac.authorization.k8s.io/RoleBinding', 'scheduling.k8s.io/PriorityClass', 'storage.k8s.io/StorageClass',
    ]);
  });

  it('every built-in resource has columns whose cells match them, read through the registry', () => {
    const registry = fresh();
    for (const strategy of ALL_STRATEGIES) registry.register(strategy);
    for (const info of BUILTIN_RESOURCES) {
      const provider = columnProviderFor(registry, info);
      const cells = provider.cells({ metadata: { name: 'x' } }, { now: NOW });
      assert.equal(cells.length, provider.columns.length, info.kind);
    }
    assert.equal(columnProviderFor(registry, { group: '', plural: 'pods' }), podStrategy.table);
  });

  it('the registry hands out the registered strategy\'s columns per group/plural; others get Name/Age', () => {
    const registry = fresh();
    const info = (group: string): ResourceInfo => ({ group, version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true, subresources: [] }) as unknown as ResourceInfo;
    const widgets: KindStrategy = {
      info: info('example.com'),
      hasStatus: false,
      validate: () => [],
      table: {
        columns: [
          { name: 'Name', type: 'string', format: 'name', description: '', priority: 0 },
          { name: 'Size', type: 'integer', format: '', description: '', priority: 0 },
        ],
        cells: (o) => [o.metadata.name, (objectFields(o).spec as { size: number }).size],
      },
    };
    registry.register(widgets);
    registry.register({ info: info('other.io'), hasStatus: false, validate: () => [] });
    const w: CustomResource = { metadata: { name: 'w1' }, spec: { size: 3 } };
    const t = toTable({ columns: columnProviderFor(registry, widgets.info), objects: [w], includeObject: 'None', now: NOW });
    assert.deepEqual(t.rows[0]?.cells, ['w1', 3]);
    // Same kind name in another group is unaffected.
    const other = toTable({ columns: columnProviderFor(registry, info('other.io')), objects: [w], includeObject: 'None', now: NOW });
    assert.deepEqual(other.columnDefinitions.map((c) => c.name), ['Name', 'Age']);
    assert.deepEqual(columnProviderFor(registry, info('unknown.io')).columns.map((c) => c.name), ['Name', 'Age']);
  });

  const crd = (printerColumns?: Array<{ name: string; type: string; jsonPath: string }>): CustomResourceDefinition =>
    ({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            ...(printerColumns ? { additionalPrinterColumns: printerColumns } : {}),
          },
        ],
      },
    }) as CustomResourceDefinition;

  it('a custom resource strategy carries its CRD\'s additionalPrinterColumns; none means Name/Age', () => {
    const withColumns = customResourceStrategy(crd([{ name: 'Color', type: 'string', jsonPath: '.spec.color' }]));
    assert.deepEqual(withColumns.table?.columns.map((c) => c.name), ['Name', 'Color']);
    const red: CustomResource = { metadata: { name: 'g' }, spec: { color: 'red' } };
    assert.deepEqual(withColumns.table?.cells(red, { now: NOW }), ['g', 'red']);
    assert.equal(customResourceStrategy(crd()).table, undefined);
  });

  it('the CRD controller serves printer columns through the registry, and drops them when the CRD does', async () => {
    const env = await controllerEnv();
    const crdc = new CRDController({ registry: env.registry, client: env.client, informers: env.informers, log: env.log, now: env.now });
    const gadget: CustomResource = { metadata: { name: 'g1', creationTimestamp: ago(2 * MIN) }, spec: { color: 'blue' } };
    const gadgets = { group: 'example.com', plural: 'gadgets' };
    await env.create('apiextensions.k8s.io', 'customresourcedefinitions', crd([{ name: 'Color', type: 'string', jsonPath: '.spec.color' }]));
    env.syncCaches();
    await crdc.reconcile('gadgets.example.com');
    assert.deepEqual(toTable({ columns: columnProviderFor(env.registry, gadgets), objects: [gadget], includeObject: 'None', now: NOW }).rows[0]?.cells, ['g1', 'blue']);
    await env.modify<CustomResourceDefinition>('apiextensions.k8s.io', 'customresourcedefinitions', 'gadgets.example.com', (c) => void (c.spec = crd().spec));
    env.syncCaches();
    await crdc.reconcile('gadgets.example.com');
    assert.deepEqual(toTable({ columns: columnProviderFor(env.registry, gadgets), objects: [gadget], includeObject: 'None', now: NOW }).rows[0]?.cells, ['g1', '2m']);
  });
});

describe('renderTable (the HTTP layer\'s Table responses)', () => {
  const nsColumns = namespaceStrategy.table!;
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lab', resourceVersion: '7', creationTimestamp: new Date().toISOString() } } as KubeObject;

  it('stamps the Table version the client asked for: meta.k8s.io/v1beta1 to a client that only takes v1beta1', () => {
    assert.equal((renderTable(nsColumns, ns, {}) as { apiVersion: string }).apiVersion, 'meta.k8s.io/v1');
    assert.equal((renderTable(nsColumns, ns, {}, 'v1beta1') as { apiVersion: string }).apiVersion, 'meta.k8s.io/v1beta1');
    assert.equal((tableRowRenderer(nsColumns, {}, 'v1beta1')(ns) as { apiVersion: string }).apiVersion, 'meta.k8s.io/v1beta1');
  });
});
