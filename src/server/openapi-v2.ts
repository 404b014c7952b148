/**
 * The OpenAPI v2 (Swagger 2.0) document served at /openapi/v2, derived from the OpenAPI v3
 * group-version documents (openapi.ts) so the two can never disagree: the same generated
 * definitions of the built-in kinds and runtime CRD schemas, converted down.
 *
 * Who reads it: kubectl before 1.27 (and newer kubectl when v3 is unusable) fetches it as
 * protobuf before `apply`, `create --validate`, `explain` and `--dry-run=server`:
 *  - kube-openapi's pkg/util/proto parses every definition and fails the whole command on shapes it
 *    does not know: a `$ref` with a `type` or `properties` beside it, more than one type, an array
 *    without exactly one `items` schema, a primitive type other than string/number/integer/boolean.
 *    The conversion below never produces those.
 *  - kubectl's resource index finds a kind's definition by its `x-kubernetes-group-version-kind`
 *    extension (a list of {group, kind, version}); client-side validation then rejects fields a
 *    definition with `properties` does not list, so what v3 marks `x-kubernetes-preserve-unknown-fields`
 *    or `nullable` loses its properties here (as the apiserver does for CRDs) instead of turning
 *    accepted objects into client-side errors.
 *  - Client-side `apply` computes strategic merge patches from `x-kubernetes-patch-merge-key` and
 *    `x-kubernetes-patch-strategy` on list properties, kept as vendor extensions.
 *  - The query-parameter check (`dryRun`, `fieldValidation`) looks for the kind's PATCH operation by
 *    its `x-kubernetes-group-version-kind` (an object here) and the operation's own parameters.
 */
import { createHash } from 'node:crypto';
import type { JsonValue, SwaggerDocument, SwaggerOperation, SwaggerParameter, SwaggerPathItem, SwaggerSchema } from '../api/protobuf/openapi-v2.js';
import { encodeSwaggerDocument } from '../api/protobuf/openapi-v2.js';
import { groupVersionPath, openapiV3Group, type JsonSchema, type ServedKindSchema } from './openapi.js';

/** The media type kubectl up to 1.26 asks for (`@` is not valid in a media type, so newer clients send the dotted form). */
export const OPENAPI_V2_PROTOBUF_DEPRECATED = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
/** The media type newer clients ask for, and the Content-Type of every protobuf answer (as the apiserver does). */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

const V3_REF_PREFIX = '#/components/schemas/';
const V2_REF_PREFIX = '#/definitions/';

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function v2Ref(ref: string): string {
  return ref.startsWith(V3_REF_PREFIX) ? V2_REF_PREFIX + ref.slice(V3_REF_PREFIX.length) : ref;
}

const PRIMITIVE_TYPES = new Set(['string', 'number', 'integer', 'boolean']);
const V2_TYPES = new Set([...PRIMITIVE_TYPES, 'object', 'array']);

/**
 * The one v2 type a v3 `type` (or a `oneOf`/`anyOf` of plain types) can keep. A union of
 * primitives that includes string becomes `string`, as the apiserver publishes Quantity and
 * IntOrString: kubectl's validator lets any scalar through a string. Anything else stays untyped.
 */
function v2Type(schema: Obj): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return V2_TYPES.has(type) ? type : undefined;
  if (Array.isArray(type)) {
    const concrete = type.filter((t) => t !== 'null');
    return concrete.length === 1 && typeof concrete[0] === 'string' && V2_TYPES.has(concrete[0]) ? concrete[0] : undefined;
  }
  for (const key of ['oneOf', 'anyOf']) {
    const branches = schema[key];
    if (!Array.isArray(branches) || branches.length === 0) continue;
    const types = branches.map((b) => (isObject(b) && Object.keys(b).length === 1 ? b['type'] : undefined));
    if (types.every((t) => typeof t === 'string' && PRIMITIVE_TYPES.has(t)) && types.includes('string')) return 'string';
  }
  return undefined;
}

/** Keywords copied unchanged when their value has the v2 form. */
const STRING_KEYS = ['format', 'title', 'description', 'pattern'] as const;
const NUMBER_KEYS = ['multipleOf', 'maximum', 'minimum', 'maxLength', 'minLength', 'maxItems', 'minItems', 'maxProperties', 'minProperties'] as const;
const BOOLEAN_KEYS = ['exclusiveMaximum', 'exclusiveMinimum', 'uniqueItems', 'readOnly'] as const;

