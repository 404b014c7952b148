import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { builtinApi, builtinKind } from '../../src/api/api-definitions.js';
import { builtinPatchFields, builtinPatchSchema, podPatchSchema } from '../../src/api/patch.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { GENERATED_FILE, SERVED_KINDS, generateApiData, renderApiData, FACTS_NAME } from '../../scripts/gen-api.js';

/** dist/test/unit → the repository root */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const FACTS = path.resolve(ROOT, process.env['BERTH_API_FACTS'] ?? '../shared/data/kubernetes-api/openapi-v2-facts.json');

describe('generated API data', () => {
  it('the committed file is what `npm run gen` makes from the facts', { skip: existsSync(FACTS) ? false : `no API facts at ${FACTS} (set BERTH_API_FACTS to check the generated file)` }, () => {
    const facts = JSON.parse(readFileSync(FACTS, 'utf8'));
    const committed = readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8');
    assert.ok(committed === renderApiData(generateApiData(facts, FACTS_NAME)), `${GENERATED_FILE} is stale: run npm run gen`);
  });

  it('says how it was made', () => {
    const committed = JSON.parse(readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8')) as { _generated: string };
    assert.match(committed._generated, /scripts\/gen-api\.ts/);
    assert.match(committed._generated, /npm run gen/);
  });

  it('describes every served kind of the generator entry, and every built-in kind the registry serves', () => {
    for (const entry of SERVED_KINDS) assert.ok(builtinKind(entry.group, entry.version, entry.kind), `${entry.group}/${entry.version} ${entry.kind}`);
    for (const s of ALL_STRATEGIES) {
      for (const version of s.info.servedVersions ?? [s.info.version]) assert.ok(builtinKind(s.info.group, version, s.info.kind), `${s.info.group}/${version} ${s.info.kind}`);
    }
    assert.equal(builtinKind('policy', 'v1', 'PodDisruptionBudget')?.listDefinition, 'io.k8s.api.policy.v1.PodDisruptionBudgetList');
    assert.equal(builtinKind('batch', 'v1beta1', 'CronJob')?.definition, 'io.k8s.api.batch.v1.CronJob');
  });

  it('every reference resolves, and nothing unreachable is kept', () => {
    const { kinds, definitions } = builtinApi();
    const reachable = new Set<string>(['io.k8s.apimachinery.pkg.apis.meta.v1.Status', 'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions', 'io.k8s.apimachinery.pkg.apis.meta.v1.Patch', 'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent']);
    for (const k of kinds.values()) {
      reachable.add(k.definition);
      if (k.listDefinition) reachable.add(k.listDefinition);
    }
    const queue = [...reachable];
    while (queue.length) {
      const name = queue.pop()!;
      const schema = definitions.get(name);
      assert.ok(schema, `dangling reference ${name}`);
      for (const m of JSON.stringify(schema).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
        if (!reachable.has(m[1]!)) {
          reachable.add(m[1]!);
          queue.push(m[1]!);
        }
      }
    }
    assert.deepEqual([...definitions.keys()].filter((n) => !reachable.has(n)), []);
  });

  it('is read on first use, not when the control plane is loaded', () => {
    const script = `
      const api = await import(${JSON.stringify(new URL('../../src/api/api-definitions.js', import.meta.url).href)});
      await import(${JSON.stringify(new URL('../../src/control-plane.js', import.meta.url).href)});
      const before = api.builtinApiLoaded();
      api.builtinKindSchema('', 'v1', 'Pod');
      process.stdout.write(JSON.stringify({ before, after: api.builtinApiLoaded() }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out), { before: false, after: true });
  });
});

describe('strategic-merge metadata from the generated data', () => {
  it('Pod lists merge by their Kubernetes keys; tolerations and args are replaced', () => {
    const cases: Array<[string[], string | undefined, string | undefined]> = [
      [['spec', 'containers'], 'name', 'merge'],
      [['spec', 'initContainers'], 'name', 'merge'],
      [['spec', 'ephemeralContainers'], 'name', 'merge'],
      [['spec', 'containers', 'ports'], 'containerPort', 'merge'],
      [['spec', 'containers', 'env'], 'name', 'merge'],
      [['spec', 'containers', 'volumeMounts'], 'mountPath', 'merge'],
      [['spec', 'containers', 'volumeDevices'], 'devicePath', 'merge'],
      [['spec', 'volumes'], 'name', 'merge,retainKeys'],
      [['spec', 'imagePullSecrets'], 'name', 'merge'],
      [['spec', 'hostAliases'], 'ip', 'merge'],
      [['spec', 'resourceClaims'], 'name', 'merge,retainKeys'],
      [['status', 'conditions'], 'type', 'merge'],
      [['status', 'podIPs'], 'ip', 'merge'],
      [['metadata', 'ownerReferences'], 'uid', 'merge'],
      [['metadata', 'finalizers'], undefined, 'merge'],
    ];
    for (const [path, mergeKey, strategy] of cases) assert.deepEqual(podPatchSchema(path), { ...(mergeKey ? { mergeKey } : {}), strategy }, path.join('.'));
    for (const replaced of [['spec', 'tolerations'], ['spec', 'containers', 'args'], ['status', 'containerStatuses'], ['spec', 'nodeSelector'], ['metadata', 'labels', 'app']]) {
      assert.equal(podPatchSchema(replaced), undefined, replaced.join('.'));
    }
  });

  it('workloads reach the pod template through their own definitions', () => {
    assert.deepEqual(builtinPatchSchema('Deployment')(['spec', 'template', 'spec', 'containers', 'env']), { mergeKey: 'name', strategy: 'merge' });
    assert.deepEqual(builtinPatchSchema('Deployment')(['spec', 'strategy']), { strategy: 'retainKeys' });
    assert.deepEqual(builtinPatchSchema('CronJob')(['spec', 'jobTemplate', 'spec', 'template', 'spec', 'volumes']), { mergeKey: 'name', strategy: 'merge,retainKeys' });
    assert.deepEqual(builtinPatchSchema('StatefulSet')(['spec', 'template', 'metadata', 'ownerReferences']), { mergeKey: 'uid', strategy: 'merge' });
    assert.deepEqual(builtinPatchSchema('Node')(['status', 'addresses']), { mergeKey: 'type', strategy: 'merge' });
    assert.deepEqual(builtinPatchSchema('Node')(['spec', 'podCIDRs']), { strategy: 'merge' });
    assert.deepEqual(builtinPatchSchema('DaemonSet')(['status', 'conditions']), { mergeKey: 'type', strategy: 'merge' });
    // Kinds that were not in the hand-kept tables get theirs too.
    assert.deepEqual(builtinPatchSchema('PodDisruptionBudget')(['spec', 'selector']), { strategy: 'replace' });
    assert.deepEqual(builtinPatchSchema('PodDisruptionBudget')(['status', 'conditions']), { mergeKey: 'type', strategy: 'merge' });
  });

  it('map values are followed (a CRD schema nested under properties)', () => {
    const crd = builtinPatchSchema('CustomResourceDefinition');
    // `properties` is a map of schemas: its keys are names, not fields.
    assert.deepEqual(crd(['spec', 'versions', 'schema', 'openAPIV3Schema', 'properties', 'spec', 'x-kubernetes-validations']), { mergeKey: 'rule', strategy: 'merge' });
    assert.deepEqual(crd(['spec', 'versions', 'schema', 'openAPIV3Schema', 'x-kubernetes-validations']), { mergeKey: 'rule', strategy: 'merge' });
    // A CRD's status conditions carry no patch tags upstream: replaced.
    assert.equal(crd(['status', 'conditions']), undefined);
  });

  it('kinds without generated data get ObjectMeta only', () => {
    assert.deepEqual(builtinPatchSchema('Widget')(['metadata', 'ownerReferences']), { mergeKey: 'uid', strategy: 'merge' });
    assert.equal(builtinPatchSchema('Widget')(['spec', 'containers']), undefined);
    assert.deepEqual(builtinPatchFields('Widget').map((f) => f.path.join('.')).sort(), ['metadata.finalizers', 'metadata.ownerReferences']);
  });

  it('lists every entry of a kind, through recursive types without looping', () => {
    const pod = builtinPatchFields('Pod').map((f) => f.path.join('.'));
    for (const p of ['spec.containers', 'spec.containers.env', 'spec.volumes', 'metadata.ownerReferences', 'status.conditions']) assert.ok(pod.includes(p), p);
    assert.ok(builtinPatchFields('CustomResourceDefinition').length > 0);
  });
});
