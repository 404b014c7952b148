/**
 * The apiVersion and kind of a request body, as kube-apiserver's decoders settle them: what the
 * body leaves out comes from the endpoint (the handlers decode with the endpoint's group, version
 * and kind as defaults, so a POST to pods/{name}/eviction without `kind` is an Eviction), and what
 * names something else is refused with the decoder's wording. Used for objects and for every
 * subresource body (Eviction, Scale, Binding, TokenRequest).
 */
import { errors } from '../api/errors.js';
import { decodeBody, type DecodeOptions } from '../api/body.js';
import type { KubeObject } from '../api/types.js';

/** What an endpoint takes: its kind in its group, at any of `versions` (the first is the default). */
export interface EndpointKind {
  group: string;
  versions: readonly string[];
  kind: string;
}

/**
 * Fills a missing apiVersion/kind of `obj` from `expected` and refuses any other kind or version
 * (400 BadRequest, as transformDecodeError and the handlers' version check word it).
 */
export function defaultTypeMeta(obj: KubeObject, expected: EndpointKind): void {
  const defaultApiVersion = apiVersionOf(expected.group, expected.versions[0]!);
  const apiVersion = typeof obj.apiVersion === 'string' && obj.apiVersion !== '' ? obj.apiVersion : defaultApiVersion;
  const kind = typeof obj.kind === 'string' && obj.kind !== '' ? obj.kind : expected.kind;
  const slash = apiVersion.lastIndexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const dataVersion = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  if (group !== expected.group) {
    // The decoder knows no such kind in another group.
    throw errors.badRequest(`${kind} in version ${JSON.stringify(dataVersion)} cannot be handled as a ${expected.kind}: no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)} in scheme "pkg/api/legacyscheme/scheme.go:30"`);
  }
  if (kind !== expected.kind) {
    // Another kind of the same group decodes, then cannot be converted to this one.
    const internalPackage = expected.group === '' ? 'core' : expected.group.split('.')[0];
    throw errors.badRequest(`${kind} in version ${JSON.stringify(dataVersion)} cannot be handled as a ${expected.kind}: converting (${dataVersion}.${kind}) to (${internalPackage}.${expected.kind}): unknown conversion`);
  }
  // Same group and kind at another version decodes, then the handler refuses a version it does not accept.
  if (!expected.versions.includes(dataVersion)) {
    throw errors.badRequest(`the API version in the data (${apiVersion}) does not match the expected API version (${defaultApiVersion})`);
  }
  obj.apiVersion = apiVersion;
  obj.kind = kind;
}

/**
 * A subresource body decoded (JSON, YAML or protobuf) and typed by `defaultTypeMeta`. 400 when it
 * is not an object, as the decoder refuses anything else.
 */
export function decodeTypedBody(body: Buffer | undefined, contentType: string | undefined, expected: EndpointKind, options: DecodeOptions = {}): KubeObject {
  if (!body || body.length === 0) throw errors.badRequest('the request body is empty');
  const doc = decodeBody(body, contentType, options);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    const got = doc === null ? 'null' : Array.isArray(doc) ? 'an array' : `a ${typeof doc}`;
    throw errors.badRequest(`the object must be a JSON object, got ${got}`);
  }
  const obj = doc as KubeObject;
  defaultTypeMeta(obj, expected);
  return obj;
}

function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}
