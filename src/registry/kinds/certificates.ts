/**
 * certificates.k8s.io/v1 CertificateSigningRequest (cluster-scoped, short name `csr`): REST identity,
 * validation, the `status` and `approval` subresources and table columns — everything hand-written
 * about the kind. Signers (src/controllers/csr-signing) fill in status.certificate.
 *
 * As upstream: on create the requester's UserInfo replaces spec.username/uid/groups/extra whatever
 * the body says, and status starts empty; spec never changes after create; Approved and Denied are
 * added only through `approval`, the certificate only through `status`, and no Approved, Denied or
 * Failed condition is ever removed. The CertificateSubjectRestriction admission rule is applied at
 * create: a request to the kube-apiserver-client signer for group system:masters is forbidden.
 */
import { errors, type FieldError } from '../../api/errors.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import { KEY_USAGES, KUBE_APISERVER_CLIENT_SIGNER } from '../../api/certificates.js';
import { child, expectArray, expectInteger, expectString, fieldErrors, index, isRecord, validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import { dns1123SubdomainErrors } from '../../api/validation/names.js';
import { parseCertificateRequestPem, pemBlocks } from '../../api/x509.js';
import { X509Certificate } from 'node:crypto';
import { baseSelectableFields, type KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, humanDuration, type ColumnProvider } from '../table-columns.js';
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from '../../api/types.js';
import { CERTIFICATESIGNINGREQUESTS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

export const CSR_RESOURCE: ResourceInfo = resourceInfo(CERTIFICATESIGNINGREQUESTS, {
  listKind: 'CertificateSigningRequestList',
  singular: 'certificatesigningrequest',
  shortNames: ['csr'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status', 'approval'],
  categories: [],
});

/** Who may write what: only `approval` sets Approved/Denied, only `status` sets the certificate. */
interface WritePath {
  settingApprovalConditions: boolean;
  settingCertificate: boolean;
}

const CREATE_PATH: WritePath = { settingApprovalConditions: false, settingCertificate: false };

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

function validateCsrUpdate(csr: CertificateSigningRequest, old: CertificateSigningRequest, path: WritePath): FieldError[] {
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

function writePathOf(subresource: string | undefined): WritePath {
  if (subresource === 'approval') return { settingApprovalConditions: true, settingCertificate: false };
  if (subresource === 'status') return { settingApprovalConditions: false, settingCertificate: true };
  return CREATE_PATH;
}

/** RFC 3339 at whole seconds, as metav1.Time is written. */
function metaTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Conditions without times get them, as upstream: lastUpdateTime now; lastTransitionTime from the
 * stored condition of the same type when its status did not change, else now.
 */
function stampConditions(csr: CertificateSigningRequest, old: CertificateSigningRequest, now: number): void {
  for (const c of csr.status?.conditions ?? []) {
    if (!isRecord(c)) continue;
    c.lastUpdateTime ||= metaTime(now);
    if (!c.lastTransitionTime) {
      const before = (old.status?.conditions ?? []).find((o) => o.type === c.type);
      c.lastTransitionTime = before && before.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : metaTime(now);
    }
  }
}

/** What the three write paths keep of the client's object. */
function mergeSubresource(subresource: string, input: CertificateSigningRequest, old: CertificateSigningRequest, ctx: { now: number }): CertificateSigningRequest | undefined {
  if (subresource !== 'approval' && subresource !== 'status') return undefined;
  const obj = structuredClone(old);
  const status = isRecord(input.status) ? input.status : {};
  if (subresource === 'approval') obj.status = { ...(old.status ?? {}), conditions: status.conditions as CertificateSigningRequestCondition[] };
  else obj.status = status;
  if (obj.status.conditions === undefined) delete obj.status.conditions;
  // Labels and annotations may change through either path, as through the main resource.
  if (input.metadata?.labels !== undefined) obj.metadata.labels = input.metadata.labels;
  if (input.metadata?.annotations !== undefined) obj.metadata.annotations = input.metadata.annotations;
  stampConditions(obj, old, ctx.now);
  return obj;
}

// ---------- protobuf (generated from Kubernetes' certificates/v1 generated.proto) ----------

/**
 * What `kubectl certificate approve|deny` sends to `approval`: client-go's typed clients speak
 * protobuf. spec.extra arrives as protobuf's ExtraValue messages; the spec is the server's anyway.
 */
const CSR_PROTOBUF = protobufMessagesOf('certificates.k8s.io/v1', 'CertificateSigningRequest');

// ---------- table (kubectl's columns for CSRs upstream) ----------

/** The CONDITION column: Denied, Approved or Pending, then Failed and Issued when they apply. */
export function csrConditionSummary(csr: CertificateSigningRequest): string {
  const types = new Set((csr.status?.conditions ?? []).map((c) => c.type));
  let out = types.has('Denied') ? 'Denied' : types.has('Approved') ? 'Approved' : 'Pending';
  if (types.has('Failed')) out += ',Failed';
  if (csr.status?.certificate) out += ',Issued';
  return out;
}

const CSR_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    AGE_COLUMN,
    column('SignerName', 'Name of the signer the certificate is requested from.'),
    column('Requestor', 'Name of the user who created the request.'),
    column('RequestedDuration', 'Requested validity of the issued certificate.'),
    column('Condition', 'Whether the request is approved, denied, failed and issued.'),
  ],
  cells: (obj, { now }) => {
    const csr = obj as CertificateSigningRequest;
    const seconds = csr.spec?.expirationSeconds;
    return [
      obj.metadata.name ?? '',
      ageSince(obj.metadata.creationTimestamp, now),
      csr.spec?.signerName ?? '',
      csr.spec?.username ?? '',
      typeof seconds === 'number' ? humanDuration(seconds * 1000) : '<none>',
      csrConditionSummary(csr),
    ];
  },
};

export const csrStrategy: KindStrategy<CertificateSigningRequest> = {
  info: CSR_RESOURCE,
  table: CSR_COLUMNS,
  protobuf: CSR_PROTOBUF,
  hasStatus: true,
  initialStatus: () => ({}),
  prepareForCreate: (csr, { user }) => {
    if (!isRecord(csr.spec)) return;
    const spec = csr.spec;
    delete spec.username;
    delete spec.uid;
    delete spec.groups;
    delete spec.extra;
    if (user) {
      spec.username = user.username;
      if (user.uid) spec.uid = user.uid;
      if (user.groups.length) spec.groups = [...user.groups];
      if (user.extra && Object.keys(user.extra).length) spec.extra = structuredClone(user.extra);
    }
    // CertificateSubjectRestriction: no client certificate for the group that bypasses authorization.
    if (spec.signerName === KUBE_APISERVER_CLIENT_SIGNER && typeof spec.request === 'string') {
      let organizations: string[] = [];
      try {
        organizations = parseCertificateRequestPem(Buffer.from(spec.request, 'base64').toString('latin1')).subject.organizations;
      } catch {
        return; // validation reports the malformed request
      }
      if (organizations.includes('system:masters')) {
        throw errors.forbidden(`certificatesigningrequests.certificates.k8s.io "${csr.metadata.name ?? ''}" is forbidden: use of ${KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed`);
      }
    }
  },
  // The spec is fixed at create, whatever path writes.
  prepareForUpdate: (csr, old) => {
    csr.spec = structuredClone(old.spec);
  },
  mergeSubresourceUpdate: mergeSubresource,
  validate: (csr) => validateCsr(csr),
  validateUpdate: (csr, old, subresource) => validateCsrUpdate(csr, old, writePathOf(subresource)),
  selectableFields: (csr) => ({ ...baseSelectableFields(csr), 'spec.signerName': csr.spec?.signerName ?? '' }),
};

export const CERTIFICATES_STRATEGIES: KindStrategy[] = [csrStrategy];
