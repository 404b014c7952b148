/**
 * Errors the patch algorithms raise, matched to what kube-apiserver answers so clients react the
 * same way: malformed patch documents are 400; a well-formed patch that cannot be applied (failed
 * `test`, missing path, list of lists) is 422 with reason Invalid and Kubernetes' generic message,
 * followed by what exactly went wrong.
 */
import { ApiError, errors } from '../errors.js';
import { MAX_NESTING_DEPTH, exceedsDepth } from '../body.js';

/** kube-apiserver's message for a patch it understood but could not apply. */
export const PATCH_REJECTED_MESSAGE = 'the server rejected our request due to an error in our request';

/** 422 Invalid. The detail goes into the message (no causes) so kubectl prints it. */
export function patchRejected(detail: string): ApiError {
  return new ApiError('Invalid', `${PATCH_REJECTED_MESSAGE}: ${detail}`);
}

/** 400 for a patch document that is not shaped like its patch type requires. */
export function badPatch(detail: string): ApiError {
  return errors.badRequest(detail);
}

/** Patches can stack depth (a deep value added at a deep path); stored objects keep the body limit. */
export function assertPatchedDepth(result: unknown): void {
  if (exceedsDepth(result, MAX_NESTING_DEPTH)) {
    throw patchRejected(`the patched object nests deeper than ${MAX_NESTING_DEPTH} levels`);
  }
}
