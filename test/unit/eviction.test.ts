/**
 * The pods/eviction subresource's body handling: policy/v1 and policy/v1beta1 Evictions as JSON
 * and as Kubernetes protobuf (what kubectl drain sends), all through the one body decoder, against
 * a real registry.
 */
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

// ---------- a tiny protobuf encoder, for tests only ----------

function varint(value: number): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}
const tag = (no: number, wireType: number): Buffer => varint((no << 3) | wireType);
const int = (no: number, value: number): Buffer => Buffer.concat([tag(no, 0), varint(value)]);
const bytes = (no: number, payload: Uint8Array): Buffer => Buffer.concat([tag(no, 2), varint(payload.length), payload]);
const str = (no: number, text: string): Buffer => bytes(no, Buffer.from(text, 'utf8'));
const msg = (no: number, ...parts: Buffer[]): Buffer => bytes(no, Buffer.concat(parts));

function envelope(apiVersion: string, kind: string, raw: Buffer, contentEncoding = ''): Buffer {
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), msg(1, str(1, apiVersion), str(2, kind)), bytes(2, raw), str(3, contentEncoding)]);
}

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

  it('refuses bodies that are not an Eviction for this pod, naming why', async () => {
    const registry = await clusterWithPod();
    await rejected(evict(registry, envelope('v1', 'Pod', msg(1, str(1, 'web-0'))), PROTOBUF), 400, /the kind of the provided object \(Pod\) is not Eviction/);
    await rejected(evict(registry, envelope('policy/v1', 'Eviction', evictionProto('other')), PROTOBUF), 400, /name in URL does not match/);
    await rejected(evict(registry, Buffer.from('not protobuf at all'), PROTOBUF), 400, /k8s/);
    await rejected(evict(registry, Buffer.from('{"apiVersion":"policy/v1","kind":"Eviction"'), 'application/json'), 400, /JSON/);
    assert.equal((await podOf(registry)).metadata.deletionTimestamp, undefined);
  });

  it('refuses a protobuf envelope whose content is encoded (415), as for every other protobuf body', async () => {
    const registry = await clusterWithPod();
    await rejected(evict(registry, envelope('policy/v1', 'Eviction', evictionProto('web-0'), 'gzip'), PROTOBUF), 415, /content encoding "gzip"/);
    assert.equal((await podOf(registry)).metadata.deletionTimestamp, undefined);
  });
});
