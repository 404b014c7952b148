/**
 * The `eviction` subresource of pods (POST pods/{name}/eviction with a policy/v1 Eviction, or the older
 * policy/v1beta1 one): a delete that a PodDisruptionBudget may refuse (429), as eviction-budget.ts
 * decides. What `kubectl drain` uses. The Eviction's deleteOptions (grace period, preconditions, dry
 * run) apply to the delete.
 */
import { assertObject, decodeBody } from '../api/body.js';
import { errors } from '../api/errors.js';
import type { DeleteOptions, Registry } from '../registry/registry.js';
import { evictPod } from './eviction-budget.js';
import type { ApiRequest, HandlerResult } from './request.js';

export interface EvictionBody {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  deleteOptions?: { gracePeriodSeconds?: unknown; preconditions?: unknown; dryRun?: unknown; propagationPolicy?: unknown };
}

/**
 * An Eviction from a request body, decoded by the one body decoder: JSON or YAML, or Kubernetes'
 * protobuf (kubectl drain talks through client-go's typed clientset, which sends built-in kinds as
 * protobuf), at policy/v1 or policy/v1beta1. 400 for anything that is not an Eviction.
 */
export function decodeEviction(body: Buffer, contentType: string | undefined): EvictionBody {
  const doc = decodeBody(body, contentType);
  assertObject(doc);
  if (doc.kind !== 'Eviction') throw errors.badRequest(`the kind of the provided object (${doc.kind}) is not Eviction`);
  return doc as EvictionBody;
}

export async function handleEvictionRequest(registry: Registry, req: ApiRequest): Promise<HandlerResult> {
  const { info, namespace, name } = req.target;
  if (req.method !== 'POST') throw errors.methodNotAllowed(`${req.method} is not supported on pods/eviction`);
  if (name === undefined) throw errors.notFound({ resource: 'pods/eviction', name: '' });
  if (!req.body || req.body.length === 0) throw errors.badRequest('the request body is empty');
  const eviction = decodeEviction(req.body, req.contentType);
  if (eviction.metadata?.name !== undefined && eviction.metadata.name !== name) {
    throw errors.badRequest(`name in URL does not match name in Eviction object`);
  }
  const opts: DeleteOptions = { dryRun: req.query.dryRun === 'All', user: req.user };
  const d = eviction.deleteOptions;
  if (d && typeof d === 'object') {
    if (typeof d.gracePeriodSeconds === 'number') opts.gracePeriodSeconds = d.gracePeriodSeconds;
    if (d.preconditions && typeof d.preconditions === 'object') opts.preconditions = d.preconditions as DeleteOptions['preconditions'];
    if (Array.isArray(d.dryRun) && d.dryRun.includes('All')) opts.dryRun = true;
    if (typeof d.propagationPolicy === 'string') opts.propagationPolicy = d.propagationPolicy;
  }
  // Throws NotFound for a missing pod, as the apiserver does.
  return evictPod({ registry, podInfo: info, namespace, name, deleteOptions: opts });
}
