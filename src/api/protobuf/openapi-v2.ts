/**
 * Swagger 2.0 (OpenAPI v2) documents as JSON values, and their protobuf encoding: gnostic's
 * `openapi.v2.Document` message (github.com/google/gnostic, openapiv2/OpenAPIv2.proto), which is
 * what kubectl and client-go ask for with
 * `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and unmarshal before
 * kube-openapi's pkg/util/proto parses the definitions.
 *
 * The encoder covers the subset of the Swagger 2.0 vocabulary the JSON types below allow; a key it
 * does not know is left out of the protobuf, so callers build documents from these types only.
 * Like gnostic, every value that is free-form in the spec (vendor extensions, `default`, `enum`,
 * `example`) travels as `Any{yaml}`: YAML text that consumers parse with a YAML 1.1 parser. We
 * write it in JSON-compatible flow style with every string double-quoted, so words such as `yes`
 * or `on` cannot turn into booleans on the way.
 */
import { MessageWriter } from './wire.js';

/** A JSON value, as found in `default`, `enum`, `example` and `x-` extensions. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * A Swagger 2.0 schema object. Keys starting with `x-` are vendor extensions; other keys outside
 * this list are not encoded.
 */
export interface SwaggerSchema {
  $ref?: string;
  format?: string;
  title?: string;
  description?: string;
  default?: JsonValue;
  multipleOf?: number;
  maximum?: number;
  exclusiveMaximum?: boolean;
  minimum?: number;
  exclusiveMinimum?: boolean;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  maxItems?: number;
  minItems?: number;
  uniqueItems?: boolean;
  maxProperties?: number;
  minProperties?: number;
  required?: string[];
  enum?: JsonValue[];
  additionalProperties?: SwaggerSchema | boolean;
  type?: string;
  items?: SwaggerSchema;
  allOf?: SwaggerSchema[];
  properties?: Record<string, SwaggerSchema>;
  discriminator?: string;
  readOnly?: boolean;
  externalDocs?: SwaggerExternalDocs;
  example?: JsonValue;
  [extension: `x-${string}`]: JsonValue | undefined;
}

export interface SwaggerExternalDocs {
  description?: string;
  url: string;
}

/** A body parameter (`in: body`): the request's whole payload, described by a schema. */
export interface SwaggerBodyParameter {
  name: string;
  in: 'body';
  description?: string;
  required?: boolean;
  schema: SwaggerSchema;
  [extension: `x-${string}`]: JsonValue | undefined;
}

/** A query, path, header or formData parameter: a primitive (or array of primitives) value. */
export interface SwaggerNonBodyParameter {
  name: string;
  in: 'query' | 'path' | 'header' | 'formData';
  description?: string;
  required?: boolean;
  type?: string;
  format?: string;
  uniqueItems?: boolean;
  enum?: JsonValue[];
  default?: JsonValue;
  [extension: `x-${string}`]: JsonValue | undefined;
}

export type SwaggerParameter = SwaggerBodyParameter | SwaggerNonBodyParameter;

export interface SwaggerResponse {
  description: string;
  schema?: SwaggerSchema;
}

export interface SwaggerOperation {
  tags?: string[];
  summary?: string;
  description?: string;
  operationId?: string;
  consumes?: string[];
  produces?: string[];
  parameters?: SwaggerParameter[];
  responses: Record<string, SwaggerResponse>;
  schemes?: string[];
  deprecated?: boolean;
  [extension: `x-${string}`]: JsonValue | undefined;
}

export type SwaggerMethod = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch';

export type SwaggerPathItem = { [M in SwaggerMethod]?: SwaggerOperation } & { parameters?: SwaggerParameter[] };

export interface SwaggerApiKeySecurity {
  type: 'apiKey';
  name: string;
  in: 'header' | 'query';
  description?: string;
}

export interface SwaggerDocument {
  swagger: '2.0';
  info: { title: string; version: string; description?: string };
  paths: Record<string, SwaggerPathItem>;
  definitions: Record<string, SwaggerSchema>;
  securityDefinitions?: Record<string, SwaggerApiKeySecurity>;
  security?: Array<Record<string, string[]>>;
}

// ---------- Any{yaml} ----------

/** `value` as YAML flow text that YAML 1.1 and 1.2 parsers and JSON parsers all read back identically. */
export function yamlText(value: JsonValue): string {
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(yamlText).join(', ')}]`;
  return `{${Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}: ${yamlText(v)}`)
    .join(', ')}}`;
}

/** gnostic `Any`: field 2 is the YAML text. */
function anyMessage(value: JsonValue): MessageWriter {
  return new MessageWriter().string(2, yamlText(value));
}

