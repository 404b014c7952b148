import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import YAML from 'yaml';
import { encodeSwaggerDocument, yamlText, type SwaggerDocument, type SwaggerSchema } from '../../src/api/protobuf/openapi-v2.js';
import { MessageWriter, WIRE_TYPE, readFields } from '../../src/api/protobuf/wire.js';
import { BUILTIN_RESOURCES } from '../../src/registry/resource-info.js';
import {
  OPENAPI_V2_PROTOBUF,
  etagMatches,
  negotiateOpenAPIV2Format,
  openapiV2Document,
  renderOpenAPIV2,
  toV2Schema,
} from '../../src/server/openapi-v2.js';
import { groupVersionPath, openapiV3Group, type ServedKindSchema } from '../../src/server/openapi.js';
import type { ResourceInfo } from '../../src/api/identities.js';

// ---------- an independent reader of gnostic's openapi.v2 messages ----------

/** field number → [name, type, repeated]; types are scalars or message names below. */
type FieldSpec = [string, string, boolean?];
const MESSAGES: Record<string, Record<number, FieldSpec>> = {
  Document: { 1: ['swagger', 'string'], 2: ['info', 'Info'], 8: ['paths', 'Paths'], 9: ['definitions', 'Named'], 12: ['security', 'SecurityRequirement', true], 13: ['securityDefinitions', 'NamedSecurity'] },
  Info: { 1: ['title', 'string'], 2: ['version', 'string'], 3: ['description', 'string'] },
  Paths: { 2: ['path', 'NamedPathItem', true] },
  NamedPathItem: { 1: ['name', 'string'], 2: ['value', 'PathItem'] },
  PathItem: { 2: ['get', 'Operation'], 3: ['put', 'Operation'], 4: ['post', 'Operation'], 5: ['delete', 'Operation'], 6: ['options', 'Operation'], 7: ['head', 'Operation'], 8: ['patch', 'Operation'], 9: ['parameters', 'ParametersItem', true], 10: ['ext', 'NamedAny', true] },
  Operation: { 1: ['tags', 'string', true], 2: ['summary', 'string'], 3: ['description', 'string'], 5: ['operationId', 'string'], 6: ['produces', 'string', true], 7: ['consumes', 'string', true], 8: ['parameters', 'ParametersItem', true], 9: ['responses', 'Responses'], 10: ['schemes', 'string', true], 11: ['deprecated', 'bool'], 13: ['ext', 'NamedAny', true] },
  ParametersItem: { 1: ['parameter', 'Parameter'] },
  Parameter: { 1: ['body', 'BodyParameter'], 2: ['nonBody', 'NonBodyParameter'] },
  BodyParameter: { 1: ['description', 'string'], 2: ['name', 'string'], 3: ['in', 'string'], 4: ['required', 'bool'], 5: ['schema', 'Schema'], 6: ['ext', 'NamedAny', true] },
  NonBodyParameter: { 1: ['header', 'PrimitiveParam'], 2: ['formData', 'QueryParam'], 3: ['query', 'QueryParam'], 4: ['path', 'PrimitiveParam'] },
  QueryParam: { 1: ['required', 'bool'], 2: ['in', 'string'], 3: ['description', 'string'], 4: ['name', 'string'], 6: ['type', 'string'], 7: ['format', 'string'], 10: ['default', 'Any'], 20: ['uniqueItems', 'bool'], 21: ['enum', 'Any', true], 23: ['ext', 'NamedAny', true] },
  PrimitiveParam: { 1: ['required', 'bool'], 2: ['in', 'string'], 3: ['description', 'string'], 4: ['name', 'string'], 5: ['type', 'string'], 6: ['format', 'string'], 9: ['default', 'Any'], 19: ['uniqueItems', 'bool'], 20: ['enum', 'Any', true], 22: ['ext', 'NamedAny', true] },
  Responses: { 1: ['code', 'NamedResponseValue', true] },
  NamedResponseValue: { 1: ['name', 'string'], 2: ['value', 'ResponseValue'] },
  ResponseValue: { 1: ['response', 'Response'] },
  Response: { 1: ['description', 'string'], 2: ['schema', 'SchemaItem'] },
  SchemaItem: { 1: ['schema', 'Schema'] },
  Named: { 1: ['entry', 'NamedSchema', true] },
  NamedSchema: { 1: ['name', 'string'], 2: ['value', 'Schema'] },
  Schema: {
    1: ['$ref', 'string'], 2: ['format', 'string'], 3: ['title', 'string'], 4: ['description', 'string'], 5: ['default', 'Any'],
    6: ['multipleOf', 'double'], 7: ['maximum', 'double'], 8: ['exclusiveMaximum', 'bool'], 9: ['minimum', 'double'], 10: ['exclusiveMinimum', 'bool'],
    11: ['maxLength', 'int64'], 12: ['minLength', 'int64'], 13: ['pattern', 'string'], 14: ['maxItems', 'int64'], 15: ['minItems', 'int64'],
    16: ['uniqueItems', 'bool'], 17: ['maxProperties', 'int64'], 18: ['minProperties', 'int64'], 19: ['required', 'string', true], 20: ['enum', 'Any', true],
    21: ['additionalProperties', 'AdditionalPropertiesItem'], 22: ['type', 'TypeItem'], 23: ['items', 'ItemsItem'], 24: ['allOf', 'Schema', true],
    25: ['properties', 'Named'], 26: ['discriminator', 'string'], 27: ['readOnly', 'bool'], 30: ['example', 'Any'], 31: ['ext', 'NamedAny', true],
  },
  AdditionalPropertiesItem: { 1: ['schema', 'Schema'], 2: ['boolean', 'bool'] },
  TypeItem: { 1: ['value', 'string', true] },
  ItemsItem: { 1: ['schema', 'Schema', true] },
  Any: { 2: ['yaml', 'string'] },
  NamedAny: { 1: ['name', 'string'], 2: ['value', 'Any'] },
  SecurityRequirement: { 1: ['entry', 'NamedStringArray', true] },
  NamedStringArray: { 1: ['name', 'string'], 2: ['value', 'StringArray'] },
  StringArray: { 1: ['value', 'string', true] },
  NamedSecurity: { 1: ['entry', 'NamedSecurityItem', true] },
  NamedSecurityItem: { 1: ['name', 'string'], 2: ['value', 'SecurityItem'] },
  SecurityItem: { 2: ['apiKey', 'ApiKeySecurity'] },
  ApiKeySecurity: { 1: ['type', 'string'], 2: ['name', 'string'], 3: ['in', 'string'], 4: ['description', 'string'] },
};

