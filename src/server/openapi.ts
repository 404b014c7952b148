/**
 * OpenAPI v3 documents: the /openapi/v3 index and one document per group-version
 * (/openapi/v3/api/v1, /openapi/v3/apis/<group>/<version>), built from the served kinds: a
 * built-in kind's schema comes from the generated API data (src/api/api-definitions.ts, made by
 * scripts/gen-api.ts from the Kubernetes API facts), a CRD's from its strategy's `openAPISchema`.
 *
 * What kubectl 1.32 reads from them, and therefore what this module must get right:
 *  - Server-side field validation support. Before create/apply/replace with --validate=strict (the
 *    default), kubectl looks in the group-version document for a PATCH operation whose
 *    `x-kubernetes-group-version-kind` extension (an object {group, version, kind}) names the kind and
 *    whose own `parameters` list (inline, not $ref) contains `fieldValidation`. Found: kubectl sends
 *    `?fieldValidation=Strict` and leaves validation to us. Not found: it falls back to client-side
 *    validation against /openapi/v2 (protobuf; openapi-v2.ts converts these documents to it).
 *    kubectl may hit any PATCH operation of the kind first (map order), so every one (the object and
 *    its status subresource) carries the parameter.
 *  - Strategic-merge patch metadata for client-side `kubectl apply` on an existing object:
 *    `x-kubernetes-patch-merge-key` / `x-kubernetes-patch-strategy` on list properties, found by
 *    walking components.schemas from the schema tagged with `x-kubernetes-group-version-kind`
 *    (resolving `allOf[0]` and `$ref`). The generated data keeps every field and extension the API
 *    publishes, with references wrapped in `allOf` as the apiserver does.
 *  - `kubectl explain` renders these schemas. The facts carry no descriptions; the few shown here
 *    are the project's own words.
 *
 * Kinds without generated data or a schema of their own get a permissive schema that keeps
 * unknown fields.
 */
import { createHash } from 'node:crypto';
import { builtinApi, builtinKind } from '../api/api-definitions.js';
import type { KindStrategy } from '../registry/strategy.js';
import { SERVED_GIT_VERSION } from './discovery.js';
import type { ResourceInfo } from '../api/identities.js';

export type JsonSchema = { [key: string]: unknown };

/** Content-Type for the JSON OpenAPI v3 documents (index and group-versions). */
export const OPENAPI_V3_CONTENT_TYPE = 'application/json';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';

