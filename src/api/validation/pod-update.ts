/**
 * What may change in a pod after creation. A pod's spec is nearly immutable: the kubelet has
 * already acted on it, so Kubernetes only lets images, the active deadline (downwards),
 * tolerations (additions) and a negative grace period (to 1) move. Binding (setting nodeName
 * once) is also allowed here because Berth binds through update as well as through `binding`.
 */
import type { FieldError } from '../errors.js';
import type { Pod } from '../types.js';
import { child, fieldErrors, formatBadValue, index, isRecord, listOf } from './field-errors.js';
import { validateObjectMetaUpdate } from './meta.js';
import { validatePod, validateTolerations } from './pod.js';

const MAX_INT32 = 2147483647;

/** Kubernetes' wording, kept verbatim so tooling that recognises it keeps working. */
export const POD_UPDATE_FORBIDDEN_MESSAGE =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

/** How many differing paths to list under the forbidden message before cutting off. */
const MAX_DIFF_LINES = 10;

type Spec = Record<string, unknown>;

/**
 * Full validation of a pod update, like kube-apiserver's ValidatePodUpdate: the new pod is
 * validated as on create, immutable metadata is checked, then the spec change is checked.
 * Callers should run this instead of (not in addition to) validatePod on update.
 */
export function validatePodUpdate(newPod: Pod, oldPod: Pod): FieldError[] {
  const errs = [...validatePod(newPod), ...validateObjectMetaUpdate(newPod.metadata ?? {}, oldPod.metadata ?? {})];
  const newSpec: Spec = isRecord(newPod.spec) ? newPod.spec : {};
  const oldSpec: Spec = isRecord(oldPod.spec) ? oldPod.spec : {};
  return [...errs, ...validatePodSpecUpdate(newSpec, oldSpec)];
}

/** Only the spec-change rules (no create-time validation of the new spec). */
export function validatePodSpecUpdate(newSpec: Spec, oldSpec: Spec, path = 'spec'): FieldError[] {
  for (const list of ['containers', 'initContainers']) {
    if (listOf(newSpec[list]).length !== listOf(oldSpec[list]).length) {
      return [fieldErrors.forbidden(child(path, list), 'pod updates may not add or remove containers')];
    }
  }
  const deadlineErrs = validateActiveDeadlineUpdate(newSpec.activeDeadlineSeconds, oldSpec.activeDeadlineSeconds, path);
  if (deadlineErrs.length) return deadlineErrs;
  const tolerationErrs = validateOnlyAddedTolerations(newSpec.tolerations, oldSpec.tolerations, child(path, 'tolerations'));
  if (tolerationErrs.length) return tolerationErrs;

  const munged = withAllowedChangesReverted(newSpec, oldSpec);
  const diff = diffPaths(oldSpec, munged, path);
  if (diff.length === 0) return [];
  return [fieldErrors.forbidden(path, `${POD_UPDATE_FORBIDDEN_MESSAGE}\n${renderDiff(diff)}`)];
}

/** activeDeadlineSeconds may be set, or lowered, but never raised or removed. */
function validateActiveDeadlineUpdate(next: unknown, prev: unknown, path: string): FieldError[] {
  const at = child(path, 'activeDeadlineSeconds');
  const hasNext = next !== undefined && next !== null;
  const hasPrev = prev !== undefined && prev !== null;
  if (hasNext) {
    if (typeof next !== 'number' || next < 0 || next > MAX_INT32) return [fieldErrors.invalid(at, next, `must be between 0 and ${MAX_INT32}, inclusive`)];
    if (hasPrev && typeof prev === 'number' && prev < next) return [fieldErrors.invalid(at, next, 'must be less than or equal to previous value')];
    return [];
  }
  return hasPrev ? [fieldErrors.invalid(at, null, 'must not update from a positive integer to nil value')] : [];
}