type Decoded = Record<string, any>;

function decode(message: string, bytes: Uint8Array): Decoded {
  const spec = MESSAGES[message];
  assert.ok(spec, `no spec for ${message}`);
  const out: Decoded = {};
  for (const field of readFields(bytes)) {
    const fieldSpec = spec[field.number];
    assert.ok(fieldSpec, `${message} has no field ${field.number}`);
    const [name, type, repeated] = fieldSpec;
    let value: unknown;
    if (type === 'string') {
      assert.equal(field.wireType, WIRE_TYPE.lengthDelimited);
      value = new TextDecoder().decode(field.bytes);
    } else if (type === 'bool' || type === 'int64') {
      assert.equal(field.wireType, WIRE_TYPE.varint);
      value = type === 'bool' ? field.value !== 0n : Number(BigInt.asIntN(64, field.value));
    } else if (type === 'double') {
      assert.equal(field.wireType, WIRE_TYPE.fixed64);
      value = new DataView(field.bytes.buffer, field.bytes.byteOffset, 8).getFloat64(0, true);
    } else {
      assert.equal(field.wireType, WIRE_TYPE.lengthDelimited);
      value = decode(type, field.bytes);
    }
    if (repeated) (out[name] ??= []).push(value);
    else out[name] = value;
  }
  return out;
}