function componentRef(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

/** A property that holds a named schema; wrapped in allOf like the apiserver does, so siblings stay legal. */
function named(name: string, description?: string): JsonSchema {
  return description ? { allOf: [componentRef(name)], description } : { allOf: [componentRef(name)] };
}

/** An object we do not model: accepted as-is. */
const opaque = (): JsonSchema => ({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });

/** Standard apiVersion/kind/metadata header of a top-level kind. */
function typeMeta(): Record<string, JsonSchema> {
  return {
    apiVersion: { type: 'string', description: 'The versioned schema of this representation of the object.' },
    kind: { type: 'string', description: 'The REST resource this object represents.' },
    metadata: named(`${META}.ObjectMeta`, "The object's metadata."),
  };
}

/** What `kubectl explain <kind>` says about each built-in kind, in the project's words. */
const KIND_DESCRIPTIONS: Record<string, string> = {
  Pod: 'A group of containers that run together on one node.',
  Node: 'A machine that runs pods.',
  Namespace: 'A scope for the names of namespaced objects.',
  Event: 'A report of something that happened to an object.',
  ConfigMap: 'Configuration data for pods to consume.',
  Secret: 'Sensitive data for pods to consume.',
  PersistentVolumeClaim: 'A request for storage that pods can mount.',
  ResourceQuota: 'Limits what the objects of one namespace may use in total.',
  LimitRange: 'Default and bounding requests and limits for the containers, pods and claims of one namespace.',
  Deployment: 'Declarative updates of a replicated set of pods.',
  ReplicaSet: 'Keeps a number of identical pods running.',
  DaemonSet: 'Runs one pod on each eligible node.',
  StatefulSet: 'Pods with stable names and storage, created and removed in order.',
  ControllerRevision: 'An immutable snapshot of a workload template.',
  Job: 'Pods that run to completion.',
  CronJob: 'Jobs created on a schedule.',
  Lease: 'A time-limited claim, used for heartbeats and leader election.',
  MutatingWebhookConfiguration: 'Webhooks that may change objects before they are stored.',
  ValidatingWebhookConfiguration: 'Webhooks that may refuse objects before they are stored.',
  CustomResourceDefinition: 'Adds a resource kind to the API.',
  PodDisruptionBudget: 'Limits how many pods of a set voluntary disruptions may take down at once.',
  NetworkPolicy: 'Which network traffic the pods it selects may receive and send.',
};

// ---------- served kinds ----------

/** A served kind as the documents see it: its REST identity and, for a CRD, the schema its strategy carries. */
export interface ServedKindSchema {
  info: ResourceInfo;
  /** the object's schema at info.version when the kind has no generated data (a CRD's openAPIV3Schema) */
  openAPISchema?: JsonSchema;
}

/** What servedKindSchemas reads: the registry's served resources and their strategies. */
export interface KindSource {
  resources(): ResourceInfo[];
  lookup(group: string, plural: string): Pick<KindStrategy, 'openAPISchema'> | undefined;
}

/** Every served kind and version with the schema its strategy carries. */
export function servedKindSchemas(registry: KindSource): ServedKindSchema[] {
  return registry.resources().map((info) => {
    const schema = registry.lookup(info.group, info.plural)?.openAPISchema?.(info.version);
    return schema ? { info, openAPISchema: schema } : { info };
  });
}

/**
 * The apiserver's component naming: io.k8s.api.<group>.<version>.<Kind> for built-in groups
 * (core for ''), reversed domain for dotted groups (example.com -> com.example.v1.Widget).
 */
export function definitionNameFor(group: string, version: string, kind: string): string {
  if (group === '') return `io.k8s.api.core.${version}.${kind}`;
  if (!group.includes('.')) return `io.k8s.api.${group}.${version}.${kind}`;
  if (group.endsWith('.k8s.io')) return `io.k8s.api.${group.slice(0, -'.k8s.io'.length).split('.')[0]}.${version}.${kind}`;
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

/** A kind's own schema with the standard header added where it left it out. */
function withTypeMeta(schema: JsonSchema): JsonSchema {
  const props = (schema['properties'] as Record<string, JsonSchema> | undefined) ?? {};
  return { ...schema, type: 'object', properties: { ...typeMeta(), ...props } };
}

// ---------- documents ----------

/** `api/v1` or `apis/<group>/<version>`: the key under /openapi/v3 and the document's path suffix. */
export function groupVersionPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

function parseGroupVersionPath(path: string): { group: string; version: string } | undefined {
  const parts = path.replace(/^\/+|\/+$/g, '').split('/');
  if (parts.length === 2 && parts[0] === 'api' && parts[1]) return { group: '', version: parts[1] };
  if (parts.length === 3 && parts[0] === 'apis' && parts[1] && parts[2]) return { group: parts[1], version: parts[2] };
  return undefined;
}

function permissiveKindSchema(info: ResourceInfo): JsonSchema {
  return {
    type: 'object',
    description: `${info.kind} (no published schema; unknown fields are preserved).`,
    properties: { ...typeMeta(), spec: opaque(), status: opaque() },
    'x-kubernetes-preserve-unknown-fields': true,
  };
}

interface ServedKind {
  info: ResourceInfo;
  definitionName: string;
  listDefinitionName: string;
  strategicMergePatch: boolean;
}

function gvkTag(group: string, version: string, kind: string): JsonSchema[] {
  return [{ group, kind, version }];
}

function describeKinds(kinds: readonly ServedKindSchema[]): { served: ServedKind[]; components: Map<string, JsonSchema> } {
  const components = new Map<string, JsonSchema>();
  const served: ServedKind[] = [];
  const api = builtinApi();
  for (const { info, openAPISchema } of kinds) {
    const builtin = openAPISchema ? undefined : builtinKind(info.group, info.version, info.kind);
    const listKind = builtin?.listKind ?? info.listKind ?? `${info.kind}List`;
    if (builtin) {
      const definitionName = builtin.definition;
      const listDefinitionName = builtin.listDefinition ?? definitionName.slice(0, definitionName.length - info.kind.length) + listKind;
      const description = KIND_DESCRIPTIONS[info.kind];
      components.set(definitionName, {
        ...(description ? { description } : {}),
        ...(api.definitions.get(definitionName) as JsonSchema),
        'x-kubernetes-group-version-kind': gvkTag(info.group, info.version, info.kind),
      });
      const list = builtin.listDefinition && api.definitions.get(builtin.listDefinition);
      if (list) components.set(listDefinitionName, { ...(list as JsonSchema), 'x-kubernetes-group-version-kind': gvkTag(info.group, info.version, listKind) });
      served.push({ info, definitionName, listDefinitionName, strategicMergePatch: true });
      continue;
    }
    const definitionName = definitionNameFor(info.group, info.version, info.kind);
    const listDefinitionName = definitionName.slice(0, definitionName.length - info.kind.length) + listKind;
    components.set(definitionName, {
      ...withTypeMeta(openAPISchema ?? permissiveKindSchema(info)),
      'x-kubernetes-group-version-kind': gvkTag(info.group, info.version, info.kind),
    });
    components.set(listDefinitionName, {
      type: 'object',
      description: `A list of ${info.kind} objects.`,
      properties: {
        apiVersion: typeMeta()['apiVersion'],
        items: { type: 'array', items: named(definitionName) },
        kind: typeMeta()['kind'],
        metadata: named(`${META}.ListMeta`),
      },
      required: ['items'],
      'x-kubernetes-group-version-kind': gvkTag(info.group, info.version, listKind),
    });
    // Custom resources take JSON and merge patches only, as in Kubernetes.
    served.push({ info, definitionName, listDefinitionName, strategicMergePatch: false });
  }
  return { served, components };
}

function collectRefs(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) collectRefs(v, into);
    return;
  }
  if (!value || typeof value !== 'object') return;
  for (const [key, v] of Object.entries(value)) {
    if (key === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
      into.add(v.slice('#/components/schemas/'.length));
    } else {
      collectRefs(v, into);
    }
  }
}

