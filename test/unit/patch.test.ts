import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/api/errors.js';
import {
  MAX_JSON_PATCH_OPERATIONS,
  PATCH_REJECTED_MESSAGE,
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  builtinPatchSchema,
  patchTypeOf,
  podPatchSchema,
} from '../../src/api/patch.js';

function rejects(fn: () => unknown, code: number, pattern?: RegExp): ApiError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ApiError, `expected an ApiError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (pattern) assert.match(caught.message, pattern);
  return caught;
}

/** Applies, checks the inputs were left alone, returns the result. */
function pure<T>(apply: (doc: unknown, patch: unknown) => T, doc: unknown, patch: unknown): T {
  const docBefore = structuredClone(doc);
  const patchBefore = structuredClone(patch);
  const result = apply(doc, patch);
  assert.deepEqual(doc, docBefore, 'document was modified');
  assert.deepEqual(patch, patchBefore, 'patch was modified');
  return result;
}

// ---------- RFC 6902 ----------

const rfc6902Examples: Array<{ name: string; doc: unknown; patch: unknown[]; expected?: unknown }> = [
  { name: 'A.1 add an object member', doc: { foo: 'bar' }, patch: [{ op: 'add', path: '/baz', value: 'qux' }], expected: { baz: 'qux', foo: 'bar' } },
  { name: 'A.2 add an array element', doc: { foo: ['bar', 'baz'] }, patch: [{ op: 'add', path: '/foo/1', value: 'qux' }], expected: { foo: ['bar', 'qux', 'baz'] } },
  { name: 'A.3 remove an object member', doc: { baz: 'qux', foo: 'bar' }, patch: [{ op: 'remove', path: '/baz' }], expected: { foo: 'bar' } },
  { name: 'A.4 remove an array element', doc: { foo: ['bar', 'qux', 'baz'] }, patch: [{ op: 'remove', path: '/foo/1' }], expected: { foo: ['bar', 'baz'] } },
  { name: 'A.5 replace a value', doc: { baz: 'qux', foo: 'bar' }, patch: [{ op: 'replace', path: '/baz', value: 'boo' }], expected: { baz: 'boo', foo: 'bar' } },
  {
    name: 'A.6 move a value',
    doc: { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
    patch: [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
    expected: { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
  },
  {
    name: 'A.7 move an array element',
    doc: { foo: ['all', 'grass', 'cows', 'eat'] },
    patch: [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
    expected: { foo: ['all', 'cows', 'eat', 'grass'] },
  },
  {
    name: 'A.8 test a value: success',
    doc: { baz: 'qux', foo: ['a', 2, 'c'] },
    patch: [
      { op: 'test', path: '/baz', value: 'qux' },
      { op: 'test', path: '/foo/1', value: 2 },
    ],
    expected: { baz: 'qux', foo: ['a', 2, 'c'] },
  },
  { name: 'A.9 test a value: error', doc: { baz: 'qux' }, patch: [{ op: 'test', path: '/baz', value: 'bar' }] },
  {
    name: 'A.10 add a nested member object',
    doc: { foo: 'bar' },
    patch: [{ op: 'add', path: '/child', value: { grandchild: {} } }],
    expected: { foo: 'bar', child: { grandchild: {} } },
  },
  {
    name: 'A.11 ignore unrecognized elements',
    doc: { foo: 'bar' },
    patch: [{ op: 'add', path: '/baz', value: 'qux', xyz: 123 }],
    expected: { foo: 'bar', baz: 'qux' },
  },
  { name: 'A.12 add to a nonexistent target', doc: { foo: 'bar' }, patch: [{ op: 'add', path: '/baz/bat', value: 'qux' }] },
  { name: 'A.14 ~ escape ordering', doc: { '/': 9, '~1': 10 }, patch: [{ op: 'test', path: '/~01', value: 10 }], expected: { '/': 9, '~1': 10 } },
  { name: 'A.15 comparing strings and numbers', doc: { '/': 9, '~1': 10 }, patch: [{ op: 'test', path: '/~01', value: '10' }] },
  {
    name: 'A.16 add an array value',
    doc: { foo: ['bar'] },
    patch: [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }],
    expected: { foo: ['bar', ['abc', 'def']] },
  },
];

for (const example of rfc6902Examples) {
  test(`RFC 6902 ${example.name}`, () => {
    if (example.expected === undefined) {
      const doc = structuredClone(example.doc);
      rejects(() => applyJsonPatch(example.doc, example.patch), 422, new RegExp(`^${PATCH_REJECTED_MESSAGE}: `));
      assert.deepEqual(example.doc, doc, 'a failed patch leaves the document untouched');
    } else {
      assert.deepEqual(pure(applyJsonPatch, example.doc, example.patch), example.expected);
    }
  });
}

test('JSON patch: root operations, copy, escapes and index rules', () => {
  assert.deepEqual(applyJsonPatch({ a: 1 }, [{ op: 'replace', path: '', value: [1] }]), [1]);
  assert.deepEqual(applyJsonPatch({ a: { b: [1] } }, [{ op: 'copy', from: '/a', path: '/c' }]), { a: { b: [1] }, c: { b: [1] } });
  const copied = applyJsonPatch({ a: { b: 1 } }, [{ op: 'copy', from: '/a', path: '/c' }]) as Record<string, { b: number }>;
  copied.c!.b = 2;
  assert.equal(copied.a!.b, 1, 'copy makes an independent value');
  assert.deepEqual(
    applyJsonPatch({ metadata: { labels: {} } }, [{ op: 'add', path: '/metadata/labels/app.kubernetes.io~1name', value: 'x' }]),
    { metadata: { labels: { 'app.kubernetes.io/name': 'x' } } },
  );
  assert.deepEqual(applyJsonPatch({ a: null }, [{ op: 'test', path: '/a', value: null }]), { a: null });
  assert.deepEqual(applyJsonPatch({ a: { x: 1, y: [1, { z: 2 }] } }, [{ op: 'test', path: '/a', value: { y: [1, { z: 2 }], x: 1 } }]), {
    a: { x: 1, y: [1, { z: 2 }] },
  });
  rejects(() => applyJsonPatch({ a: [1] }, [{ op: 'add', path: '/a/01', value: 2 }]), 422, /not a valid array index/);
  rejects(() => applyJsonPatch({ a: [1] }, [{ op: 'add', path: '/a/2', value: 2 }]), 422, /out of bounds/);
  rejects(() => applyJsonPatch({ a: [1] }, [{ op: 'remove', path: '/a/-' }]), 422);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'remove', path: '/b' }]), 422, /does not exist/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'replace', path: '/b', value: 1 }]), 422, /does not exist/);
  rejects(() => applyJsonPatch({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }]), 422, /own children/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'add', path: 'a', value: 1 }]), 422, /must start with/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'add', path: '/~2', value: 1 }]), 422, /escape/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'add', path: '/b' }]), 422, /needs a "value"/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'frobnicate', path: '/a' }]), 422, /unknown operation/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'move', path: '/b' }]), 422, /"from"/);
  rejects(() => applyJsonPatch({ a: 1 }, [{ op: 'test', path: '/constructor', value: 1 }]), 422, /does not exist/);
});

test('JSON patch: a failed test is 422 Invalid with the kube-apiserver message', () => {
  const error = rejects(
    () => applyJsonPatch({ metadata: { name: 'web' } }, [{ op: 'test', path: '/metadata/name', value: 'db' }]),
    422,
  );
  assert.equal(error.reason, 'Invalid');
  assert.match(error.message, /^the server rejected our request due to an error in our request: .*test failed/);
});

test('JSON patch: malformed documents are 400, too many operations 413', () => {
  rejects(() => applyJsonPatch({}, { op: 'add' }), 400, /array of operation objects/);
  rejects(() => applyJsonPatch({}, [1]), 400);
  const ops = Array.from({ length: MAX_JSON_PATCH_OPERATIONS + 1 }, () => ({ op: 'test', path: '', value: {} }));
  rejects(() => applyJsonPatch({}, ops), 413, /maximum operations in a JSON patch is 10000, got 10001/);
});

test('JSON patch: doubling copies are cut off quickly', () => {
  const ops: unknown[] = [{ op: 'add', path: '/a', value: ['x'.repeat(1000)] }];
  for (let i = 0; i < 60; i++) ops.push({ op: 'copy', from: '/a', path: '/a/-' });
  const start = performance.now();
  rejects(() => applyJsonPatch({}, ops), 422, /copy operations may add at most/);
  assert.ok(performance.now() - start < 2000);
});

test('JSON patch: __proto__ is an ordinary member', () => {
  const result = applyJsonPatch({}, [{ op: 'add', path: '/__proto__', value: { polluted: true } }]) as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(result), Object.prototype);
  assert.deepEqual(Object.keys(result), ['__proto__']);
});

test('JSON patch: results that nest too deeply are refused', () => {
  let deep: unknown = {};
  for (let i = 0; i < 200; i++) deep = { d: deep };
  let path = '';
  for (let i = 0; i < 200; i++) path += '/d';
  rejects(() => applyJsonPatch(deep, [{ op: 'add', path: `${path}/x`, value: deep }]), 422, /nests deeper/);
});

// ---------- RFC 7386 ----------

const rfc7386Examples: Array<[unknown, unknown, unknown]> = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [['a', 'b'], ['c', 'd'], ['c', 'd']],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
];

rfc7386Examples.forEach(([doc, patch, expected], i) => {
  test(`RFC 7386 appendix A example ${i + 1}`, () => {
    assert.deepEqual(pure(applyMergePatch, doc, patch), expected);
  });
});

test('merge patch results share nothing with the inputs', () => {
  const doc = { metadata: { labels: { a: '1' } }, spec: { x: { y: 1 } } };
  const patch = { metadata: { labels: { b: '2' } }, spec: { z: { w: 1 } } };
  const result = applyMergePatch(doc, patch) as typeof doc & { spec: { z: { w: number } } };
  result.spec.x.y = 99;
  result.spec.z.w = 99;
  assert.equal(doc.spec.x.y, 1);
  assert.equal(patch.spec.z.w, 1);
});

test('merge patch: a replacing list is stored without the null members of its objects', () => {
  // Ansible's apply sends the whole containers list with `memory: null` in it.
  const doc = { spec: { containers: [{ name: 'web', image: 'nginx', resources: { requests: { cpu: '1' } } }] } };
  const patch = {
    spec: {
      containers: [{ name: 'web', image: 'nginx:2', resources: { requests: { cpu: '2', memory: null }, limits: null } }],
    },
  };
  assert.deepEqual(pure(applyMergePatch, doc, patch), {
    spec: { containers: [{ name: 'web', image: 'nginx:2', resources: { requests: { cpu: '2' } } }] },
  });
});

test('merge patch: new maps lose their nulls at any depth; null array items stay', () => {
  assert.deepEqual(pure(applyMergePatch, {}, { a: { b: [{ c: null, d: [{ e: null, f: 1 }] }, null] } }), {
    a: { b: [{ d: [{ f: 1 }] }, null] },
  });
  assert.deepEqual(pure(applyMergePatch, { a: 'scalar' }, { a: { b: null, c: 1 } }), { a: { c: 1 } });
});

test('merge patch: an array replacing an object keeps its nulls, as evanphx/json-patch v4 does', () => {
  assert.deepEqual(pure(applyMergePatch, { a: { x: 1 } }, { a: [{ b: null }] }), { a: [{ b: null }] });
});

// ---------- strategic merge patch ----------

function basePod() {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web',
      labels: { app: 'web', tier: 'frontend' },
      finalizers: ['example.com/a'],
      annotations: { note: 'x' },
    },
    spec: {
      containers: [
        {
          name: 'web',
          image: 'nginx:1.25',
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
          ports: [{ containerPort: 80, protocol: 'TCP' }],
        },
        { name: 'sidecar', image: 'busybox:1.36', args: ['sleep', '3600'] },
      ],
      tolerations: [{ key: 'k1', operator: 'Exists' }],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
}

type Pod = ReturnType<typeof basePod>;
const smp = (doc: unknown, patch: unknown): Pod => pure((d, p) => applyStrategicMergePatch(d, p, podPatchSchema), doc, patch) as Pod;
const names = (list: Array<{ name: string }>): string[] => list.map((c) => c.name);

test('SMP: adding a container merges by name; new items go first (kube-apiserver order)', () => {
  const result = smp(basePod(), { spec: { containers: [{ name: 'cache', image: 'redis:7' }] } });
  assert.deepEqual(names(result.spec.containers), ['cache', 'web', 'sidecar']);
  assert.deepEqual(result.spec.containers[1], basePod().spec.containers[0]);
});

test("SMP: changing one container's image leaves the others and the order alone", () => {
  const result = smp(basePod(), { spec: { containers: [{ name: 'sidecar', image: 'busybox:1.37' }] } });
  assert.deepEqual(names(result.spec.containers), ['web', 'sidecar']);
  assert.equal(result.spec.containers[1]!.image, 'busybox:1.37');
  assert.deepEqual(result.spec.containers[1]!.args, ['sleep', '3600']);
  assert.deepEqual(result.spec.containers[0], basePod().spec.containers[0]);
});

test('SMP: a replacing list is stored without the null members of its objects', () => {
  const doc = basePod();
  const result = smp(doc, {
    spec: { tolerations: [{ key: 'k2', operator: 'Exists', effect: null, tolerationSeconds: null }] },
  });
  assert.deepEqual(result.spec.tolerations, [{ key: 'k2', operator: 'Exists' }]);
  const added = smp(doc, {
    spec: { containers: [{ name: 'cache', image: 'redis:7', resources: { requests: { cpu: '1', memory: null } } }] },
  });
  assert.deepEqual((added.spec.containers[0] as { resources?: unknown }).resources, { requests: { cpu: '1' } });
});

test('SMP: $patch: delete removes a container by name', () => {
  const result = smp(basePod(), { spec: { containers: [{ name: 'sidecar', $patch: 'delete' }] } });
  assert.deepEqual(names(result.spec.containers), ['web']);
});

test('SMP: $setElementOrder reorders', () => {
  const result = smp(basePod(), { spec: { '$setElementOrder/containers': [{ name: 'sidecar' }, { name: 'web' }] } });
  assert.deepEqual(names(result.spec.containers), ['sidecar', 'web']);
  assert.equal(Object.hasOwn(result.spec, '$setElementOrder/containers'), false);
});

test('SMP: a kubectl apply patch (last-applied annotation, $setElementOrder, additions) applies cleanly', () => {
  const patch = {
    metadata: {
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"apiVersion":"v1","kind":"Pod"}\n' },
    },
    spec: {
      '$setElementOrder/containers': [{ name: 'web' }, { name: 'sidecar' }, { name: 'metrics' }],
      containers: [
        {
          '$setElementOrder/env': [{ name: 'A' }, { name: 'C' }],
          env: [{ name: 'C', value: '3' }, { $patch: 'delete', name: 'B' }],
          image: 'nginx:1.26',
          name: 'web',
        },
        { image: 'prom/exporter', name: 'metrics' },
      ],
    },
  };
  const result = smp(basePod(), patch);
  assert.deepEqual(names(result.spec.containers), ['web', 'sidecar', 'metrics']);
  const web = result.spec.containers[0]!;
  assert.equal(web.image, 'nginx:1.26');
  assert.deepEqual(web.env, [
    { name: 'A', value: '1' },
    { name: 'C', value: '3' },
  ]);
  assert.equal(result.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration' as 'note'], '{"apiVersion":"v1","kind":"Pod"}\n');
  assert.equal(result.metadata.annotations.note, 'x');
  assert.equal(JSON.stringify(result).includes('$'), false, 'no directive leaks into the result');
});

test('SMP: env merges by name', () => {
  const result = smp(basePod(), {
    spec: { containers: [{ name: 'web', env: [{ name: 'B', value: '20' }, { name: 'C', value: '3' }] }] },
  });
  assert.deepEqual(result.spec.containers[0]!.env, [
    { name: 'A', value: '1' },
    { name: 'B', value: '20' },
    { name: 'C', value: '3' },
  ]);
  // an env entry's value can be cleared with null inside the merged item
  const cleared = smp(basePod(), { spec: { containers: [{ name: 'web', env: [{ name: 'A', value: null }] }] } });
  assert.deepEqual(cleared.spec.containers[0]!.env?.[0], { name: 'A' });
});

test('SMP: finalizers merge as a set; $deleteFromPrimitiveList removes', () => {
  assert.deepEqual(smp(basePod(), { metadata: { finalizers: ['example.com/b', 'example.com/a'] } }).metadata.finalizers, [
    'example.com/b',
    'example.com/a',
  ]);
  assert.deepEqual(smp(basePod(), { metadata: { finalizers: ['example.com/b'] } }).metadata.finalizers, ['example.com/b', 'example.com/a']);
  assert.deepEqual(
    smp(basePod(), { metadata: { '$setElementOrder/finalizers': ['example.com/a', 'example.com/b'], finalizers: ['example.com/b'] } })
      .metadata.finalizers,
    ['example.com/a', 'example.com/b'],
  );
  assert.deepEqual(
    smp(basePod(), { metadata: { '$deleteFromPrimitiveList/finalizers': ['example.com/a'] } }).metadata.finalizers,
    [],
  );
  assert.equal(Object.hasOwn(smp(basePod(), { metadata: { finalizers: null } }).metadata, 'finalizers'), false);
});

test('SMP: null deletes a field; nulls for missing fields are ignored', () => {
  const result = smp(basePod(), { metadata: { labels: { tier: null, ghost: null } }, spec: { tolerations: null } });
  assert.deepEqual(result.metadata.labels, { app: 'web' });
  assert.equal(Object.hasOwn(result.spec, 'tolerations'), false);
});

test('SMP: $patch: replace replaces a map or a whole list', () => {
  const labels = smp(basePod(), { metadata: { labels: { $patch: 'replace', only: 'this' } } });
  assert.deepEqual(labels.metadata.labels, { only: 'this' });
  const containers = smp(basePod(), { spec: { containers: [{ $patch: 'replace' }, { name: 'solo', image: 'alpine' }] } });
  assert.deepEqual(containers.spec.containers, [{ name: 'solo', image: 'alpine' }]);
});

test('SMP: $patch: delete on a map leaves it empty (as Kubernetes does)', () => {
  assert.deepEqual(smp(basePod(), { metadata: { labels: { $patch: 'delete' } } }).metadata.labels, {});
});

test('SMP: lists without a merge strategy (tolerations, args) are replaced', () => {
  const result = smp(basePod(), {
    spec: {
      tolerations: [{ key: 'k2', operator: 'Exists' }],
      containers: [{ name: 'sidecar', args: ['sleep', '1'] }],
    },
  });
  assert.deepEqual(result.spec.tolerations, [{ key: 'k2', operator: 'Exists' }]);
  assert.deepEqual(result.spec.containers[1]!.args, ['sleep', '1']);
});

test('SMP: ports merge by containerPort, volumes honour $retainKeys', () => {
  const result = smp(basePod(), {
    spec: {
      containers: [{ name: 'web', ports: [{ containerPort: 443, protocol: 'TCP' }] }],
      volumes: [{ name: 'data', $retainKeys: ['configMap', 'name'], configMap: { name: 'cfg' } }],
    },
  });
  assert.deepEqual(result.spec.containers[0]!.ports, [
    { containerPort: 443, protocol: 'TCP' },
    { containerPort: 80, protocol: 'TCP' },
  ]);
  assert.deepEqual(result.spec.volumes, [{ name: 'data', configMap: { name: 'cfg' } }]);
  rejects(
    () => smp(basePod(), { spec: { volumes: [{ name: 'data', $retainKeys: ['name'], secret: { secretName: 's' } }] } }),
    400,
    /retainKeys/,
  );
});

test('SMP: directives inside values new to the object are resolved, not stored', () => {
  const pod = basePod();
  const result = smp(pod, {
    metadata: { ownerReferences: [{ uid: 'u1', kind: 'ReplicaSet', name: 'rs', apiVersion: 'apps/v1' }] },
    spec: {
      initContainers: [{ name: 'init', image: 'busybox', env: [{ name: 'X', $patch: 'delete' }, { name: 'Y', value: '1' }] }],
      nodeSelector: { disk: 'ssd', gone: null },
    },
  }) as Pod & { spec: { initContainers: unknown[]; nodeSelector: unknown } };
  assert.deepEqual(result.spec.initContainers, [{ name: 'init', image: 'busybox', env: [{ name: 'Y', value: '1' }] }]);
  assert.deepEqual(result.spec.nodeSelector, { disk: 'ssd' });
});

test('SMP: workload templates use the pod rules (Deployment, CronJob)', () => {
  const deployment = {
    spec: { template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'a', image: 'a:1' }, { name: 'b', image: 'b:1' }] } } },
  };
  const patched = applyStrategicMergePatch(
    deployment,
    { spec: { template: { spec: { containers: [{ name: 'b', image: 'b:2' }] } } } },
    builtinPatchSchema('Deployment'),
  ) as typeof deployment;
  assert.deepEqual(patched.spec.template.spec.containers, [
    { name: 'a', image: 'a:1' },
    { name: 'b', image: 'b:2' },
  ]);
  const cronJob = { spec: { jobTemplate: { spec: { template: { spec: { containers: [{ name: 'a', image: 'a:1', env: [{ name: 'X', value: '1' }] }] } } } } } };
  const patchedCron = applyStrategicMergePatch(
    cronJob,
    { spec: { jobTemplate: { spec: { template: { spec: { containers: [{ name: 'a', env: [{ name: 'Y', value: '2' }] }] } } } } } },
    builtinPatchSchema('CronJob'),
  ) as typeof cronJob;
  assert.deepEqual(patchedCron.spec.jobTemplate.spec.template.spec.containers[0]!.env, [
    { name: 'Y', value: '2' },
    { name: 'X', value: '1' },
  ]);
  // Without a schema entry the same list would be replaced wholesale.
  const replaced = applyStrategicMergePatch(deployment, { spec: { template: { spec: { containers: [{ name: 'b' }] } } } }, builtinPatchSchema('ConfigMap')) as typeof deployment;
  assert.deepEqual(replaced.spec.template.spec.containers, [{ name: 'b' }]);
});

test('SMP: status conditions merge by type', () => {
  const pod = { status: { conditions: [{ type: 'Ready', status: 'False' }, { type: 'Initialized', status: 'True' }] } };
  const result = applyStrategicMergePatch(pod, { status: { conditions: [{ type: 'Ready', status: 'True' }] } }, podPatchSchema);
  assert.deepEqual(result, { status: { conditions: [{ type: 'Ready', status: 'True' }, { type: 'Initialized', status: 'True' }] } });
});

test('SMP: malformed patches are rejected', () => {
  rejects(() => smp(basePod(), [1]), 400, /must be a JSON object/);
  rejects(() => smp(basePod(), { spec: { containers: [{ image: 'no-name' }] } }), 400, /does not contain declared merge key: name/);
  rejects(() => smp(basePod(), { spec: { containers: [{ name: 'web', $patch: 'merge' }] } }), 400, /merging lists cannot yet be specified/);
  rejects(() => smp(basePod(), { metadata: { labels: { $patch: 'explode' } } }), 400, /unknown patch type/);
  rejects(() => smp(basePod(), { spec: { '$setElementOrder/containers': 'web' } }), 400, /setElementOrder/);
  rejects(
    () => smp(basePod(), { spec: { '$setElementOrder/containers': [{ name: 'web' }, { name: 'sidecar' }], containers: [{ name: 'sidecar' }, { name: 'web' }] } }),
    400,
    /does not match its \$setElementOrder list/,
  );
  rejects(() => smp(basePod(), { metadata: { '$deleteFromPrimitiveList/finalizers': 'x' } }), 400, /primitive list/);
  rejects(() => smp({ metadata: { finalizers: [['a']] } }, { metadata: { finalizers: [['b']] } }), 422, /lists of lists/);
});

test('patchTypeOf maps Content-Type to the patch algorithm', () => {
  assert.equal(patchTypeOf('application/json-patch+json'), 'json');
  assert.equal(patchTypeOf('application/merge-patch+json; charset=utf-8'), 'merge');
  assert.equal(patchTypeOf('application/strategic-merge-patch+json'), 'strategic');
  assert.equal(patchTypeOf('application/apply-patch+yaml'), 'apply');
  assert.equal(patchTypeOf('application/json'), undefined);
});
