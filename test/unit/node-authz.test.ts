/**
 * Node authorization decisions without a server: the Authorizer's rules for node identities (with a
 * hand-made graph), the NodeGraph kept from a real registry's pod watch, and the NodeRestriction
 * admission plugin's checks on the objects.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/api/errors.js';
import type { KubeObject, Lease, Node, PersistentVolume, Pod, Taint } from '../../src/api/types.js';
import { nodeRestriction } from '../../src/admission/plugins/node-restriction.js';
import type { AdmissionAttributes } from '../../src/admission/chain.js';
import { Authorizer, type RequestAttributes } from '../../src/auth/authz.js';
import { NodeGraph, podReferences, reachKey, type NodeReachableResource } from '../../src/auth/node-graph.js';
import type { Identity } from '../../src/auth/tokens.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { StorageError, type Backend, type WatchOptions } from '../../src/storage/backend.js';

const info = (plural: string) => ALL_STRATEGIES.find((s) => s.info.plural === plural)!.info;
const nodeA: Identity = { username: 'system:node:a', groups: ['system:nodes', 'system:authenticated'], nodeName: 'a' };
const admin: Identity = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };

/** A graph in which node a reaches exactly these keys. */
function authorizerReaching(keys: string[]): Authorizer {
  const reach = new Set(keys);
  const stored = new Set([...keys, 'persistentvolumeclaims/default/other']);
  return new Authorizer({
    graph: {
      reaches: (node: string, r: NodeReachableResource, ns: string, name: string) => node === 'a' && reach.has(reachKey(r, ns, name)),
      exists: (r: NodeReachableResource, ns: string, name: string) => stored.has(reachKey(r, ns, name)),
      reachesVolume: (node: string, name: string) => ({ viaClaim: node === 'a' && name === 'pv-claimed', pinned: node === 'a' && name === 'pv-pinned' }),
    },
  });
}