/** Every existing toleration must still be present (its tolerationSeconds may change). */
function validateOnlyAddedTolerations(next: unknown, prev: unknown, path: string): FieldError[] {
  const newList = listOf(next);
  for (const old of listOf(prev)) {
    const found = newList.some((candidate) => {
      if (!isRecord(old) || !isRecord(candidate)) return semanticEqual(old, candidate);
      return semanticEqual({ ...old, tolerationSeconds: candidate.tolerationSeconds }, candidate);
    });
    if (!found) return [fieldErrors.forbidden(path, 'existing toleration can not be modified except its tolerationSeconds')];
  }
  return validateTolerations(next, path);
}

/** The new spec with every permitted change undone, so any remaining difference is forbidden. */
function withAllowedChangesReverted(newSpec: Spec, oldSpec: Spec): Spec {
  const munged: Spec = { ...newSpec };
  for (const list of ['containers', 'initContainers']) {
    const oldList = listOf(oldSpec[list]);
    if (Array.isArray(newSpec[list])) {
      munged[list] = listOf(newSpec[list]).map((c, i) => {
        const old = oldList[i];
        return isRecord(c) && isRecord(old) ? { ...c, image: old.image } : c;
      });
    }
  }
  munged.activeDeadlineSeconds = oldSpec.activeDeadlineSeconds;
  munged.tolerations = oldSpec.tolerations;
  const oldGrace = oldSpec.terminationGracePeriodSeconds;
  if (typeof oldGrace === 'number' && oldGrace < 0 && newSpec.terminationGracePeriodSeconds === 1) {
    munged.terminationGracePeriodSeconds = oldGrace;
  }
  // Binding: nodeName may go from unset to set, once.
  if (!oldSpec.nodeName && typeof newSpec.nodeName === 'string' && newSpec.nodeName) munged.nodeName = oldSpec.nodeName;
  return munged;
}

/**
 * Go's zero values and an absent field decode to the same struct (and Kubernetes' semantic
 * equality treats empty and nil maps/lists alike), so `""`, `0`, `false`, `null`, `[]` and `{}`
 * count as "not set" — otherwise a client that omits a defaulted-empty field (say
 * `securityContext: {}`) would be told it changed something.
 */
function isUnset(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  return isRecord(v) && Object.keys(v).length === 0;
}

function semanticEqual(a: unknown, b: unknown): boolean {
  return diffPaths(a, b, '').length === 0;
}

interface Difference {
  path: string;
  before: unknown;
  after: unknown;
}

function isContainer(v: unknown): v is unknown[] | Record<string, unknown> {
  return Array.isArray(v) || isRecord(v);
}

function diffPaths(a: unknown, b: unknown, path: string): Difference[] {
  if (isUnset(a) && isUnset(b)) return [];
  // An absent field compares as an empty list/object, so `{x: ""}` still equals "not set".
  const left = !isContainer(a) && isUnset(a) && isContainer(b) ? (Array.isArray(b) ? [] : {}) : a;
  const right = !isContainer(b) && isUnset(b) && isContainer(a) ? (Array.isArray(a) ? [] : {}) : b;
  if (Array.isArray(left) && Array.isArray(right)) {
    const out: Difference[] = [];
    for (let i = 0; i < Math.max(left.length, right.length); i++) out.push(...diffPaths(left[i], right[i], index(path, i)));
    return out;
  }
  if (isRecord(left) && isRecord(right)) {
    const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
    return [...keys].flatMap((k) => diffPaths(left[k], right[k], child(path, k)));
  }
  return Object.is(a, b) ? [] : [{ path, before: a, after: b }];
}

function renderDiff(diff: Difference[]): string {
  const lines = diff.slice(0, MAX_DIFF_LINES).map((d) => `  ${d.path}: ${formatBadValue(d.before)} -> ${formatBadValue(d.after)}`);
  if (diff.length > MAX_DIFF_LINES) lines.push(`  … and ${diff.length - MAX_DIFF_LINES} more`);
  return lines.join('\n');
}
