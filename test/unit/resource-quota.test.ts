/**
 * ResourceQuota and LimitRange: the kinds (validation, defaults, columns), LimitRanger and
 * ResourceQuota admission through a real registry and admission chain (messages as Kubernetes
 * words them, concurrent creates against one limit), and the quota controller's recount.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdmissionChain } from '../../src/admission/chain.js';
import { limitRanger } from '../../src/admission/plugins/limit-ranger.js';
import { registryQuotaStore, resourceQuotaAdmission } from '../../src/admission/plugins/resource-quota.js';
import { ApiError } from '../../src/api/errors.js';
import { aggregateMessages, podLimitViolations } from '../../src/api/limit-range.js';
import { claimUsage, podConstraintError, podUsage, quotaMatches, serviceUsage, usageToList } from '../../src/api/resource-quota.js';
import type { KubeObject, LimitRange, Pod, ResourceQuota } from '../../src/api/types.js';
import { ResourceQuotaController } from '../../src/controllers/resourcequota/resourcequota-controller.js';
import { LIMITRANGE_INFO, RESOURCEQUOTA_INFO } from '../../src/registry/kinds/core-policy.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { toTable } from '../../src/server/tables.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { controllerEnv } from './controllers-env.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

async function cluster(opts: { admission?: boolean } = {}) {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => NOW } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  if (opts.admission !== false) {
    const chain = new AdmissionChain();
    for (const p of limitRanger({ limitRanges: async (ns) => (await registry.list(LIMITRANGE_INFO, ns)).items as LimitRange[] })) chain.register(p);
    chain.register(resourceQuotaAdmission({ quotas: registryQuotaStore(registry), now: () => NOW }));
    registry.setAdmission(chain);
  }
  await registry.create(registry.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const info = (plural: string) => registry.lookup('', plural)!.info;
  /** A quota as the controller would leave it: status.hard = spec.hard, used as given. */
  const quota = async (name: string, hard: Record<string, string>, used: Record<string, string>, spec: Partial<ResourceQuota['spec']> = {}) => {
    await registry.create(RESOURCEQUOTA_INFO, 'default', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name }, spec: { hard, ...spec } } as KubeObject);
    return registry.modify(RESOURCEQUOTA_INFO, 'default', name, (q) => ({ ...q, status: { hard, used } }), { subresource: 'status' });
  };
  const pod = (name: string, resources?: Record<string, Record<string, string>>, extra: Record<string, unknown> = {}) =>
    registry.create(info('pods'), 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'app', image: 'busybox', ...(resources ? { resources } : {}) }], ...extra } } as KubeObject);
  const refusal = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (e) {
      assert.ok(e instanceof ApiError, String(e));
      assert.equal(e.code, 403, e.message);
      return e.message;
    }
    assert.fail('the write was admitted');
  };
  return { registry, info, quota, pod, refusal };
}

const podOf = (spec: Partial<Pod['spec']>, extra: Partial<Pod> = {}): Pod => ({ metadata: { name: 'p' }, spec: { containers: [], ...spec }, ...extra }) as Pod;

