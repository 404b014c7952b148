/**
 * Validation of scheduling.k8s.io kinds, in Kubernetes' wording: PriorityClass (the reserved
 * `system-` names, the ceiling of user-defined values, preemptionPolicy, and on update an
 * immutable value and preemptionPolicy). Also the built-in classes and the priority constants the
 * Priority admission plugin and the scheduler share.
 */
import type { FieldError } from '../errors.js';
import type { PriorityClass } from '../types.js';
import { fieldErrors } from './field-errors.js';
import { validateObjectMeta, validateObjectMetaUpdate } from './meta.js';

/** The highest value a user-created PriorityClass may have. */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;
export const SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
export const SYSTEM_PRIORITY_CLASS_PREFIX = 'system-';
export const PREEMPTION_POLICIES = ['Never', 'PreemptLowerPriority'] as const;

/** The classes every cluster has, as kube-apiserver creates them. */
export const SYSTEM_PRIORITY_CLASSES: readonly PriorityClass[] = [
  { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'system-node-critical' }, value: SYSTEM_CRITICAL_PRIORITY + 1000, description: 'Used for system critical pods that must not be moved from their current node.', preemptionPolicy: 'PreemptLowerPriority' } as PriorityClass,
  { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'system-cluster-critical' }, value: SYSTEM_CRITICAL_PRIORITY, description: 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.', preemptionPolicy: 'PreemptLowerPriority' } as PriorityClass,
];

function knownSystemClassError(pc: PriorityClass): string | undefined {
  const known = SYSTEM_PRIORITY_CLASSES.find((s) => s.metadata.name === pc.metadata.name);
  if (!known) return `${pc.metadata.name} is not a known system priority class`;
  if (known.value !== pc.value) return `value of ${pc.metadata.name} PriorityClass must be ${known.value}`;
  if (Boolean(known.globalDefault) !== Boolean(pc.globalDefault)) return `globalDefault of ${pc.metadata.name} PriorityClass must be ${Boolean(known.globalDefault)}`;
  return undefined;
}

export function validatePriorityClass(pc: PriorityClass): FieldError[] {
  const errs = validateObjectMeta(pc.metadata, { namespaced: false, nameRule: 'subdomain' });
  const name = pc.metadata.name ?? '';
  if (name.startsWith(SYSTEM_PRIORITY_CLASS_PREFIX)) {
    const err = knownSystemClassError(pc);
    if (err) errs.push(fieldErrors.forbidden('metadata.name', `priority class names with '${SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: ${err}`));
  } else if ((pc.value ?? 0) > HIGHEST_USER_DEFINABLE_PRIORITY) {
    errs.push(fieldErrors.forbidden('value', `maximum allowed value of a user defined priority is ${HIGHEST_USER_DEFINABLE_PRIORITY}`));
  }
  if (pc.preemptionPolicy === undefined || pc.preemptionPolicy === null) errs.push(fieldErrors.required('preemptionPolicy'));
  else if (!(PREEMPTION_POLICIES as readonly string[]).includes(pc.preemptionPolicy)) errs.push(fieldErrors.notSupported('preemptionPolicy', pc.preemptionPolicy, PREEMPTION_POLICIES));
  return errs;
}

export function validatePriorityClassUpdate(pc: PriorityClass, old: PriorityClass): FieldError[] {
  const errs = [...validatePriorityClass(pc), ...validateObjectMetaUpdate(pc.metadata, old.metadata)];
  if (pc.value !== old.value) errs.push(fieldErrors.forbidden('value', 'may not be changed in an update.'));
  if (pc.preemptionPolicy !== old.preemptionPolicy) errs.push(fieldErrors.invalid('preemptionPolicy', pc.preemptionPolicy, 'field is immutable'));
  return errs;
}
