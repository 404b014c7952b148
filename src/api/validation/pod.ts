/** Pod and PodSpec validation (create-time rules; see pod-update.ts for what may change later). */
import type { FieldError } from '../errors.js';
import type { Pod } from '../types.js';
import { validateContainer, validateEnum, type ContainerKind } from './container.js';
import { child, expectArray, expectInteger, expectString, fieldErrors, index, invalidEach, isRecord, listOf } from './field-errors.js';
import { validateLabelName, validateLabels, validateObjectMeta } from './meta.js';
import { dns1123LabelErrors, dns1123SubdomainErrors, inclusiveRangeError, labelValueErrors } from './names.js';

export const RESTART_POLICIES = ['Always', 'Never', 'OnFailure'] as const;
export const DNS_POLICIES = ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'] as const;
/** Kubernetes lists taint effects in this (unsorted) order in its messages. */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
export const TOLERATION_OPERATORS = ['Equal', 'Exists'] as const;
const MAX_INT32 = 2147483647;

/** Full validation of a pod being created (or replaced). */
export function validatePod(pod: Pod): FieldError[] {
  const errs = validateObjectMeta(pod.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(pod.spec)) return [...errs, fieldErrors.required('spec.containers')];
  return [...errs, ...validatePodSpec(pod.spec, 'spec')];
}

/**
 * A PodSpec at `path` — `spec` for pods, `spec.template.spec` for workload templates.
 * Accepts untyped JSON: wrong shapes are reported rather than thrown.
 */
export function validatePodSpec(spec: Record<string, unknown>, path: string): FieldError[] {
  const { errors: volumeErrs, names: volumeNames } = validateVolumes(spec.volumes, child(path, 'volumes'));
  return [
    ...volumeErrs,
    ...validateContainerLists(spec, volumeNames, path),
    ...validateHostPorts(spec.containers, child(path, 'containers')),
    ...validateEnum(spec.restartPolicy, RESTART_POLICIES, child(path, 'restartPolicy')),
    ...validateEnum(spec.dnsPolicy, DNS_POLICIES, child(path, 'dnsPolicy')),
    ...validateTerminationGracePeriod(spec.terminationGracePeriodSeconds, child(path, 'terminationGracePeriodSeconds')),
    ...validateActiveDeadline(spec.activeDeadlineSeconds, child(path, 'activeDeadlineSeconds')),
    ...validateLabels(spec.nodeSelector, child(path, 'nodeSelector')),
    ...validateOptionalName(spec.nodeName, dns1123SubdomainErrors, child(path, 'nodeName')),
    ...validateOptionalName(spec.hostname, dns1123LabelErrors, child(path, 'hostname')),
    ...validateOptionalName(spec.subdomain, dns1123LabelErrors, child(path, 'subdomain')),
    ...validateTolerations(spec.tolerations, child(path, 'tolerations')),
  ];
}

/** Regular containers (required, non-empty) then init containers; names unique across both lists. */
function validateContainerLists(spec: Record<string, unknown>, volumeNames: ReadonlySet<string>, path: string): FieldError[] {
  const containersPath = child(path, 'containers');
  const initPath = child(path, 'initContainers');
  const errs = [...expectArray(containersPath, spec.containers), ...expectArray(initPath, spec.initContainers)];
  if (listOf(spec.containers).length === 0 && !errs.some((e) => e.field === containersPath)) {
    errs.push(fieldErrors.required(containersPath));
  }
  const seenNames = new Set<string>();
  const checkList = (list: unknown, kind: ContainerKind, listPath: string) => {
    listOf(list).forEach((container, i) => {
      const at = index(listPath, i);
      errs.push(...validateContainer(container, { kind, volumeNames }, at));
      const name = isRecord(container) && typeof container.name === 'string' ? container.name : '';
      if (!name) return;
      if (seenNames.has(name)) errs.push(fieldErrors.duplicate(child(at, 'name'), name));
      seenNames.add(name);
    });
  };
  checkList(spec.containers, 'container', containersPath);
  checkList(spec.initContainers, 'initContainer', initPath);
  return errs;
}

/** Two containers cannot claim the same host port on the same protocol and address. */
function validateHostPorts(containers: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const claimed = new Set<string>();
  listOf(containers).forEach((container, ci) => {
    if (!isRecord(container)) return;
    listOf(container.ports).forEach((port, pi) => {
      if (!isRecord(port) || typeof port.hostPort !== 'number' || port.hostPort === 0) return;
      const claim = `${typeof port.hostIP === 'string' ? port.hostIP : ''}/${typeof port.protocol === 'string' ? port.protocol : 'TCP'}/${port.hostPort}`;
      if (claimed.has(claim)) errs.push(fieldErrors.duplicate(child(index(child(index(path, ci), 'ports'), pi), 'hostPort'), claim));
      claimed.add(claim);
    });
  });
  return errs;
}

