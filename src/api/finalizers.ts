/**
 * Owns the finalizer names through which a delete's propagation policy works (Kubernetes' names):
 * the registry sets them (src/registry/deletion-propagation.ts), the garbage collector clears them.
 */

/** Held while the garbage collector removes the object's ownerReferences from its dependents. */
export const ORPHAN_FINALIZER = 'orphan';
/** Held while the garbage collector deletes the dependents that block the object's deletion. */
export const FOREGROUND_FINALIZER = 'foregroundDeletion';
