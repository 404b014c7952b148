/**
 * Create-only kinds that store nothing (a KindStrategy with `virtualCreate`): the access reviews,
 * TokenReview, SelfSubjectReview. A POST to the collection is decoded like any create (JSON, YAML
 * or protobuf), gets its namespace from the path as a stored object would, is validated by the
 * kind's `validate` (422 naming the field), and is answered 201 with what the kind computes. Every
 * other verb is 405, as kube-apiserver answers for a resource that only implements create.
 */
import { errors } from '../api/errors.js';
import { readWriteOptions } from '../api/query-parameters.js';
import type { KubeObject } from '../api/types.js';
import type { KindStrategy } from '../registry/strategy.js';
import type { ApiRequest, HandlerResult } from './request.js';

/** A request to a virtual kind; `decode` reads the body as the kind (resource-handlers.ts). */
export async function handleVirtualCreate(strategy: KindStrategy, req: ApiRequest, decode: () => KubeObject): Promise<HandlerResult> {
  const { info, namespace, name, subresource } = req.target;
  if (req.method !== 'POST' || name !== undefined || subresource !== undefined) {
    throw errors.methodNotAllowed(`${req.method} is not supported on ${info.plural}.${info.group}: the resource only implements create`);
  }
  const { dryRun } = readWriteOptions(req.query, 'CreateOptions');
  const obj = decode();
  const meta = (obj.metadata ??= {});
  if (info.namespaced) {
    if (!namespace) throw errors.badRequest(`namespace is required on this type: ${info.kind}`);
    if (meta.namespace && meta.namespace !== namespace) throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    meta.namespace = namespace;
  }
  const problems = strategy.validate(obj);
  if (problems.length > 0) throw errors.invalid({ resource: info.plural, group: info.group, kind: info.kind, name: meta.name ?? '' }, problems);
  const body = await strategy.virtualCreate!(obj, { namespace, user: req.user, dryRun });
  return { code: 201, body };
}
