/**
 * certificates.k8s.io/v1 CertificateSigningRequest as clients and signers see it: the object's shape,
 * the well-known signer names and the key usages Kubernetes knows. Validation lives with the kind
 * (src/registry/kinds/certificates.ts), signing in src/controllers/csr-signing/.
 */
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from './types.js';

export const CERTIFICATES_GROUP = 'certificates.k8s.io';

/** Client certificates for the API server, for any user (the CertificateSubjectRestriction keeps system:masters out). */
export const KUBE_APISERVER_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';
/** Client certificates for node agents: CN system:node:<name>, O system:nodes. */
export const KUBE_APISERVER_CLIENT_KUBELET_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';

export type CsrConditionType = 'Approved' | 'Denied' | 'Failed';

/** Every key usage Kubernetes accepts in spec.usages, sorted as its validation lists them. */
export const KEY_USAGES = [
  'any',
  'cert sign',
  'client auth',
  'code signing',
  'content commitment',
  'crl sign',
  'data encipherment',
  'decipher only',
  'digital signature',
  'email protection',
  'encipher only',
  'ipsec end system',
  'ipsec tunnel',
  'ipsec user',
  'key agreement',
  'key encipherment',
  'microsoft sgc',
  'netscape sgc',
  'ocsp signing',
  's/mime',
  'server auth',
  'signing',
  'timestamping',
] as const;

/** The condition of this type that is True, if any. */
export function csrCondition(csr: Pick<CertificateSigningRequest, 'status'>, type: CsrConditionType): CertificateSigningRequestCondition | undefined {
  return csr.status?.conditions?.find((c) => c.type === type && c.status === 'True');
}
