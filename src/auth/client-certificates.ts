/**
 * Owns x509 client-certificate authentication, as kube-apiserver's --client-ca-file does it: a
 * certificate the client presented in the TLS handshake authenticates as user = subject CN, groups =
 * subject O values (+ system:authenticated) when it was issued by the cluster CA, is within its
 * validity at the (injectable) clock's now, and allows client auth (no extended key usage at all, or
 * clientAuth, or anyExtendedKeyUsage, as Go's verifier accepts). The listener asks for a certificate
 * without requiring one (src/server/listen.ts), so token clients are untouched; a presented
 * certificate that fails these checks authenticates no one, and the request then needs another
 * credential (a valid bearer token) or gets 401 — upstream's union of authenticators.
 *
 * A connection's certificate is fixed for its life, so what is read from it (signature check, subject,
 * validity window) is kept per TLS socket; only the time check runs per request.
 */
import { X509Certificate } from 'node:crypto';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { certificateSubject } from '../api/x509.js';
import type { Identity } from './tokens.js';

export interface ClientCertificateOptions {
  /** PEM of the CA that issues client certificates (the cluster CA) */
  caCert: string;
  now?: () => number;
}

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0';

/** What a presented certificate amounts to, before the time check. */
type Verdict = { ok: true; user: Identity; notBefore: number; notAfter: number } | { ok: false; reason: string };

export class ClientCertificateAuthenticator {
  private readonly ca: X509Certificate;
  private readonly now: () => number;
  private readonly bySocket = new WeakMap<object, Verdict | null>();

  constructor(opts: ClientCertificateOptions) {
    this.ca = new X509Certificate(opts.caCert);
    this.now = opts.now ?? Date.now;
  }

  /**
   * The identity a connection's client certificate proves, or undefined when it presented none or one
   * that does not authenticate (see `check` for why).
   */
  authenticate(socket: Socket): Identity | undefined {
    const verdict = this.verdictOf(socket);
    if (!verdict || !verdict.ok) return undefined;
    const now = this.now();
    if (now < verdict.notBefore || now > verdict.notAfter) return undefined;
    return verdict.user;
  }

  /** A certificate's user, or why it does not authenticate (tests and logs). */
  check(cert: X509Certificate): { user?: Identity; reason?: string } {
    const verdict = this.verify(cert);
    if (!verdict.ok) return { reason: verdict.reason };
    const now = this.now();
    if (now < verdict.notBefore) return { reason: `x509: certificate is not yet valid: current time ${new Date(now).toISOString()} is before ${new Date(verdict.notBefore).toISOString()}` };
    if (now > verdict.notAfter) return { reason: `x509: certificate has expired: current time ${new Date(now).toISOString()} is after ${new Date(verdict.notAfter).toISOString()}` };
    return { user: verdict.user };
  }

  private verdictOf(socket: Socket): Verdict | null {
    const cached = this.bySocket.get(socket);
    if (cached !== undefined) return cached;
    const tls = socket as Partial<TLSSocket>;
    const cert = typeof tls.getPeerX509Certificate === 'function' ? tls.getPeerX509Certificate() : undefined;
    const verdict = cert ? this.verify(cert) : null;
    this.bySocket.set(socket, verdict);
    return verdict;
  }

  private verify(cert: X509Certificate): Verdict {
    if (!cert.checkIssued(this.ca) || !cert.verify(this.ca.publicKey)) return { ok: false, reason: 'x509: certificate signed by unknown authority' };
    const usages = cert.keyUsage;
    if (usages && usages.length && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_EXTENDED_KEY_USAGE)) {
      return { ok: false, reason: 'x509: certificate specifies an incompatible key usage' };
    }
    let subject;
    try {
      subject = certificateSubject(cert.raw);
    } catch (e) {
      return { ok: false, reason: `x509: malformed certificate: ${(e as Error).message}` };
    }
    // kube-apiserver's CommonNameUserConversion: a certificate without CN authenticates no one.
    if (!subject.commonName) return { ok: false, reason: 'x509: certificate has no common name' };
    const groups = [...subject.organizations];
    if (!groups.includes('system:authenticated')) groups.push('system:authenticated');
    const user: Identity = { username: subject.commonName, groups };
    // Node credentials by certificate name their node the way node tokens do (the Node authorizer reads it).
    if (subject.commonName.startsWith('system:node:') && subject.organizations.includes('system:nodes')) user.nodeName = subject.commonName.slice('system:node:'.length);
    return { ok: true, user, notBefore: Date.parse(cert.validFrom), notAfter: Date.parse(cert.validTo) };
  }
}
