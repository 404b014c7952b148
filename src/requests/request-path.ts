/** Resolves a Kubernetes REST path (/api/v1/..., /apis/<group>/<version>/...) to a served resource. */
import { errors } from '../api/errors.js';
import { type ResourceInfo, servesVersion } from '../api/identities.js';

/** A REST path resolved against the served resources. */
export interface ResourceTarget {
  info: ResourceInfo;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/**
 * Resolve the part of a path after `/api/v1/` or `/apis/<group>/<version>/`.
 * `namespaces/<ns>/<plural>/...` addresses a namespaced resource; anything else is
 * `<plural>[/<name>[/<subresource>]]` (the Namespace kind itself lives at `namespaces/<name>`).
 */
export function resolveResourcePath(
  group: string,
  version: string,
  rest: string,
  lookup: (group: string, plural: string) => ResourceInfo | undefined,
): ResourceTarget {
  const segments = rest.split('/').filter((s) => s.length > 0).map(decodeSegment);
  // No route: kube-apiserver's generic 404, never a message about whatever the path resembles
  // (`namespaces/default/frobnicators` is not the subresource "frobnicators" of namespace "default").
  const notFound = () => errors.noSuchResource();
  if (segments.length === 0) throw notFound();

  if (segments[0] === 'namespaces' && segments.length >= 3) {
    const info = lookup(group, segments[2]!);
    if (info?.namespaced && servesVersion(info, version)) {
      if (segments.length > 5) throw notFound();
      return withOptional({ info, namespace: segments[1]! }, segments[3], segments[4]);
    }
  }
  const info = lookup(group, segments[0]!);
  if (!info || !servesVersion(info, version) || segments.length > 3) throw notFound();
  // A namespaced resource addressed without a namespace can only be listed/watched across all namespaces.
  if (info.namespaced && segments.length > 1) throw notFound();
  return withOptional({ info }, segments[1], segments[2]);
}

function withOptional(t: ResourceTarget, name: string | undefined, subresource: string | undefined): ResourceTarget {
  if (name !== undefined) t.name = name;
  if (subresource !== undefined) {
    if (!t.info.subresources.includes(subresource)) throw errors.noSuchResource();
    t.subresource = subresource;
  }
  return t;
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw errors.badRequest(`invalid path segment "${s}"`);
  }
}