/** Any{yaml} read with a YAML 1.1 parser, as kube-openapi does. */
const anyValue = (a: Decoded): unknown => YAML.parse(a['yaml'], { version: '1.1' });

function extensions(target: Decoded, ext: Decoded[] | undefined): void {
  for (const e of ext ?? []) target[e['name']] = anyValue(e['value']);
}

function schemaJson(s: Decoded): Decoded {
  const out: Decoded = {};
  for (const [key, value] of Object.entries(s)) {
    if (key === 'ext') extensions(out, value);
    else if (key === 'default' || key === 'example') out[key] = anyValue(value);
    else if (key === 'enum') out[key] = value.map(anyValue);
    else if (key === 'type') out[key] = (assert.equal(value.value.length, 1), value.value[0]);
    else if (key === 'items') out[key] = (assert.equal(value.schema.length, 1), schemaJson(value.schema[0]));
    else if (key === 'allOf') out[key] = value.map(schemaJson);
    else if (key === 'properties') out[key] = namedSchemas(value);
    else if (key === 'additionalProperties') out[key] = 'boolean' in value ? value.boolean : schemaJson(value.schema);
    else out[key] = value;
  }
  return out;
}

function namedSchemas(n: Decoded): Decoded {
  const out: Decoded = {};
  for (const e of n['entry'] ?? []) out[e['name']] = schemaJson(e['value'] ?? {});
  return out;
}

function parameterJson(p: Decoded): Decoded {
  const inner = p['parameter'];
  if (inner['body']) {
    const { ext, schema, ...rest } = inner['body'];
    const out: Decoded = { ...rest, schema: schemaJson(schema) };
    extensions(out, ext);
    return out;
  }
  const sub = Object.values(inner['nonBody'])[0] as Decoded;
  const { ext, ...rest } = sub;
  const out: Decoded = { ...rest };
  extensions(out, ext);
  return out;
}

function operationJson(op: Decoded): Decoded {
  const { ext, parameters, responses, ...rest } = op;
  const out: Decoded = { ...rest, responses: {} };
  for (const r of responses?.code ?? []) {
    const response = r.value.response;
    out['responses'][r.name] = response.schema ? { description: response.description, schema: schemaJson(response.schema.schema) } : { description: response.description };
  }
  if (parameters) out['parameters'] = parameters.map(parameterJson);
  extensions(out, ext);
  return out;
}

function documentJson(bytes: Uint8Array): Decoded {
  const d = decode('Document', bytes);
  const paths: Decoded = {};
  for (const p of d['paths']?.path ?? []) {
    const item: Decoded = {};
    for (const [key, value] of Object.entries(p.value as Decoded)) {
      if (key === 'parameters') item[key] = (value as Decoded[]).map(parameterJson);
      else item[key] = operationJson(value as Decoded);
    }
    paths[p.name] = item;
  }
  const securityDefinitions: Decoded = {};
  for (const e of d['securityDefinitions']?.entry ?? []) securityDefinitions[e.name] = e.value.apiKey;
  const security = (d['security'] ?? []).map((r: Decoded) => Object.fromEntries(r['entry'].map((e: Decoded) => [e['name'], e['value']['value'] ?? []])));
  return { swagger: d['swagger'], info: d['info'], paths, definitions: namedSchemas(d['definitions']), securityDefinitions, security };
}

