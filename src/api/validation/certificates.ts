/**
 * certificates.k8s.io/v1 validation: CertificateSigningRequest on create and on each write path (update, approval, status).
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { type FieldError } from '../errors.js';
import { KEY_USAGES } from '../certificates.js';
import { child, expectArray, expectInteger, expectString, fieldErrors, index, isRecord, validateObjectMeta, validateObjectMetaUpdate } from '../validation.js';
import { dns1123SubdomainErrors } from '../validation/names.js';
import { parseCertificateRequestPem, pemBlocks } from '../x509.js';
import { X509Certificate } from 'node:crypto';
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from '../types.js';

/** Who may write what: only `approval` sets Approved/Denied, only `status` sets the certificate. */
export interface WritePath {
  settingApprovalConditions: boolean;
  settingCertificate: boolean;
}

export const CREATE_PATH: WritePath = { settingApprovalConditions: false, settingCertificate: false };

const TRUE_ONLY_CONDITIONS = new Set(['Approved', 'Denied', 'Failed']);

function decodeBase64(field: string, v: unknown, errs: FieldError[]): string | undefined {
  if (typeof v !== 'string') return undefined;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v.replace(/\s+/g, ''))) {
    errs.push(fieldErrors.invalid(field, '<binary>', 'must be base64-encoded'));
    return undefined;
  }
  return Buffer.from(v, 'base64').toString('latin1');
}

/** Kubernetes' ValidateSignerName: `<DNS subdomain>/<path>`, e.g. example.com/signer-name. */
function signerNameErrors(path: string, signerName: unknown): FieldError[] {
  if (signerName === undefined || signerName === '') return [fieldErrors.required(path)];
  const typeErrs = expectString(path, signerName);
  if (typeErrs.length) return typeErrs;
  const name = signerName as string;
  const slash = name.indexOf('/');
  if (slash < 0) return [fieldErrors.invalid(path, name, 'must be a fully qualified domain and path of the form \'example.com/signer-name\'')];
  const domain = name.slice(0, slash);
  const rest = name.slice(slash + 1);
  const errs: FieldError[] = [];
  if (!rest) errs.push(fieldErrors.invalid(path, name, 'validating path: path must not be empty'));
  else if (rest.length > 253 - domain.length) errs.push(fieldErrors.invalid(path, name, 'validating path: path is too long'));
  for (const msg of dns1123SubdomainErrors(domain)) errs.push(fieldErrors.invalid(path, name, `validating domain: ${msg}`));
  return errs;
}

/** A valid status.certificate: one or more CERTIFICATE blocks, each a parseable certificate. */
function certificateError(pem: string): string | undefined {
  const other = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].find((m) => m[1] !== 'CERTIFICATE');
  if (other) return `only CERTIFICATE PEM blocks are allowed, found "${other[1]}"`;
  const blocks = pemBlocks(pem, 'CERTIFICATE');
  if (blocks.length === 0) return 'must contain at least one CERTIFICATE PEM block';
  for (const der of blocks) {
    try {
      new X509Certificate(der);
    } catch (e) {
      return (e as Error).message;
    }
  }
  return undefined;
}

function validateConditions(conditions: unknown, errs: FieldError[]): void {
  const path = 'status.conditions';
  errs.push(...expectArray(path, conditions));
  if (!Array.isArray(conditions)) return;
  const seen = new Set<string>();
  let approved = false;
  let denied = false;
  conditions.forEach((c: unknown, i) => {
    const at = index(path, i);
    if (!isRecord(c)) {
      errs.push(fieldErrors.typeInvalid(at, c, 'must be an object'));
      return;
    }
    const type = typeof c.type === 'string' ? c.type : '';
    if (!type) errs.push(fieldErrors.required(child(at, 'type')));
    const allowed = TRUE_ONLY_CONDITIONS.has(type) ? ['True'] : ['False', 'True', 'Unknown'];
    if (c.status === undefined || c.status === '') errs.push(fieldErrors.required(child(at, 'status')));
    else if (!allowed.includes(c.status as string)) errs.push(fieldErrors.notSupported(child(at, 'status'), c.status, allowed));
    if (type === 'Approved') {
      approved = true;
      if (denied) errs.push(fieldErrors.invalid(child(at, 'type'), type, 'Approved and Denied conditions are mutually exclusive'));
    } else if (type === 'Denied') {
      denied = true;
      if (approved) errs.push(fieldErrors.invalid(child(at, 'type'), type, 'Approved and Denied conditions are mutually exclusive'));
    }
    if (seen.has(type)) errs.push(fieldErrors.duplicate(child(at, 'type'), type));
    seen.add(type);
  });
}