/**
 * One v3 schema as v2. proto3 cannot tell a zero number or false flag from an absent one, so those
 * are left out here too: the JSON and the protobuf answers then describe the same document.
 */
export function toV2Schema(input: unknown): SwaggerSchema {
  if (!isObject(input)) return {};
  let schema = input;
  // `allOf: [{$ref}]` is how v3 puts a description next to a reference; v2 allows it on $ref itself.
  const allOf = schema['allOf'];
  if (Array.isArray(allOf) && allOf.length === 1 && isObject(allOf[0]) && typeof allOf[0]['$ref'] === 'string' && schema['$ref'] === undefined) {
    schema = { ...schema, $ref: allOf[0]['$ref'] };
  }

  const out: SwaggerSchema = {};
  const extensions = Object.entries(schema).filter(([key, value]) => key.startsWith('x-') && value !== undefined);

  if (typeof schema['$ref'] === 'string') {
    // kube-openapi refuses a reference with a type or properties; a description is fine.
    out.$ref = v2Ref(schema['$ref']);
    if (typeof schema['description'] === 'string' && schema['description']) out.description = schema['description'];
    for (const [key, value] of extensions) out[key as `x-${string}`] = value as JsonValue;
    return out;
  }

  for (const key of STRING_KEYS) {
    const value = schema[key];
    if (typeof value === 'string' && value) out[key] = value;
  }
  for (const key of NUMBER_KEYS) {
    const value = schema[key];
    if (typeof value === 'number' && value !== 0 && Number.isFinite(value)) out[key] = value;
  }
  for (const key of BOOLEAN_KEYS) {
    if (schema[key] === true) out[key] = true;
  }
  if (schema['default'] !== undefined) out.default = schema['default'] as JsonValue;
  if (schema['example'] !== undefined) out.example = schema['example'] as JsonValue;
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) out.enum = schema['enum'] as JsonValue[];
  if (isObject(schema['externalDocs']) && typeof schema['externalDocs']['url'] === 'string') {
    const docs = schema['externalDocs'];
    out.externalDocs = typeof docs['description'] === 'string' ? { description: docs['description'], url: docs['url'] as string } : { url: docs['url'] as string };
  }
  const discriminator = schema['discriminator'];
  if (typeof discriminator === 'string' && discriminator) out.discriminator = discriminator;
  else if (isObject(discriminator) && typeof discriminator['propertyName'] === 'string') out.discriminator = discriminator['propertyName'];

  const type = v2Type(schema);
  if (type) out.type = type;

  const items = Array.isArray(schema['items']) ? (schema['items'].length === 1 ? schema['items'][0] : undefined) : schema['items'];
  if (isObject(items)) out.items = toV2Schema(items);
  if (isObject(schema['properties'])) {
    const properties: Record<string, SwaggerSchema> = {};
    for (const [name, sub] of Object.entries(schema['properties'])) properties[name] = toV2Schema(sub);
    out.properties = properties;
  }
  const additional = schema['additionalProperties'];
  if (typeof additional === 'boolean') out.additionalProperties = additional;
  else if (isObject(additional)) out.additionalProperties = toV2Schema(additional);
  if (Array.isArray(schema['required'])) {
    const nullable = new Set(Object.entries(isObject(schema['properties']) ? schema['properties'] : {}).filter(([, p]) => isObject(p) && p['nullable'] === true).map(([name]) => name));
    const required = schema['required'].filter((r): r is string => typeof r === 'string' && !nullable.has(r));
    if (required.length > 0) out.required = required;
  }
  for (const [key, value] of extensions) out[key as `x-${string}`] = value as JsonValue;

  // v2 has no null: kubectl would reject an explicit null against a typed schema, so a nullable
  // value is published untyped and unstructured, like the apiserver does for CRDs.
  if (schema['nullable'] === true) {
    delete out.type;
    delete out.items;
    delete out.properties;
  }
  // Listed properties make kubectl reject every other field, which these schemas accept.
  if (schema['x-kubernetes-preserve-unknown-fields'] === true) {
    delete out.items;
    delete out.properties;
  }
  // kube-openapi cannot parse an array without exactly one item schema.
  if (out.type === 'array' && !out.items) delete out.type;
  return out;
}

