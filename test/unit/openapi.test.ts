import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import {
  definitionNameFor,
  documentHash,
  groupVersionPath,
  openapiV3Group,
  openapiV3Root,
  servedKindSchemas,
  type JsonSchema,
  type OpenAPIV3Document,
  type ServedKindSchema,
} from '../../src/server/openapi.js';
import type { ResourceInfo } from '../../src/api/identities.js';

const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const WIDGET: ResourceInfo = {
  group: 'example.com',
  version: 'v1',
  kind: 'Widget',
  listKind: 'WidgetList',
  plural: 'widgets',
  singular: 'widget',
  namespaced: true,
  shortNames: [],
  verbs: ALL,
  subresources: ['status'],
  categories: [],
};
/** Served kinds without schemas of their own: built-ins take theirs from the generated data. */
const served = (infos: ResourceInfo[]): ServedKindSchema[] => infos.map((info) => ({ info }));
const RESOURCES = served([...BUILTIN_RESOURCES, WIDGET]);

function coreDoc(): OpenAPIV3Document {
  const doc = openapiV3Group('api/v1', RESOURCES);
  assert.ok(doc);
  return doc;
}

type Operation = JsonSchema & { parameters?: Array<{ name: string; in: string }> };

/** PATCH operations whose GVK extension names the kind: what kubectl's field-validation check scans. */
function patchOperationsFor(doc: OpenAPIV3Document, gvk: { group: string; version: string; kind: string }): Operation[] {
  const ops: Operation[] = [];
  for (const path of Object.values(doc.paths)) {
    const op = path['patch'] as Operation | undefined;
    if (!op) continue;
    const ext = op['x-kubernetes-group-version-kind'] as Record<string, string> | undefined;
    if (ext && ext['group'] === gvk.group && ext['version'] === gvk.version && ext['kind'] === gvk.kind) ops.push(op);
  }
  return ops;
}

/**
 * Walk the schema the way kubectl's OpenAPI v3 strategic-merge lookup does: properties by name,
 * resolving allOf[0] and $ref, stepping into items for lists. Returns the schema at the end and the
 * patch metadata seen on the last step.
 */
function walk(doc: OpenAPIV3Document, kindDefinition: string, path: string[]): { schema: JsonSchema; mergeKey?: string; strategy?: string } {
  const schemas = doc.components.schemas;
  const resolve = (s: JsonSchema): JsonSchema => {
    let cur = s;
    const allOf = cur['allOf'] as JsonSchema[] | undefined;
    if (allOf && allOf.length > 0) cur = allOf[0] as JsonSchema;
    const ref = cur['$ref'] as string | undefined;
    if (ref) {
      const target = schemas[ref.replace('#/components/schemas/', '')];
      assert.ok(target, `unresolvable ${ref}`);
      cur = target;
    }
    return cur;
  };
  let schema = schemas[kindDefinition] as JsonSchema;
  let mergeKey: string | undefined;
  let strategy: string | undefined;
  for (const key of path) {
    const props = schema['properties'] as Record<string, JsonSchema> | undefined;
    assert.ok(props && props[key], `unable to find api field "${key}"`);
    const prop = props[key] as JsonSchema;
    mergeKey = prop['x-kubernetes-patch-merge-key'] as string | undefined;
    strategy = prop['x-kubernetes-patch-strategy'] as string | undefined;
    schema = prop['items'] ? resolve(prop['items'] as JsonSchema) : resolve(prop);
  }
  return { schema, ...(mergeKey ? { mergeKey } : {}), ...(strategy ? { strategy } : {}) };
}

describe('openapiV3Root', () => {
  it('lists every served group-version with a hashed serverRelativeURL', () => {
    const root = openapiV3Root(RESOURCES);
    assert.deepEqual(Object.keys(root.paths).sort(), ['api/v1', 'apis/example.com/v1']);
    const core = root.paths['api/v1'];
    assert.match(core?.serverRelativeURL ?? '', /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
    assert.equal(core?.serverRelativeURL, `/openapi/v3/api/v1?hash=${documentHash(coreDoc())}`);
  });

  it('the hash changes when a document changes', () => {
    const before = openapiV3Root(RESOURCES).paths['apis/example.com/v1']?.serverRelativeURL;
    const openAPISchema = { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } };
    const withSchema = RESOURCES.map((k) => (k.info === WIDGET ? { info: WIDGET, openAPISchema } : k));
    const after = openapiV3Root(withSchema).paths['apis/example.com/v1']?.serverRelativeURL;
    assert.notEqual(before, after);
  });
});

