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
 * Validation rules live in src/api/validation/certificates.ts.
 */
import { errors } from '../../api/errors.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import { KUBE_APISERVER_CLIENT_SIGNER } from '../../api/certificates.js';
import { isRecord } from '../../api/validation.js';
import { parseCertificateRequestPem } from '../../api/x509.js';
import { baseSelectableFields, type KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, humanDuration, type ColumnProvider } from '../table-columns.js';
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from '../../api/types.js';
import { CERTIFICATESIGNINGREQUESTS, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { CREATE_PATH, type WritePath, validateCsr, validateCsrUpdate } from '../../api/validation/certificates.js';
export const CSR_RESOURCE: ResourceInfo = resourceInfo(CERTIFICATESIGNINGREQUESTS, {
  listKind: 'CertificateSigningRequestList',
  singular: 'certificatesigningrequest',
  shortNames: ['csr'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status', 'approval'],
  categories: [],
});

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