// ---------- operations ----------

function toV2Parameter(param: unknown): SwaggerParameter | undefined {
  if (!isObject(param) || typeof param['name'] !== 'string') return undefined;
  const where = param['in'];
  if (where !== 'query' && where !== 'path' && where !== 'header') return undefined;
  const out: SwaggerParameter = { name: param['name'], in: where };
  if (typeof param['description'] === 'string' && param['description']) out.description = param['description'];
  if (param['required'] === true) out.required = true;
  const schema = isObject(param['schema']) ? param['schema'] : {};
  if (typeof schema['type'] === 'string' && PRIMITIVE_TYPES.has(schema['type'])) out.type = schema['type'];
  if (schema['uniqueItems'] === true) out.uniqueItems = true;
  return out;
}

function toV2Parameters(params: unknown): SwaggerParameter[] {
  return Array.isArray(params) ? params.map(toV2Parameter).filter((p): p is SwaggerParameter => p !== undefined) : [];
}

/** The first schema of a v3 `content` map, with every media type it lists. */
function contentOf(value: unknown): { types: string[]; schema?: SwaggerSchema } {
  if (!isObject(value) || !isObject(value['content'])) return { types: [] };
  const entries = Object.entries(value['content']);
  const first = entries.find(([, media]) => isObject(media) && media['schema'] !== undefined);
  return { types: entries.map(([type]) => type), schema: first && toV2Schema((first[1] as Obj)['schema']) };
}

