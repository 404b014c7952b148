/**
 * Owns the pod spec's deprecated alias `serviceAccount` of `serviceAccountName`. The v1 API converts
 * it as kube-apiserver does: a spec that names only `serviceAccount` gets it as `serviceAccountName`
 * (so the ServiceAccount admission checks the account it names), and a pod shows both once its
 * account is set.
 */
import type { PodSpec } from './types.js';

/** The account fields of a pod spec. */
type SpecWithAccount = Pick<PodSpec, 'serviceAccount' | 'serviceAccountName'>;

/** Fills `serviceAccountName` from the deprecated `serviceAccount` when only the latter is given. */
export function adoptDeprecatedServiceAccount(spec: SpecWithAccount): void {
  if (!spec.serviceAccountName && typeof spec.serviceAccount === 'string' && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
}

/** Writes the deprecated `serviceAccount` as the v1 API returns it: equal to `serviceAccountName`. */
export function mirrorDeprecatedServiceAccount(spec: SpecWithAccount): void {
  if (typeof spec.serviceAccountName === 'string' && spec.serviceAccountName) spec.serviceAccount = spec.serviceAccountName;
}
