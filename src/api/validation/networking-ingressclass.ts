/**
 * Owns networking.k8s.io/v1 IngressClass validation as kube-apiserver's networking validation does it:
 * the object's metadata (a cluster-scoped DNS-subdomain name), spec.controller as a domain-prefixed path
 * of at most 250 characters that never changes after create, and spec.parameters (kind and name as
 * path segments, apiGroup a DNS subdomain, scope Cluster or Namespace with a namespace only for the
 * latter). The kind module (src/registry/kinds/ingress.ts) calls these and defaults parameters.scope.
 */
import type { FieldError } from '../errors.js';
import type { IngressClass, IngressClassParametersReference } from '../generated/types.js';
import { child, fieldErrors, invalidEach } from './field-errors.js';
import { validateObjectMeta, validateObjectMetaUpdate } from './meta.js';
import { dns1123LabelErrors, dns1123SubdomainErrors, regexError } from './names.js';

/** spec.controller's longest allowed value (upstream's maxLenIngressClassController). */
export const INGRESS_CLASS_CONTROLLER_MAX_LENGTH = 250;

export const INGRESS_CLASS_PARAMETER_SCOPES = ['Cluster', 'Namespace'] as const;

/** The characters an HTTP path may hold (the path half of a domain-prefixed path). */
const HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";
const HTTP_PATH_RE = new RegExp(`^${HTTP_PATH_FMT}$`);

/** Upstream's IsDomainPrefixedPath: `host/path`, both halves present, the host a DNS subdomain. */
export function domainPrefixedPathErrors(path: string, value: string): FieldError[] {
  if (value === '') return [fieldErrors.required(path)];
  const slash = value.indexOf('/');
  const host = slash < 0 ? '' : value.slice(0, slash);
  const rest = slash < 0 ? '' : value.slice(slash + 1);
  if (host === '' || rest === '') return [fieldErrors.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')];
  const errs = invalidEach(path, host, dns1123SubdomainErrors(host));
  if (!HTTP_PATH_RE.test(rest)) errs.push(fieldErrors.invalid(path, rest, regexError('Invalid path', HTTP_PATH_FMT)));
  return errs;
}

/** Upstream's IsValidPathSegmentName: what a kind or name in a reference may not be or hold. */
function pathSegmentErrors(value: string): string[] {
  if (value === '.' || value === '..') return [`may not be '${value}'`];
  return ['/', '%'].filter((c) => value.includes(c)).map((c) => `may not contain '${c}'`);
}

function validateParameters(params: IngressClassParametersReference | undefined, path: string): FieldError[] {
  if (params === undefined || params === null) return [];
  const errs: FieldError[] = [];
  if (params.apiGroup !== undefined) errs.push(...invalidEach(child(path, 'apiGroup'), params.apiGroup, dns1123SubdomainErrors(params.apiGroup)));
  for (const field of ['kind', 'name'] as const) {
    const value = params[field] ?? '';
    if (value === '') errs.push(fieldErrors.required(child(path, field), `${field} is required`));
    else errs.push(...invalidEach(child(path, field), value, pathSegmentErrors(value)));
  }
  const scope = params.scope;
  if (scope === undefined) return [...errs, fieldErrors.required(child(path, 'scope'))];
  if (!(INGRESS_CLASS_PARAMETER_SCOPES as readonly string[]).includes(scope)) return [...errs, fieldErrors.notSupported(child(path, 'scope'), scope, INGRESS_CLASS_PARAMETER_SCOPES)];
  const namespacePath = child(path, 'namespace');
  if (scope === 'Namespace') {
    if (params.namespace === undefined) errs.push(fieldErrors.required(namespacePath, "`parameters.scope` is set to 'Namespace'"));
    else errs.push(...invalidEach(namespacePath, params.namespace, dns1123LabelErrors(params.namespace)));
  }
  if (scope === 'Cluster' && params.namespace !== undefined) errs.push(fieldErrors.forbidden(namespacePath, "`parameters.scope` is set to 'Cluster'"));
  return errs;
}

/** ValidateIngressClass: metadata, then spec.controller, then spec.parameters. */
export function validateIngressClass(cls: IngressClass): FieldError[] {
  const controller = cls.spec?.controller ?? '';
  const errs = validateObjectMeta(cls.metadata, { namespaced: false, nameRule: 'subdomain' });
  if (controller.length > INGRESS_CLASS_CONTROLLER_MAX_LENGTH) errs.push(fieldErrors.tooLong('spec.controller', INGRESS_CLASS_CONTROLLER_MAX_LENGTH));
  errs.push(...domainPrefixedPathErrors('spec.controller', controller));
  errs.push(...validateParameters(cls.spec?.parameters, 'spec.parameters'));
  return errs;
}

/** ValidateIngressClassUpdate: metadata's update rules, an unchanged controller, then the object as on create. */
export function validateIngressClassUpdate(cls: IngressClass, old: IngressClass): FieldError[] {
  const errs = validateObjectMetaUpdate(cls.metadata, old.metadata);
  const controller = cls.spec?.controller ?? '';
  if (controller !== (old.spec?.controller ?? '')) errs.push(fieldErrors.invalid('spec.controller', controller, 'field is immutable'));
  return [...errs, ...validateIngressClass(cls)];
}
