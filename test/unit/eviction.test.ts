/**
 * The pods/eviction subresource's body handling: policy/v1 and policy/v1beta1 Evictions as JSON
 * and as Kubernetes protobuf (what kubectl drain sends), all through the one body decoder, against
 * a real registry.
 */
import { bytes, envelope, int, msg, str } from './protobuf-encoder.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { handleEvictionRequest } from '../../src/requests/eviction-subresource.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const PODS = BUILTIN_RESOURCES.find((r) => r.group === '' && r.plural === 'pods')!;
const NAMESPACES = BUILTIN_RESOURCES.find((r) => r.group === '' && r.plural === 'namespaces')!;

/** Eviction{metadata{name, namespace}, deleteOptions{...}} in protobuf. */
function evictionProto(name: string, deleteOptions: Buffer[] = []): Buffer {
  return Buffer.concat([msg(1, str(1, name), str(3, 'default')), ...(deleteOptions.length ? [msg(2, ...deleteOptions)] : [])]);
}

async function clusterWithPod(name = 'web-0'): Promise<Registry> {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  // Bound to a node, so a delete is graceful and the Eviction's grace period shows on the pod.
  await registry.create(PODS, 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'busybox' }] } } as Pod);
  return registry;
}

function evict(registry: Registry, body: Buffer, contentType: string, name = 'web-0') {
  return handleEvictionRequest(registry, { method: 'POST', target: { info: PODS, namespace: 'default', name, subresource: 'eviction' }, query: {}, contentType, body });
}

async function rejected(promise: Promise<unknown>, code: number, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => e instanceof ApiError && e.code === code && pattern.test(e.message));
}

const podOf = (registry: Registry) => registry.get(PODS, 'default', 'web-0');

describe('pods/eviction bodies', () => {
  for (const apiVersion of ['policy/v1', 'policy/v1beta1']) {
    it(`a ${apiVersion} Eviction in protobuf deletes the pod with its deleteOptions' grace period`, async () => {
      const registry = await clusterWithPod();
      const result = await evict(registry, envelope(apiVersion, 'Eviction', evictionProto('web-0', [int(1, 7)])), PROTOBUF);
      assert.equal(result.code, 201);
      const pod = await podOf(registry);
      assert.ok(pod.metadata.deletionTimestamp, 'marked for deletion');
      assert.equal(pod.metadata.deletionGracePeriodSeconds, 7);
    });
  }

  it('protobuf deleteOptions dryRun and preconditions apply to the delete', async () => {
    const registry = await clusterWithPod();
    await evict(registry, envelope('policy/v1', 'Eviction', evictionProto('web-0', [str(5, 'All')])), PROTOBUF);
    assert.equal((await podOf(registry)).metadata.deletionTimestamp, undefined, 'dry run changes nothing');
    await rejected(evict(registry, envelope('policy/v1', 'Eviction', evictionProto('web-0', [msg(2, str(1, 'not-the-uid'))])), PROTOBUF), 409, /UID/i);
  });

  it('a JSON Eviction works the same way', async () => {
    const registry = await clusterWithPod();
    const body = Buffer.from(JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-0', namespace: 'default' }, deleteOptions: { gracePeriodSeconds: 3 } }));
    assert.equal((await evict(registry, body, 'application/json')).code, 201);
    assert.equal((await podOf(registry)).metadata.deletionGracePeriodSeconds, 3);
  });

  it('takes a body without apiVersion and kind as a policy/v1 Eviction, as the decoder defaults it from the endpoint', async () => {
    const registry = await clusterWithPod();
    const body = Buffer.from(JSON.stringify({ metadata: { name: 'web-0', namespace: 'default' }, deleteOptions: { gracePeriodSeconds: 4 } }));
    assert.equal((await evict(registry, body, 'application/json')).code, 201);
    assert.equal((await podOf(registry)).metadata.deletionGracePeriodSeconds, 4);
  });

  it('a negative deleteOptions grace period is one second, as rest.BeforeDelete makes it', async () => {
    const registry = await clusterWithPod();
    const body = Buffer.from(JSON.stringify({ metadata: { name: 'web-0' }, deleteOptions: { gracePeriodSeconds: -5 } }));
    assert.equal((await evict(registry, body, 'application/json')).code, 201);
    assert.equal((await podOf(registry)).metadata.deletionGracePeriodSeconds, 1);
  });

  it('refuses bodies that are not an Eviction for this pod, naming why', async () => {
    const registry = await clusterWithPod();
    await rejected(evict(registry, envelope('v1', 'Pod', msg(1, str(1, 'web-0'))), PROTOBUF), 400, /^Pod in version "v1" cannot be handled as a Eviction: /);
    const json = (doc: unknown) => Buffer.from(JSON.stringify(doc));
    await rejected(evict(registry, json({ kind: 'Pod', metadata: { name: 'web-0' } }), 'application/json'), 400, /^Pod in version "v1" cannot be handled as a Eviction: converting \(v1\.Pod\) to \(policy\.Eviction\): unknown conversion$/);
    await rejected(evict(registry, json({ apiVersion: 'policy/v2', metadata: { name: 'web-0' } }), 'application/json'), 400, /^the API version in the data \(policy\/v2\) does not match the expected API version \(policy\/v1\)$/);
    await rejected(evict(registry, json({ metadata: { name: 'web-0' }, deleteOptions: { propagationPolicy: 'Sideways' } }), 'application/json'), 422, /^DeleteOptions\.meta\.k8s\.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"$/);
    await rejected(evict(registry, envelope('policy/v1', 'Eviction', evictionProto('other')), PROTOBUF), 400, /name in URL does not match/);
    await rejected(evict(registry, Buffer.from('not protobuf at all'), PROTOBUF), 400, /k8s/);
    await rejected(evict(registry, Buffer.from('{"apiVersion":"policy/v1","kind":"Eviction"'), 'application/json'), 400, /JSON/);
    assert.equal((await podOf(registry)).metadata.deletionTimestamp, undefined);
  });

  it('refuses a protobuf envelope whose content is encoded (415), as for every other protobuf body', async () => {
    const registry = await clusterWithPod();
    await rejected(evict(registry, envelope('policy/v1', 'Eviction', evictionProto('web-0'), { contentEncoding: 'gzip' }), PROTOBUF), 415, /content encoding "gzip"/);
    assert.equal((await podOf(registry)).metadata.deletionTimestamp, undefined);
  });
});
