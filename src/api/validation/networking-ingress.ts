/**
 * Owns networking.k8s.io/v1 Ingress validation as kube-apiserver's networking validation does it: the
 * spec (rules, hosts exact and wildcard, HTTP paths by pathType, backends, TLS), the class name, the
 * legacy class annotation against spec.ingressClassName on create, and the load-balancer status.
 * Messages and field paths are Kubernetes' own wording; the kind module (src/registry/kinds/ingress.ts)
 * calls these.
 */
import { isIP } from 'node:net';
import type { FieldError } from '../errors.js';
import { child, expectArray, expectObject, expectString, fieldErrors, index, invalidEach, isRecord, listOf } from './field-errors.js';
import { dns1035LabelErrors, dns1123SubdomainErrors, maxLenError, portNameErrors, portNumberErrors, regexError, DNS1123_SUBDOMAIN_MAX_LENGTH } from './names.js';

export const PATH_TYPES = ['Exact', 'ImplementationSpecific', 'Prefix'] as const;
export type PathType = (typeof PATH_TYPES)[number];

/** The annotation that named an Ingress's class before spec.ingressClassName existed. */
export const LEGACY_INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

/** Sequences an Exact or Prefix path may not hold, and endings it may not have (they would be ambiguous to proxies). */
const INVALID_PATH_SEQUENCES = ['//', '/./', '/../', '%2f', '%2F'];
const INVALID_PATH_SUFFIXES = ['/..', '/.'];

const WILDCARD_FMT = '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
const WILDCARD_RE = new RegExp(`^${WILDCARD_FMT}$`);
const WILDCARD_MSG =
  "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";

/** Problems with `value` as a wildcard DNS-1123 subdomain (`*.example.com`). */
export function wildcardSubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!WILDCARD_RE.test(value)) errs.push(regexError(WILDCARD_MSG, WILDCARD_FMT, ['*.example.com']));
  return errs;
}

/** A host of a rule or a TLS entry: a wildcard or exact DNS subdomain (rules also refuse IP addresses). */
function hostErrors(path: string, host: string, rejectIP: boolean): FieldError[] {
  if (rejectIP && isIP(host) !== 0) return [fieldErrors.invalid(path, host, 'must be a DNS name, not an IP address')];
  return invalidEach(path, host, host.includes('*') ? wildcardSubdomainErrors(host) : dns1123SubdomainErrors(host));
}

/** A backend names exactly one of a Service (with a port name or number) and a typed resource. */
export function validateIngressBackend(backend: unknown, path: string): FieldError[] {
  if (!isRecord(backend)) return expectObject(path, backend);
  const hasService = isRecord(backend.service);
  const hasResource = isRecord(backend.resource);
  if (hasService && hasResource) return [fieldErrors.invalid(path, '', 'cannot set both resource and service backends')];
  if (hasResource) {
    const ref = backend.resource as Record<string, unknown>;
    const refPath = child(path, 'resource');
    const errs: FieldError[] = [];
    if (typeof ref.apiGroup === 'string' && ref.apiGroup !== '') errs.push(...invalidEach(child(refPath, 'apiGroup'), ref.apiGroup, dns1123SubdomainErrors(ref.apiGroup)));
    if (typeof ref.kind !== 'string' || ref.kind === '') errs.push(fieldErrors.required(child(refPath, 'kind'), 'kind is required'));
    if (typeof ref.name !== 'string' || ref.name === '') errs.push(fieldErrors.required(child(refPath, 'name'), 'name is required'));
    return errs;
  }
  if (!hasService) return [fieldErrors.invalid(path, '', 'resource or service backend is required')];
  const service = backend.service as Record<string, unknown>;
  const servicePath = child(path, 'service');
  const errs: FieldError[] = [...expectString(child(servicePath, 'name'), service.name)];
  if (typeof service.name !== 'string' || service.name === '') errs.push(fieldErrors.required(child(servicePath, 'name'), ''));
  else errs.push(...invalidEach(child(servicePath, 'name'), service.name, dns1035LabelErrors(service.name)));
  const port = isRecord(service.port) ? service.port : {};
  const portPath = child(servicePath, 'port');
  const name = typeof port.name === 'string' ? port.name : '';
  const num = typeof port.number === 'number' ? port.number : 0;
  if (name !== '' && num !== 0) errs.push(fieldErrors.invalid(path, '', 'cannot set both port name & port number'));
  else if (name !== '') errs.push(...invalidEach(child(portPath, 'name'), name, portNameErrors(name)));
  else if (num !== 0) errs.push(...invalidEach(child(portPath, 'number'), num, portNumberErrors(num)));
  else errs.push(fieldErrors.required(path, 'port name or number is required'));
  return errs;
}

/** One HTTP path: pathType is required and decides what the path may be. */
function validateHttpPath(p: unknown, path: string): FieldError[] {
  if (!isRecord(p)) return expectObject(path, p);
  const errs: FieldError[] = [];
  const pathType = p.pathType;
  const value = typeof p.path === 'string' ? p.path : '';
  const pathField = child(path, 'path');
  if (pathType === undefined || pathType === null || pathType === '') return [fieldErrors.required(child(path, 'pathType'), 'pathType must be specified')];
  if (pathType === 'Exact' || pathType === 'Prefix') {
    if (!value.startsWith('/')) errs.push(fieldErrors.invalid(pathField, value, 'must be an absolute path'));
    if (value.length > 0) {
      for (const seq of INVALID_PATH_SEQUENCES) if (value.includes(seq)) errs.push(fieldErrors.invalid(pathField, value, `must not contain '${seq}'`));
      for (const suffix of INVALID_PATH_SUFFIXES) if (value.endsWith(suffix)) errs.push(fieldErrors.invalid(pathField, value, `cannot end with '${suffix}'`));
    }
  } else if (pathType === 'ImplementationSpecific') {
    if (value.length > 0 && !value.startsWith('/')) errs.push(fieldErrors.invalid(pathField, value, 'must be an absolute path'));
  } else {
    errs.push(fieldErrors.notSupported(child(path, 'pathType'), pathType, PATH_TYPES));
  }
  errs.push(...validateIngressBackend(p.backend, child(path, 'backend')));
  return errs;
}

