/** Container validation: name, image, pull policy, ports, env, resources, volume mounts. */
import type { FieldError } from '../errors.js';
import {
  child,
  expectArray,
  expectInteger,
  expectString,
  fieldErrors,
  index,
  invalidEach,
  isRecord,
  listOf,
} from './field-errors.js';
import { dns1123LabelErrors, envVarNameErrors, portNameErrors, portNumberErrors } from './names.js';
import { validateResourceRequirements } from './resources.js';

export const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
export const PORT_PROTOCOLS = ['SCTP', 'TCP', 'UDP'] as const;
export const TERMINATION_MESSAGE_POLICIES = ['File', 'FallbackToLogsOnError'] as const;

/** Which list a container sits in: rules differ slightly between them. */
export type ContainerKind = 'container' | 'initContainer';

export interface ContainerContext {
  kind: ContainerKind;
  /** volume names declared by the pod, for volumeMounts to reference */
  volumeNames: ReadonlySet<string>;
}

/**
 * An enum field that defaulting normally fills: absent is accepted (the strategy defaults before
 * or after validation, either way is fine), an empty string is Required, anything else must be listed.
 */
export function validateEnum(value: unknown, supported: readonly string[], path: string): FieldError[] {
  if (value === undefined || value === null) return [];
  if (value === '') return [fieldErrors.required(path)];
  return supported.includes(value as string) ? [] : [fieldErrors.notSupported(path, value, supported)];
}

/** Validates one container (not its name's uniqueness, which the list check owns). */
export function validateContainer(container: unknown, ctx: ContainerContext, path: string): FieldError[] {
  if (!isRecord(container)) return [fieldErrors.typeInvalid(path, container, 'must be an object')];
  return [
    ...validateContainerName(container.name, child(path, 'name')),
    ...validateImage(container.image, child(path, 'image')),
    ...validateEnum(container.imagePullPolicy, PULL_POLICIES, child(path, 'imagePullPolicy')),
    ...validateEnum(container.terminationMessagePolicy, TERMINATION_MESSAGE_POLICIES, child(path, 'terminationMessagePolicy')),
    ...validateContainerRestartPolicy(container.restartPolicy, ctx.kind, child(path, 'restartPolicy')),
    ...validateStringList(container.command, child(path, 'command')),
    ...validateStringList(container.args, child(path, 'args')),
    ...validatePorts(container.ports, child(path, 'ports')),
    ...validateEnv(container.env, child(path, 'env')),
    ...validateResourceRequirements(container.resources, child(path, 'resources')),
    ...validateVolumeMounts(container.volumeMounts, ctx.volumeNames, child(path, 'volumeMounts'), isPrivileged(container)),
  ];
}

function validateContainerName(name: unknown, path: string): FieldError[] {
  const typeErrs = expectString(path, name);
  if (typeErrs.length) return typeErrs;
  if (!name) return [fieldErrors.required(path)];
  return invalidEach(path, name, dns1123LabelErrors(name as string));
}

function validateImage(image: unknown, path: string): FieldError[] {
  const typeErrs = expectString(path, image);
  if (typeErrs.length) return typeErrs;
  const text = (image as string | undefined) ?? '';
  if (text.trim().length === 0) return [fieldErrors.required(path)];
  if (text.trim() !== text) return [fieldErrors.invalid(path, text, 'must not have leading or trailing whitespace')];
  return [];
}

/** Only init containers may set restartPolicy (and only to Always, which makes them sidecars). */
function validateContainerRestartPolicy(policy: unknown, kind: ContainerKind, path: string): FieldError[] {
  if (policy === undefined || policy === null) return [];
  if (kind === 'container') return [fieldErrors.forbidden(path, 'may not be set for non-init containers')];
  return policy === 'Always' ? [] : [fieldErrors.notSupported(path, policy, ['Always'])];
}

function validateStringList(list: unknown, path: string): FieldError[] {
  const typeErrs = expectArray(path, list);
  if (typeErrs.length) return typeErrs;
  return listOf(list).flatMap((item, i) => expectString(index(path, i), item));
}

function validatePorts(ports: unknown, path: string): FieldError[] {
  const typeErrs = expectArray(path, ports);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  const names = new Set<string>();
  listOf(ports).forEach((port, i) => {
    const at = index(path, i);
    if (!isRecord(port)) {
      errs.push(fieldErrors.typeInvalid(at, port, 'must be an object'));
      return;
    }
    errs.push(...validatePortName(port.name, names, child(at, 'name')));
    errs.push(...validatePortNumber(port.containerPort, true, child(at, 'containerPort')));
    errs.push(...validatePortNumber(port.hostPort, false, child(at, 'hostPort')));
    errs.push(...validateEnum(port.protocol, PORT_PROTOCOLS, child(at, 'protocol')));
  });
  return errs;
}

