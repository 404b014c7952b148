import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { builtinApi, builtinKind } from '../../src/api/api-definitions.js';
import { builtinPatchFields, builtinPatchSchema, podPatchSchema } from '../../src/api/patch.js';
import { ApiError } from '../../src/api/errors.js';
import type { KubeObject } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { ALWAYS_PRESENT, FACTS_NAME, GENERATED_FILE, GENERATED_TYPES_FILE, SERVED_KINDS, findApiFacts, generateApiData, generateApiTypes, renderApiData, typeNames, type GeneratedApiData } from '../../scripts/gen-api.js';

/** dist/test/unit → the repository root */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const FACTS = findApiFacts(ROOT, process.env['BERTH_API_FACTS']);

describe('generated API data', () => {
  it('finds the facts from BERTH_API_FACTS, or in shared/ above the checkout', () => {
    if (process.env['BERTH_API_FACTS']) assert.ok(FACTS && existsSync(FACTS), `BERTH_API_FACTS names ${FACTS}, which does not exist`);
    const tree = mkdtempSync(path.join(tmpdir(), 'berth-facts-'));
    try {
      const checkout = path.join(tree, 'work', 'wt', 'repo');
      mkdirSync(checkout, { recursive: true });
      assert.equal(findApiFacts(checkout), undefined);
      const facts = path.join(tree, 'work', FACTS_NAME);
      mkdirSync(path.dirname(facts), { recursive: true });
      writeFileSync(facts, '{}');
      assert.equal(findApiFacts(checkout), facts, 'two levels up (../../shared)');
      assert.equal(findApiFacts(checkout, '../elsewhere.json'), path.join(tree, 'work', 'wt', 'elsewhere.json'), 'an explicit path wins, relative to the checkout');
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  // In CI (CI=true, as scripts/check-fresh-machine.sh sets) a missing facts file fails the check instead of skipping it.
  const factsMissing = !(FACTS && existsSync(FACTS));
  // .ci/run sets BERTH_API_FACTS_OPTIONAL only when no facts are reachable from its clone at all.
  const factsRequired = Boolean(process.env['CI']) && !process.env['BERTH_API_FACTS_OPTIONAL'];
  it('the committed file is what `npm run gen` makes from the facts', { skip: factsMissing && !factsRequired ? `no ${FACTS_NAME} above ${ROOT} (set BERTH_API_FACTS to check the generated file)` : false }, () => {
    assert.ok(!factsMissing, `no ${FACTS_NAME} above ${ROOT}: CI must see the API facts (set BERTH_API_FACTS)`);
    const facts = JSON.parse(readFileSync(FACTS!, 'utf8'));
    const committed = readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8');
    assert.ok(committed === renderApiData(generateApiData(facts, FACTS_NAME)), `${GENERATED_FILE} is stale: run npm run gen`);
  });

  it('the committed types are what `npm run gen` makes from the committed data', () => {
    // The data is checked against the facts above; the types follow from the data alone, so this
    // runs in every checkout.
    const data = JSON.parse(readFileSync(path.join(ROOT, GENERATED_FILE), 'utf8')) as GeneratedApiData;
    const committed = readFileSync(path.join(ROOT, GENERATED_TYPES_FILE), 'utf8');
    assert.ok(committed === generateApiTypes(data), `${GENERATED_TYPES_FILE} is stale: run npm run gen`);
  });

  it('names a definition by its short name, and every holder of a shared short name by its group (and version)', () => {
    const names = typeNames([
      'io.k8s.api.core.v1.Pod',
      'io.k8s.api.core.v1.EndpointPort',
      'io.k8s.api.discovery.v1.EndpointPort',
      'io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler',
      'io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler',
      'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ServiceReference',
      'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.ServiceReference',
      'io.k8s.apimachinery.pkg.api.resource.Quantity',
    ]);
    assert.deepEqual(Object.fromEntries(names), {
      'io.k8s.api.core.v1.Pod': 'Pod',
      'io.k8s.api.core.v1.EndpointPort': 'CoreEndpointPort',
      'io.k8s.api.discovery.v1.EndpointPort': 'DiscoveryEndpointPort',
      'io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler': 'AutoscalingV1HorizontalPodAutoscaler',
      'io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler': 'AutoscalingV2HorizontalPodAutoscaler',
      'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ServiceReference': 'ApiextensionsServiceReference',
      'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.ServiceReference': 'ApiregistrationServiceReference',
      'io.k8s.apimachinery.pkg.api.resource.Quantity': 'Quantity',
    });
    // The order the definitions come in does not matter.
    assert.deepEqual(new Map([...typeNames([...names.keys()].reverse())].sort()), new Map([...names].sort()));
  });

  it("holds a kind's metadata, and the fields Berth guarantees, as required", () => {
    const types = readFileSync(path.join(ROOT, GENERATED_TYPES_FILE), 'utf8');
    const shape = (name: string) => types.slice(types.indexOf(`export type ${name} = {`), types.indexOf('\n};', types.indexOf(`export type ${name} = {`)));
    assert.match(shape('Pod'), /\n  metadata: ObjectMeta;\n  spec: PodSpec;\n  status\?: PodStatus/);
    assert.match(shape('ConfigMap'), /\n  metadata: ObjectMeta;/);
    assert.match(shape('Container'), /\n  image: string;\n/);
    assert.match(shape('Container'), /\n  name: string;\n/, 'required by the facts');
    assert.match(shape('Node'), /\n  spec\?: NodeSpec;/, 'a Node may be stored without a spec');
    assert.match(types, /\nexport type Quantity = string;\n/);
    assert.match(types, /\nexport type IntOrString = number \| string;\n/);
    assert.match(types, /\nexport type Time = string \| null;\n/);
    assert.match(shape('PodCondition'), /\n  lastProbeTime\?: Time;/);
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

describe('fields the generated types hold as always present', () => {
  type Case = { kind: string; version?: string; object: Record<string, unknown>; field: string };
  const name = { name: 'probe' };
  const labels = { app: 'probe' };
  /** For each ALWAYS_PRESENT entry: an object of a served kind without that field, and the path validation must name. */
  const CASES: Record<string, Case> = {
    'io.k8s.api.core.v1.Pod.spec': { kind: 'Pod', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.core.v1.Container.image': { kind: 'Pod', object: { metadata: name, spec: { containers: [{ name: 'c' }] } }, field: 'spec.containers[0].image' },
    'io.k8s.api.core.v1.Service.spec': { kind: 'Service', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.core.v1.PersistentVolumeClaim.spec': { kind: 'PersistentVolumeClaim', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.core.v1.ReplicationController.spec': { kind: 'ReplicationController', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.core.v1.PodTemplate.template': { kind: 'PodTemplate', object: { metadata: name }, field: 'template' },
    'io.k8s.api.core.v1.PodTemplateSpec.spec': { kind: 'Deployment', object: { metadata: name, spec: { selector: { matchLabels: labels }, template: { metadata: { labels } } } }, field: 'spec.template.spec' },
    'io.k8s.api.apps.v1.Deployment.spec': { kind: 'Deployment', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.apps.v1.ReplicaSet.spec': { kind: 'ReplicaSet', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.apps.v1.ReplicaSetSpec.template': { kind: 'ReplicaSet', object: { metadata: name, spec: { selector: { matchLabels: labels } } }, field: 'spec.template' },
    'io.k8s.api.apps.v1.DaemonSet.spec': { kind: 'DaemonSet', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.apps.v1.StatefulSet.spec': { kind: 'StatefulSet', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.batch.v1.Job.spec': { kind: 'Job', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.batch.v1.CronJob.spec': { kind: 'CronJob', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.batch.v1.JobTemplateSpec.spec': { kind: 'CronJob', object: { metadata: name, spec: { schedule: '* * * * *', jobTemplate: { metadata: {} } } }, field: 'spec.jobTemplate.spec' },
    'io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler.spec': { kind: 'HorizontalPodAutoscaler', object: { metadata: name }, field: 'spec' },
    'io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler.spec': { kind: 'HorizontalPodAutoscaler', version: 'v1', object: { metadata: name }, field: 'spec' },
    'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService.spec': { kind: 'APIService', object: { metadata: { name: 'v1.example.com' } }, field: 'spec' },
  };

  it('has a case for every entry', () => {
    const entries = Object.entries(ALWAYS_PRESENT).flatMap(([definition, fields]) => fields.map((f) => `${definition}.${f}`));
    assert.deepEqual(Object.keys(CASES).sort(), entries.sort());
  });

  it('the registry refuses an object without the field, naming it', async () => {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => Date.parse('2026-01-01T00:00:00Z') } });
    for (const s of ALL_STRATEGIES) registry.register(s);
    const namespaces = ALL_STRATEGIES.find((s) => s.info.kind === 'Namespace')!;
    await registry.create(namespaces.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    for (const [entry, c] of Object.entries(CASES)) {
      const strategy = ALL_STRATEGIES.find((s) => s.info.kind === c.kind && !s.virtualCreate)!;
      const { group, version } = strategy.info;
      const served = c.version ?? version;
      let object: KubeObject = { apiVersion: group ? `${group}/${served}` : served, kind: c.kind, metadata: {}, ...c.object };
      if (served !== version) object = strategy.conversion!.toStored(object, served);
      await assert.rejects(
        registry.create(strategy.info, strategy.info.namespaced ? 'default' : undefined, object),
        (e: unknown) => e instanceof ApiError && e.reason === 'Invalid' && (e.details?.causes ?? []).some((cause) => cause.field === c.field || cause.field?.startsWith(`${c.field}.`) === true),
        entry,
      );
    }
  });
});
