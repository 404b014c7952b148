/**
 * Who may approve and who may sign a CertificateSigningRequest, as kube-apiserver's CertificateApproval
 * and CertificateSigning admission plugins decide it: a write to a CSR's `approval` subresource needs
 * the `approve` verb, and a write to its `status` that changes its certificate or conditions needs `sign`, on
 * `signers.certificates.k8s.io` named after the CSR's signer, or on `<domain>/*` for every signer of
 * that domain. Writes without a user (the in-process signers and approvers) are trusted. Without these
 * checks, `update` on `certificatesigningrequests/approval` would let a user approve a client
 * certificate for any name and group it liked, a node's included.
 */
import { errors } from '../../api/errors.js';
import { CERTIFICATES_GROUP } from '../../api/certificates.js';
import type { UserInfo } from '../../api/user-info.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';
import type { CertificateSigningRequest } from '../../api/types.js';

/** What the plugins ask the authorizer (src/auth/authz.ts). */
export interface SignerAuthorizer {
  authorize(who: UserInfo, attrs: { verb: string; group: string; resource: string; name?: string }): { allowed: boolean };
}

const CSR_PLURAL = 'certificatesigningrequests';
const SIGNERS = 'signers';

/**
 * Allowed for the signer by name, or for all of its domain: `example.com/*` covers
 * `example.com/my-signer` (upstream's IsAuthorizedForSignerName).
 */
export function authorizedForSigner(authorizer: SignerAuthorizer, who: UserInfo, verb: 'approve' | 'sign', signerName: string): boolean {
  const ask = (name: string) => authorizer.authorize(who, { verb, group: CERTIFICATES_GROUP, resource: SIGNERS, name }).allowed;
  if (ask(signerName)) return true;
  const slash = signerName.indexOf('/');
  return slash > 0 && ask(`${signerName.slice(0, slash)}/*`);
}

function isCsrWrite(attrs: AdmissionAttributes, subresource: string): boolean {
  return attrs.info.group === CERTIFICATES_GROUP && attrs.info.plural === CSR_PLURAL && attrs.operation === 'UPDATE' && attrs.subresource === subresource;
}

function forbidden(attrs: AdmissionAttributes, message: string) {
  return errors.forbidden(`${CSR_PLURAL}.${CERTIFICATES_GROUP} "${attrs.object.metadata.name ?? ''}" is forbidden: ${message}`);
}

export function certificateApproval(opts: { authorizer: SignerAuthorizer }): AdmissionPlugin {
  return {
    name: 'CertificateApproval',
    kind: 'validating',
    completeMessages: true,
    admit(attrs) {
      if (!attrs.user || !isCsrWrite(attrs, 'approval')) return;
      // The stored signer: a request that also tried to change it is judged by what it was.
      const signerName = ((attrs.oldObject ?? attrs.object) as CertificateSigningRequest).spec?.signerName ?? '';
      if (!authorizedForSigner(opts.authorizer, attrs.user, 'approve', signerName)) {
        throw forbidden(attrs, `user not permitted to approve requests with signerName "${signerName}"`);
      }
    },
  };
}

export function certificateSigning(opts: { authorizer: SignerAuthorizer }): AdmissionPlugin {
  return {
    name: 'CertificateSigning',
    kind: 'validating',
    completeMessages: true,
    admit(attrs) {
      if (!attrs.user || !isCsrWrite(attrs, 'status')) return;
      const csr = attrs.object as CertificateSigningRequest;
      const old = attrs.oldObject as CertificateSigningRequest | undefined;
      // A status write that changes neither the certificate nor the conditions signs nothing.
      const unchanged = (old?.status?.certificate ?? '') === (csr.status?.certificate ?? '') && JSON.stringify(old?.status?.conditions ?? []) === JSON.stringify(csr.status?.conditions ?? []);
      if (unchanged) return;
      const signerName = old?.spec?.signerName ?? csr.spec?.signerName ?? '';
      if (!authorizedForSigner(opts.authorizer, attrs.user, 'sign', signerName)) {
        throw forbidden(attrs, `user not permitted to sign requests with signerName "${signerName}"`);
      }
    },
  };
}