function validateRules(rules: unknown[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  rules.forEach((rule, i) => {
    const rulePath = index(path, i);
    if (!isRecord(rule)) {
      errs.push(...expectObject(rulePath, rule));
      return;
    }
    errs.push(...expectString(child(rulePath, 'host'), rule.host));
    if (typeof rule.host === 'string' && rule.host !== '') errs.push(...hostErrors(child(rulePath, 'host'), rule.host, true));
    if (rule.http === undefined || rule.http === null) return;
    const httpPath = child(rulePath, 'http');
    if (!isRecord(rule.http)) {
      errs.push(...expectObject(httpPath, rule.http));
      return;
    }
    const pathsPath = child(httpPath, 'paths');
    errs.push(...expectArray(pathsPath, rule.http.paths));
    const paths = listOf(rule.http.paths);
    if (paths.length === 0) errs.push(fieldErrors.required(pathsPath, ''));
    paths.forEach((p, j) => errs.push(...validateHttpPath(p, index(pathsPath, j))));
  });
  return errs;
}

function validateTls(tls: unknown[], path: string): FieldError[] {
  const errs: FieldError[] = [];
  tls.forEach((entry, i) => {
    const entryPath = index(path, i);
    if (!isRecord(entry)) {
      errs.push(...expectObject(entryPath, entry));
      return;
    }
    errs.push(...expectArray(child(entryPath, 'hosts'), entry.hosts));
    listOf(entry.hosts).forEach((host, j) => {
      const hostPath = index(child(entryPath, 'hosts'), j);
      if (typeof host !== 'string') errs.push(...expectString(hostPath, host));
      else errs.push(...hostErrors(hostPath, host, false));
    });
    errs.push(...expectString(child(entryPath, 'secretName'), entry.secretName));
    if (typeof entry.secretName === 'string' && entry.secretName !== '') {
      errs.push(...invalidEach(child(entryPath, 'secretName'), entry.secretName, dns1123SubdomainErrors(entry.secretName)));
    }
  });
  return errs;
}

/** ValidateIngressSpec: rules or a default backend, each part checked where it lives. */
export function validateIngressSpec(spec: unknown, path = 'spec'): FieldError[] {
  if (!isRecord(spec)) return spec === undefined || spec === null ? [fieldErrors.invalid(path, [], 'either `defaultBackend` or `rules` must be specified')] : expectObject(path, spec);
  const errs: FieldError[] = [...expectArray(child(path, 'rules'), spec.rules), ...expectArray(child(path, 'tls'), spec.tls)];
  const rules = listOf(spec.rules);
  const hasDefault = spec.defaultBackend !== undefined && spec.defaultBackend !== null;
  if (rules.length === 0 && !hasDefault) errs.push(fieldErrors.invalid(path, spec.rules ?? [], 'either `defaultBackend` or `rules` must be specified'));
  if (hasDefault) errs.push(...validateIngressBackend(spec.defaultBackend, child(path, 'defaultBackend')));
  errs.push(...validateRules(rules, child(path, 'rules')));
  errs.push(...validateTls(listOf(spec.tls), child(path, 'tls')));
  const className = spec.ingressClassName;
  errs.push(...expectString(child(path, 'ingressClassName'), className));
  if (typeof className === 'string') errs.push(...invalidEach(child(path, 'ingressClassName'), className, dns1123SubdomainErrors(className)));
  return errs;
}

/** On create only: the legacy annotation and spec.ingressClassName may not name different classes. */
export function validateIngressClassAnnotation(annotations: Record<string, string> | undefined, spec: unknown): FieldError[] {
  const legacy = annotations?.[LEGACY_INGRESS_CLASS_ANNOTATION];
  const className = isRecord(spec) ? spec.ingressClassName : undefined;
  if (legacy === undefined || typeof className !== 'string' || legacy === className) return [];
  return [fieldErrors.invalid(`annotations.${LEGACY_INGRESS_CLASS_ANNOTATION}`, legacy, 'must match `ingressClassName` when both are specified')];
}

/** ValidateIngressLoadBalancerStatus: each entry's ip is an IP address, its hostname a DNS name. */
export function validateIngressStatus(status: unknown, path = 'status'): FieldError[] {
  if (!isRecord(status)) return expectObject(path, status);
  const lbPath = child(child(path, 'loadBalancer'), 'ingress');
  const lb = isRecord(status.loadBalancer) ? status.loadBalancer : {};
  const errs: FieldError[] = [...expectArray(lbPath, lb.ingress)];
  listOf(lb.ingress).forEach((entry, i) => {
    if (!isRecord(entry)) return;
    const entryPath = index(lbPath, i);
    if (typeof entry.ip === 'string' && entry.ip !== '' && isIP(entry.ip) === 0) errs.push(fieldErrors.invalid(child(entryPath, 'ip'), entry.ip, 'must be a valid IP address'));
    if (typeof entry.hostname === 'string' && entry.hostname !== '') {
      errs.push(...invalidEach(child(entryPath, 'hostname'), entry.hostname, dns1123SubdomainErrors(entry.hostname)));
      if (isIP(entry.hostname) !== 0) errs.push(fieldErrors.invalid(child(entryPath, 'hostname'), entry.hostname, 'must be a DNS name, not an IP address'));
    }
  });
  return errs;
}
