/**
 * Owns the names Kubernetes fixes for the apps kinds that their controllers share with the kinds'
 * modules and with kubectl. Pure.
 */

/** The label kubectl and the controllers use to tie a pod to its template revision. */
export const CONTROLLER_REVISION_HASH_LABEL = 'controller-revision-hash';
