/**
 * The CSR signers of kube-controller-manager's csrsigning controller, for the cluster CA:
 * `kubernetes.io/kube-apiserver-client` (any subject; usages limited to client auth, digital
 * signature and key encipherment, client auth required) and `kubernetes.io/kube-apiserver-client-kubelet`
 * (CN system:node:<name>, O exactly system:nodes, no subject alternative names, usages exactly
 * client auth + digital signature [+ key encipherment]). An Approved request without a certificate
 * and without a Failed condition is signed into status.certificate; a request its signer's rules
 * refuse gets a Failed condition (reason SignerValidationFailure) instead. Other signer names,
 * pending and Denied requests are left alone.
 *
 * Validity: notBefore five minutes back (clock skew), notAfter now + min(expirationSeconds,
 * --cluster-signing-duration), at least ten minutes, never past the CA's own notAfter — as upstream.
 */
import type { Logger } from 'pino';
import { csrCondition, KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBE_APISERVER_CLIENT_SIGNER } from '../../api/certificates.js';
import { isApiError } from '../../api/errors.js';
import { parseCertificateRequestPem, type CertificateRequest } from '../../api/x509.js';
import type { Client } from '../../client/client.js';
import type { Informer } from '../../client/informer.js';
import { CoalescedPass } from '../runtime/coalesced-pass.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import type { CertificateSigningRequest } from '../../api/types.js';
import { CERTIFICATESIGNINGREQUESTS } from '../../api/identities.js';
import { controllerNow } from '../runtime/clock.js';


/** kube-controller-manager's --cluster-signing-duration default: one year. */
export const DEFAULT_CLUSTER_SIGNING_DURATION_MS = 365 * 24 * 3600 * 1000;
const MIN_DURATION_MS = 10 * 60 * 1000;
const BACKDATE_MS = 5 * 60 * 1000;

/** What a signer needs to issue: the subject, the key, the validity window and usages. */
export interface IssueRequest {
  subject: Array<{ oid: string; value: string }>;
  publicKeyPem: string;
  notBefore: Date;
  notAfter: Date;
  usages: string[];
}

export interface CsrSigningOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** signs with the cluster CA (src/auth/pki.ts issueClientCertificate); returns the certificate PEM */
  issue: (req: IssueRequest) => Promise<string>;
  /** the longest validity issued (default one year) */
  clusterSigningDurationMs?: number;
  now?: () => number;
}

/** The signer's rule for a request, or an error message when the request breaks it. */
export function signerRuleError(signerName: string, req: CertificateRequest, usages: string[]): string | undefined {
  if (signerName === KUBE_APISERVER_CLIENT_SIGNER) {
    let clientAuth = false;
    for (const u of usages) {
      if (u === 'client auth') clientAuth = true;
      else if (u !== 'digital signature' && u !== 'key encipherment') return `invalid usage for client certificate: ${u}`;
    }
    return clientAuth ? undefined : 'missing required usage for client certificate: client auth';
  }
  if (signerName === KUBE_APISERVER_CLIENT_KUBELET_SIGNER) {
    const orgs = req.subject.organizations;
    if (orgs.length !== 1 || orgs[0] !== 'system:nodes') return 'subject organization is not system:nodes';
    if (req.dnsNames.length) return 'DNS subjectAltNames are not allowed';
    if (req.emailAddresses.length) return 'Email subjectAltNames are not allowed';
    if (req.ipAddresses.length) return 'IP subjectAltNames are not allowed';
    if (req.uris.length) return 'URI subjectAltNames are not allowed';
    if (!req.subject.commonName.startsWith('system:node:')) return 'subject common name does not begin with system:node:';
    const set = [...new Set(usages)].sort().join(',');
    if (set !== 'client auth,digital signature,key encipherment' && set !== 'client auth,digital signature') {
      return 'usages did not match [client auth digital signature key encipherment]';
    }
    return undefined;
  }
  return undefined;
}

