/**
 * Request handling below any transport: get, list, create, update, patch and delete of a resolved
 * resource, with body decoding, field validation and the status/binding/scale/eviction subresources.
 * The HTTP server adapts fastify requests to it; the in-process client calls it directly. Query
 * options (dryRun, fieldValidation, DeleteOptions, limit …) are read by src/api/query-parameters.ts,
 * body type metadata by type-meta.ts.
 */
export type { ApiRequest, HandlerResult } from './request.js';
import { errors } from '../api/errors.js';
import { assertObject, decodeBody, findDuplicateFields, mediaTypeOf } from '../api/body.js';
import { KUBERNETES_PROTOBUF_MEDIA_TYPE, type ProtobufKind } from '../api/protobuf/index.js';
import { findUnknownFields, type UnknownFieldOptions } from '../api/unknown-fields.js';
import { builtinKindSchema } from '../api/api-definitions.js';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, builtinPatchSchema } from '../api/patch.js';
import type { KubeObject, Pod } from '../api/types.js';
import type { DeleteOptions, Registry } from '../registry/registry.js';
import { isoSeconds } from '../registry/registry.js';
import { serverSideApply } from '../registry/field-manager.js';
import type { ApiRequest, HandlerResult } from './request.js';
import { handleScaleRequest } from './scale-subresource.js';
import { handleEvictionRequest } from './eviction-subresource.js';
import { handleTokenRequest } from './token-subresource.js';
import type { ServiceAccountTokens } from '../auth/service-account-tokens.js';
import { handleVirtualCreate } from './virtual-create.js';
import { readListOptions } from '../registry/list-options.js';
import { readDeleteOptionsBody, readDeleteOptionsQuery, readWriteOptions, resolveDeleteOptions, type DeleteOptionsInput } from '../api/query-parameters.js';
import { defaultTypeMeta } from './type-meta.js';
import type { ResourceInfo } from '../api/identities.js';

const STREAMING_SUBRESOURCES = new Set(['attach', 'exec', 'log', 'portforward']);

/**
 * Non-watch verbs on a resolved resource: get, list, create, update, patch, delete and the
 * subresources every kind shares (status) or Pods add (binding). Watch streams live elsewhere.
 */
export async function handleResourceRequest(registry: Registry, req: ApiRequest, services: { serviceAccountTokens?: ServiceAccountTokens } = {}): Promise<HandlerResult> {
  const { target, query } = req;
  const { info, namespace, name, subresource } = target;

  if (info.kind === 'Pod' && info.group === '' && subresource === 'eviction') return handleEvictionRequest(registry, req);
  if (info.kind === 'ServiceAccount' && info.group === '' && subresource === 'token') return handleTokenRequest(registry, services.serviceAccountTokens, req);
  const strategy = registry.lookup(info.group, info.plural);
  if (strategy?.virtualCreate) return handleVirtualCreate(strategy, req, () => decodeObject(registry, req));
  if (subresource && !info.subresources.includes(subresource)) throw errors.noSuchResource();
  // Streaming subresources have their own routes (pod-streams); another verb on them reaches here.
  if (subresource !== undefined && STREAMING_SUBRESOURCES.has(subresource)) {
    throw errors.methodNotAllowed('the server does not allow this method on the requested resource');
  }
  if (subresource === 'scale') return handleScaleRequest(registry, req);

  switch (req.method) {
    case 'GET': {
      if (name === undefined) {
        return { code: 200, body: await registry.list(info, namespace, readListOptions(query)) };
      }
      return { code: 200, body: await registry.get(info, namespace, name, { resourceVersion: query.resourceVersion || undefined }) };
    }
    case 'POST': {
      const { dryRun } = readWriteOptions(query, 'CreateOptions');
      if (name !== undefined && subresource === 'binding') return bindPod(registry, req, dryRun);
      if (name !== undefined) throw errors.methodNotAllowed(`POST is not supported on a named ${info.kind}`);
      const decoded = decodeObject(registry, req);
      const warnings = checkFields(registry, req, decoded);
      const obj = toStoredVersion(registry, req, decoded);
      const body = await registry.create(info, namespace, obj, { dryRun, user: req.user, fieldManager: managerOf(req), warnings });
      return { code: 201, body, warnings: distinct(warnings) };
    }
    case 'PUT': {
      if (name === undefined) throw errors.methodNotAllowed(`PUT requires a name`);
      const { dryRun } = readWriteOptions(query, 'UpdateOptions');
      const decoded = decodeObject(registry, req);
      const warnings = checkFields(registry, req, decoded);
      const obj = toStoredVersion(registry, req, decoded);
      const body = await registry.update(info, namespace, name, obj, { dryRun, subresource, user: req.user, fieldManager: managerOf(req), warnings });
      return { code: 200, body, warnings: distinct(warnings) };
    }
    case 'PATCH': {
      if (name === undefined) throw errors.methodNotAllowed(`PATCH requires a name`);
      const apply = (req.contentType ?? '').split(';')[0]!.trim().toLowerCase() === 'application/apply-patch+yaml';
      const { dryRun } = readWriteOptions(query, 'PatchOptions', { apply });
      return patchObject(registry, req, name, dryRun);
    }
    case 'DELETE': {
      if (name === undefined) return deleteCollection(registry, req);
      const opts = deleteOptions(req);
      const { object } = await registry.delete(info, namespace, name, opts);
      return { code: 200, body: object };
    }
    default:
      throw errors.methodNotAllowed(`${req.method} is not supported`);
  }
}

