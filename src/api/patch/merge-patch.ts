/**
 * JSON Merge Patch (RFC 7386, `application/merge-patch+json`): objects merge recursively, `null`
 * deletes, everything else (arrays included) replaces. A value that replaces rather than merges
 * is stored without its null object members, at any depth and inside arrays too, as
 * kube-apiserver's merge (evanphx/json-patch v4) prunes them; only an array replacing an object
 * keeps them there, and so does this. Pure: inputs are never modified and the result shares no
 * objects with them.
 */
import { assertPatchedDepth } from './patch-errors.js';
import { cloneJson, isJsonObject, setOwn, withoutNullMembers } from './json-value.js';

/**
 * Returns `doc` with `patch` merged in, exactly as RFC 7386 section 2 describes (a patch that is not
 * an object replaces the whole document). Callers patching API objects should reject non-object
 * patches first; Kubernetes does.
 */
export function applyMergePatch(doc: unknown, patch: unknown): unknown {
  const result = mergeInto(cloneJson(doc), patch);
  assertPatchedDepth(result);
  return result;
}

/** `target` is owned (a private copy) and may be modified; `patch` is only read. */
function mergeInto(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return isJsonObject(target) ? cloneJson(patch) : withoutNullMembers(patch);
  const out = isJsonObject(target) ? target : {};
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) delete out[key];
    else setOwn(out, key, mergeInto(Object.hasOwn(out, key) ? out[key] : undefined, value));
  }
  return out;
}