// --- operations ---

type Param = JsonSchema;

function queryParam(name: string, schema: JsonSchema, description: string): Param {
  return { name, in: 'query', description, schema: { ...schema, uniqueItems: true } };
}

const P = {
  pretty: queryParam('pretty', { type: 'string' }, 'Indent the JSON answer.'),
  dryRun: queryParam('dryRun', { type: 'string' }, 'When present, modifications are not persisted. Valid value: All.'),
  fieldManager: queryParam('fieldManager', { type: 'string' }, 'Name of the actor making the change, used by field management.'),
  fieldValidation: queryParam(
    'fieldValidation',
    { type: 'string' },
    'How to treat unknown or duplicate fields in the request body: Ignore, Warn, or Strict (reject the request).',
  ),
  force: queryParam('force', { type: 'boolean' }, 'Force apply requests to take ownership of conflicting fields.'),
  allowWatchBookmarks: queryParam('allowWatchBookmarks', { type: 'boolean' }, 'Ask for BOOKMARK watch events.'),
  continue: queryParam('continue', { type: 'string' }, 'Token from a previous paginated list call.'),
  fieldSelector: queryParam('fieldSelector', { type: 'string' }, 'Restrict the list by fields.'),
  labelSelector: queryParam('labelSelector', { type: 'string' }, 'Restrict the list by labels.'),
  limit: queryParam('limit', { type: 'integer' }, 'Maximum number of items to return.'),
  resourceVersion: queryParam('resourceVersion', { type: 'string' }, 'Resource version constraint for the read.'),
  resourceVersionMatch: queryParam('resourceVersionMatch', { type: 'string' }, 'How resourceVersion is applied to list calls.'),
  sendInitialEvents: queryParam('sendInitialEvents', { type: 'boolean' }, 'Stream synthetic ADDED events for the current state first.'),
  timeoutSeconds: queryParam('timeoutSeconds', { type: 'integer' }, 'Timeout for the list/watch call.'),
  watch: queryParam('watch', { type: 'boolean' }, 'Watch for changes and return them as a stream of events.'),
  gracePeriodSeconds: queryParam('gracePeriodSeconds', { type: 'integer' }, 'Seconds before the object should be deleted.'),
  orphanDependents: queryParam('orphanDependents', { type: 'boolean' }, 'Deprecated: use propagationPolicy.'),
  propagationPolicy: queryParam('propagationPolicy', { type: 'string' }, 'Orphan, Background or Foreground.'),
};