describe('openapiV3Group', () => {
  it('returns undefined for paths we do not serve', () => {
    assert.equal(openapiV3Group('apis/apps/v1', RESOURCES), undefined);
    assert.equal(openapiV3Group('nonsense', RESOURCES), undefined);
    assert.equal(openapiV3Group('api/v2', RESOURCES), undefined);
  });

  it('is an OpenAPI 3.0 document with paths and component schemas', () => {
    const doc = coreDoc();
    assert.equal(doc.openapi, '3.0.0');
    assert.ok(doc.info.version);
    assert.ok(Object.keys(doc.paths).length > 0);
    assert.ok(doc.components.schemas['io.k8s.api.core.v1.Pod']);
    assert.ok(doc.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']);
  });

  it('has the REST paths of namespaced and cluster-scoped kinds', () => {
    const paths = Object.keys(coreDoc().paths);
    for (const p of [
      '/api/v1/namespaces/{namespace}/pods',
      '/api/v1/namespaces/{namespace}/pods/{name}',
      '/api/v1/namespaces/{namespace}/pods/{name}/status',
      '/api/v1/pods',
      '/api/v1/nodes',
      '/api/v1/nodes/{name}',
      '/api/v1/nodes/{name}/status',
      '/api/v1/namespaces',
      '/api/v1/namespaces/{name}',
      '/api/v1/namespaces/{name}/status',
    ]) {
      assert.ok(paths.includes(p), p);
    }
  });

  it("every kind's PATCH operations advertise fieldValidation inline (kubectl's server-side validation check)", () => {
    const doc = coreDoc();
    for (const info of BUILTIN_RESOURCES.filter((r) => r.verbs.includes('patch'))) {
      const ops = patchOperationsFor(doc, { group: info.group, version: info.version, kind: info.kind });
      assert.ok(ops.length >= 1, info.kind);
      for (const op of ops) {
        assert.ok(op.parameters?.some((p) => p.name === 'fieldValidation' && p.in === 'query'), info.kind);
      }
    }
    const crd = openapiV3Group('apis/example.com/v1', RESOURCES);
    assert.ok(crd);
    assert.equal(patchOperationsFor(crd, { group: 'example.com', version: 'v1', kind: 'Widget' }).length, 2);
  });

  it('operations carry x-kubernetes-action and a GVK object', () => {
    const item = coreDoc().paths['/api/v1/namespaces/{namespace}/pods/{name}'] as Record<string, JsonSchema>;
    assert.equal(item['get']?.['x-kubernetes-action'], 'get');
    assert.equal(item['put']?.['x-kubernetes-action'], 'put');
    assert.equal(item['delete']?.['x-kubernetes-action'], 'delete');
    assert.deepEqual(item['patch']?.['x-kubernetes-group-version-kind'], { group: '', version: 'v1', kind: 'Pod' });
    assert.equal(item['get']?.['operationId'], 'readCoreV1NamespacedPod');
    const collection = coreDoc().paths['/api/v1/namespaces/{namespace}/pods'] as Record<string, JsonSchema>;
    assert.equal(collection['get']?.['x-kubernetes-action'], 'list');
    assert.equal(collection['post']?.['x-kubernetes-action'], 'post');
    assert.equal(collection['delete']?.['x-kubernetes-action'], 'deletecollection');
  });

  it('built-ins accept strategic merge patch; dotted (CRD) groups do not', () => {
    const podPatch = (coreDoc().paths['/api/v1/namespaces/{namespace}/pods/{name}'] as Record<string, JsonSchema>)['patch'] as JsonSchema;
    const content = (podPatch['requestBody'] as { content: Record<string, unknown> }).content;
    assert.deepEqual(Object.keys(content).sort(), [
      'application/apply-patch+yaml',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
    ]);
    const crd = openapiV3Group('apis/example.com/v1', RESOURCES);
    const widgetPatch = (crd?.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}'] as Record<string, JsonSchema>)['patch'] as JsonSchema;
    const crdContent = (widgetPatch['requestBody'] as { content: Record<string, unknown> }).content;
    assert.equal('application/strategic-merge-patch+json' in crdContent, false);
  });

  it('kind and list schemas are tagged with x-kubernetes-group-version-kind', () => {
    const schemas = coreDoc().components.schemas;
    assert.deepEqual(schemas['io.k8s.api.core.v1.Pod']?.['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Pod', version: 'v1' }]);
    assert.deepEqual(schemas['io.k8s.api.core.v1.PodList']?.['x-kubernetes-group-version-kind'], [
      { group: '', kind: 'PodList', version: 'v1' },
    ]);
    assert.deepEqual(schemas['io.k8s.api.core.v1.Node']?.['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Node', version: 'v1' }]);
    assert.deepEqual(schemas['io.k8s.api.core.v1.Namespace']?.['x-kubernetes-group-version-kind'], [
      { group: '', kind: 'Namespace', version: 'v1' },
    ]);
  });

  it('every $ref resolves inside the document', () => {
    for (const doc of [coreDoc(), openapiV3Group('apis/example.com/v1', RESOURCES)]) {
      assert.ok(doc);
      const refs = JSON.stringify(doc).match(/"\$ref":"#\/components\/schemas\/[^"]+"/g) ?? [];
      for (const r of refs) {
        const name = r.slice('"$ref":"#/components/schemas/'.length, -1);
        assert.ok(doc.components.schemas[name], name);
      }
    }
  });

  it('Pod lists carry strategic-merge keys and strategies', () => {
    const doc = coreDoc();
    const pod = 'io.k8s.api.core.v1.Pod';
    const cases: Array<[string[], string | undefined, string | undefined]> = [
      [['spec', 'containers'], 'name', 'merge'],
      [['spec', 'initContainers'], 'name', 'merge'],
      [['spec', 'volumes'], 'name', 'merge,retainKeys'],
      [['spec', 'imagePullSecrets'], 'name', 'merge'],
      [['spec', 'containers', 'ports'], 'containerPort', 'merge'],
      [['spec', 'containers', 'env'], 'name', 'merge'],
      [['spec', 'containers', 'volumeMounts'], 'mountPath', 'merge'],
      [['spec', 'tolerations'], undefined, undefined],
      [['status', 'conditions'], 'type', 'merge'],
      [['status', 'podIPs'], 'ip', 'merge'],
      [['metadata', 'ownerReferences'], 'uid', 'merge'],
      [['metadata', 'finalizers'], undefined, 'merge'],
    ];
    for (const [path, mergeKey, strategy] of cases) {
      const got = walk(doc, pod, path);
      assert.equal(got.mergeKey, mergeKey, path.join('.'));
      assert.equal(got.strategy, strategy, path.join('.'));
    }
    assert.equal(walk(doc, 'io.k8s.api.core.v1.Node', ['status', 'conditions']).mergeKey, 'type');
    assert.equal(walk(doc, 'io.k8s.api.core.v1.Node', ['status', 'addresses']).mergeKey, 'type');
  });

  it('nested objects a typical manifest carries are modeled (no lookup dead ends)', () => {
    const doc = coreDoc();
    const pod = 'io.k8s.api.core.v1.Pod';
    for (const path of [
      ['spec', 'containers', 'securityContext', 'capabilities'],
      ['spec', 'containers', 'resources', 'limits'],
      ['spec', 'containers', 'livenessProbe', 'httpGet'],
      ['spec', 'containers', 'env', 'valueFrom', 'secretKeyRef'],
      ['spec', 'affinity', 'nodeAffinity', 'requiredDuringSchedulingIgnoredDuringExecution', 'nodeSelectorTerms', 'matchExpressions'],
      ['spec', 'volumes', 'configMap', 'items'],
      ['spec', 'volumes', 'projected', 'sources', 'serviceAccountToken'],
      ['spec', 'securityContext', 'seccompProfile'],
      ['metadata', 'labels'],
    ]) {
      walk(doc, pod, path);
    }
  });

  it('unregistered kinds get a permissive schema that preserves unknown fields', () => {
    const other: ResourceInfo = { ...WIDGET, group: 'other.io', kind: 'Gadget', listKind: 'GadgetList', plural: 'gadgets', singular: 'gadget' };
    const doc = openapiV3Group('apis/other.io/v1', served([other]));
    assert.ok(doc);
    const schema = doc.components.schemas[definitionNameFor('other.io', 'v1', 'Gadget')];
    assert.equal(schema?.['x-kubernetes-preserve-unknown-fields'], true);
    assert.ok((schema?.['properties'] as Record<string, unknown>)['metadata']);
  });

  it('names components the way the apiserver does', () => {
    assert.equal(definitionNameFor('', 'v1', 'Pod'), 'io.k8s.api.core.v1.Pod');
    assert.equal(definitionNameFor('apps', 'v1', 'Deployment'), 'io.k8s.api.apps.v1.Deployment');
    assert.equal(definitionNameFor('example.com', 'v1', 'Widget'), 'com.example.v1.Widget');
    assert.equal(groupVersionPath('', 'v1'), 'api/v1');
    assert.equal(groupVersionPath('apps', 'v1'), 'apis/apps/v1');
  });

  it("a kind with its own schema (a CRD's) is published with it, the standard header and a list", () => {
    const openAPISchema = { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } };
    const doc = openapiV3Group('apis/example.com/v1', [{ info: WIDGET, openAPISchema }]);
    const widget = doc?.components.schemas['com.example.v1.Widget'];
    const props = widget?.['properties'] as Record<string, JsonSchema>;
    assert.deepEqual(props['spec'], openAPISchema.properties.spec);
    assert.ok(props['metadata'] && props['apiVersion'] && props['kind']);
    assert.deepEqual(doc?.components.schemas['com.example.v1.WidgetList']?.['x-kubernetes-group-version-kind'], [{ group: 'example.com', kind: 'WidgetList', version: 'v1' }]);
  });

  it('reads kinds through the registry: a strategy carrying openAPISchema is published with it', () => {
    const openAPISchema = { type: 'object', properties: { spec: { type: 'object', properties: { colour: { type: 'string' } } } } };
    const registry = {
      resources: () => [...BUILTIN_RESOURCES, WIDGET],
      lookup: (group: string) => (group === 'example.com' ? { openAPISchema: (version: string) => (version === 'v1' ? openAPISchema : undefined) } : undefined),
    };
    const kinds = servedKindSchemas(registry);
    assert.deepEqual(kinds.find((k) => k.info === WIDGET)?.openAPISchema, openAPISchema);
    assert.equal(kinds.find((k) => k.info.kind === 'Pod')?.openAPISchema, undefined);
    const widget = openapiV3Group('apis/example.com/v1', kinds)?.components.schemas['com.example.v1.Widget'];
    assert.deepEqual((widget?.['properties'] as Record<string, JsonSchema>)['spec'], openAPISchema.properties.spec);
  });

  it('every built-in kind and version the registry serves is described by generated data, with its list', () => {
    for (const strategy of ALL_STRATEGIES) {
      for (const version of strategy.info.servedVersions ?? [strategy.info.version]) {
        const info = { ...strategy.info, version };
        const doc = openapiV3Group(groupVersionPath(info.group, version), served([info]));
        const tagged = Object.entries(doc?.components.schemas ?? {}).filter(([, s]) => JSON.stringify(s['x-kubernetes-group-version-kind']) === JSON.stringify([{ group: info.group, kind: info.kind, version }]));
        assert.equal(tagged.length, 1, `${info.group}/${version} ${info.kind}`);
        const [, schema] = tagged[0]!;
        assert.equal(schema['x-kubernetes-preserve-unknown-fields'], undefined, `${info.kind} is not permissive`);
        assert.ok((schema['properties'] as Record<string, unknown>)['metadata'], info.kind);
        const list = Object.values(doc?.components.schemas ?? {}).find((s) => JSON.stringify(s['x-kubernetes-group-version-kind']) === JSON.stringify([{ group: info.group, kind: info.listKind, version }]));
        assert.ok(list, `${info.kind} list`);
      }
    }
  });

  it('built-in kinds in dotted groups accept strategic merge patch too, as in Kubernetes', () => {
    const lease = ALL_STRATEGIES.find((s) => s.info.kind === 'Lease')!.info;
    const doc = openapiV3Group('apis/coordination.k8s.io/v1', served([lease]));
    const patch = (doc?.paths['/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}'] as Record<string, JsonSchema>)['patch'] as JsonSchema;
    assert.ok('application/strategic-merge-patch+json' in (patch['requestBody'] as { content: Record<string, unknown> }).content);
  });
});
