/**
 * apiregistration.k8s.io/v1 validation: APIService (kube-aggregator's ValidateAPIService).
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import type { APIService, KubeObject } from '../types.js';
import { child, dns1035LabelErrors, dns1123SubdomainErrors, expectObject, fieldErrors, isRecord, validateObjectMeta } from '../validation.js';
import { apiServiceName } from '../identities.js';

// ---------- validation (kube-aggregator's ValidateAPIService) ----------

function validateName(meta: KubeObject['metadata'], required: string): FieldError[] {
  const name = meta?.name;
  if (typeof name !== 'string' || name === '') return [];
  const segment: string[] = [];
  if (name === '.' || name === '..') segment.push(`may not be '${name}'`);
  for (const c of ['/', '%']) if (name.includes(c)) segment.push(`may not contain '${c}'`);
  if (segment.length) return segment.map((m) => fieldErrors.invalid('metadata.name', name, m));
  return name === required ? [] : [fieldErrors.invalid('metadata.name', name, `must be \`spec.version+"."+spec.group\`: ${JSON.stringify(required)}`)];
}

function priorityErrors(value: unknown, path: string, max: number): FieldError[] {
  const n = typeof value === 'number' && Number.isInteger(value) ? value : 0;
  if (value !== undefined && value !== null && typeof value !== 'number') return [fieldErrors.typeInvalid(path, value, 'must be an integer')];
  return n <= 0 || n > max ? [fieldErrors.invalid(path, n, `must be positive and less than ${max}`)] : [];
}

export function validateAPIService(svc: APIService): FieldError[] {
  const spec = (isRecord(svc.spec) ? svc.spec : {}) as Record<string, unknown>;
  const group = typeof spec.group === 'string' ? spec.group : '';
  const version = typeof spec.version === 'string' ? spec.version : '';
  // The name rule replaces the generic one: only `version.group` is accepted.
  const errs = validateObjectMeta(svc.metadata, { namespaced: false, nameRule: 'pathSegment' }).filter((e) => e.field !== 'metadata.name');
  errs.push(...validateName(svc.metadata, apiServiceName(group, version)));
  if (!isRecord(svc.metadata) || (!svc.metadata.name && !svc.metadata.generateName)) errs.push(fieldErrors.required('metadata.name', 'name or generateName is required'));
  if (group === '' && version !== 'v1') errs.push(fieldErrors.required('spec.group', 'only v1 may have an empty group and it better be legacy kube'));
  if (group !== '') errs.push(...dns1123SubdomainErrors(group).map((m) => fieldErrors.invalid('spec.group', group, m)));
  errs.push(...dns1035LabelErrors(version).map((m) => fieldErrors.invalid('spec.version', version, m)));
  errs.push(...priorityErrors(spec.groupPriorityMinimum, 'spec.groupPriorityMinimum', 20000), ...priorityErrors(spec.versionPriority, 'spec.versionPriority', 1000));
  const caBundle = typeof spec.caBundle === 'string' ? spec.caBundle : '';
  const caBytes = Buffer.from(caBundle, 'base64').length;
  const service = spec.service;
  if (service === undefined || service === null) {
    if (caBytes > 0) errs.push(fieldErrors.invalid('spec.caBundle', `${caBytes} bytes`, 'local APIServices may not have a caBundle'));
    if (spec.insecureSkipTLSVerify === true) errs.push(fieldErrors.invalid('spec.insecureSkipTLSVerify', true, 'local APIServices may not have insecureSkipTLSVerify'));
    return errs;
  }
  if (!isRecord(service)) return [...errs, ...expectObject('spec.service', service)];
  if (typeof service.namespace !== 'string' || service.namespace === '') errs.push(fieldErrors.required(child('spec.service', 'namespace')));
  if (typeof service.name !== 'string' || service.name === '') errs.push(fieldErrors.required(child('spec.service', 'name')));
  const port = service.port;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    errs.push(fieldErrors.invalid(child('spec.service', 'port'), port, 'port is not valid: must be between 1 and 65535, inclusive'));
  }
  if (spec.insecureSkipTLSVerify === true && caBytes > 0) errs.push(fieldErrors.invalid('spec.insecureSkipTLSVerify', true, 'may not be true if caBundle is present'));
  return errs;
}