function toV2Operation(op: Obj): SwaggerOperation {
  const out: SwaggerOperation = { responses: {} };
  if (Array.isArray(op['tags'])) out.tags = op['tags'].filter((t): t is string => typeof t === 'string');
  if (typeof op['description'] === 'string' && op['description']) out.description = op['description'];
  if (typeof op['operationId'] === 'string') out.operationId = op['operationId'];

  const parameters = toV2Parameters(op['parameters']);
  const body = contentOf(op['requestBody']);
  if (body.schema) {
    out.consumes = body.types;
    const bodyParam: SwaggerParameter = { name: 'body', in: 'body', schema: body.schema };
    if (isObject(op['requestBody']) && op['requestBody']['required'] === true) bodyParam.required = true;
    parameters.unshift(bodyParam);
  }
  const produces = new Set<string>();
  if (isObject(op['responses'])) {
    for (const [code, response] of Object.entries(op['responses'])) {
      const content = contentOf(response);
      for (const t of content.types) produces.add(t);
      const description = isObject(response) && typeof response['description'] === 'string' ? response['description'] : '';
      out.responses[code] = content.schema ? { description, schema: content.schema } : { description };
    }
  }
  if (produces.size > 0) out.produces = [...produces];
  if (parameters.length > 0) out.parameters = parameters;
  out.schemes = ['https'];
  for (const [key, value] of Object.entries(op)) {
    if (key.startsWith('x-') && value !== undefined) out[key as `x-${string}`] = value as JsonValue;
  }
  return out;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'] as const;

function toV2PathItem(item: Obj): SwaggerPathItem {
  const out: SwaggerPathItem = {};
  for (const method of METHODS) {
    const op = item[method];
    if (isObject(op)) out[method] = toV2Operation(op);
  }
  const parameters = toV2Parameters(item['parameters']);
  if (parameters.length > 0) out.parameters = parameters;
  return out;
}

// ---------- the document ----------

type Gvk = { group: string; kind: string; version: string };
const GVK_EXTENSION = 'x-kubernetes-group-version-kind';

/** A definition met in two group-version documents keeps the first body and every GVK either names. */
function mergeDefinition(existing: SwaggerSchema, incoming: SwaggerSchema): SwaggerSchema {
  const a = existing[GVK_EXTENSION];
  const b = incoming[GVK_EXTENSION];
  if (!Array.isArray(a) || !Array.isArray(b)) return existing;
  const merged = [...(a as Gvk[])];
  for (const gvk of b as Gvk[]) {
    if (!merged.some((m) => m.group === gvk.group && m.version === gvk.version && m.kind === gvk.kind)) merged.push(gvk);
  }
  return { ...existing, [GVK_EXTENSION]: merged };
}

/**
 * The Swagger 2.0 document for everything served: the union of the v3 group-version documents,
 * converted. CRDs appear as soon as they are served.
 */
export function openapiV2Document(kinds: readonly ServedKindSchema[]): SwaggerDocument {
  const keys: string[] = [];
  for (const { info } of kinds) {
    const key = groupVersionPath(info.group, info.version);
    if (!keys.includes(key)) keys.push(key);
  }
  const definitions = new Map<string, SwaggerSchema>();
  const paths: Record<string, SwaggerPathItem> = {};
  let info = { title: 'Kubernetes', version: '' };
  for (const key of keys.sort()) {
    const v3 = openapiV3Group(key, kinds);
    if (!v3) continue;
    info = { title: v3.info.title, version: v3.info.version };
    for (const [name, schema] of Object.entries(v3.components.schemas)) {
      const converted = toV2Schema(schema);
      const existing = definitions.get(name);
      definitions.set(name, existing ? mergeDefinition(existing, converted) : converted);
    }
    for (const [path, item] of Object.entries(v3.paths)) paths[path] = toV2PathItem(item as JsonSchema);
  }
  const sortedDefinitions: Record<string, SwaggerSchema> = {};
  for (const name of [...definitions.keys()].sort()) sortedDefinitions[name] = definitions.get(name) as SwaggerSchema;
  const sortedPaths: Record<string, SwaggerPathItem> = {};
  for (const path of Object.keys(paths).sort()) sortedPaths[path] = paths[path] as SwaggerPathItem;
  return {
    swagger: '2.0',
    info,
    paths: sortedPaths,
    definitions: sortedDefinitions,
    securityDefinitions: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  };
}

// ---------- serving ----------

export type OpenAPIV2Format = 'json' | 'protobuf';

/**
 * Which form an Accept header asks for: the first acceptable media range in the client's order of
 * preference (q-values honoured, q=0 refused). No header means JSON; undefined means 406.
 */
export function negotiateOpenAPIV2Format(accept: string | undefined): OpenAPIV2Format | undefined {
  if (!accept || !accept.trim()) return 'json';
  const ranges = accept
    .split(',')
    .map((part, index) => {
      const [type = '', ...params] = part.split(';').map((s) => s.trim());
      const q = params.find((p) => /^q=/i.test(p));
      return { type: type.toLowerCase(), q: q ? Number(q.slice(2)) : 1, index };
    })
    .filter((r) => r.type && r.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { type } of ranges) {
    if (type === OPENAPI_V2_PROTOBUF || type === OPENAPI_V2_PROTOBUF_DEPRECATED) return 'protobuf';
    if (type === 'application/json' || type === 'application/*' || type === '*/*') return 'json';
  }
  return undefined;
}

/** A rendered answer: the bytes, their Content-Type and an ETag (quoted upper-case hex SHA-512, as the apiserver). */
export interface OpenAPIV2Body {
  body: Buffer;
  contentType: string;
  etag: string;
}

function etagOf(bytes: Uint8Array): string {
  return `"${createHash('sha512').update(bytes).digest('hex').toUpperCase()}"`;
}

/**
 * The last rendering per format, keyed by the JSON text: building the document is needed to know
 * whether it changed, but the protobuf encoding and hashes are reused while it has not.
 */
const lastRendered = new Map<OpenAPIV2Format, { json: string; rendered: OpenAPIV2Body }>();

/** The /openapi/v2 answer in `format` for what is served now. */
export function renderOpenAPIV2(kinds: readonly ServedKindSchema[], format: OpenAPIV2Format): OpenAPIV2Body {
  const document = openapiV2Document(kinds);
  const json = JSON.stringify(document);
  const cached = lastRendered.get(format);
  if (cached && cached.json === json) return cached.rendered;
  const body = format === 'json' ? Buffer.from(json) : Buffer.from(encodeSwaggerDocument(document));
  const rendered = { body, contentType: format === 'json' ? 'application/json' : OPENAPI_V2_PROTOBUF, etag: etagOf(body) };
  lastRendered.set(format, { json, rendered });
  return rendered;
}

/** Whether an If-None-Match header names `etag` (or is `*`). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim().replace(/^W\//, '');
    return t === '*' || t === etag;
  });
}