const LIST_PARAMS = [
  P.allowWatchBookmarks,
  P.continue,
  P.fieldSelector,
  P.labelSelector,
  P.limit,
  P.resourceVersion,
  P.resourceVersionMatch,
  P.sendInitialEvents,
  P.timeoutSeconds,
  P.watch,
];
const DELETE_PARAMS = [P.dryRun, P.gracePeriodSeconds, P.orphanDependents, P.propagationPolicy];

function pathParam(name: string, description: string): Param {
  return { name, in: 'path', description, required: true, schema: { type: 'string', uniqueItems: true } };
}

function jsonContent(schemaName: string, extraTypes: string[] = []): JsonSchema {
  const content: Record<string, JsonSchema> = {};
  for (const type of ['application/json', 'application/yaml', ...extraTypes]) content[type] = { schema: componentRef(schemaName) };
  return content;
}

function response(schemaName: string, description = 'OK', extraTypes: string[] = []): JsonSchema {
  return { description, content: jsonContent(schemaName, extraTypes) };
}

const UNAUTHORIZED = { description: 'Unauthorized' };

const PATCH_TYPES_BASE = ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json'];

function groupWord(group: string): string {
  if (group === '') return 'Core';
  return group
    .split(/[.\-]/)
    .filter(Boolean)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

interface OperationContext {
  kind: ServedKind;
  tag: string;
  gvk: { group: string; version: string; kind: string };
  idStem: string;
}

function operation(
  ctx: OperationContext,
  spec: { verb: string; action: string; description: string; parameters?: Param[]; requestBody?: JsonSchema; responses: JsonSchema; idSuffix?: string },
): JsonSchema {
  const op: JsonSchema = {
    tags: [ctx.tag],
    description: spec.description,
    operationId: `${spec.verb}${ctx.idStem}${spec.idSuffix ?? ''}`,
  };
  if (spec.parameters && spec.parameters.length > 0) op['parameters'] = spec.parameters;
  if (spec.requestBody) op['requestBody'] = spec.requestBody;
  op['responses'] = { ...spec.responses, '401': UNAUTHORIZED };
  op['x-kubernetes-action'] = spec.action;
  op['x-kubernetes-group-version-kind'] = ctx.gvk;
  return op;
}

function bodyOf(schemaName: string): JsonSchema {
  return { content: { '*/*': { schema: componentRef(schemaName) } }, required: true };
}

function patchBody(strategicMergePatch: boolean): JsonSchema {
  const types = strategicMergePatch ? [...PATCH_TYPES_BASE, 'application/strategic-merge-patch+json'] : PATCH_TYPES_BASE;
  const content: Record<string, JsonSchema> = {};
  for (const t of types) content[t] = { schema: componentRef(`${META}.Patch`) };
  return { content, required: true };
}

function buildPaths(served: ServedKind[]): Record<string, JsonSchema> {
  const paths: Record<string, JsonSchema> = {};
  for (const kind of served) {
    const { info } = kind;
    const verbs = new Set(info.verbs);
    const prefix = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
    const scopeWord = info.namespaced ? 'Namespaced' : '';
    const ctx: OperationContext = {
      kind,
      tag: `${info.group === '' ? 'core' : info.group.replace(/\./g, '_')}_${info.version}`,
      gvk: { group: info.group, version: info.version, kind: info.kind },
      idStem: `${groupWord(info.group)}${capitalize(info.version)}${scopeWord}${info.kind}`,
    };
    const ns = info.namespaced ? '/namespaces/{namespace}' : '';
    const nsParams = info.namespaced ? [pathParam('namespace', 'the namespace of the object')] : [];
    const nameParam = pathParam('name', `name of the ${info.kind}`);
    const obj = kind.definitionName;
    const listDef = kind.listDefinitionName;

    // Collection: list / create / deletecollection.
    const collection: JsonSchema = {};
    if (verbs.has('list')) {
      collection['get'] = operation(ctx, {
        verb: 'list',
        action: 'list',
        description: `list or watch objects of kind ${info.kind}`,
        parameters: LIST_PARAMS,
        responses: { '200': response(listDef, 'OK', ['application/json;stream=watch']) },
      });
    }
    if (verbs.has('create')) {
      collection['post'] = operation(ctx, {
        verb: 'create',
        action: 'post',
        description: `create a ${info.kind}`,
        parameters: [P.dryRun, P.fieldManager, P.fieldValidation],
        requestBody: bodyOf(obj),
        responses: { '200': response(obj), '201': response(obj, 'Created'), '202': response(obj, 'Accepted') },
      });
    }
    if (verbs.has('deletecollection')) {
      collection['delete'] = operation(ctx, {
        verb: 'deleteCollection',
        action: 'deletecollection',
        description: `delete collection of ${info.kind}`,
        parameters: [...DELETE_PARAMS, ...LIST_PARAMS.filter((p) => p['name'] !== 'watch' && p['name'] !== 'allowWatchBookmarks')],
        requestBody: { content: { '*/*': { schema: componentRef(`${META}.DeleteOptions`) } } },
        responses: { '200': response(`${META}.Status`) },
      });
    }
    if (Object.keys(collection).length > 0) {
      collection['parameters'] = [...nsParams, P.pretty];
      paths[`${prefix}${ns}/${info.plural}`] = collection;
    }

    // Item: read / replace / patch / delete.
    const item: JsonSchema = {};
    if (verbs.has('get')) {
      item['get'] = operation(ctx, {
        verb: 'read',
        action: 'get',
        description: `read the specified ${info.kind}`,
        responses: { '200': response(obj) },
      });
    }
    if (verbs.has('update')) {
      item['put'] = operation(ctx, {
        verb: 'replace',
        action: 'put',
        description: `replace the specified ${info.kind}`,
        parameters: [P.dryRun, P.fieldManager, P.fieldValidation],
        requestBody: bodyOf(obj),
        responses: { '200': response(obj), '201': response(obj, 'Created') },
      });
    }
    if (verbs.has('patch')) {
      item['patch'] = operation(ctx, {
        verb: 'patch',
        action: 'patch',
        description: `partially update the specified ${info.kind}`,
        parameters: [P.dryRun, P.fieldManager, P.fieldValidation, P.force],
        requestBody: patchBody(kind.strategicMergePatch),
        responses: { '200': response(obj), '201': response(obj, 'Created') },
      });
    }
    if (verbs.has('delete')) {
      item['delete'] = operation(ctx, {
        verb: 'delete',
        action: 'delete',
        description: `delete a ${info.kind}`,
        parameters: DELETE_PARAMS,
        requestBody: { content: { '*/*': { schema: componentRef(`${META}.DeleteOptions`) } } },
        responses: { '200': response(obj), '202': response(obj, 'Accepted') },
      });
    }
    if (Object.keys(item).length > 0) {
      item['parameters'] = [nameParam, ...nsParams, P.pretty];
      paths[`${prefix}${ns}/${info.plural}/{name}`] = item;
    }

    // Subresources that return the object itself (status, ephemeralcontainers, ...).
    for (const sub of info.subresources) {
      if (!['status', 'ephemeralcontainers', 'resize'].includes(sub)) continue;
      const subCtx: OperationContext = { ...ctx, idStem: `${ctx.idStem}${capitalize(sub)}` };
      const subPath: JsonSchema = {
        get: operation(subCtx, { verb: 'read', action: 'get', description: `read ${sub} of the specified ${info.kind}`, responses: { '200': response(obj) } }),
        put: operation(subCtx, {
          verb: 'replace',
          action: 'put',
          description: `replace ${sub} of the specified ${info.kind}`,
          parameters: [P.dryRun, P.fieldManager, P.fieldValidation],
          requestBody: bodyOf(obj),
          responses: { '200': response(obj), '201': response(obj, 'Created') },
        }),
        patch: operation(subCtx, {
          verb: 'patch',
          action: 'patch',
          description: `partially update ${sub} of the specified ${info.kind}`,
          parameters: [P.dryRun, P.fieldManager, P.fieldValidation, P.force],
          requestBody: patchBody(kind.strategicMergePatch),
          responses: { '200': response(obj), '201': response(obj, 'Created') },
        }),
        parameters: [nameParam, ...nsParams, P.pretty],
      };
      paths[`${prefix}${ns}/${info.plural}/{name}/${sub}`] = subPath;
    }

    // Cross-namespace list for namespaced kinds.
    if (info.namespaced && verbs.has('list')) {
      const allCtx: OperationContext = { ...ctx, idStem: `${groupWord(info.group)}${capitalize(info.version)}${info.kind}ForAllNamespaces` };
      paths[`${prefix}/${info.plural}`] = {
        get: operation(allCtx, {
          verb: 'list',
          action: 'list',
          description: `list or watch objects of kind ${info.kind} across all namespaces`,
          responses: { '200': response(listDef, 'OK', ['application/json;stream=watch']) },
        }),
        parameters: [...LIST_PARAMS, P.pretty],
      };
    }
  }
  return paths;
}
/** The OpenAPI v3 document body for one group-version. */
export interface OpenAPIV3Document {
  openapi: '3.0.0';
  info: { title: string; version: string };
  paths: Record<string, JsonSchema>;
  components: { schemas: Record<string, JsonSchema>; securitySchemes: Record<string, JsonSchema> };
}

/**
 * The document served at /openapi/v3/<groupVersionPath> (e.g. `api/v1`, `apis/apps/v1`), or
 * undefined when nothing is served there (answer 404).
 */
export function openapiV3Group(path: string, kinds: readonly ServedKindSchema[]): OpenAPIV3Document | undefined {
  const gv = parseGroupVersionPath(path);
  if (!gv) return undefined;
  const here = kinds.filter((k) => k.info.group === gv.group && k.info.version === gv.version);
  if (here.length === 0) return undefined;

  const { served, components } = describeKinds(here);
  const paths = buildPaths(served);

  // Pull in every named schema reachable from the kinds and the operations.
  const definitions = builtinApi().definitions;
  const wanted = new Set<string>([`${META}.Status`, `${META}.DeleteOptions`, `${META}.Patch`, `${META}.WatchEvent`]);
  collectRefs([...components.values()], wanted);
  collectRefs(paths, wanted);
  const queue = [...wanted];
  while (queue.length > 0) {
    const name = queue.pop() as string;
    if (components.has(name)) continue;
    const schema = definitions.get(name) as JsonSchema | undefined;
    if (!schema) continue;
    components.set(name, schema);
    const refs = new Set<string>();
    collectRefs(schema, refs);
    for (const r of refs) if (!components.has(r)) queue.push(r);
  }
  // A reference we could not satisfy would break $ref resolution in clients; make it permissive.
  const allRefs = new Set<string>();
  collectRefs([...components.values(), paths], allRefs);
  for (const r of allRefs) if (!components.has(r)) components.set(r, opaque());

  const sortedSchemas: Record<string, JsonSchema> = {};
  for (const name of [...components.keys()].sort()) sortedSchemas[name] = components.get(name) as JsonSchema;
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: SERVED_GIT_VERSION },
    paths,
    components: {
      schemas: sortedSchemas,
      securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } },
    },
  };
}

/** Uppercase hex SHA-512 of a document's JSON, the form the apiserver uses in `?hash=`. */
export function documentHash(document: unknown): string {
  return createHash('sha512').update(JSON.stringify(document)).digest('hex').toUpperCase();
}

/** Body of GET /openapi/v3. */
export interface OpenAPIV3Index {
  paths: Record<string, { serverRelativeURL: string }>;
}

/**
 * Body of GET /openapi/v3: one entry per served group-version, each pointing at its document with
 * a content hash. Clients cache documents by URL, so the hash must change whenever the document does.
 */
export function openapiV3Root(kinds: readonly ServedKindSchema[]): OpenAPIV3Index {
  const keys: string[] = [];
  for (const { info } of kinds) {
    const key = groupVersionPath(info.group, info.version);
    if (!keys.includes(key)) keys.push(key);
  }
  const paths: OpenAPIV3Index['paths'] = {};
  for (const key of keys) {
    const doc = openapiV3Group(key, kinds);
    if (!doc) continue;
    paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${documentHash(doc)}` };
  }
  return { paths };
}
