/**
 * Owns Berth's `POST /berth/v1/apply` endpoint for curl users: create or update every document of a
 * YAML or JSON body, authorized per document, answered with one result each. It is not Kubernetes'
 * server-side apply (PATCH with application/apply-patch+yaml), which is handled with the other patch
 * types in src/requests/.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError, errors } from '../api/errors.js';
import { assertObject, decodeDocuments } from '../api/body.js';
import { applyStrategicMergePatch, builtinPatchSchema } from '../api/patch.js';
import type { KubeObject } from '../api/types.js';
import { forbiddenError, type Authorizer } from '../auth/authz.js';
import type { Registry } from '../registry/registry.js';
import type { ResourceInfo } from '../api/identities.js';

export interface ApplyItemResult {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  /** what happened to this document */
  result: 'created' | 'configured' | 'unchanged' | 'failed';
  /** for failures: the Status the API would have answered */
  error?: ReturnType<ApiError['toStatus']>;
}

/**
 * `POST /berth/v1/apply` — for curl users: a multi-document YAML (or JSON) body, each document
 * created or, when it exists, updated to the manifest: the manifest is merged onto the live object
 * as a strategic merge patch (lists keyed by their merge keys, as kubectl's apply patches), so what
 * admission added at create — a pod's ServiceAccount token volume and its mounts — stays; labels and
 * annotations become the manifest's; server-owned metadata and status are kept.
 * Every document is tried; the answer lists one result per document, 200 when all succeeded,
 * 422 when any failed. `?dryRun=All` validates without storing.
 */
export function registerApplyEndpoint(app: FastifyInstance, opts: { registry: Registry; authorizer: Authorizer }): void {
  app.post('/berth/v1/apply', async (req, reply) => {
    const body = req.body as Buffer | undefined;
    if (!body || body.length === 0) throw errors.badRequest('the request body is empty');
    const docs = decodeDocuments(body, req.headers['content-type'] ?? 'application/yaml');
    const dryRun = (req.query as Record<string, string>).dryRun === 'All';
    const items: ApplyItemResult[] = [];
    const warnings: string[] = [];
    for (const [index, doc] of docs.entries()) {
      const item: ApplyItemResult = { result: 'failed' };
      try {
        assertObject(doc, index);
        const obj = doc as KubeObject;
        item.apiVersion = obj.apiVersion;
        item.kind = obj.kind;
        item.name = obj.metadata?.name;
        const info = resourceForKind(opts.registry, obj.apiVersion ?? '', obj.kind ?? '');
        const namespace = info.namespaced ? obj.metadata?.namespace ?? 'default' : undefined;
        if (namespace) item.namespace = namespace;
        const verb = (await exists(opts.registry, info, namespace, obj.metadata?.name)) ? 'update' : 'create';
        const attrs = { verb, group: info.group, resource: info.plural, namespace, name: obj.metadata?.name };
        const decision = opts.authorizer.authorize(req.identity!, attrs);
        if (!decision.allowed) throw forbiddenError(req.identity!, attrs, decision.reason);
        if (verb === 'create') {
          await opts.registry.create(info, namespace, obj, { dryRun, warnings, user: req.identity! });
          item.result = 'created';
        } else {
          const before = await opts.registry.get(info, namespace, obj.metadata!.name!);
          const schema = builtinPatchSchema(info.kind);
          const merge = (cur: KubeObject): KubeObject => {
            const { metadata: _metadata, status: _status, ...manifest } = obj as KubeObject & { status?: unknown };
            const merged = applyStrategicMergePatch(cur, manifest, schema) as KubeObject;
            return { ...merged, metadata: { ...cur.metadata, labels: obj.metadata.labels, annotations: obj.metadata.annotations } };
          };
          const after = await opts.registry.modify(info, namespace, obj.metadata!.name!, merge, { dryRun, warnings, user: req.identity! });
          item.result = after.metadata.resourceVersion === before.metadata.resourceVersion ? 'unchanged' : 'configured';
        }
      } catch (e) {
        item.error = (e instanceof ApiError ? e : errors.internal(String(e))).toStatus();
      }
      items.push(item);
    }
    const failed = items.some((i) => i.result === 'failed');
    // The same header kube-apiserver sends, so curl -i shows what admission warned about.
    if (warnings.length) reply.header('warning', [...new Set(warnings)].map((w) => `299 - ${JSON.stringify(w)}`));
    return reply.code(failed ? 422 : 200).send({ apiVersion: 'berth.dev/v1', kind: 'ApplyResult', items });
  });
}

function resourceForKind(registry: Registry, apiVersion: string, kind: string): ResourceInfo {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
  const info = registry.resources().find((r) => r.group === group && r.version === version && r.kind === kind);
  if (!info) throw errors.badRequest(`no kind "${kind}" is registered for version "${apiVersion}"`);
  return info;
}

async function exists(registry: Registry, info: ResourceInfo, namespace: string | undefined, name: string | undefined): Promise<boolean> {
  if (!name) return false;
  try {
    await registry.get(info, namespace, name);
    return true;
  } catch {
    return false;
  }
}
