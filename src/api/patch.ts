/**
 * Patch algorithms for the PATCH verb, as pure functions on plain JSON values:
 * JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386) and Kubernetes strategic merge patch.
 * None of them modifies its inputs; errors are ApiErrors (400 malformed, 413 too many JSON patch
 * operations, 422 a patch that cannot apply).
 */
export { applyJsonPatch, MAX_JSON_PATCH_OPERATIONS, MAX_JSON_PATCH_COPY_BYTES } from './patch/json-patch.js';
export type { JsonPatchOperation } from './patch/json-patch.js';
export { applyMergePatch } from './patch/merge-patch.js';
export { applyStrategicMergePatch } from './patch/strategic-merge-patch.js';
export {
  builtinPatchFields,
  builtinPatchSchema,
  mergesLists,
  patchSchemaFromFields,
  podPatchSchema,
} from './patch/patch-schema.js';
export type { PatchField, PatchMeta, PatchSchema, PatchStrategy } from './patch/patch-schema.js';
export { PATCH_REJECTED_MESSAGE } from './patch/patch-errors.js';
export { PATCH_MEDIA_TYPES, patchTypeOf } from './patch/patch-type.js';
export type { PatchType } from './patch/patch-type.js';