/** gnostic `NamedAny` entries for every `x-` key of `object`, in key order. */
function writeVendorExtensions(w: MessageWriter, field: number, object: object): void {
  for (const [key, value] of Object.entries(object)) {
    if (!key.startsWith('x-') || value === undefined) continue;
    w.message(field, new MessageWriter().string(1, key).message(2, anyMessage(value as JsonValue)));
  }
}

// ---------- proto3 scalar helpers (defaults are not written) ----------

function str(w: MessageWriter, field: number, value: string | undefined): void {
  if (value) w.string(field, value);
}
function bool(w: MessageWriter, field: number, value: boolean | undefined): void {
  if (value) w.varint(field, true);
}
function int64(w: MessageWriter, field: number, value: number | undefined): void {
  if (value) w.varint(field, BigInt(Math.trunc(value)));
}
function double(w: MessageWriter, field: number, value: number | undefined): void {
  if (value) w.double(field, value);
}
function strings(w: MessageWriter, field: number, values: string[] | undefined): void {
  for (const v of values ?? []) w.string(field, v);
}
function any(w: MessageWriter, field: number, value: JsonValue | undefined): void {
  if (value !== undefined) w.message(field, anyMessage(value));
}

// ---------- messages ----------

/** openapi.v2.Schema */
export function schemaMessage(s: SwaggerSchema): MessageWriter {
  const w = new MessageWriter();
  str(w, 1, s.$ref);
  str(w, 2, s.format);
  str(w, 3, s.title);
  str(w, 4, s.description);
  any(w, 5, s.default);
  double(w, 6, s.multipleOf);
  double(w, 7, s.maximum);
  bool(w, 8, s.exclusiveMaximum);
  double(w, 9, s.minimum);
  bool(w, 10, s.exclusiveMinimum);
  int64(w, 11, s.maxLength);
  int64(w, 12, s.minLength);
  str(w, 13, s.pattern);
  int64(w, 14, s.maxItems);
  int64(w, 15, s.minItems);
  bool(w, 16, s.uniqueItems);
  int64(w, 17, s.maxProperties);
  int64(w, 18, s.minProperties);
  strings(w, 19, s.required);
  for (const e of s.enum ?? []) w.message(20, anyMessage(e));
  if (s.additionalProperties !== undefined) {
    // AdditionalPropertiesItem is a oneof: `false` must be written to be told apart from "absent".
    const item = new MessageWriter();
    if (typeof s.additionalProperties === 'boolean') item.varint(2, s.additionalProperties);
    else item.message(1, schemaMessage(s.additionalProperties));
    w.message(21, item);
  }
  if (s.type !== undefined) w.message(22, new MessageWriter().string(1, s.type));
  if (s.items !== undefined) w.message(23, new MessageWriter().message(1, schemaMessage(s.items)));
  for (const sub of s.allOf ?? []) w.message(24, schemaMessage(sub));
  if (s.properties !== undefined) w.message(25, namedSchemas(s.properties));
  str(w, 26, s.discriminator);
  bool(w, 27, s.readOnly);
  if (s.externalDocs) w.message(29, externalDocsMessage(s.externalDocs));
  any(w, 30, s.example);
  writeVendorExtensions(w, 31, s);
  return w;
}

/** A message whose field 1 repeats NamedSchema{name, value} (Properties, Definitions). */
function namedSchemas(schemas: Record<string, SwaggerSchema>): MessageWriter {
  const w = new MessageWriter();
  for (const [name, schema] of Object.entries(schemas)) {
    w.message(1, new MessageWriter().string(1, name).message(2, schemaMessage(schema)));
  }
  return w;
}

function externalDocsMessage(docs: SwaggerExternalDocs): MessageWriter {
  const w = new MessageWriter();
  str(w, 1, docs.description);
  str(w, 2, docs.url);
  return w;
}

/**
 * Field numbers of the four non-body parameter messages. Header and path share one layout, query
 * and formData another (they add allowEmptyValue at 5).
 */
const NON_BODY_LAYOUT = {
  primitive: { required: 1, in: 2, description: 3, name: 4, type: 5, format: 6, default: 9, uniqueItems: 19, enum: 20, vendor: 22 },
  withEmpty: { required: 1, in: 2, description: 3, name: 4, type: 6, format: 7, default: 10, uniqueItems: 20, enum: 21, vendor: 23 },
} as const;
/** NonBodyParameter's oneof member per `in`, and its layout. */
const NON_BODY_MEMBER = {
  header: { field: 1, layout: NON_BODY_LAYOUT.primitive },
  formData: { field: 2, layout: NON_BODY_LAYOUT.withEmpty },
  query: { field: 3, layout: NON_BODY_LAYOUT.withEmpty },
  path: { field: 4, layout: NON_BODY_LAYOUT.primitive },
} as const;