describe('Authorizer for node credentials', () => {
  const authz = authorizerReaching(['secrets/default/mine', 'configmaps/default/mine', 'persistentvolumeclaims/default/mine', 'pods/default/mine', 'serviceaccounts/default/default']);
  const allowed = (attrs: Partial<RequestAttributes> & { verb: string; resource: string }, who: Identity = nodeA) => authz.authorize(who, { group: '', ...attrs }).allowed;

  it('lets a node get the volumes of its pods\' claims and the volumes pinned to it, and update only the pinned ones', () => {
    const pv = (verb: string, name?: string) => allowed({ verb, resource: 'persistentvolumes', name });
    assert.ok(pv('get', 'pv-claimed'));
    assert.ok(pv('get', 'pv-pinned'));
    assert.ok(pv('update', 'pv-pinned'));
    assert.equal(pv('update', 'pv-claimed'), false);
    assert.equal(pv('get', 'pv-other'), false);
    assert.equal(pv('delete', 'pv-pinned'), false);
    assert.equal(pv('list'), false);
    assert.equal(pv('create', 'pv-new'), false);
  });

  it('lets admins do anything and refuses identities that are neither admin nor node', () => {
    assert.ok(allowed({ verb: 'delete', resource: 'nodes', name: 'b' }, admin));
    assert.equal(allowed({ verb: 'get', resource: 'services', namespace: 'default', name: 'x' }, { username: 'someone', groups: ['system:authenticated'] }), false);
    // The system:nodes group with a user name that is not the node's is not a node.
    assert.equal(allowed({ verb: 'get', resource: 'services', namespace: 'default', name: 'x' }, { ...nodeA, username: 'system:node:b' }), false);
  });

  it('reads Secrets and ConfigMaps only when one of its pods references them, one object at a time', () => {
    for (const resource of ['secrets', 'configmaps']) {
      assert.ok(allowed({ verb: 'get', resource, namespace: 'default', name: 'mine' }), `${resource} get mine`);
      assert.ok(allowed({ verb: 'list', resource, namespace: 'default', fieldSelector: 'metadata.name=mine' }));
      assert.ok(allowed({ verb: 'watch', resource, namespace: 'default', fieldSelector: 'metadata.name==mine' }));
      assert.equal(allowed({ verb: 'get', resource, namespace: 'default', name: 'other' }), false);
      assert.equal(allowed({ verb: 'get', resource, namespace: 'kube-system', name: 'mine' }), false);
      assert.equal(allowed({ verb: 'list', resource, namespace: 'default' }), false);
      assert.equal(allowed({ verb: 'list', resource }), false);
      assert.equal(allowed({ verb: 'watch', resource, namespace: 'default', fieldSelector: 'metadata.name!=other' }), false);
      assert.equal(allowed({ verb: 'update', resource, namespace: 'default', name: 'mine' }), false);
      assert.equal(allowed({ verb: 'delete', resource, namespace: 'default', name: 'mine' }), false);
      assert.equal(allowed({ verb: 'create', resource, namespace: 'default' }), false);
    }
    const reason = authz.authorize(nodeA, { verb: 'get', group: '', resource: 'secrets', namespace: 'default', name: 'other' }).reason;
    assert.match(reason ?? '', /no relationship found between node 'a'/);
  });

  it('gets referenced claims only, and creates tokens only for its pods’ service accounts', () => {
    assert.ok(allowed({ verb: 'get', resource: 'persistentvolumeclaims', namespace: 'default', name: 'mine' }));
    assert.equal(allowed({ verb: 'get', resource: 'persistentvolumeclaims', namespace: 'default', name: 'other' }), false);
    // A claim that does not exist may be asked for (the answer is 404): the agent sweeps a deleted claim's volume on that.
    assert.ok(allowed({ verb: 'get', resource: 'persistentvolumeclaims', namespace: 'default', name: 'deleted' }));
    assert.equal(allowed({ verb: 'get', resource: 'secrets', namespace: 'default', name: 'deleted' }), false, 'only claims');
    assert.equal(allowed({ verb: 'list', resource: 'persistentvolumeclaims', namespace: 'default' }), false);
    assert.equal(allowed({ verb: 'update', resource: 'persistentvolumeclaims', subresource: 'status', namespace: 'default', name: 'mine' }), false);
    assert.ok(allowed({ verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: 'default', name: 'default' }));
    assert.equal(allowed({ verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: 'kube-system', name: 'default' }), false);
    assert.equal(allowed({ verb: 'get', resource: 'serviceaccounts', namespace: 'default', name: 'default' }), false);
  });

  it('reads its own pods: get by the graph, list and watch only with its spec.nodeName selector', () => {
    assert.ok(allowed({ verb: 'get', resource: 'pods', namespace: 'default', name: 'mine' }));
    assert.equal(allowed({ verb: 'get', resource: 'pods', namespace: 'default', name: 'theirs' }), false);
    assert.ok(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName=a' }));
    assert.ok(allowed({ verb: 'watch', resource: 'pods', namespace: 'default', fieldSelector: 'metadata.namespace=default,spec.nodeName=a' }));
    assert.ok(allowed({ verb: 'watch', resource: 'pods', namespace: 'default', fieldSelector: 'metadata.name=mine' }));
    assert.equal(allowed({ verb: 'list', resource: 'pods' }), false);
    assert.equal(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName=b' }), false);
    assert.equal(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName!=a' }), false);
    assert.equal(allowed({ verb: 'get', resource: 'pods', subresource: 'log', namespace: 'default', name: 'mine' }), false);
    assert.equal(allowed({ verb: 'create', resource: 'pods', subresource: 'exec', namespace: 'default', name: 'mine' }), false);
  });

  it('reads what NetworkPolicy enforcement needs: policies and namespaces cluster-wide, pods only by the addressed-pods selector, nothing written', () => {
    const np = (verb: string, namespace?: string) => authz.authorize(nodeA, { group: 'networking.k8s.io', resource: 'networkpolicies', verb, ...(namespace ? { namespace } : {}) }).allowed;
    assert.ok(np('list'));
    assert.ok(np('watch'));
    assert.ok(np('list', 'team-a'));
    assert.equal(np('create', 'team-a'), false);
    assert.equal(np('delete', 'team-a'), false);
    assert.ok(allowed({ verb: 'list', resource: 'namespaces' }));
    assert.ok(allowed({ verb: 'watch', resource: 'namespaces' }));
    assert.equal(allowed({ verb: 'update', resource: 'namespaces', name: 'team-a' }), false);
    assert.ok(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'status.podIP!=' }));
    assert.ok(allowed({ verb: 'watch', resource: 'pods', fieldSelector: 'status.podIP!=' }));
    assert.equal(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'status.podIP!=10.0.0.1' }), false);
    assert.equal(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'status.podIP=' }), false);
    assert.equal(allowed({ verb: 'list', resource: 'pods', fieldSelector: 'status.podIP!=,spec.nodeName=b' }), false);
    assert.equal(allowed({ verb: 'update', resource: 'pods', fieldSelector: 'status.podIP!=', namespace: 'default', name: 'x' }), false);
  });

  it('writes pods only as NodeRestriction narrows them: status, delete and eviction; never create, update or bind', () => {
    assert.ok(allowed({ verb: 'update', resource: 'pods', subresource: 'status', namespace: 'default', name: 'x' }));
    assert.ok(allowed({ verb: 'patch', resource: 'pods', subresource: 'status', namespace: 'default', name: 'x' }));
    assert.ok(allowed({ verb: 'delete', resource: 'pods', namespace: 'default', name: 'x' }));
    assert.ok(allowed({ verb: 'create', resource: 'pods', subresource: 'eviction', namespace: 'default', name: 'x' }));
    assert.equal(allowed({ verb: 'create', resource: 'pods', namespace: 'kube-system' }), false);
    assert.equal(allowed({ verb: 'update', resource: 'pods', namespace: 'default', name: 'mine' }), false);
    assert.equal(allowed({ verb: 'patch', resource: 'pods', namespace: 'default', name: 'mine' }), false);
    assert.equal(allowed({ verb: 'create', resource: 'pods', subresource: 'binding', namespace: 'default', name: 'x' }), false);
    assert.equal(allowed({ verb: 'deletecollection', resource: 'pods', namespace: 'default' }), false);
  });

  it('reads all Nodes, writes Nodes and their status (NodeRestriction narrows), never deletes one', () => {
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch']) assert.ok(allowed({ verb, resource: 'nodes', name: verb === 'list' || verb === 'watch' || verb === 'create' ? undefined : 'b' }), verb);
    assert.ok(allowed({ verb: 'patch', resource: 'nodes', subresource: 'status', name: 'b' }));
    assert.equal(allowed({ verb: 'delete', resource: 'nodes', name: 'b' }), false);
    assert.equal(allowed({ verb: 'delete', resource: 'nodes', name: 'a' }), false);
    assert.equal(allowed({ verb: 'deletecollection', resource: 'nodes' }), false);
    assert.equal(allowed({ verb: 'get', resource: 'nodes', subresource: 'proxy', name: 'a' }), false);
  });

  it('touches only its own Lease in kube-node-lease', () => {
    const lease = (verb: string, namespace: string, name?: string) => authz.authorize(nodeA, { verb, group: 'coordination.k8s.io', resource: 'leases', namespace, name }).allowed;
    for (const verb of ['get', 'update', 'patch', 'delete']) {
      assert.ok(lease(verb, 'kube-node-lease', 'a'), verb);
      assert.equal(lease(verb, 'kube-node-lease', 'b'), false, verb);
    }
    assert.ok(lease('create', 'kube-node-lease'));
    assert.equal(lease('create', 'default'), false);
    assert.equal(lease('get', 'default', 'a'), false);
    assert.equal(lease('list', 'kube-node-lease'), false);
    assert.equal(lease('watch', 'kube-node-lease', 'a'), false);
  });

  it('creates events, reads services, endpoints, endpointslices and namespaces, and nothing else', () => {
    assert.ok(allowed({ verb: 'create', resource: 'events', namespace: 'default' }));
    assert.ok(allowed({ verb: 'patch', resource: 'events', namespace: 'default', name: 'e' }));
    assert.ok(authz.authorize(nodeA, { verb: 'create', group: 'events.k8s.io', resource: 'events', namespace: 'default' }).allowed);
    assert.equal(allowed({ verb: 'list', resource: 'events', namespace: 'default' }), false);
    assert.equal(allowed({ verb: 'delete', resource: 'events', namespace: 'default', name: 'e' }), false);
    assert.ok(allowed({ verb: 'watch', resource: 'services' }));
    // The agent is also the node's service proxy and DNS: upstream's system:node-proxier reads.
    for (const verb of ['get', 'list', 'watch']) {
      assert.ok(allowed({ verb, resource: 'endpoints', namespace: 'default', ...(verb === 'get' ? { name: 'web' } : {}) }), verb);
      assert.ok(authz.authorize(nodeA, { verb, group: 'discovery.k8s.io', resource: 'endpointslices' }).allowed, verb);
    }
    for (const verb of ['create', 'update', 'patch', 'delete']) {
      assert.equal(allowed({ verb, resource: 'services', namespace: 'default', name: 'web' }), false, verb);
      assert.equal(allowed({ verb, resource: 'endpoints', namespace: 'default', name: 'web' }), false, verb);
      assert.equal(authz.authorize(nodeA, { verb, group: 'discovery.k8s.io', resource: 'endpointslices', namespace: 'default', name: 'web' }).allowed, false, verb);
    }
    assert.ok(allowed({ verb: 'get', resource: 'namespaces', name: 'kube-system' }));
    assert.equal(allowed({ verb: 'delete', resource: 'namespaces', name: 'default' }), false);
    // Listing and watching Namespaces (their labels) is NetworkPolicy enforcement's (the case above).
    assert.equal(allowed({ verb: 'create', resource: 'namespaces' }), false);
    assert.equal(authz.authorize(nodeA, { verb: 'list', group: 'apps', resource: 'deployments' }).allowed, false);
    assert.equal(authz.authorize(nodeA, { verb: 'create', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations' }).allowed, false);
  });
});

describe('NodeGraph', () => {
  const PODS = info('pods');
  async function fresh() {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    for (const s of ALL_STRATEGIES) registry.register(s);
    await registry.create(info('namespaces'), undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    return registry;
  }
  const pod = (name: string, nodeName: string | undefined, secretName: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'img:1' }], volumes: [{ name: 's', secret: { secretName } }] } as Pod['spec'],
  });
  const settle = () => new Promise((r) => setImmediate(r));

  it('lists everything a pod reaches', () => {
    const refs = podReferences({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        serviceAccountName: 'sa',
        imagePullSecrets: [{ name: 'pull' }],
        containers: [{ name: 'c', image: 'i', env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'env-s', key: 'k' } } }, { name: 'B', valueFrom: { configMapKeyRef: { name: 'env-cm', key: 'k' } } }], envFrom: [{ secretRef: { name: 'from-s' } }, { configMapRef: { name: 'from-cm' } }] }],
        initContainers: [{ name: 'i', image: 'i', envFrom: [{ configMapRef: { name: 'init-cm' } }] }],
        volumes: [
          { name: 'v1', secret: { secretName: 'vol-s' } },
          { name: 'v2', configMap: { name: 'vol-cm' } },
          { name: 'v3', persistentVolumeClaim: { claimName: 'claim' } },
          { name: 'v4', projected: { sources: [{ secret: { name: 'proj-s' } }, { configMap: { name: 'proj-cm' } }] } },
          { name: 'v5', csi: { driver: 'd', nodePublishSecretRef: { name: 'csi-s' } } },
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } },
        ],
      } as unknown as Pod['spec'],
    }).sort();
    assert.deepEqual(refs, [
      'configmaps/ns/env-cm', 'configmaps/ns/from-cm', 'configmaps/ns/init-cm', 'configmaps/ns/proj-cm', 'configmaps/ns/vol-cm',
      'persistentvolumeclaims/ns/claim', 'persistentvolumeclaims/ns/p-scratch',
      'pods/ns/p',
      'secrets/ns/csi-s', 'secrets/ns/env-s', 'secrets/ns/from-s', 'secrets/ns/proj-s', 'secrets/ns/pull', 'secrets/ns/vol-s',
      'serviceaccounts/ns/sa',
    ]);
  });

  it('follows pods being bound, shared and deleted', async () => {
    const registry = await fresh();
    await registry.create(PODS, 'default', pod('before', 'a', 'early'));
    const graph = new NodeGraph({ registry });
    await graph.start();
    await settle();
    assert.ok(graph.reaches('a', 'secrets', 'default', 'early'), 'pods that existed at start are indexed');
    assert.equal(graph.reaches('b', 'secrets', 'default', 'early'), false);

    await registry.create(PODS, 'default', pod('p1', 'a', 'shared'));
    await registry.create(PODS, 'default', pod('p2', 'a', 'shared'));
    await registry.create(PODS, 'default', pod('unbound', undefined, 'pending'));
    await settle();
    assert.ok(graph.reaches('a', 'secrets', 'default', 'shared'));
    assert.ok(graph.reaches('a', 'pods', 'default', 'p1'));
    assert.equal(graph.reaches('a', 'secrets', 'default', 'pending'), false, 'an unbound pod gives no node anything');

    await registry.delete(PODS, 'default', 'p1', { gracePeriodSeconds: 0 });
    await settle();
    assert.ok(graph.reaches('a', 'secrets', 'default', 'shared'), 'still used by p2');
    assert.equal(graph.reaches('a', 'pods', 'default', 'p1'), false);
    await registry.delete(PODS, 'default', 'p2', { gracePeriodSeconds: 0 });
    await settle();
    assert.equal(graph.reaches('a', 'secrets', 'default', 'shared'), false);
    graph.stop();
  });

  it('indexes existing pods at start and a new pod as soon as its write returns', async () => {
    const registry = await fresh();
    await registry.create(PODS, 'default', pod('old', 'a', 'old-secret'));
    const graph = new NodeGraph({ registry });
    await graph.start();
    assert.ok(graph.reaches('a', 'secrets', 'default', 'old-secret'), 'no wait needed after start');
    await registry.create(PODS, 'default', pod('fresh', 'a', 'new-secret'));
    // No settle: the next request after a write is authorized with the write indexed.
    assert.ok(graph.reaches('a', 'secrets', 'default', 'new-secret'));
    assert.equal(graph.reaches('b', 'secrets', 'default', 'new-secret'), false);
    graph.stop();
  });

  it('follows which claims exist', async () => {
    const registry = await fresh();
    const CLAIMS = info('persistentvolumeclaims');
    const claim = (name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } });
    await registry.create(CLAIMS, 'default', claim('early'));
    const graph = new NodeGraph({ registry });
    await graph.start();
    assert.ok(graph.exists('persistentvolumeclaims', 'default', 'early'));
    await registry.create(CLAIMS, 'default', claim('late'));
    assert.ok(graph.exists('persistentvolumeclaims', 'default', 'late'));
    await registry.delete(CLAIMS, 'default', 'early');
    await settle();
    assert.equal(graph.exists('persistentvolumeclaims', 'default', 'early'), false);
    assert.equal(graph.exists('secrets', 'default', 'late'), false, 'only claims are followed');
    graph.stop();
  });

  it('rebuilds its index when the store ends a watch, so changes it missed meanwhile are not kept', async () => {
    // A store that can drop events and end watches, as a networked one that lost its stream.
    const store = openSqliteBackend({ file: ':memory:' });
    const link = { up: true, endings: [] as Array<NonNullable<WatchOptions['onError']>> };
    const backend = new Proxy(store, {
      get(target, prop) {
        if (prop === 'watch') {
          return (prefix: string, opts: WatchOptions) => {
            if (opts.onError) link.endings.push(opts.onError);
            return target.watch(prefix, { ...opts, onEvent: (ev) => link.up && opts.onEvent(ev) });
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as Backend;
    const registry = new Registry({ backend });
    for (const s of ALL_STRATEGIES) registry.register(s);
    await registry.create(info('namespaces'), undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    await registry.create(PODS, 'default', pod('gone-unseen', 'a', 'stale-secret'));
    const graph = new NodeGraph({ registry });
    await graph.start();
    assert.ok(graph.reaches('a', 'secrets', 'default', 'stale-secret'));

    link.up = false;
    await registry.delete(PODS, 'default', 'gone-unseen', { gracePeriodSeconds: 0 });
    await registry.create(PODS, 'default', pod('new-unseen', 'a', 'fresh-secret'));
    await settle();
    assert.ok(graph.reaches('a', 'secrets', 'default', 'stale-secret'), 'the lost events were not seen');
    link.up = true;
    for (const end of link.endings.splice(0)) end(new StorageError('Compacted', 'compacted while reconnecting', { compactedRevision: 1 }));
    await settle();
    assert.equal(graph.reaches('a', 'secrets', 'default', 'stale-secret'), false, 'the deleted pod is gone after the rebuild');
    assert.ok(graph.reaches('a', 'secrets', 'default', 'fresh-secret'), 'the pod created meanwhile is indexed');
    graph.stop();
  });
});

describe('NodeRestriction admission', () => {
  const plugin = nodeRestriction();
  const NODES = info('nodes');
  const PODS = info('pods');
  const LEASES = info('leases');
  const node = (name: string, labels: Record<string, string> = {}, taints?: Taint[]): Node => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, spec: taints ? { taints } : {} });
  const boundPod = (nodeName: string): Pod => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { nodeName, containers: [] } });
  const admit = (attrs: Partial<AdmissionAttributes> & Pick<AdmissionAttributes, 'operation' | 'info' | 'object'>, user = 'system:node:a') => {
    try {
      plugin.admit({ dryRun: false, user: { username: user, groups: ['system:nodes', 'system:authenticated'] }, ...attrs });
      return 'allowed';
    } catch (e) {
      return `${(e as ApiError).reason}: ${(e as ApiError).message}`;
    }
  };

  it('keeps a node to its own Node object', () => {
    assert.equal(admit({ operation: 'CREATE', info: NODES, object: node('a', { 'kubernetes.io/hostname': 'a', 'kubernetes.io/os': 'linux', 'example.com/x': 'y' }) }), 'allowed');
    assert.match(admit({ operation: 'CREATE', info: NODES, object: node('b') }), /^Forbidden: node "a" is not allowed to modify node "b"/);
    assert.match(admit({ operation: 'UPDATE', subresource: 'status', info: NODES, object: node('b'), oldObject: node('b') }), /Forbidden/);
    assert.match(admit({ operation: 'DELETE', info: NODES, object: node('b') }), /Forbidden/);
    assert.equal(admit({ operation: 'UPDATE', info: NODES, object: node('b', { x: '1' }), oldObject: node('b') }, 'admin'), 'allowed', 'admins are not restricted');
    assert.doesNotThrow(() => plugin.admit({ operation: 'UPDATE', info: NODES, object: node('b', { x: '1' }), oldObject: node('b'), dryRun: false }), 'in-process controllers are not restricted');
  });

  it('refuses restricted labels and taint changes on its own Node', () => {
    const update = (labels: Record<string, string>, taints?: Taint[]) => admit({ operation: 'UPDATE', info: NODES, object: node('a', labels, taints), oldObject: node('a', { 'kubernetes.io/hostname': 'a' }, [{ key: 'k', effect: 'NoSchedule' }]) });
    const taint = [{ key: 'k', effect: 'NoSchedule' }];
    assert.equal(update({ 'kubernetes.io/hostname': 'a', 'example.com/rack': 'r1', 'node.kubernetes.io/instance-type': 'big', 'x.kubelet.kubernetes.io/y': 'z' }, taint), 'allowed');
    assert.match(update({ 'kubernetes.io/hostname': 'a', 'node-restriction.kubernetes.io/dedicated': 's' }, taint), /not allowed to modify labels: node-restriction.kubernetes.io\/dedicated/);
    assert.match(update({ 'kubernetes.io/hostname': 'a', 'sub.node-restriction.kubernetes.io/x': 's' }, taint), /not allowed to modify labels/);
    assert.match(update({ 'kubernetes.io/hostname': 'a', 'node-role.kubernetes.io/control-plane': '' }, taint), /not allowed to modify labels: node-role.kubernetes.io\/control-plane/);
    assert.match(update({ 'kubernetes.io/hostname': 'a', 'k8s.io/x': '' }, taint), /not allowed to modify labels/);
    assert.equal(update({}, taint), 'allowed', 'kubelet labels may also be removed');
    assert.match(update({ 'kubernetes.io/hostname': 'a' }, []), /not allowed to modify taints/);
    assert.match(admit({ operation: 'CREATE', info: NODES, object: node('a', { 'node-restriction.kubernetes.io/x': 'y' }) }), /not allowed to set the following labels/);
  });

  it('lets a node change only the local-path cleanup finalizer of a volume', () => {
    const PVS = info('persistentvolumes');
    const pv = (finalizers: string[], path = '/s/pvc-1'): PersistentVolume => ({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'pvc-1', finalizers, resourceVersion: '1' }, spec: { hostPath: { path } } });
    const before = pv(['kubernetes.io/pv-protection']);
    assert.equal(admit({ operation: 'UPDATE', info: PVS, object: pv(['kubernetes.io/pv-protection', 'berth.dev/local-path-cleanup']), oldObject: before }), 'allowed');
    assert.equal(admit({ operation: 'UPDATE', info: PVS, object: before, oldObject: pv(['kubernetes.io/pv-protection', 'berth.dev/local-path-cleanup']) }), 'allowed');
    assert.match(admit({ operation: 'UPDATE', info: PVS, object: pv([]), oldObject: before }), /can only add or remove the berth.dev\/local-path-cleanup finalizer/);
    assert.match(admit({ operation: 'UPDATE', info: PVS, object: pv(['kubernetes.io/pv-protection'], '/etc'), oldObject: before }), /can only add or remove/);
    assert.match(admit({ operation: 'DELETE', info: PVS, object: before }), /can only update persistentvolumes' finalizers/);
  });

  it('keeps a node to pods bound to it, and lets it create none', () => {
    assert.equal(admit({ operation: 'DELETE', info: PODS, object: boundPod('a') }), 'allowed');
    assert.match(admit({ operation: 'DELETE', info: PODS, object: boundPod('b') }), /can only delete pods with spec.nodeName set to itself/);
    assert.equal(admit({ operation: 'UPDATE', subresource: 'status', info: PODS, object: boundPod('a'), oldObject: boundPod('a') }), 'allowed');
    assert.match(admit({ operation: 'UPDATE', subresource: 'status', info: PODS, object: boundPod('b'), oldObject: boundPod('b') }), /can only update pod status for pods with spec.nodeName set to itself/);
    assert.match(admit({ operation: 'UPDATE', info: PODS, object: boundPod('a'), oldObject: boundPod('a') }), /can only update pod status/);
    assert.match(admit({ operation: 'CREATE', info: PODS, object: boundPod('a') }), /can only create mirror pods/);
  });

  it('keeps a node to the Lease named after it', () => {
    const lease = (name: string, namespace = 'kube-node-lease'): Lease => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: {} });
    assert.equal(admit({ operation: 'CREATE', info: LEASES, object: lease('a') }), 'allowed');
    assert.match(admit({ operation: 'CREATE', info: LEASES, object: lease('b') }), /same name as the requesting node/);
    assert.match(admit({ operation: 'CREATE', info: LEASES, object: lease('a', 'default') }), /kube-node-lease/);
    assert.match(admit({ operation: 'UPDATE', info: LEASES, object: lease('b'), oldObject: lease('b') }), /same name/);
  });
});
