/**
 * The labels of `apiserver_request_total` and `apiserver_request_duration_seconds` for one request,
 * worked out from its method, path, query and content type alone, as kube-apiserver's
 * RequestInfoFactory and its metrics' CleanVerb/CleanScope do:
 *  - verb: the HTTP method upper-cased, except LIST (a collection GET), WATCH (`?watch=true` on a
 *    collection, or the legacy `/watch/` prefix), APPLY (a server-side-apply PATCH) and CONNECT
 *    (exec, attach, portforward, proxy);
 *  - scope: `resource` for one named object (and for creates), `namespace` for a namespaced
 *    collection, `cluster` for a cluster-wide one, '' for non-resource paths;
 *  - no names, namespaces or paths: the label set stays bounded by the set of resources.
 */
import { isWatch } from '../api/query-parameters.js';

export interface RequestLabels {
  verb: string;
  group: string;
  version: string;
  resource: string;
  subresource: string;
  scope: string;
  component: string;
}

/** The verbs of kube-apiserver's metrics for the subresources that open a stream both ways. */
const CONNECT_SUBRESOURCES = new Set(['exec', 'attach', 'portforward', 'proxy']);
/** `namespaces/<name>/status` and `/finalize` are subresources of the Namespace, not resources inside it. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
const APPLY_CONTENT_TYPE = 'application/apply-patch+yaml';

export const APISERVER_COMPONENT = 'apiserver';

function nonResource(method: string): RequestLabels {
  return { verb: method.toUpperCase(), group: '', version: '', resource: '', subresource: '', scope: '', component: APISERVER_COMPONENT };
}

/** Labels for a request; `url` is the request target (path and query). */
export function requestLabels(method: string, url: string, contentType?: string): RequestLabels {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const parts = path.split('/').filter((p) => p !== '');
  let group: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    group = '';
    rest = parts.slice(1);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1]!;
    rest = parts.slice(2);
  } else {
    return nonResource(method);
  }
  const version = rest[0]!;
  rest = rest.slice(1);
  // /api/v1 and /apis/apps/v1 themselves are discovery: non-resource.
  if (rest.length === 0) return nonResource(method);
  let legacyWatch = false;
  if (rest[0] === 'watch') {
    legacyWatch = true;
    rest = rest.slice(1);
  }
  let namespaced = false;
  if (rest[0] === 'namespaces' && rest.length > 1) {
    namespaced = true;
    if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2]!)) rest = rest.slice(2);
    else namespaced = false; // a Namespace object itself is cluster-scoped
  }
  if (rest.length === 0) return nonResource(method);
  const [resource = '', name, subresource = ''] = rest;
  const hasName = name !== undefined && name !== '';
  const upper = method.toUpperCase();
  let verb = upper === 'HEAD' ? 'GET' : upper;
  if (upper === 'GET' || upper === 'HEAD') {
    if (legacyWatch || (!hasName && isWatch(query))) verb = 'WATCH';
    else if (!hasName) verb = 'LIST';
  } else if (upper === 'PATCH' && (contentType ?? '').split(';')[0]!.trim().toLowerCase() === APPLY_CONTENT_TYPE) {
    verb = 'APPLY';
  }
  if (CONNECT_SUBRESOURCES.has(subresource)) verb = 'CONNECT';
  const scope = hasName || verb === 'POST' ? 'resource' : namespaced ? 'namespace' : 'cluster';
  return { verb, group, version, resource, subresource, scope, component: APISERVER_COMPONENT };
}

/** Long-running requests as kube-apiserver counts them in apiserver_longrunning_requests: watches and CONNECTs. */
export function isLongRunningVerb(verb: string): boolean {
  return verb === 'WATCH' || verb === 'CONNECT';
}