/** How long the certificate is valid: the requested duration within [10 min, the signer's maximum]. */
export function signingDurationMs(maxMs: number, expirationSeconds: number | undefined): number {
  if (expirationSeconds === undefined) return maxMs;
  const requested = expirationSeconds * 1000;
  if (requested > maxMs) return maxMs;
  return Math.max(requested, MIN_DURATION_MS);
}

const SIGNERS = new Set([KUBE_APISERVER_CLIENT_SIGNER, KUBE_APISERVER_CLIENT_KUBELET_SIGNER]);

export class CsrSigningController {
  readonly csrs: Informer<CertificateSigningRequest>;
  private readonly pass: CoalescedPass;
  private readonly now: () => number;
  private readonly maxDurationMs: number;

  constructor(private readonly opts: CsrSigningOptions) {
    this.now = opts.now ?? controllerNow();
    this.maxDurationMs = opts.clusterSigningDurationMs ?? DEFAULT_CLUSTER_SIGNING_DURATION_MS;
    this.pass = new CoalescedPass({
      run: () => this.sync(),
      ready: () => this.csrs.hasSynced(),
      onError: (e) => this.opts.log.warn({ err: e.message }, 'certificate signing pass failed'),
    });
    this.csrs = opts.informers.informerFor<CertificateSigningRequest>(CERTIFICATESIGNINGREQUESTS);
    const kick = () => this.pass.kick();
    this.csrs.addHandlers({ onAdd: kick, onUpdate: kick });
  }

  async start(): Promise<void> {
    await this.pass.startAfter([this.csrs]);
  }

  async stop(): Promise<void> {
    await this.pass.stop();
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    await this.pass.idle();
  }

  private async sync(): Promise<void> {
    for (const csr of this.csrs.list()) {
      if (!SIGNERS.has(csr.spec?.signerName) || csr.status?.certificate) continue;
      if (!csrCondition(csr, 'Approved') || csrCondition(csr, 'Denied') || csrCondition(csr, 'Failed')) continue;
      try {
        await this.handle(csr);
      } catch (err) {
        // Someone else changed it meanwhile: the informer brings the new state and another pass.
        if (isApiError(err) && (err.reason === 'Conflict' || err.reason === 'NotFound')) continue;
        this.opts.log.warn({ csr: csr.metadata.name, err: (err as Error).message }, 'signing a certificate failed');
      }
    }
  }

  private async handle(csr: CertificateSigningRequest): Promise<void> {
    const next = structuredClone(csr);
    next.status ??= {};
    let request: CertificateRequest;
    try {
      request = parseCertificateRequestPem(Buffer.from(csr.spec.request, 'base64').toString('latin1'));
    } catch (err) {
      return this.fail(next, `unable to parse csr "${csr.metadata.name}": ${(err as Error).message}`);
    }
    const usages = csr.spec.usages ?? [];
    const refused = signerRuleError(csr.spec.signerName, request, usages);
    if (refused) return this.fail(next, refused);
    const now = this.now();
    let pem: string;
    try {
      pem = await this.opts.issue({
        subject: request.subject.attributes,
        publicKeyPem: request.publicKeyPem,
        notBefore: new Date(now - BACKDATE_MS),
        notAfter: new Date(now + signingDurationMs(this.maxDurationMs, csr.spec.expirationSeconds)),
        usages,
      });
    } catch (err) {
      return this.fail(next, (err as Error).message);
    }
    next.status.certificate = Buffer.from(pem).toString('base64');
    await this.opts.client.update(CERTIFICATESIGNINGREQUESTS, next, { subresource: 'status' });
    this.opts.log.info({ csr: csr.metadata.name, signer: csr.spec.signerName, subject: request.subject.commonName }, 'issued certificate');
  }

  private async fail(next: CertificateSigningRequest, message: string): Promise<void> {
    const at = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    next.status = { ...next.status, conditions: [...(next.status?.conditions ?? []), { type: 'Failed', status: 'True', reason: 'SignerValidationFailure', message, lastUpdateTime: at }] };
    await this.opts.client.update(CERTIFICATESIGNINGREQUESTS, next, { subresource: 'status' });
    this.opts.log.info({ csr: next.metadata.name, reason: message }, 'refused to sign certificate');
  }
}
