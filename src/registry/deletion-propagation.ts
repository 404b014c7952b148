/**
 * Delete propagation (DeleteOptions.propagationPolicy) expressed as finalizers, as Kubernetes does:
 *  - Background (and no policy on an object without GC finalizers): the object goes at once; the
 *    garbage collector then deletes dependents whose owners are all gone.
 *  - Foreground: the object stays (deletionTimestamp set) with the `foregroundDeletion` finalizer
 *    until the garbage collector has deleted the dependents that block it, then it goes.
 *  - Orphan: the object stays with the `orphan` finalizer until the garbage collector has removed
 *    its ownerReferences from every dependent, then it goes; the dependents live on.
 * No policy keeps whatever GC finalizer the object already carries (a second plain delete does
 * not cancel a foreground deletion in progress).
 */
import { errors } from '../api/errors.js';
import { FOREGROUND_FINALIZER, ORPHAN_FINALIZER } from '../api/finalizers.js';

export const PROPAGATION_POLICIES = ['Background', 'Foreground', 'Orphan'] as const;

/**
 * The finalizers an object should carry after a delete with `policy`, or undefined when they stay
 * as they are. Throws Invalid (422) for an unknown policy.
 */
export function finalizersForPropagation(current: readonly string[] | undefined, policy: string | undefined): string[] | undefined {
  if (policy === undefined || policy === '') return undefined;
  if (!(PROPAGATION_POLICIES as readonly string[]).includes(policy)) {
    throw errors.invalid({ resource: '', kind: 'DeleteOptions', name: '' }, [
      {
        field: 'propagationPolicy',
        type: 'FieldValueNotSupported',
        message: `Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan", "nil"`,
      },
    ]);
  }
  const kept = (current ?? []).filter((f) => f !== ORPHAN_FINALIZER && f !== FOREGROUND_FINALIZER);
  if (policy === 'Orphan') kept.push(ORPHAN_FINALIZER);
  if (policy === 'Foreground') kept.push(FOREGROUND_FINALIZER);
  const before = [...(current ?? [])].sort().join('\n');
  return [...kept].sort().join('\n') === before ? undefined : kept;
}
