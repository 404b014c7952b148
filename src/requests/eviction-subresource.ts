/**
 * The `eviction` subresource of pods (POST pods/{name}/eviction with a policy/v1 Eviction, or the older
 * policy/v1beta1 one): a delete that a PodDisruptionBudget may refuse (429), as eviction-budget.ts
 * decides. What `kubectl drain` uses. The Eviction's deleteOptions (grace period, preconditions, dry
 * run) apply to the delete.
 */
import { errors } from '../api/errors.js';
import { readDeleteOptionsBody, readWriteOptions, resolveDeleteOptions } from '../api/query-parameters.js';
import type { DeleteOptions, Registry } from '../registry/registry.js';
import { evictPod } from './eviction-budget.js';
import type { ApiRequest, HandlerResult } from './request.js';
import { decodeTypedBody } from './type-meta.js';

export interface EvictionBody {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  deleteOptions?: { gracePeriodSeconds?: unknown; preconditions?: unknown; dryRun?: unknown; propagationPolicy?: unknown };
}

/**
 * An Eviction from a request body, decoded by the one body decoder: JSON or YAML, or Kubernetes'
 * protobuf (kubectl drain talks through client-go's typed clientset, which sends built-in kinds as
 * protobuf), at policy/v1 or policy/v1beta1. A body without apiVersion/kind is a policy/v1 Eviction
 * (Ansible's k8s_drain sends such bodies); 400 for one that names anything else.
 */
export function decodeEviction(body: Buffer, contentType: string | undefined): EvictionBody {
  return decodeTypedBody(body, contentType, { group: 'policy', versions: ['v1', 'v1beta1'], kind: 'Eviction' }) as EvictionBody;
}

export async function handleEvictionRequest(registry: Registry, req: ApiRequest): Promise<HandlerResult> {
  const { info, namespace, name } = req.target;
  if (req.method !== 'POST') throw errors.methodNotAllowed(`${req.method} is not supported on pods/eviction`);
  if (name === undefined) throw errors.notFound({ resource: 'pods/eviction', name: '' });
  // The create's own options come first, as the create handler reads them before the body.
  const create = readWriteOptions(req.query, 'CreateOptions');
  if (!req.body || req.body.length === 0) throw errors.badRequest('the request body is empty');
  const eviction = decodeEviction(req.body, req.contentType);
  if (eviction.metadata?.name !== undefined && eviction.metadata.name !== name) {
    throw errors.badRequest(`name in URL does not match name in Eviction object`);
  }
  const d = eviction.deleteOptions;
  if (d !== undefined && d !== null && (typeof d !== 'object' || Array.isArray(d))) throw errors.badRequest('json: cannot unmarshal into Go struct field Eviction.deleteOptions of type v1.DeleteOptions');
  const resolved = resolveDeleteOptions(readDeleteOptionsBody((d ?? {}) as Record<string, unknown>, 'Eviction.deleteOptions'));
  const opts: DeleteOptions = { dryRun: create.dryRun || resolved.dryRun, user: req.user };
  if (resolved.gracePeriodSeconds !== undefined) opts.gracePeriodSeconds = resolved.gracePeriodSeconds;
  if (resolved.preconditions) opts.preconditions = resolved.preconditions as DeleteOptions['preconditions'];
  if (resolved.propagationPolicy !== undefined) opts.propagationPolicy = resolved.propagationPolicy;
  // Throws NotFound for a missing pod, as the apiserver does.
  return evictPod({ registry, podInfo: info, namespace, name, deleteOptions: opts });
}