/** JSON key order is not part of the document; compare with keys sorted. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Decoded)[k])]));
  return value;
}

// ---------- fixtures ----------

const WIDGET: ResourceInfo = {
  group: 'example.com',
  version: 'v1',
  kind: 'Widget',
  listKind: 'WidgetList',
  plural: 'widgets',
  singular: 'widget',
  namespaced: true,
  shortNames: [],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: [],
};

const APPS_RESOURCES: ResourceInfo[] = ['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet'].map((kind) => ({
  ...WIDGET,
  group: 'apps',
  kind,
  listKind: `${kind}List`,
  plural: `${kind.toLowerCase()}s`,
  singular: kind.toLowerCase(),
}));
const RESOURCES = [...BUILTIN_RESOURCES.filter((r) => r.group !== 'apps'), ...APPS_RESOURCES];
/** Served kinds without schemas of their own: built-ins take theirs from the generated data. */
const served = (infos: ResourceInfo[]): ServedKindSchema[] => infos.map((info) => ({ info }));

// ---------- tests ----------

describe('OpenAPI v2 protobuf encoding', () => {
  it('decodes back to the same document as the JSON', () => {
    const doc = openapiV2Document(served(RESOURCES));
    const decoded = documentJson(encodeSwaggerDocument(doc));
    assert.deepEqual(canonical(decoded), canonical(JSON.parse(JSON.stringify(doc))));
  });

  it('writes what proto3 needs to see: oneof false, empty messages, negative int64, doubles', () => {
    const schema: SwaggerSchema = { type: 'object', additionalProperties: false, properties: {}, minimum: -1.5, maxLength: 7 };
    const doc: SwaggerDocument = { swagger: '2.0', info: { title: 't', version: 'v' }, paths: {}, definitions: { X: schema } };
    const decoded = documentJson(encodeSwaggerDocument(doc));
    assert.deepEqual(decoded['definitions']['X'], { type: 'object', additionalProperties: false, properties: {}, minimum: -1.5, maxLength: 7 });
    const w = new MessageWriter().varint(1, -2);
    const [field] = readFields(w.finish());
    assert.equal(field?.wireType === WIRE_TYPE.varint && BigInt.asIntN(64, field.value), -2n);
  });

  it('extension text survives a YAML 1.1 parser: strings that look like booleans stay strings', () => {
    const value = { on: 'yes', list: ['no', 'off', '1', 'a: b', 'line\nbreak', 'quote"'], n: 3, f: 1.5, t: true, nil: null };
    assert.deepEqual(YAML.parse(yamlText(value), { version: '1.1' }), value);
    assert.deepEqual(JSON.parse(yamlText(value)), value);
  });
});