/** openapi.v2.ParametersItem wrapping Parameter{body_parameter | non_body_parameter}. */
function parametersItemMessage(p: SwaggerParameter): MessageWriter {
  const parameter = new MessageWriter();
  if (p.in === 'body') {
    const body = new MessageWriter();
    str(body, 1, p.description);
    str(body, 2, p.name);
    str(body, 3, p.in);
    bool(body, 4, p.required);
    body.message(5, schemaMessage(p.schema));
    writeVendorExtensions(body, 6, p);
    parameter.message(1, body);
  } else {
    const { field, layout } = NON_BODY_MEMBER[p.in];
    const sub = new MessageWriter();
    bool(sub, layout.required, p.required);
    str(sub, layout.in, p.in);
    str(sub, layout.description, p.description);
    str(sub, layout.name, p.name);
    str(sub, layout.type, p.type);
    str(sub, layout.format, p.format);
    any(sub, layout.default, p.default);
    bool(sub, layout.uniqueItems, p.uniqueItems);
    for (const e of p.enum ?? []) sub.message(layout.enum, anyMessage(e));
    writeVendorExtensions(sub, layout.vendor, p);
    parameter.message(2, new MessageWriter().message(field, sub));
  }
  return new MessageWriter().message(1, parameter);
}

function operationMessage(op: SwaggerOperation): MessageWriter {
  const w = new MessageWriter();
  strings(w, 1, op.tags);
  str(w, 2, op.summary);
  str(w, 3, op.description);
  str(w, 5, op.operationId);
  strings(w, 6, op.produces);
  strings(w, 7, op.consumes);
  for (const p of op.parameters ?? []) w.message(8, parametersItemMessage(p));
  const responses = new MessageWriter();
  for (const [code, response] of Object.entries(op.responses)) {
    const r = new MessageWriter();
    str(r, 1, response.description);
    if (response.schema) r.message(2, new MessageWriter().message(1, schemaMessage(response.schema)));
    // NamedResponseValue{name, ResponseValue{response}}
    responses.message(1, new MessageWriter().string(1, code).message(2, new MessageWriter().message(1, r)));
  }
  w.message(9, responses);
  strings(w, 10, op.schemes);
  bool(w, 11, op.deprecated);
  writeVendorExtensions(w, 13, op);
  return w;
}

/** PathItem's field number per method. */
const METHOD_FIELD: Record<SwaggerMethod, number> = { get: 2, put: 3, post: 4, delete: 5, options: 6, head: 7, patch: 8 };

function pathItemMessage(item: SwaggerPathItem): MessageWriter {
  const w = new MessageWriter();
  for (const [method, field] of Object.entries(METHOD_FIELD) as Array<[SwaggerMethod, number]>) {
    const op = item[method];
    if (op) w.message(field, operationMessage(op));
  }
  for (const p of item.parameters ?? []) w.message(9, parametersItemMessage(p));
  return w;
}

/** The whole document as gnostic's `openapi.v2.Document` protobuf message. */
export function encodeSwaggerDocument(doc: SwaggerDocument): Uint8Array {
  const w = new MessageWriter();
  w.string(1, doc.swagger);
  const info = new MessageWriter();
  str(info, 1, doc.info.title);
  str(info, 2, doc.info.version);
  str(info, 3, doc.info.description);
  w.message(2, info);
  const paths = new MessageWriter();
  for (const [path, item] of Object.entries(doc.paths)) {
    paths.message(2, new MessageWriter().string(1, path).message(2, pathItemMessage(item)));
  }
  w.message(8, paths);
  w.message(9, namedSchemas(doc.definitions));
  for (const requirement of doc.security ?? []) {
    const r = new MessageWriter();
    for (const [name, scopes] of Object.entries(requirement)) {
      const array = new MessageWriter();
      strings(array, 1, scopes);
      r.message(1, new MessageWriter().string(1, name).message(2, array));
    }
    w.message(12, r);
  }
  if (doc.securityDefinitions) {
    const defs = new MessageWriter();
    for (const [name, sec] of Object.entries(doc.securityDefinitions)) {
      const apiKey = new MessageWriter();
      str(apiKey, 1, sec.type);
      str(apiKey, 2, sec.name);
      str(apiKey, 3, sec.in);
      str(apiKey, 4, sec.description);
      // SecurityDefinitionsItem oneof: api_key_security = 2
      defs.message(1, new MessageWriter().string(1, name).message(2, new MessageWriter().message(2, apiKey)));
    }
    w.message(13, defs);
  }
  return w.finish();
}