function validatePortName(name: unknown, seen: Set<string>, path: string): FieldError[] {
  const typeErrs = expectString(path, name);
  if (typeErrs.length || !name) return typeErrs;
  const text = name as string;
  const problems = portNameErrors(text);
  if (problems.length) return invalidEach(path, text, problems);
  if (seen.has(text)) return [fieldErrors.duplicate(path, text)];
  seen.add(text);
  return [];
}

/** containerPort is required; hostPort 0/absent means "no host port". */
function validatePortNumber(port: unknown, required: boolean, path: string): FieldError[] {
  const typeErrs = expectInteger(path, port);
  if (typeErrs.length) return typeErrs;
  if (port === undefined || port === null || port === 0) return required ? [fieldErrors.required(path)] : [];
  return invalidEach(path, port, portNumberErrors(port as number));
}

function validateEnv(env: unknown, path: string): FieldError[] {
  const typeErrs = expectArray(path, env);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  listOf(env).forEach((item, i) => {
    const at = index(path, i);
    if (!isRecord(item)) {
      errs.push(fieldErrors.typeInvalid(at, item, 'must be an object'));
      return;
    }
    const nameErrs = expectString(child(at, 'name'), item.name);
    if (nameErrs.length) errs.push(...nameErrs);
    else if (!item.name) errs.push(fieldErrors.required(child(at, 'name')));
    else errs.push(...invalidEach(child(at, 'name'), item.name, envVarNameErrors(item.name as string)));
    errs.push(...expectString(child(at, 'value'), item.value));
    if (item.valueFrom !== undefined && item.valueFrom !== null && item.value) {
      errs.push(fieldErrors.invalid(child(at, 'valueFrom'), '', 'may not be specified when `value` is not empty'));
    }
  });
  return errs;
}

const MOUNT_PROPAGATIONS = ['Bidirectional', 'HostToContainer', 'None'];

function isPrivileged(container: Record<string, unknown>): boolean {
  const sc = container.securityContext;
  return isRecord(sc) && sc.privileged === true;
}

/**
 * Mounts: names declared, paths unique, subPaths inside the volume, and a known propagation; a
 * Bidirectional one only for a privileged container, since its mounts reach back into the host.
 */
function validateVolumeMounts(mounts: unknown, volumeNames: ReadonlySet<string>, path: string, privileged: boolean): FieldError[] {
  const typeErrs = expectArray(path, mounts);
  if (typeErrs.length) return typeErrs;
  const errs: FieldError[] = [];
  const mountPaths = new Set<string>();
  listOf(mounts).forEach((mount, i) => {
    const at = index(path, i);
    if (!isRecord(mount)) {
      errs.push(fieldErrors.typeInvalid(at, mount, 'must be an object'));
      return;
    }
    const name = typeof mount.name === 'string' ? mount.name : '';
    if (!name) errs.push(fieldErrors.required(child(at, 'name')));
    if (!volumeNames.has(name)) errs.push(fieldErrors.notFound(child(at, 'name'), name));
    const mountPath = typeof mount.mountPath === 'string' ? mount.mountPath : '';
    if (!mountPath) errs.push(fieldErrors.required(child(at, 'mountPath')));
    else if (mountPaths.has(mountPath)) errs.push(fieldErrors.invalid(child(at, 'mountPath'), mountPath, 'must be unique'));
    mountPaths.add(mountPath);
    if (typeof mount.subPath === 'string' && mount.subPath) errs.push(...validateSubPath(mount.subPath, child(at, 'subPath')));
    const propagation = mount.mountPropagation;
    if (propagation !== undefined && propagation !== null) {
      if (!MOUNT_PROPAGATIONS.includes(propagation as string)) errs.push(fieldErrors.notSupported(child(at, 'mountPropagation'), propagation, MOUNT_PROPAGATIONS));
      else if (propagation === 'Bidirectional' && !privileged) errs.push(fieldErrors.forbidden(child(at, 'mountPropagation'), 'Bidirectional mount propagation is available only to privileged containers'));
    }
  });
  return errs;
}

/** subPath must stay inside the volume: relative and without '..'. */
function validateSubPath(subPath: string, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (subPath.startsWith('/')) errs.push(fieldErrors.invalid(path, subPath, 'must be a relative path'));
  if (subPath.split('/').includes('..')) errs.push(fieldErrors.invalid(path, subPath, "must not contain '..'"));
  return errs;
}