/**
 * fieldValidation: `Strict` refuses, `Warn` (the default, as in Kubernetes) reports, `Ignore` says
 * nothing. Duplicate and unknown fields are found for every kind; unknown fields of built-in kinds
 * are also deleted from `body`, so a write that goes through stores none. `body` is what the request
 * carried: the object of a create/update/apply, or a merge or strategic-merge patch.
 */
function checkFields(registry: Registry, req: ApiRequest, body: KubeObject, options: UnknownFieldOptions = {}): string[] {
  // The value was validated with the rest of the request's options (readWriteOptions).
  const mode = req.query.fieldValidation || 'Warn';
  if (!req.body) return [];
  // Walked in every mode: unknown fields of built-in kinds are dropped whether or not anyone is told.
  const unknown = unknownFields(registry, req, body, { ...options, prune: true });
  if (mode === 'Ignore') return [];
  const problems = [...findDuplicateFields(req.body, req.contentType).map((p) => `duplicate field "${p}"`), ...unknown.map((p) => `unknown field "${p}"`)];
  if (!problems.length) return [];
  if (mode === 'Strict') throw errors.badRequest(`strict decoding error: ${problems.join(', ')}`);
  return problems;
}

/**
 * Fields the kind does not declare: by the kind's own rule where it has one (a CRD's custom
 * resources prune by their schema; patches to them are not checked), else by the kind's published
 * OpenAPI schema (every built-in). Protobuf bodies are decoded by field number, so nothing in
 * them can be unknown by name (Kubernetes does not check them either).
 */
function unknownFields(registry: Registry, req: ApiRequest, body: KubeObject, options: UnknownFieldOptions): string[] {
  if (mediaTypeOf(req.contentType) === KUBERNETES_PROTOBUF_MEDIA_TYPE) return [];
  const { info } = req.target;
  const strategy = registry.lookup(info.group, info.plural);
  if (strategy?.unknownFields) return options.patch ? [] : strategy.unknownFields(body);
  const published = builtinKindSchema(info.group, req.version ?? info.version, info.kind) ?? builtinKindSchema(info.group, info.version, info.kind);
  return published ? findUnknownFields(body, published.schema, published.definitions, options) : [];
}

/**
 * The object of a create or update. Missing apiVersion/kind come from the URL, as kube-apiserver
 * decodes with the path's group/version/kind as defaults; ones that name something else are
 * refused with the apiserver's wording.
 */
function decodeObject(registry: Registry, req: ApiRequest): KubeObject {
  if (!req.body || req.body.length === 0) throw errors.badRequest('the request body is empty');
  const doc = decodeBody(req.body, req.contentType, { protobufKinds: protobufKindsOf(registry, req.target.info, req.version) });
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) assertObject(doc);
  const obj = doc as KubeObject;
  // Subresource bodies (Binding, Eviction, Scale) are other kinds; their handlers check them.
  if (!req.target.subresource || req.target.subresource === 'status') {
    const { info } = req.target;
    defaultTypeMeta(obj, { group: info.group, versions: [req.version ?? info.version], kind: info.kind });
  }
  if (typeof obj.metadata !== 'object' || obj.metadata === null) obj.metadata = {};
  return obj;
}