describe('ResourceQuota and LimitRange kinds', () => {
  it('are served as core v1 resourcequotas (quota, status subresource) and limitranges (limits)', () => {
    assert.deepEqual([RESOURCEQUOTA_INFO.plural, RESOURCEQUOTA_INFO.shortNames, RESOURCEQUOTA_INFO.subresources, RESOURCEQUOTA_INFO.namespaced], ['resourcequotas', ['quota'], ['status'], true]);
    assert.deepEqual([LIMITRANGE_INFO.plural, LIMITRANGE_INFO.shortNames, LIMITRANGE_INFO.subresources], ['limitranges', ['limits'], []]);
  });

  it('refuses bad quotas with Kubernetes wording naming the field', async () => {
    const { registry } = await cluster({ admission: false });
    const causes = async (spec: unknown) => {
      try {
        await registry.create(RESOURCEQUOTA_INFO, 'default', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec } as KubeObject);
      } catch (e) {
        return ((e as ApiError).details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
      }
      return [];
    };
    assert.deepEqual(await causes({ hard: { pods: '-1' } }), ['spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0']);
    assert.deepEqual(await causes({ hard: { pods: '1500m' } }), ['spec.hard[pods]: Invalid value: "1500m": must be an integer']);
    assert.deepEqual(await causes({ hard: { widgets: '1' } }), ['spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota']);
    assert.deepEqual(await causes({ hard: { services: '1' }, scopes: ['BestEffort'] }), ['spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource']);
    assert.deepEqual(await causes({ hard: { pods: '1' }, scopes: ['BestEffort', 'NotBestEffort'] }), ['spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes']);
    assert.deepEqual(await causes({ hard: { pods: '1' }, scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In' }] } }), [
      "spec.scopeSelector.matchExpressions[0].values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
    ]);
    assert.deepEqual(await causes({ hard: { pods: '2', 'count/deployments.apps': '1', 'gold.storageclass.storage.k8s.io/requests.storage': '1Gi' } }), []);
  });

  it('starts a quota with no status whatever the create sends: the controller fills it', async () => {
    const { registry } = await cluster({ admission: false });
    const q = await registry.create(RESOURCEQUOTA_INFO, 'default', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q' }, spec: { hard: { pods: '2' } }, status: { used: { pods: '0' } } } as KubeObject);
    assert.equal((q as ResourceQuota).status, undefined);
  });

  it('defaults a Container item: default limit from max, default request from default or min', async () => {
    const { registry } = await cluster({ admission: false });
    const lr = (await registry.create(LIMITRANGE_INFO, 'default', {
      apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'l' },
      spec: { limits: [{ type: 'Container', max: { cpu: '1' }, min: { memory: '64Mi' } }, { type: 'Pod', max: { cpu: '2' } }] },
    } as KubeObject)) as LimitRange;
    assert.deepEqual(lr.spec?.limits[0], { type: 'Container', max: { cpu: '1' }, min: { memory: '64Mi' }, default: { cpu: '1' }, defaultRequest: { cpu: '1', memory: '64Mi' } });
    assert.deepEqual(lr.spec?.limits[1], { type: 'Pod', max: { cpu: '2' } });
  });

  it('refuses bad limit ranges naming the field', async () => {
    const { registry } = await cluster({ admission: false });
    const causes = async (limits: unknown) => {
      try {
        await registry.create(LIMITRANGE_INFO, 'default', { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'l' }, spec: { limits } } as KubeObject);
      } catch (e) {
        return ((e as ApiError).details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
      }
      return [];
    };
    assert.deepEqual(await causes([{ type: 'Container', min: { cpu: '2' }, max: { cpu: '1' } }]), [
      'spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1',
      // the defaults (from max) are checked too, as upstream defaults before it validates
      'spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater than default request value 1',
      'spec.limits[0].default[cpu]: Invalid value: "1": min value 2 is greater than default value 1',
    ]);
    assert.deepEqual(await causes([{ type: 'Pod', default: { cpu: '1' } }]), ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]);
    assert.deepEqual(await causes([{ type: 'Container' }, { type: 'Container' }]), ['spec.limits[1].type: Duplicate value: "Container"']);
    assert.deepEqual(await causes([{ type: 'Container', maxLimitRequestRatio: { cpu: '500m' } }]), ['spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1']);
    assert.deepEqual(await causes([]), [], 'a range without limits limits nothing');
    assert.deepEqual(await causes([{ type: 'PersistentVolumeClaim', max: { storage: '1Gi' } }]), []);
    assert.deepEqual(await causes([{ type: 'PersistentVolumeClaim', max: { cpu: '1' } }]), [
      'spec.limits[0].max[cpu]: Invalid value: "cpu": must be a standard resource type or fully qualified',
      'spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided',
    ]);
  });

  it('prints kubectl columns: quota REQUEST/LIMIT as used/hard, limit range CREATED AT', () => {
    const q = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q', creationTimestamp: '2025-12-31T23:00:00Z' }, status: { hard: { pods: '2', 'limits.cpu': '2', 'requests.cpu': '1' }, used: { pods: '1', 'limits.cpu': '500m', 'requests.cpu': '0' } } } as KubeObject;
    const table = toTable({ objects: [q], columns: RESOURCEQUOTA_INFO && ALL_STRATEGIES.find((s) => s.info.kind === 'ResourceQuota')!.table, now: new Date(NOW) } as Parameters<typeof toTable>[0]);
    assert.deepEqual(table.columnDefinitions.map((c) => c.name), ['Name', 'Age', 'Request', 'Limit']);
    assert.deepEqual(table.rows[0]!.cells, ['q', '60m', 'pods: 1/2, requests.cpu: 0/1', 'limits.cpu: 500m/2']);
    const lr = { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'l', creationTimestamp: '2025-12-31T23:00:00Z' } } as KubeObject;
    const lrTable = toTable({ objects: [lr], columns: ALL_STRATEGIES.find((s) => s.info.kind === 'LimitRange')!.table, now: new Date(NOW) } as Parameters<typeof toTable>[0]);
    assert.deepEqual(lrTable.columnDefinitions.map((c) => [c.name, c.type]), [['Name', 'string'], ['Created At', 'date']]);
    assert.deepEqual(lrTable.rows[0]!.cells, ['l', '2025-12-31T23:00:00Z']);
  });
});