interface VolumeCheck {
  errors: FieldError[];
  names: Set<string>;
}

/** Volume names: DNS-1123 labels, unique; each volume names at most one source. */
export function validateVolumes(volumes: unknown, path: string): VolumeCheck {
  const errors = expectArray(path, volumes);
  const names = new Set<string>();
  listOf(volumes).forEach((volume, i) => {
    const at = index(path, i);
    if (!isRecord(volume)) {
      errors.push(fieldErrors.typeInvalid(at, volume, 'must be an object'));
      return;
    }
    const name = typeof volume.name === 'string' ? volume.name : '';
    if (!name) errors.push(fieldErrors.required(child(at, 'name')));
    else {
      const problems = dns1123LabelErrors(name);
      errors.push(...invalidEach(child(at, 'name'), name, problems));
      if (problems.length === 0 && names.has(name)) errors.push(fieldErrors.duplicate(child(at, 'name'), name));
      names.add(name);
    }
    // Every key besides `name` is a volume source (emptyDir, hostPath, configMap, …).
    const sources = Object.keys(volume).filter((k) => k !== 'name' && volume[k] !== undefined && volume[k] !== null);
    for (const extra of sources.slice(1)) {
      errors.push(fieldErrors.forbidden(child(at, extra), 'may not specify more than 1 volume type'));
    }
  });
  return { errors, names };
}

function validateTerminationGracePeriod(value: unknown, path: string): FieldError[] {
  const typeErrs = expectInteger(path, value);
  if (typeErrs.length) return typeErrs;
  return typeof value === 'number' && value < 0 ? [fieldErrors.invalid(path, value, 'must be greater than or equal to 0')] : [];
}

function validateActiveDeadline(value: unknown, path: string): FieldError[] {
  const typeErrs = expectInteger(path, value);
  if (typeErrs.length) return typeErrs;
  if (typeof value !== 'number') return [];
  return value < 1 || value > MAX_INT32 ? [fieldErrors.invalid(path, value, inclusiveRangeError(1, MAX_INT32))] : [];
}

function validateOptionalName(value: unknown, rule: (s: string) => string[], path: string): FieldError[] {
  const typeErrs = expectString(path, value);
  if (typeErrs.length || !value) return typeErrs;
  return invalidEach(path, value, rule(value as string));
}

/** Tolerations: key a qualified name, operator Equal/Exists, effect a taint effect. */
export function validateTolerations(tolerations: unknown, path: string): FieldError[] {
  const typeErrs = expectArray(path, tolerations);
  if (typeErrs.length) return typeErrs;
  return listOf(tolerations).flatMap((toleration, i) => validateToleration(toleration, index(path, i)));
}

function validateToleration(toleration: unknown, path: string): FieldError[] {
  if (!isRecord(toleration)) return [fieldErrors.typeInvalid(path, toleration, 'must be an object')];
  const key = typeof toleration.key === 'string' ? toleration.key : '';
  const operator = toleration.operator ?? '';
  const value = typeof toleration.value === 'string' ? toleration.value : '';
  const effect = toleration.effect ?? '';
  const errs: FieldError[] = [];
  if (key) errs.push(...validateLabelName(key, child(path, 'key')));
  // An empty key tolerates every taint, which only makes sense with Exists.
  if (!key && operator !== 'Exists') {
    errs.push(
      fieldErrors.invalid(child(path, 'operator'), operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'),
    );
  }
  if (toleration.tolerationSeconds !== undefined && toleration.tolerationSeconds !== null && effect !== 'NoExecute') {
    errs.push(fieldErrors.invalid(child(path, 'effect'), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
  }
  errs.push(...expectInteger(child(path, 'tolerationSeconds'), toleration.tolerationSeconds));
  if (operator === 'Equal' || operator === '') {
    const problems = labelValueErrors(value);
    if (problems.length) errs.push(fieldErrors.invalid(child(path, 'operator'), value, problems.join(';')));
  } else if (operator === 'Exists') {
    if (value) errs.push(fieldErrors.invalid(child(path, 'operator'), toleration, "value must be empty when `operator` is 'Exists'"));
  } else {
    errs.push(fieldErrors.notSupported(child(path, 'operator'), operator, TOLERATION_OPERATORS));
  }
  if (effect !== '') errs.push(...validateTaintEffect(effect, child(path, 'effect')));
  return errs;
}

/** A taint or toleration effect; absence is the caller's decision (tolerations allow it, taints do not). */
export function validateTaintEffect(effect: unknown, path: string): FieldError[] {
  if (effect === undefined || effect === null || effect === '') return [fieldErrors.required(path)];
  return (TAINT_EFFECTS as readonly unknown[]).includes(effect) ? [] : [fieldErrors.notSupported(path, effect, TAINT_EFFECTS)];
}