async function patchObject(registry: Registry, req: ApiRequest, name: string, dryRun: boolean): Promise<HandlerResult> {
  const { info, namespace, subresource } = req.target;
  if (!req.body || req.body.length === 0) throw errors.badRequest('the patch body is empty');
  const type = (req.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const patch = decodeBody(req.body, type);
  if (type === 'application/apply-patch+yaml') return serverSideApplyRequest(registry, req, name, patch, dryRun);

  // Merge and strategic-merge patches are partial objects, checked like one; a JSON patch's
  // operations are not (its values could only be judged against the paths they land on).
  const mergeLike = type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json';
  const warnings = mergeLike && isPlainObject(patch) ? checkFields(registry, req, patch as KubeObject, { patch: true }) : [];
  const opts = { dryRun, subresource, user: req.user, fieldManager: managerOf(req), warnings };

  let apply: (current: KubeObject) => KubeObject;
  switch (type) {
    case 'application/json-patch+json':
      if (!Array.isArray(patch)) throw errors.badRequest('a JSON patch must be an array of operations');
      apply = (cur) => applyJsonPatch(cur, patch) as KubeObject;
      break;
    case 'application/merge-patch+json':
      apply = (cur) => applyMergePatch(cur, patch) as KubeObject;
      break;
    case 'application/strategic-merge-patch+json': {
      const schema = builtinPatchSchema(info.kind);
      apply = (cur) => applyStrategicMergePatch(cur, patch, schema) as KubeObject;
      break;
    }
    default:
      throw errors.unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`);
  }
  const result = await registry.modify(info, namespace, name, (cur) => {
    // A patch sent to another served version edits the object as that version shows it.
    const next = apply(fromStoredVersion(registry, req, cur));
    if (typeof next !== 'object' || next === null || Array.isArray(next)) throw errors.badRequest('the patch did not produce an object');
    return toStoredVersion(registry, req, next);
  }, opts);
  return { code: 200, body: result, warnings: distinct(warnings) };
}

/** A write retried on conflict runs admission again; its warnings are sent once. */
function distinct(warnings: string[]): string[] {
  return [...new Set(warnings)];
}

function isPlainObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Server-side apply: create when absent, else merge the applied configuration with field
 * ownership (src/registry/field-manager.ts) — conflicts are 409 unless `force=true`.
 */
async function serverSideApplyRequest(registry: Registry, req: ApiRequest, name: string, patch: unknown, dryRun: boolean): Promise<HandlerResult> {
  const { info, namespace, subresource } = req.target;
  assertObject(patch);
  const applied = patch as KubeObject;
  // readWriteOptions has refused an apply without a fieldManager.
  const manager = req.query.fieldManager!;
  if (applied.metadata?.name && applied.metadata.name !== name) throw errors.badRequest(`the name of the object (${applied.metadata.name}) does not match the name on the URL (${name})`);
  const warnings = checkFields(registry, req, applied);
  applied.metadata = { ...(applied.metadata ?? {}), name };
  // Fields are owned in the stored version's terms; a configuration applied at another served
  // version is converted to it first.
  if (req.version && req.version !== info.version && typeof applied.apiVersion === 'string') Object.assign(applied, toStoredVersion(registry, req, applied));
  const common = { applied, manager, force: readWriteOptions(req.query, 'PatchOptions', { apply: true }).force ?? false, schema: builtinPatchSchema(info.kind), apiVersion: `${info.group ? info.group + '/' : ''}${info.version}`, now: isoSeconds(Date.now()) };
  let exists = true;
  try {
    await registry.get(info, namespace, name);
  } catch (e) {
    if ((e as { reason?: string }).reason !== 'NotFound') throw e;
    exists = false;
  }
  if (!exists) {
    const { object } = serverSideApply({ ...common, live: undefined });
    return { code: 201, body: await registry.create(info, namespace, object, { dryRun, user: req.user, warnings }), warnings: distinct(warnings) };
  }
  const body = await registry.modify(info, namespace, name, (cur) => serverSideApply({ ...common, live: cur }).object, { dryRun, subresource, user: req.user, warnings });
  return { code: 200, body, warnings: distinct(warnings) };
}

/** The target kind's own protobuf messages at the request's version, when its module declares them. */
function protobufKindsOf(registry: Registry, info: ResourceInfo, version = info.version): ProtobufKind[] {
  const strategy = registry.lookup(info.group, info.plural);
  const messages = version === info.version ? strategy?.protobuf : strategy?.conversion?.protobuf?.[version];
  return messages ? [{ apiVersion: info.group ? `${info.group}/${version}` : version, kind: info.kind, messages }] : [];
}

/**
 * An object written at the request's version, as the kind stores it. Kinds without a conversion
 * differ between served versions only in apiVersion, which the registry sets.
 */
function toStoredVersion(registry: Registry, req: ApiRequest, obj: KubeObject): KubeObject {
  const { info, subresource } = req.target;
  const version = req.version ?? info.version;
  const conversion = registry.lookup(info.group, info.plural)?.conversion;
  if (version === info.version || !conversion || (subresource && subresource !== 'status')) return obj;
  return conversion.toStored(obj, version);
}

/** A stored object as the request's version shows it. */
function fromStoredVersion(registry: Registry, req: ApiRequest, obj: KubeObject): KubeObject {
  const { info } = req.target;
  const version = req.version ?? info.version;
  const conversion = registry.lookup(info.group, info.plural)?.conversion;
  if (version === info.version || !conversion) return obj;
  return conversion.fromStored(obj, version);
}

/**
 * DeleteOptions of a DELETE: from its body when it has one, else from its query (as the
 * DeleteResource handler reads them: a body's options replace the query's), validated as
 * ValidateDeleteOptions does.
 */
function deleteOptions(req: ApiRequest): DeleteOptions {
  let input: DeleteOptionsInput;
  if (req.body && req.body.length > 0) {
    const body = decodeBody(req.body, req.contentType);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw errors.badRequest('the body of a delete must be a DeleteOptions object');
    input = readDeleteOptionsBody(body as Record<string, unknown>);
  } else {
    input = readDeleteOptionsQuery(req.query);
  }
  const resolved = resolveDeleteOptions(input);
  const opts: DeleteOptions = { dryRun: resolved.dryRun, user: req.user };
  if (resolved.gracePeriodSeconds !== undefined) opts.gracePeriodSeconds = resolved.gracePeriodSeconds;
  if (resolved.propagationPolicy !== undefined) opts.propagationPolicy = resolved.propagationPolicy;
  if (resolved.preconditions) opts.preconditions = resolved.preconditions as DeleteOptions['preconditions'];
  return opts;
}

async function deleteCollection(registry: Registry, req: ApiRequest): Promise<HandlerResult> {
  const { info, namespace } = req.target;
  const list = await registry.list(info, namespace, { labelSelector: req.query.labelSelector, fieldSelector: req.query.fieldSelector });
  const opts = deleteOptions(req);
  for (const item of list.items) {
    try {
      await registry.delete(info, item.metadata.namespace, item.metadata.name ?? '', opts);
    } catch (e) {
      if ((e as { reason?: string }).reason !== 'NotFound') throw e;
    }
  }
  return { code: 200, body: list };
}

/** pods/binding: the scheduler's way of assigning a node — only once, only to an unbound pod. */
async function bindPod(registry: Registry, req: ApiRequest, dryRun: boolean): Promise<HandlerResult> {
  const { info, namespace, name } = req.target;
  const binding = decodeObject(registry, req) as KubeObject & { target?: { name?: string } };
  defaultTypeMeta(binding, { group: '', versions: ['v1'], kind: 'Binding' });
  const nodeName = binding.target?.name;
  if (!nodeName) throw errors.invalid({ resource: 'bindings', kind: 'Binding', name }, [{ field: 'target.name', type: 'FieldValueRequired', message: 'Required value' }]);
  const pod = (await registry.modify(info, namespace, name!, (cur) => {
    const p = cur as Pod;
    if (p.spec.nodeName) throw errors.conflict({ resource: 'pods', name }, `pod ${name} is already assigned to node "${p.spec.nodeName}"`);
    if (p.metadata.deletionTimestamp) throw errors.conflict({ resource: 'pods', name }, 'pod is being deleted, cannot be assigned to a host');
    if (binding.metadata.uid && binding.metadata.uid !== p.metadata.uid) throw errors.conflict({ resource: 'pods', name }, 'UID mismatch');
    p.spec.nodeName = nodeName;
    return p;
  }, { dryRun })) as Pod;
  // The PodScheduled condition is status; set it through the status path so both writes are ordinary updates.
  await registry.modify(info, namespace, name!, (cur) => {
    const p = cur as Pod;
    const status = (p.status ??= {});
    const conditions = (status.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
    conditions.unshift({ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: isoSeconds(Date.now()) });
    status.conditions = conditions;
    return p;
  }, { subresource: 'status', dryRun });
  return { code: 201, body: { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Success', code: 201, details: { name: pod.metadata.name, kind: 'pods' } } };
}

/**
 * Who a write is attributed to in managedFields: the `fieldManager` parameter, else the client's
 * program name from its User-Agent (as kube-apiserver does), e.g. `kubectl`.
 */
function managerOf(req: ApiRequest): string | undefined {
  if (req.query.fieldManager) return req.query.fieldManager;
  const ua = req.userAgent?.split('/')[0]?.trim();
  return ua || undefined;
}