/** Kubernetes' validateCertificateSigningRequest: the request's signature, usages, signer, duration, conditions, certificate. */
export function validateCsr(csr: CertificateSigningRequest, old?: CertificateSigningRequest): FieldError[] {
  const errs = validateObjectMeta(csr.metadata, { namespaced: false, nameRule: 'subdomain' });
  const spec = csr.spec as unknown;
  if (!isRecord(spec)) return [...errs, fieldErrors.required('spec')];
  const request = decodeBase64('spec.request', spec.request, errs);
  if (request === undefined && spec.request === undefined) errs.push(fieldErrors.invalid('spec.request', '', 'PEM block type must be CERTIFICATE REQUEST'));
  else if (request !== undefined) {
    try {
      const parsed = parseCertificateRequestPem(request);
      if (!parsed.signatureValid) errs.push(fieldErrors.invalid('spec.request', '<certificate request>', 'x509: ECDSA verification failure or signature does not match the public key'));
    } catch (e) {
      errs.push(fieldErrors.invalid('spec.request', '<certificate request>', (e as Error).message));
    }
  }
  errs.push(...expectArray('spec.usages', spec.usages));
  const usages = Array.isArray(spec.usages) ? (spec.usages as unknown[]) : [];
  if (usages.length === 0) errs.push(fieldErrors.required('spec.usages'));
  const seen = new Set<unknown>();
  usages.forEach((u, i) => {
    if (!(KEY_USAGES as readonly unknown[]).includes(u)) errs.push(fieldErrors.notSupported(index('spec.usages', i), u, KEY_USAGES));
    if (seen.has(u)) errs.push(fieldErrors.duplicate(index('spec.usages', i), u));
    seen.add(u);
  });
  errs.push(...signerNameErrors('spec.signerName', spec.signerName));
  if (spec.expirationSeconds !== undefined && spec.expirationSeconds !== null) {
    errs.push(...expectInteger('spec.expirationSeconds', spec.expirationSeconds));
    if (typeof spec.expirationSeconds === 'number' && spec.expirationSeconds < 600) {
      errs.push(fieldErrors.invalid('spec.expirationSeconds', spec.expirationSeconds, 'may not specify a duration less than 600 seconds (10 minutes)'));
    }
  }
  const status = csr.status ?? {};
  validateConditions(status.conditions ?? [], errs);
  // A certificate the update leaves as it was is not checked again (as upstream, for old data).
  if (status.certificate && status.certificate !== old?.status?.certificate) {
    const pem = decodeBase64('status.certificate', status.certificate, errs);
    const problem = pem === undefined ? undefined : certificateError(pem);
    if (problem) errs.push(fieldErrors.invalid('status.certificate', '<certificate data>', problem));
  }
  return errs;
}

function conditionsOfType(csr: CertificateSigningRequest, type: string): CertificateSigningRequestCondition[] {
  return (csr.status?.conditions ?? []).filter((c) => c.type === type);
}

export function validateCsrUpdate(csr: CertificateSigningRequest, old: CertificateSigningRequest, path: WritePath): FieldError[] {
  const errs = [...validateCsr(csr, old), ...validateObjectMetaUpdate(csr.metadata, old.metadata)];
  for (const type of ['Approved', 'Denied', 'Failed']) {
    if (conditionsOfType(csr, type).length < conditionsOfType(old, type).length) {
      errs.push(fieldErrors.forbidden('status.conditions', `updates may not remove a condition of type "${type}"`));
    }
  }
  if (!path.settingApprovalConditions) {
    for (const type of ['Approved', 'Denied']) {
      const before = conditionsOfType(old, type);
      const after = conditionsOfType(csr, type);
      if (after.length > before.length) errs.push(fieldErrors.forbidden('status.conditions', `updates may not add a condition of type "${type}"`));
      else if (after.length === before.length && JSON.stringify(after) !== JSON.stringify(before)) {
        errs.push(fieldErrors.forbidden('status.conditions', `updates may not modify a condition of type "${type}"`));
      }
    }
  }
  const certificate = csr.status?.certificate ?? '';
  const oldCertificate = old.status?.certificate ?? '';
  if (certificate !== oldCertificate) {
    if (!path.settingCertificate) errs.push(fieldErrors.forbidden('status.certificate', 'updates may not set certificate content'));
    else if (oldCertificate) errs.push(fieldErrors.forbidden('status.certificate', 'updates may not modify existing certificate content'));
  }
  return errs;
}