describe('quota accounting (src/api/resource-quota.ts)', () => {
  it('counts a pod: requests and limits summed over containers, an init container a floor; terminal pods use nothing', () => {
    const pod = podOf({
      containers: [{ name: 'a', image: 'x', resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m' } } }, { name: 'b', image: 'x', resources: { requests: { cpu: '300m' } } }],
      initContainers: [{ name: 'i', image: 'x', resources: { requests: { cpu: '1' } } }],
    });
    assert.deepEqual(usageToList(podUsage(pod, NOW)), { 'count/pods': '1', cpu: '1', 'limits.cpu': '200m', memory: '64Mi', pods: '1', 'requests.cpu': '1', 'requests.memory': '64Mi' });
    assert.deepEqual(usageToList(podUsage({ ...pod, status: { phase: 'Succeeded' } }, NOW)), {});
    assert.deepEqual(usageToList(podUsage({ ...pod, metadata: { name: 'p', deletionTimestamp: '2025-12-31T23:59:00Z', deletionGracePeriodSeconds: 30 } }, NOW)), {}, 'past its grace period');
  });

  it('counts services by type and claims by storage class', () => {
    assert.deepEqual(usageToList(serviceUsage({ spec: { type: 'NodePort', ports: [{}, {}] } })), { 'count/services': '1', services: '1', 'services.nodeports': '2' });
    assert.deepEqual(usageToList(serviceUsage({ spec: { type: 'LoadBalancer', ports: [{}], allocateLoadBalancerNodePorts: false } })), { 'count/services': '1', services: '1', 'services.loadbalancers': '1', 'services.nodeports': '0' });
    assert.deepEqual(usageToList(claimUsage({ metadata: {}, spec: { storageClassName: 'gold', resources: { requests: { storage: '1Gi' } } } })), {
      'count/persistentvolumeclaims': '1',
      'gold.storageclass.storage.k8s.io/persistentvolumeclaims': '1',
      'gold.storageclass.storage.k8s.io/requests.storage': '1Gi',
      persistentvolumeclaims: '1',
      'requests.storage': '1Gi',
    });
  });

  it('matches scopes: BestEffort, NotBestEffort, Terminating, NotTerminating and PriorityClass selectors', () => {
    const q = (spec: ResourceQuota['spec']) => ({ metadata: { name: 'q' }, spec }) as ResourceQuota;
    const bestEffort = podOf({ containers: [{ name: 'a', image: 'x' }] });
    const burstable = podOf({ containers: [{ name: 'a', image: 'x', resources: { requests: { cpu: '1' } } }], activeDeadlineSeconds: 10, priorityClassName: 'high' });
    assert.equal(quotaMatches(q({ scopes: ['BestEffort'] }), '', 'pods', bestEffort), true);
    assert.equal(quotaMatches(q({ scopes: ['BestEffort'] }), '', 'pods', burstable), false);
    assert.equal(quotaMatches(q({ scopes: ['NotBestEffort', 'Terminating'] }), '', 'pods', burstable), true);
    assert.equal(quotaMatches(q({ scopes: ['NotTerminating'] }), '', 'pods', burstable), false);
    assert.equal(quotaMatches(q({ scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high'] }] } }), '', 'pods', burstable), true);
    assert.equal(quotaMatches(q({ scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'Exists' }] } }), '', 'pods', bestEffort), false);
    assert.equal(quotaMatches(q({ scopes: ['BestEffort'] }), '', 'services', {}), false, 'scoped quotas count pods only');
  });

  it('says which containers miss which compute resources a quota limits', () => {
    const pod = podOf({ containers: [{ name: 'b', image: 'x' }, { name: 'a', image: 'x', resources: { requests: { cpu: '1' } } }] });
    assert.equal(podConstraintError(pod, ['limits.cpu', 'pods', 'requests.cpu']), 'must specify limits.cpu for: a,b; requests.cpu for: b');
    assert.equal(podConstraintError(pod, ['pods']), undefined);
  });

  it('checks LimitRange bounds with upstream messages, aggregated as Go prints them', () => {
    const range = { metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', max: { cpu: '1', memory: '1Gi' }, maxLimitRequestRatio: { cpu: '2' } }, { type: 'Pod', min: { memory: '128Mi' } }] } } as LimitRange;
    const pod = podOf({ containers: [{ name: 'a', image: 'x', resources: { requests: { cpu: '500m', memory: '64Mi' }, limits: { cpu: '2', memory: '64Mi' } } }] });
    const v = podLimitViolations(pod, range);
    assert.deepEqual(v, [
      'maximum cpu usage per Container is 1, but limit is 2',
      'cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000',
      'minimum memory usage per Pod is 128Mi, but request is 64Mi',
    ]);
    assert.equal(aggregateMessages(v.slice(0, 1)), 'maximum cpu usage per Container is 1, but limit is 2');
    assert.match(aggregateMessages(v), /^\[maximum cpu .*, cpu max .*, minimum memory .*\]$/);
  });
});

describe('LimitRanger and ResourceQuota admission', () => {
  it('gives a container without resources the defaults, annotates the pod, and refuses one above max (403)', async () => {
    const c = await cluster();
    await c.registry.create(LIMITRANGE_INFO, 'default', { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'l' }, spec: { limits: [{ type: 'Container', default: { cpu: '500m', memory: '128Mi' }, defaultRequest: { cpu: '100m' }, max: { cpu: '1' } }] } } as KubeObject);
    const pod = (await c.pod('plain')) as Pod;
    assert.deepEqual(pod.spec.containers[0]!.resources, { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '100m', memory: '128Mi' } });
    assert.equal(pod.metadata.annotations?.['kubernetes.io/limit-ranger'], 'LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app');
    assert.equal(await c.refusal(c.pod('big', { limits: { cpu: '2' } })), 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2');
  });

  it('bounds claims by a PersistentVolumeClaim range and charges storage per class', async () => {
    const c = await cluster();
    await c.registry.create(LIMITRANGE_INFO, 'default', { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'pvc' }, spec: { limits: [{ type: 'PersistentVolumeClaim', min: { storage: '1Gi' }, max: { storage: '5Gi' } }] } } as KubeObject);
    await c.quota('storage', { 'requests.storage': '10Gi', 'gold.storageclass.storage.k8s.io/requests.storage': '3Gi' }, { 'requests.storage': '0', 'gold.storageclass.storage.k8s.io/requests.storage': '0' });
    const claim = (name: string, size: string, storageClassName?: string) =>
      c.registry.create(c.info('persistentvolumeclaims'), 'default', { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, ...(storageClassName ? { storageClassName } : {}) } } as KubeObject);
    assert.equal(await c.refusal(claim('small', '500Mi')), 'persistentvolumeclaims "small" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi');
    assert.equal(await c.refusal(claim('huge', '6Gi')), 'persistentvolumeclaims "huge" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 6Gi');
    await claim('g1', '2Gi', 'gold');
    assert.equal(
      await c.refusal(claim('g2', '2Gi', 'gold')),
      'persistentvolumeclaims "g2" is forbidden: exceeded quota: storage, requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, used: gold.storageclass.storage.k8s.io/requests.storage=2Gi, limited: gold.storageclass.storage.k8s.io/requests.storage=3Gi',
    );
    await claim('plain', '2Gi');
    const q = (await c.registry.get(RESOURCEQUOTA_INFO, 'default', 'storage')) as ResourceQuota;
    assert.deepEqual(q.status?.used, { 'gold.storageclass.storage.k8s.io/requests.storage': '2Gi', 'requests.storage': '4Gi' });
  });

  it('charges node ports on create and on an update that turns a Service into a NodePort', async () => {
    const c = await cluster();
    await c.quota('ports', { 'services.nodeports': '1' }, { 'services.nodeports': '0' });
    const svc = (name: string, type: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { type, ports: [{ port: 80 }], selector: { a: 'b' } } }) as KubeObject;
    await c.registry.create(c.info('services'), 'default', svc('np', 'NodePort'));
    await c.registry.create(c.info('services'), 'default', svc('cip', 'ClusterIP'));
    const message = await c.refusal(c.registry.modify(c.info('services'), 'default', 'cip', (s) => ({ ...s, spec: { ...(s as unknown as { spec: object }).spec, type: 'NodePort' } }) as KubeObject));
    assert.equal(message, 'services "cip" is forbidden: exceeded quota: ports, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1');
  });

  it('refuses the pod past `pods: 2` with the exceeded quota message and charges status.used as it admits', async () => {
    const c = await cluster();
    await c.quota('pods', { pods: '2' }, { pods: '0' });
    await c.pod('a');
    await c.pod('b');
    const q = (await c.registry.get(RESOURCEQUOTA_INFO, 'default', 'pods')) as ResourceQuota;
    assert.deepEqual(q.status?.used, { pods: '2' });
    assert.equal(await c.refusal(c.pod('c')), 'pods "c" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2');
  });

  it('lets only one of two concurrent creates take the last slot', async () => {
    const c = await cluster();
    await c.quota('pods', { pods: '1' }, { pods: '0' });
    const results = await Promise.allSettled([c.pod('x'), c.pod('y'), c.pod('z')]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status)));
    // The losers read the quota before the winner's charge, met a conflict writing theirs, read again and were refused.
    for (const r of results) if (r.status === 'rejected') assert.match((r.reason as ApiError).message, /is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1$/);
    const q = (await c.registry.get(RESOURCEQUOTA_INFO, 'default', 'pods')) as ResourceQuota;
    assert.deepEqual(q.status?.used, { pods: '1' });
  });

  it('reads quotas from the list cache first, and the latest state after a conflict: a stale read is refused by the status write', async () => {
    const c = await cluster({ admission: false });
    await c.quota('pods', { pods: '1' }, { pods: '0' });
    const store = registryQuotaStore(c.registry);
    const stale = await store.list('default');
    const reads: boolean[] = [];
    const chain = new AdmissionChain();
    // The cached read is as stale as an etcd feed can be: from before the quota was charged.
    chain.register(resourceQuotaAdmission({ quotas: { ...store, list: async (ns, o) => (reads.push(o?.latest ?? false), o?.latest ? store.list(ns, o) : stale) }, now: () => NOW }));
    c.registry.setAdmission(chain);
    await c.pod('first');
    assert.deepEqual(reads, [false]);
    const refused = await c.refusal(c.pod('second'));
    assert.match(refused, /exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1$/);
    assert.deepEqual(reads, [false, false, true], 'the stale read met a Conflict; the next read was of the latest state');
  });

  it('makes pods state what a compute quota limits, counts requests, and refuses before the controller counted', async () => {
    const c = await cluster();
    await c.quota('compute', { 'requests.cpu': '1', 'limits.memory': '1Gi' }, { 'requests.cpu': '0', 'limits.memory': '0' });
    assert.equal(await c.refusal(c.pod('bare')), 'pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app');
    await c.pod('ok', { requests: { cpu: '600m' }, limits: { memory: '512Mi' } });
    const charged = (await c.registry.get(RESOURCEQUOTA_INFO, 'default', 'compute')) as ResourceQuota;
    assert.deepEqual(charged.status?.used, { 'limits.memory': '512Mi', 'requests.cpu': '600m' }, 'a zero takes the format of what is added, as Go does');
    assert.equal(
      await c.refusal(c.pod('more', { requests: { cpu: '600m' }, limits: { memory: '512Mi' } })),
      'pods "more" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1',
    );
    await c.registry.create(RESOURCEQUOTA_INFO, 'default', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'fresh' }, spec: { hard: { configmaps: '1' } } } as KubeObject);
    await c.registry.modify(RESOURCEQUOTA_INFO, 'default', 'fresh', (q) => ({ ...q, status: { hard: { configmaps: '1' } } }), { subresource: 'status' });
    assert.equal(await c.refusal(c.registry.create(c.info('configmaps'), 'default', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' } } as KubeObject)), 'configmaps "cm" is forbidden: status unknown for quota: fresh, resources: configmaps');
  });

  it('counts generic count/<resource>.<group> objects and scoped quotas only for the pods they select', async () => {
    const c = await cluster();
    await c.quota('deploys', { 'count/deployments.apps': '0' }, { 'count/deployments.apps': '0' });
    const deployments = c.registry.lookup('apps', 'deployments')!.info;
    const message = await c.refusal(c.registry.create(deployments, 'default', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } } } as KubeObject));
    assert.equal(message, 'deployments.apps "web" is forbidden: exceeded quota: deploys, requested: count/deployments.apps=1, used: count/deployments.apps=0, limited: count/deployments.apps=0');
    await c.quota('besteffort', { pods: '0' }, { pods: '0' }, { scopes: ['BestEffort'] });
    await c.refusal(c.pod('be'));
    await c.pod('burstable', { requests: { cpu: '10m' } });
  });
});

