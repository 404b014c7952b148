/**
 * The `scale` subresource (autoscaling/v1 Scale) of any kind that lists it in its ResourceInfo
 * (Deployment, ReplicaSet, StatefulSet, ReplicationController): a view of `spec.replicas`,
 * `status.replicas` and the selector. GET reads it; PUT and PATCH (JSON, merge, strategic) change
 * only spec.replicas of the parent object — what `kubectl scale` and autoscalers use.
 */
import { decodeBody } from '../api/body.js';
import { errors } from '../api/errors.js';
import { readWriteOptions } from '../api/query-parameters.js';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, builtinPatchSchema } from '../api/patch.js';
import { labelSelectorFromObject, labelSelectorToString } from '../api/selectors.js';
import type { KubeObject, LabelSelector, Scale, ScaleStatus } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import type { ApiRequest, HandlerResult } from './request.js';
import { decodeTypedBody } from './type-meta.js';
import type { ResourceInfo } from '../api/identities.js';


/** Where a kind keeps what Scale shows; built-in kinds use the defaults, CRDs declare theirs. */
export interface ScalePaths {
  specReplicasPath: string;
  statusReplicasPath: string;
  /** a label selector object (built-ins) or a string in selector syntax (CRDs) */
  labelSelectorPath?: string;
  /** the selector there is a plain label map (a ReplicationController's), every key equal to its value */
  labelSelectorIsMap?: boolean;
}

export const DEFAULT_SCALE_PATHS: ScalePaths = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.spec.selector' };

function getPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const k of path.replace(/^\./, '').split('.')) {
    if (!cur || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.replace(/^\./, '').split('.');
  let cur = obj;
  for (const k of keys.slice(0, -1)) {
    if (!cur[k] || typeof cur[k] !== 'object') cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]!] = value;
}

function pathsOf(registry: Registry, info: ResourceInfo): ScalePaths {
  return registry.lookup(info.group, info.plural)?.scalePaths ?? DEFAULT_SCALE_PATHS;
}

/** The Scale view of an object. */
export function toScale(obj: KubeObject, paths: ScalePaths = DEFAULT_SCALE_PATHS): Scale {
  const m = obj.metadata;
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const status: ScaleStatus = { replicas: num(getPath(obj, paths.statusReplicasPath)) };
  const selector = paths.labelSelectorPath ? getPath(obj, paths.labelSelectorPath) : undefined;
  try {
    if (typeof selector === 'string') status.selector = selector;
    else if (selector && typeof selector === 'object') {
      const object = paths.labelSelectorIsMap ? { matchLabels: selector as Record<string, string> } : (selector as LabelSelector);
      status.selector = labelSelectorToString(labelSelectorFromObject(object));
    }
  } catch {
    // An invalid stored selector leaves the field out rather than failing the read.
  }
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: num(getPath(obj, paths.specReplicasPath)) },
    status,
  };
}

function validateReplicas(info: ResourceInfo, name: string, scale: unknown): number {
  const replicas = (scale as { spec?: { replicas?: unknown } } | null)?.spec?.replicas;
  const target = { resource: info.plural, group: 'autoscaling', kind: 'Scale', name };
  if (replicas === undefined || replicas === null) return 0;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas)) {
    throw errors.invalid(target, [{ field: 'spec.replicas', type: 'FieldValueTypeInvalid', message: `Invalid value: ${JSON.stringify(replicas)}: must be an integer` }]);
  }
  if (replicas < 0) {
    throw errors.invalid(target, [{ field: 'spec.replicas', type: 'FieldValueInvalid', message: `Invalid value: ${replicas}: must be greater than or equal to 0` }]);
  }
  return replicas;
}

/** GET, PUT or PATCH on `<resource>/<name>/scale`. */
export async function handleScaleRequest(registry: Registry, req: ApiRequest): Promise<HandlerResult> {
  const { info, namespace, name } = req.target;
  if (name === undefined) throw errors.methodNotAllowed('the scale subresource needs a name');
  const paths = pathsOf(registry, info);
  switch (req.method) {
    case 'GET':
      return { code: 200, body: toScale(await registry.get(info, namespace, name), paths) };
    case 'PUT': {
      const { dryRun } = readWriteOptions(req.query, 'UpdateOptions');
      // A Scale without apiVersion/kind is an autoscaling/v1 Scale, as the decoder defaults it.
      const scale = decodeTypedBody(req.body, req.contentType, { group: 'autoscaling', versions: ['v1'], kind: 'Scale' });
      if (scale.metadata?.name && scale.metadata.name !== name) {
        throw errors.badRequest(`the name of the object (${scale.metadata.name}) does not match the name on the URL (${name})`);
      }
      const replicas = validateReplicas(info, name, scale);
      const current = structuredClone(await registry.get(info, namespace, name));
      setPath(current as Record<string, unknown>, paths.specReplicasPath, replicas);
      // A resourceVersion in the Scale makes the write conditional, as on the object itself.
      current.metadata.resourceVersion = scale.metadata?.resourceVersion || current.metadata.resourceVersion;
      const updated = await registry.update(info, namespace, name, current, { dryRun });
      return { code: 200, body: toScale(updated, paths) };
    }
    case 'PATCH': {
      const { dryRun } = readWriteOptions(req.query, 'PatchOptions');
      if (!req.body || req.body.length === 0) throw errors.badRequest('the patch body is empty');
      const type = (req.contentType ?? '').split(';')[0]!.trim().toLowerCase();
      const patch = decodeBody(req.body, type);
      const apply = (scale: Scale): unknown => {
        switch (type) {
          case 'application/json-patch+json':
            if (!Array.isArray(patch)) throw errors.badRequest('a JSON patch must be an array of operations');
            return applyJsonPatch(scale, patch);
          case 'application/merge-patch+json':
            return applyMergePatch(scale, patch);
          case 'application/strategic-merge-patch+json':
            return applyStrategicMergePatch(scale, patch, builtinPatchSchema('Scale'));
          default:
            throw errors.unsupportedMediaType(
              'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json',
            );
        }
      };
      const updated = await registry.modify(
        info,
        namespace,
        name,
        (cur) => {
          const replicas = validateReplicas(info, name, apply(toScale(cur, paths)));
          setPath(cur as Record<string, unknown>, paths.specReplicasPath, replicas);
          return cur;
        },
        { dryRun },
      );
      return { code: 200, body: toScale(updated, paths) };
    }
    default:
      throw errors.methodNotAllowed(`${req.method} is not supported on the scale subresource`);
  }
}
