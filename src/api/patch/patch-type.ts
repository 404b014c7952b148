/** Maps a PATCH request's Content-Type to the patch algorithm it selects. */
import { MEDIA_TYPES, mediaTypeOf } from '../body.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

const BY_MEDIA_TYPE: Record<string, PatchType> = {
  [MEDIA_TYPES.jsonPatch]: 'json',
  [MEDIA_TYPES.mergePatch]: 'merge',
  [MEDIA_TYPES.strategicMergePatch]: 'strategic',
  [MEDIA_TYPES.applyPatch]: 'apply',
};

/** Every patch media type, e.g. for DecodeOptions.accept and 415 messages. */
export const PATCH_MEDIA_TYPES: readonly string[] = Object.keys(BY_MEDIA_TYPE);

/** The patch type for a Content-Type header, or undefined when it is not a patch type (→ 415). */
export function patchTypeOf(contentType: string | undefined): PatchType | undefined {
  const media = mediaTypeOf(contentType);
  return media !== undefined && Object.hasOwn(BY_MEDIA_TYPE, media) ? BY_MEDIA_TYPE[media] : undefined;
}