describe('quota controller', () => {
  it('fills status.hard and status.used from what the namespace holds, leaving out terminal pods and pods other scopes count', async () => {
    const env = await controllerEnv();
    const rqc = new ResourceQuotaController({ client: env.client, informers: env.informers, log: env.log, resources: () => env.registry.resources(), now: env.now });
    await env.create('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '250m' } } }] } } as KubeObject);
    await env.create('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'b', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }] } } as KubeObject);
    await env.create('', 'pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'done', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }] } } as KubeObject);
    await env.setPodState('done', { phase: 'Succeeded' });
    await env.create('', 'configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default' } } as KubeObject);
    await env.create('', 'resourcequotas', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q', namespace: 'default' }, spec: { hard: { pods: '5', 'requests.cpu': '2', configmaps: '3', 'count/deployments.apps': '1' } } } as KubeObject);
    await env.create('', 'resourcequotas', { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'be', namespace: 'default' }, spec: { hard: { pods: '5' }, scopes: ['BestEffort'] } } as KubeObject);
    await rqc.reconcile('default/q');
    await rqc.reconcile('default/be');
    assert.deepEqual(env.get<ResourceQuota>('', 'resourcequotas', 'q').status, {
      hard: { configmaps: '3', 'count/deployments.apps': '1', pods: '5', 'requests.cpu': '2' },
      used: { configmaps: '1', 'count/deployments.apps': '0', pods: '2', 'requests.cpu': '250m' },
    });
    assert.deepEqual(env.get<ResourceQuota>('', 'resourcequotas', 'be').status?.used, { pods: '1' });
    env.clearActions();
    await rqc.reconcile('default/q');
    assert.deepEqual(env.writes(), [], 'nothing changed, nothing written');
    await env.registry.delete(env.info('', 'pods'), 'default', 'a');
    await rqc.reconcile('default/q');
    assert.deepEqual(env.get<ResourceQuota>('', 'resourcequotas', 'q').status?.used, { configmaps: '1', 'count/deployments.apps': '0', pods: '1', 'requests.cpu': '0' });
  });

  it('queues every quota of a namespace when a pod there is deleted or finishes, not on status-only quota writes', async () => {
    const env = await controllerEnv();
    const rqc = new ResourceQuotaController({ client: env.client, informers: env.informers, log: env.log, resources: () => env.registry.resources(), now: env.now });
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q', namespace: 'default', uid: 'u' }, spec: { hard: { pods: '1' } }, status: { hard: { pods: '1' }, used: { pods: '0' } } } as ResourceQuota;
    rqc.quotas.indexer.upsert(quota);
    const fire = <T extends KubeObject>(plural: string, event: 'onUpdate' | 'onDelete', obj: T, old?: T) => {
      const handlers = (env.informers.informerFor<T>({ plural }) as unknown as { handlers: Array<{ onUpdate?: (o: T, old: T) => void; onDelete?: (o: T) => void }> }).handlers;
      for (const h of handlers) event === 'onUpdate' ? h.onUpdate?.(obj, old!) : h.onDelete?.(obj);
    };
    const drain = () => {
      const n = rqc.controller.queue.len();
      rqc.controller.queue.shutdown();
      return n;
    };
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [] }, status: { phase: 'Running' } } as unknown as Pod;
    fire('resourcequotas', 'onUpdate', { ...quota, status: { hard: { pods: '1' }, used: { pods: '1' } } }, quota);
    assert.equal(rqc.controller.queue.len(), 0, 'a charge by admission is no reason to recount');
    fire('pods', 'onUpdate', { ...pod, status: { phase: 'Running' } }, pod);
    assert.equal(rqc.controller.queue.len(), 0, 'a running pod still counts');
    fire('pods', 'onUpdate', { ...pod, status: { phase: 'Failed' } }, pod);
    assert.equal(rqc.controller.queue.len(), 1);
    fire('configmaps', 'onDelete', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'other' } } as KubeObject);
    assert.equal(drain(), 1, 'other namespaces have no quota here');
  });
});