describe('OpenAPI v2 document', () => {
  it('every v3 component is a v2 definition, kinds keep their GVK, v3 paths are v2 paths', () => {
    const doc = openapiV2Document(served(RESOURCES));
    const gvs = [...new Set(RESOURCES.map((r) => groupVersionPath(r.group, r.version)))];
    let kinds = 0;
    for (const gv of gvs) {
      const v3 = openapiV3Group(gv, served(RESOURCES));
      assert.ok(v3, gv);
      for (const [name, schema] of Object.entries(v3.components.schemas)) {
        const v2 = doc.definitions[name];
        assert.ok(v2, `${name} (${gv}) is missing from v2`);
        const gvk = schema['x-kubernetes-group-version-kind'];
        if (gvk) {
          kinds++;
          assert.deepEqual(v2['x-kubernetes-group-version-kind'], gvk, name);
        }
      }
      for (const path of Object.keys(v3.paths)) assert.ok(doc.paths[path], `path ${path} is missing from v2`);
    }
    for (const r of RESOURCES) {
      const found = Object.values(doc.definitions).some((d) =>
        (d['x-kubernetes-group-version-kind'] as Array<Record<string, string>> | undefined)?.some((g) => g['group'] === r.group && g['version'] === r.version && g['kind'] === r.kind),
      );
      assert.ok(found, `${r.group}/${r.version} ${r.kind} has no definition with its GVK`);
    }
    assert.ok(kinds >= RESOURCES.length * 2, 'kinds and their lists');
  });

  it('has nothing kube-openapi refuses: $ref alone (or with a description), one type, arrays with one item schema', () => {
    const doc = openapiV2Document(served([...RESOURCES, WIDGET]));
    const json = JSON.stringify(doc);
    assert.doesNotMatch(json, /#\/components\/schemas\//);
    const check = (s: SwaggerSchema, where: string): void => {
      for (const key of Object.keys(s)) {
        assert.ok(
          ['$ref', 'format', 'title', 'description', 'default', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxProperties', 'minProperties', 'required', 'enum', 'additionalProperties', 'type', 'items', 'allOf', 'properties', 'discriminator', 'readOnly', 'externalDocs', 'example'].includes(key) || key.startsWith('x-'),
          `${where}: ${key} is not Swagger 2.0`,
        );
      }
      if (s.$ref) {
        assert.ok(s.$ref.startsWith('#/definitions/') && doc.definitions[s.$ref.slice('#/definitions/'.length)], `${where}: dangling ${s.$ref}`);
        assert.equal(s.type, undefined, where);
        assert.equal(s.properties, undefined, where);
      }
      if (s.type !== undefined) assert.ok(['string', 'number', 'integer', 'boolean', 'object', 'array'].includes(s.type), `${where}: type ${s.type}`);
      if (s.type === 'array') assert.ok(s.items, `${where}: array without items`);
      if (s.items) check(s.items, `${where}[]`);
      for (const [name, p] of Object.entries(s.properties ?? {})) check(p, `${where}.${name}`);
      if (typeof s.additionalProperties === 'object') check(s.additionalProperties, `${where}{}`);
    };
    for (const [name, s] of Object.entries(doc.definitions)) check(s, name);
  });

  it('keeps strategic merge metadata and turns v3-only shapes into what kubectl accepts', () => {
    const doc = openapiV2Document(served(RESOURCES));
    const spec = doc.definitions['io.k8s.api.core.v1.PodSpec'];
    const containers = spec?.properties?.['containers'];
    assert.equal(containers?.['x-kubernetes-patch-merge-key'], 'name');
    assert.equal(containers?.['x-kubernetes-patch-strategy'], 'merge');
    assert.deepEqual(containers?.items, { $ref: '#/definitions/io.k8s.api.core.v1.Container' });
    assert.deepEqual(doc.definitions['io.k8s.apimachinery.pkg.api.resource.Quantity']?.type, 'string');
    assert.deepEqual(doc.definitions['io.k8s.apimachinery.pkg.util.intstr.IntOrString']?.type, 'string');
    const meta = doc.definitions['io.k8s.api.core.v1.Pod']?.properties?.['metadata'];
    assert.deepEqual(meta, { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' });

    assert.deepEqual(
      toV2Schema({
        type: 'object',
        required: ['a', 'n'],
        properties: {
          a: { type: 'string', nullable: true, default: 'x' },
          n: { type: 'object', nullable: true, properties: { z: { type: 'string' } } },
          p: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { q: { type: 'string' } } },
          arr: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'string' } },
          io: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
          any: { oneOf: [{ type: 'object' }, { type: 'string' }] },
          ref: { allOf: [{ $ref: '#/components/schemas/X' }], default: {}, description: 'd' },
          multi: { type: ['string', 'null'] },
        },
      }),
      {
        type: 'object',
        properties: {
          a: { default: 'x' },
          n: {},
          p: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          arr: { 'x-kubernetes-preserve-unknown-fields': true },
          io: { type: 'string', 'x-kubernetes-int-or-string': true },
          any: {},
          ref: { $ref: '#/definitions/X', description: 'd' },
          multi: { type: 'string' },
        },
      },
    );
  });

  it('PATCH operations carry the GVK object and their own fieldValidation and dryRun parameters', () => {
    const doc = openapiV2Document(served(RESOURCES));
    const patch = doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}']?.patch;
    assert.ok(patch);
    assert.deepEqual(patch['x-kubernetes-group-version-kind'], { group: 'apps', version: 'v1', kind: 'Deployment' });
    assert.equal(patch['x-kubernetes-action'], 'patch');
    const names = patch.parameters?.map((p) => `${p.in}:${p.name}`);
    assert.deepEqual(names, ['body:body', 'query:dryRun', 'query:fieldManager', 'query:fieldValidation', 'query:force']);
    assert.ok(patch.consumes?.includes('application/strategic-merge-patch+json'));
    assert.deepEqual(patch.responses['200'], { description: 'OK', schema: { $ref: '#/definitions/io.k8s.api.apps.v1.Deployment' } });
  });

  it('a kind served at runtime with its own schema (a CRD) appears with its schema and GVK', () => {
    const gadget: ResourceInfo = { ...WIDGET, group: 'v2unit.example.com', kind: 'Gadget', listKind: 'GadgetList', plural: 'gadgets', singular: 'gadget' };
    const before = openapiV2Document(served([...RESOURCES, gadget]));
    assert.equal(before.definitions['com.example.v2unit.v1.Gadget']?.properties, undefined, 'no schema: permissive, no properties');
    const openAPISchema = { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer', minimum: 1 } } } } };
    const after = openapiV2Document([...served(RESOURCES), { info: gadget, openAPISchema }]);
    const def = after.definitions['com.example.v2unit.v1.Gadget'];
    assert.deepEqual(def?.['x-kubernetes-group-version-kind'], [{ group: 'v2unit.example.com', kind: 'Gadget', version: 'v1' }]);
    assert.deepEqual(def?.properties?.['spec'], { type: 'object', properties: { size: { type: 'integer', minimum: 1 } } });
    assert.ok(after.definitions['com.example.v2unit.v1.GadgetList']);
    assert.ok(after.paths['/apis/v2unit.example.com/v1/namespaces/{namespace}/gadgets/{name}']?.patch);
  });
});

describe('serving /openapi/v2', () => {
  it('negotiates JSON or protobuf from Accept', () => {
    assert.equal(negotiateOpenAPIV2Format(undefined), 'json');
    assert.equal(negotiateOpenAPIV2Format('application/json'), 'json');
    assert.equal(negotiateOpenAPIV2Format('*/*'), 'json');
    assert.equal(negotiateOpenAPIV2Format('application/com.github.proto-openapi.spec.v2@v1.0+protobuf'), 'protobuf');
    assert.equal(negotiateOpenAPIV2Format('application/com.github.proto-openapi.spec.v2.v1.0+protobuf, application/json'), 'protobuf');
    assert.equal(negotiateOpenAPIV2Format('application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf'), 'protobuf');
    assert.equal(negotiateOpenAPIV2Format('application/com.github.proto-openapi.spec.v2.v1.0+protobuf;q=0, application/json'), 'json');
    assert.equal(negotiateOpenAPIV2Format('text/html'), undefined);
  });

  it('renders each form with its own ETag, which changes when the schemas do', () => {
    const json = renderOpenAPIV2(served(RESOURCES), 'json');
    const pb = renderOpenAPIV2(served(RESOURCES), 'protobuf');
    assert.equal(pb.contentType, OPENAPI_V2_PROTOBUF);
    assert.equal(json.contentType, 'application/json');
    assert.notEqual(json.etag, pb.etag);
    assert.equal(renderOpenAPIV2(served(RESOURCES), 'protobuf').etag, pb.etag);
    const more = renderOpenAPIV2(served([...RESOURCES, WIDGET]), 'protobuf');
    assert.notEqual(more.etag, pb.etag);
    assert.ok(etagMatches(pb.etag, pb.etag));
    assert.ok(etagMatches(`W/"x", ${pb.etag}`, pb.etag));
    assert.ok(etagMatches('*', pb.etag));
    assert.ok(!etagMatches(more.etag, pb.etag));
    assert.ok(!etagMatches(undefined, pb.etag));
  });
});
