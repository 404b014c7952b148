import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import {
  AGGREGATED_DISCOVERY_V2_CONTENT_TYPE,
  AGGREGATED_DISCOVERY_V2BETA1_CONTENT_TYPE,
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  compareKubeVersions,
  coreApiVersions,
  coreResourceList,
  discoveryContentType,
  groupResourceList,
  negotiateDiscoveryFormat,
  registerSubresource,
  servesGroupVersion,
  storageVersionHash,
  versionInfo,
} from '../../src/server/discovery.js';
import type { ResourceInfo } from '../../src/api/identities.js';

/** The Accept header kubectl 1.32 sends to /api and /apis (captured from a live run). */
const KUBECTL_DISCOVERY_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,' +
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

function resource(overrides: Partial<ResourceInfo> & Pick<ResourceInfo, 'group' | 'version' | 'kind' | 'plural'>): ResourceInfo {
  return {
    listKind: `${overrides.kind}List`,
    singular: overrides.kind.toLowerCase(),
    namespaced: true,
    shortNames: [],
    verbs: ALL,
    subresources: [],
    categories: [],
    ...overrides,
  };
}

const POD = resource({
  group: '',
  version: 'v1',
  kind: 'Pod',
  plural: 'pods',
  shortNames: ['po'],
  categories: ['all'],
  subresources: ['status', 'log', 'exec', 'eviction'],
});
const NODE = resource({ group: '', version: 'v1', kind: 'Node', plural: 'nodes', namespaced: false, subresources: ['status'] });
const DEPLOYMENT = resource({ group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', subresources: ['status', 'scale'] });
const WIDGET_V1 = resource({ group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', shortNames: ['wd'] });
const WIDGET_V1BETA1 = resource({ group: 'example.com', version: 'v1beta1', kind: 'Widget', plural: 'widgets' });
const MIXED = [POD, NODE, WIDGET_V1BETA1, DEPLOYMENT, WIDGET_V1];

describe('negotiateDiscoveryFormat', () => {
  it("picks aggregated v2 for kubectl 1.32's Accept header", () => {
    assert.equal(negotiateDiscoveryFormat(KUBECTL_DISCOVERY_ACCEPT), 'v2');
  });
  it('picks v2beta1 for a client that only knows v2beta1', () => {
    assert.equal(
      negotiateDiscoveryFormat('application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json'),
      'v2beta1',
    );
  });
  it('answers legacy for plain JSON, */*, or no header', () => {
    assert.equal(negotiateDiscoveryFormat('application/json'), 'legacy');
    assert.equal(negotiateDiscoveryFormat('application/json, */*'), 'legacy');
    assert.equal(negotiateDiscoveryFormat(undefined), 'legacy');
    assert.equal(negotiateDiscoveryFormat(''), 'legacy');
  });
  it('skips protobuf ranges and honors q=0', () => {
    assert.equal(
      negotiateDiscoveryFormat(
        'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,' + KUBECTL_DISCOVERY_ACCEPT,
      ),
      'v2',
    );
    assert.equal(
      negotiateDiscoveryFormat('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0,application/json'),
      'legacy',
    );
  });
  it('maps formats to the Content-Type client-go checks (g, v and as parameters)', () => {
    assert.equal(discoveryContentType('v2'), 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    assert.equal(discoveryContentType('v2'), AGGREGATED_DISCOVERY_V2_CONTENT_TYPE);
    assert.equal(discoveryContentType('v2beta1'), AGGREGATED_DISCOVERY_V2BETA1_CONTENT_TYPE);
    assert.equal(discoveryContentType('legacy'), 'application/json');
  });
});

describe('versionInfo', () => {
  it('presents Kubernetes 1.32 with every version.Info field as a string', () => {
    const v = versionInfo({ buildDate: '2025-02-03T04:05:06Z', platform: 'linux/amd64', runtimeVersion: 'node20' });
    assert.deepEqual(v, {
      major: '1',
      minor: '32',
      gitVersion: 'v1.32.0-berth',
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2025-02-03T04:05:06Z',
      goVersion: 'node20',
      compiler: 'gc',
      platform: 'linux/amd64',
    });
  });
  it('defaults platform to os/arch in Go naming', () => {
    assert.match(versionInfo().platform, /^[a-z0-9]+\/[a-z0-9]+$/);
    assert.notEqual(versionInfo().platform.split('/')[1], 'x64');
  });
});

describe('legacy discovery', () => {
  it('/api lists v1 and the server address', () => {
    assert.deepEqual(coreApiVersions('10.0.0.1:6443'), {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '10.0.0.1:6443' }],
    });
  });

  it('/api/v1 lists core resources with names, scope, kinds, verbs, short names and categories', () => {
    const list = coreResourceList(MIXED);
    assert.equal(list.kind, 'APIResourceList');
    assert.equal(list.groupVersion, 'v1');
    const pods = list.resources.find((r) => r.name === 'pods');
    assert.deepEqual(pods, {
      name: 'pods',
      singularName: 'pod',
      namespaced: true,
      kind: 'Pod',
      verbs: ALL,
      shortNames: ['po'],
      categories: ['all'],
      storageVersionHash: 'xPOwRZ+Yhw8=',
    });
    const nodes = list.resources.find((r) => r.name === 'nodes');
    assert.equal(nodes?.namespaced, false);
    assert.equal(nodes?.shortNames, undefined, 'empty shortNames are omitted');
    assert.equal(list.resources.some((r) => r.name === 'deployments'), false);
  });

  it('lists subresources as <plural>/<sub> entries with their own verbs and kinds', () => {
    const list = coreResourceList(MIXED);
    assert.deepEqual(
      list.resources.find((r) => r.name === 'pods/status'),
      { name: 'pods/status', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'patch', 'update'] },
    );
    assert.deepEqual(list.resources.find((r) => r.name === 'pods/log')?.verbs, ['get']);
    assert.equal(list.resources.find((r) => r.name === 'pods/exec')?.kind, 'PodExecOptions');
    const eviction = list.resources.find((r) => r.name === 'pods/eviction');
    assert.equal(eviction?.group, 'policy');
    assert.equal(eviction?.version, 'v1');
    assert.equal(eviction?.kind, 'Eviction');
  });

  it('storageVersionHash matches the apiserver for built-ins', () => {
    assert.equal(storageVersionHash({ group: '', version: 'v1', kind: 'Pod' }), 'xPOwRZ+Yhw8=');
    assert.equal(storageVersionHash({ group: '', version: 'v1', kind: 'Node' }), 'XwShjMxG9Fs=');
  });

  it('/apis lists non-core groups with versions in priority order', () => {
    const groups = apiGroupList(MIXED);
    assert.equal(groups.kind, 'APIGroupList');
    assert.deepEqual(
      groups.groups.map((g) => g.name),
      // policy and autoscaling: the kinds of pods/eviction and deployments/scale, listed as the apiserver lists them
      ['example.com', 'apps', 'policy', 'autoscaling'],
    );
    const example = groups.groups[0];
    assert.deepEqual(example?.versions, [
      { groupVersion: 'example.com/v1', version: 'v1' },
      { groupVersion: 'example.com/v1beta1', version: 'v1beta1' },
    ]);
    assert.deepEqual(example?.preferredVersion, { groupVersion: 'example.com/v1', version: 'v1' });
    assert.deepEqual(apiGroupList([]).groups, []);
  });

  it('/apis lists policy/v1 because pods/eviction takes a policy/v1 Eviction (kubectl 1.20 drain evicts only then)', () => {
    const core = BUILTIN_RESOURCES.filter((r) => r.group === '');
    const policy = apiGroupList(core).groups.find((g) => g.name === 'policy');
    assert.deepEqual(policy?.preferredVersion, { groupVersion: 'policy/v1', version: 'v1' });
    assert.equal(apiGroup('policy', core)?.name, 'policy');
    assert.equal(servesGroupVersion('policy', 'v1', core), true);
    assert.deepEqual(groupResourceList('policy', 'v1', core).resources, []);
    const aggregated = aggregatedDiscovery(core, 'apis').items.find((g) => g.metadata.name === 'policy');
    assert.deepEqual(aggregated?.versions.map((v) => [v.version, v.resources.length]), [['v1', 0]]);
  });

  it('/apis/<group> and /apis/<group>/<version>', () => {
    assert.deepEqual(apiGroup('apps', MIXED), {
      kind: 'APIGroup',
      apiVersion: 'v1',
      name: 'apps',
      versions: [{ groupVersion: 'apps/v1', version: 'v1' }],
      preferredVersion: { groupVersion: 'apps/v1', version: 'v1' },
    });
    assert.equal(apiGroup('nope', MIXED), undefined);
    assert.equal(apiGroup('', MIXED), undefined);
    const apps = groupResourceList('apps', 'v1', MIXED);
    assert.equal(apps.groupVersion, 'apps/v1');
    // subresources in name order, as kube-apiserver lists them
    assert.deepEqual(apps.resources.map((r) => r.name), ['deployments', 'deployments/scale', 'deployments/status']);
    const scale = apps.resources.find((r) => r.name === 'deployments/scale');
    assert.deepEqual([scale?.group, scale?.version, scale?.kind], ['autoscaling', 'v1', 'Scale']);
    assert.equal(servesGroupVersion('apps', 'v1', MIXED), true);
    assert.equal(servesGroupVersion('apps', 'v2', MIXED), false);
  });

  it('sorts versions the Kubernetes way', () => {
    assert.deepEqual(
      ['v1beta1', 'foo', 'v2', 'v1', 'v1alpha1', 'v1beta2', 'v10'].sort(compareKubeVersions),
      ['v10', 'v2', 'v1', 'v1beta2', 'v1beta1', 'v1alpha1', 'foo'],
    );
  });
});

describe('aggregatedDiscovery', () => {
  it('/api holds only the core group, unnamed, with full resource detail', () => {
    const doc = aggregatedDiscovery(MIXED, 'api');
    assert.equal(doc.kind, 'APIGroupDiscoveryList');
    assert.equal(doc.apiVersion, 'apidiscovery.k8s.io/v2');
    assert.equal(doc.items.length, 1);
    const core = doc.items[0];
    assert.equal(core?.metadata.name, undefined);
    assert.equal(core?.versions.length, 1);
    const v1 = core?.versions[0];
    assert.equal(v1?.version, 'v1');
    assert.equal(v1?.freshness, 'Current');
    const pods = v1?.resources.find((r) => r.resource === 'pods');
    assert.deepEqual(pods?.responseKind, { group: '', version: 'v1', kind: 'Pod' });
    assert.equal(pods?.scope, 'Namespaced');
    assert.equal(pods?.singularResource, 'pod');
    assert.deepEqual(pods?.verbs, ALL);
    assert.deepEqual(pods?.shortNames, ['po']);
    assert.deepEqual(pods?.categories, ['all']);
    // in name order, as kube-apiserver lists them
    assert.deepEqual(pods?.subresources?.map((s) => s.subresource), ['eviction', 'exec', 'log', 'status']);
    assert.deepEqual(pods?.subresources?.[3], {
      subresource: 'status',
      responseKind: { group: '', version: 'v1', kind: 'Pod' },
      verbs: ['get', 'patch', 'update'],
    });
    assert.equal(v1?.resources.find((r) => r.resource === 'nodes')?.scope, 'Cluster');
  });

  it('/apis holds every other group, named, versions in preference order', () => {
    const doc = aggregatedDiscovery(MIXED, 'apis');
    assert.deepEqual(
      doc.items.map((g) => g.metadata.name),
      ['example.com', 'apps', 'policy', 'autoscaling'],
    );
    assert.deepEqual(
      doc.items[0]?.versions.map((v) => v.version),
      ['v1', 'v1beta1'],
    );
    const widget = doc.items[0]?.versions[0]?.resources[0];
    assert.deepEqual(widget?.responseKind, { group: 'example.com', version: 'v1', kind: 'Widget' });
    assert.equal(widget?.subresources, undefined);
  });

  it('every resource and subresource carries a responseKind (client-go drops those without)', () => {
    for (const which of ['api', 'apis'] as const) {
      for (const g of aggregatedDiscovery(MIXED, which).items) {
        for (const v of g.versions) {
          for (const r of v.resources) {
            assert.ok(r.responseKind.kind, r.resource);
            for (const s of r.subresources ?? []) assert.ok(s.responseKind.kind, `${r.resource}/${s.subresource}`);
          }
        }
      }
    }
  });

  it('stamps v2beta1 when asked', () => {
    assert.equal(aggregatedDiscovery(MIXED, 'api', { version: 'v2beta1' }).apiVersion, 'apidiscovery.k8s.io/v2beta1');
  });

  it('works from the built-in resource list', () => {
    const doc = aggregatedDiscovery(BUILTIN_RESOURCES, 'api');
    const names = doc.items[0]?.versions[0]?.resources.map((r) => r.resource) ?? [];
    for (const plural of ['pods', 'nodes', 'namespaces']) assert.ok(names.includes(plural), plural);
    assert.deepEqual(aggregatedDiscovery(BUILTIN_RESOURCES, 'apis').items.map((g) => g.metadata.name), ['policy']);
  });

  it('registerSubresource teaches new subresources', () => {
    registerSubresource('resize', { verbs: ['get', 'patch'] });
    const info = resource({ group: '', version: 'v1', kind: 'Pod', plural: 'pods', subresources: ['resize'] });
    const doc = aggregatedDiscovery([info], 'api');
    assert.deepEqual(doc.items[0]?.versions[0]?.resources[0]?.subresources?.[0]?.verbs, ['get', 'patch']);
  });
});

describe('subresources the server serves', () => {
  it('pods list every served subresource with kube-apiserver\'s verbs and kinds, in name order', () => {
    const list = coreResourceList(BUILTIN_RESOURCES);
    const pods = list.resources.filter((r) => r.name.startsWith('pods/'));
    assert.deepEqual(pods, [
      { name: 'pods/attach', singularName: '', namespaced: true, kind: 'PodAttachOptions', verbs: ['create', 'get'] },
      { name: 'pods/binding', singularName: '', namespaced: true, kind: 'Binding', verbs: ['create'] },
      { name: 'pods/eviction', singularName: '', namespaced: true, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] },
      { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
      { name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] },
      { name: 'pods/portforward', singularName: '', namespaced: true, kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
      { name: 'pods/status', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'patch', 'update'] },
    ]);
    const aggregated = aggregatedDiscovery(BUILTIN_RESOURCES, 'api', { version: 'v2beta1' });
    const podEntry = aggregated.items[0]?.versions[0]?.resources.find((r) => r.resource === 'pods');
    assert.deepEqual(podEntry?.subresources?.map((s) => s.subresource), ['attach', 'binding', 'eviction', 'exec', 'log', 'portforward', 'status']);
    assert.deepEqual(podEntry?.subresources?.find((s) => s.subresource === 'log'), {
      subresource: 'log',
      responseKind: { group: '', version: 'v1', kind: 'Pod' },
      verbs: ['get'],
    });
  });
});
