/**
 * Client-certificate verification (chain to the cluster CA, validity at an injected clock, extended
 * key usage, CN/O → user/groups), CertificateSigningRequest validation and write paths through the
 * real registry, and the signers' rules and durations.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import forge from 'node-forge';
import { ClientCertificateAuthenticator } from '../../src/auth/client-certificates.js';
import { ensurePki, issueClientCertificate } from '../../src/auth/pki.js';
import { parseCertificateRequestPem } from '../../src/api/x509.js';
import { validateCsr } from '../../src/api/validation/certificates.js';
import { CSR_RESOURCE, csrStrategy } from '../../src/registry/kinds/certificates.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { signerRuleError, signingDurationMs } from '../../src/controllers/csr-signing/csr-signing-controller.js';
import type { CertificateSigningRequest } from '../../src/api/types.js';

const HOUR = 3600_000;

function keyPair() {
  return generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
}

function csrPem(subject: Array<{ type: string; value: string }>, opts: { altDns?: string[]; signWith?: string } = {}): string {
  const keys = keyPair();
  const req = forge.pki.createCertificationRequest();
  req.publicKey = forge.pki.publicKeyFromPem(keys.publicKey);
  req.setSubject(subject);
  if (opts.altDns) req.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'subjectAltName', altNames: opts.altDns.map((value) => ({ type: 2, value })) }] }]);
  req.sign(forge.pki.privateKeyFromPem(opts.signWith ?? keys.privateKey) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(req);
}

async function tempPki() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-csr-'));
  const pki = await ensurePki({ dataDir });
  return { dataDir, caCert: pki.caCert };
}

describe('x509 client-certificate authentication', () => {
  it('a CA-issued certificate authenticates as CN with O as groups, only within its validity', async () => {
    const { dataDir, caCert } = await tempPki();
    const keys = keyPair();
    const issued = await issueClientCertificate({
      dataDir,
      subject: [{ oid: '2.5.4.3', value: 'jane@example.com' }, { oid: '2.5.4.10', value: 'dev' }, { oid: '2.5.4.10', value: 'ops' }],
      publicKeyPem: keys.publicKey,
      notBefore: new Date(Date.UTC(2030, 0, 1)),
      notAfter: new Date(Date.UTC(2030, 0, 2)),
      usages: ['digital signature', 'key encipherment', 'client auth'],
    });
    let now = Date.UTC(2030, 0, 1, 12);
    const auth = new ClientCertificateAuthenticator({ caCert, now: () => now });
    const cert = new X509Certificate(issued);
    assert.deepEqual(auth.check(cert).user, { username: 'jane@example.com', groups: ['dev', 'ops', 'system:authenticated'] });
    now = Date.UTC(2030, 0, 2) + 1000;
    assert.match(auth.check(cert).reason ?? '', /expired/);
    now = Date.UTC(2029, 11, 31);
    assert.match(auth.check(cert).reason ?? '', /not yet valid/);
  });

  it('a certificate from another CA, or without client auth usage, authenticates no one', async () => {
    const { dataDir, caCert } = await tempPki();
    const other = await tempPki();
    const keys = keyPair();
    const base = { subject: [{ oid: '2.5.4.3', value: 'x' }], publicKeyPem: keys.publicKey, notBefore: new Date(Date.now() - HOUR), notAfter: new Date(Date.now() + HOUR) };
    const auth = new ClientCertificateAuthenticator({ caCert });
    const foreign = await issueClientCertificate({ ...base, dataDir: other.dataDir, usages: ['client auth'] });
    assert.match(auth.check(new X509Certificate(foreign)).reason ?? '', /unknown authority/);
    const serverOnly = await issueClientCertificate({ ...base, dataDir, usages: ['server auth'] });
    assert.match(auth.check(new X509Certificate(serverOnly)).reason ?? '', /incompatible key usage/);
    const good = await issueClientCertificate({ ...base, dataDir, usages: ['client auth'] });
    assert.equal(auth.check(new X509Certificate(good)).user?.username, 'x');
    // A socket that presented nothing authenticates no one (token clients are untouched).
    assert.equal(auth.authenticate({ getPeerX509Certificate: () => undefined } as never), undefined);
  });

  it('a node certificate names its node', async () => {
    const { dataDir, caCert } = await tempPki();
    const keys = keyPair();
    const pem = await issueClientCertificate({ dataDir, subject: [{ oid: '2.5.4.3', value: 'system:node:n1' }, { oid: '2.5.4.10', value: 'system:nodes' }], publicKeyPem: keys.publicKey, notBefore: new Date(Date.now() - HOUR), notAfter: new Date(Date.now() + HOUR), usages: ['client auth'] });
    const auth = new ClientCertificateAuthenticator({ caCert });
    assert.equal(auth.check(new X509Certificate(pem)).user?.nodeName, 'n1');
  });
});

describe('certificate requests', () => {
  it('parses subject, SANs and checks the self-signature', () => {
    const pem = csrPem([{ type: '2.5.4.3', value: 'jane' }, { type: '2.5.4.10', value: 'dev' }], { altDns: ['a.example'] });
    const parsed = parseCertificateRequestPem(pem);
    assert.equal(parsed.subject.commonName, 'jane');
    assert.deepEqual(parsed.subject.organizations, ['dev']);
    assert.deepEqual(parsed.dnsNames, ['a.example']);
    assert.equal(parsed.signatureValid, true);
    const wrongKey = csrPem([{ type: '2.5.4.3', value: 'jane' }], { signWith: keyPair().privateKey });
    assert.equal(parseCertificateRequestPem(wrongKey).signatureValid, false);
    assert.throws(() => parseCertificateRequestPem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'), /CERTIFICATE REQUEST/);
  });

  function csrObject(spec: Partial<CertificateSigningRequest['spec']> = {}): CertificateSigningRequest {
    return {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: 'jane' },
      spec: { request: Buffer.from(csrPem([{ type: '2.5.4.3', value: 'jane' }])).toString('base64'), signerName: 'kubernetes.io/kube-apiserver-client', usages: ['client auth'], ...spec },
    };
  }

  it('validation names the field, as upstream', () => {
    const fields = (csr: CertificateSigningRequest) => validateCsr(csr).map((e) => `${e.field}: ${e.message}`);
    assert.deepEqual(fields(csrObject()), []);
    assert.match(fields(csrObject({ request: Buffer.from('junk').toString('base64') })).join(), /spec\.request: .*CERTIFICATE REQUEST/);
    const badSig = Buffer.from(csrPem([{ type: '2.5.4.3', value: 'j' }], { signWith: keyPair().privateKey })).toString('base64');
    assert.match(fields(csrObject({ request: badSig })).join(), /spec\.request/);
    assert.match(fields(csrObject({ usages: [] })).join(), /spec\.usages: Required value/);
    assert.match(fields(csrObject({ usages: ['client auth', 'bogus'] })).join(), /spec\.usages\[1\]: Unsupported value: "bogus"/);
    assert.match(fields(csrObject({ usages: ['client auth', 'client auth'] })).join(), /spec\.usages\[1\]: Duplicate value/);
    assert.match(fields(csrObject({ signerName: '' })).join(), /spec\.signerName: Required value/);
    assert.match(fields(csrObject({ signerName: 'nodomain' })).join(), /spec\.signerName: Invalid value/);
    assert.match(fields(csrObject({ expirationSeconds: 599 })).join(), /spec\.expirationSeconds: .*600 seconds/);
    const both = csrObject();
    both.status = { conditions: [{ type: 'Approved', status: 'True' }, { type: 'Denied', status: 'True' }] };
    assert.match(fields(both).join(), /mutually exclusive/);
  });

  it('the registry: requester recorded on create; approval only through approval, certificate only through status', async () => {
    const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
    registry.register(csrStrategy as never);
    const user = { username: 'jane', uid: 'u1', groups: ['dev', 'system:authenticated'] };
    const body = csrObject({ username: 'mallory', groups: ['system:masters'] });
    body.status = { conditions: [{ type: 'Approved', status: 'True' }] };
    const created = (await registry.create(CSR_RESOURCE, undefined, body, { user })) as CertificateSigningRequest;
    assert.equal(created.spec.username, 'jane');
    assert.deepEqual(created.spec.groups, ['dev', 'system:authenticated']);
    assert.deepEqual(created.status, {}, 'a create cannot pre-approve');

    const approve = structuredClone(created);
    approve.status = { conditions: [{ type: 'Approved', status: 'True', reason: 'ok' }] };
    // Through the main resource and through status, Approved does not stick or is refused.
    const viaMain = (await registry.update(CSR_RESOURCE, undefined, 'jane', structuredClone(approve))) as CertificateSigningRequest;
    assert.deepEqual(viaMain.status, {});
    await assert.rejects(registry.update(CSR_RESOURCE, undefined, 'jane', structuredClone(approve), { subresource: 'status' }), /may not add a condition of type "Approved"/);
    const approved = (await registry.update(CSR_RESOURCE, undefined, 'jane', structuredClone(approve), { subresource: 'approval' })) as CertificateSigningRequest;
    assert.equal(approved.status?.conditions?.[0]?.type, 'Approved');
    assert.ok(approved.status?.conditions?.[0]?.lastUpdateTime);

    // A spec change is dropped, as upstream.
    const respec = structuredClone(approved);
    respec.spec.signerName = 'example.com/other';
    assert.equal(((await registry.update(CSR_RESOURCE, undefined, 'jane', respec)) as CertificateSigningRequest).spec.signerName, 'kubernetes.io/kube-apiserver-client');

    const { dataDir } = await tempPki();
    const cert = await issueClientCertificate({ dataDir, subject: [{ oid: '2.5.4.3', value: 'jane' }], publicKeyPem: keyPair().publicKey, notBefore: new Date(), notAfter: new Date(Date.now() + HOUR), usages: ['client auth'] });
    const withCert = (await registry.get(CSR_RESOURCE, undefined, 'jane')) as CertificateSigningRequest;
    withCert.status = { ...withCert.status, certificate: Buffer.from(cert).toString('base64') };
    await assert.rejects(registry.update(CSR_RESOURCE, undefined, 'jane', structuredClone(withCert), { subresource: 'approval' }).then((o) => {
      if (!(o as CertificateSigningRequest).status?.certificate) throw new Error('certificate ignored through approval');
    }), /certificate ignored/);
    const issued = (await registry.update(CSR_RESOURCE, undefined, 'jane', structuredClone(withCert), { subresource: 'status' })) as CertificateSigningRequest;
    assert.equal(issued.status?.certificate, withCert.status.certificate);
    // Once issued, the certificate cannot be replaced, and Approved cannot be removed.
    const replaced = structuredClone(issued);
    replaced.status!.certificate = Buffer.from(cert.replace(/A/, 'B')).toString('base64');
    await assert.rejects(registry.update(CSR_RESOURCE, undefined, 'jane', replaced, { subresource: 'status' }));
    const unapprove = structuredClone(issued);
    unapprove.status!.conditions = [];
    await assert.rejects(registry.update(CSR_RESOURCE, undefined, 'jane', unapprove, { subresource: 'approval' }), /may not remove a condition of type "Approved"/);
  });
});

describe('signers', () => {
  const parsed = (subject: Array<{ type: string; value: string }>, altDns?: string[]) => parseCertificateRequestPem(csrPem(subject, { altDns }));

  it('kube-apiserver-client: client auth required, only signing usages besides', () => {
    const req = parsed([{ type: '2.5.4.3', value: 'jane' }]);
    assert.equal(signerRuleError('kubernetes.io/kube-apiserver-client', req, ['client auth', 'digital signature']), undefined);
    assert.match(signerRuleError('kubernetes.io/kube-apiserver-client', req, ['digital signature']) ?? '', /missing required usage/);
    assert.match(signerRuleError('kubernetes.io/kube-apiserver-client', req, ['client auth', 'server auth']) ?? '', /invalid usage/);
  });

  it('kube-apiserver-client-kubelet: system:node:<name> in system:nodes, no SANs, exact usages', () => {
    const signer = 'kubernetes.io/kube-apiserver-client-kubelet';
    const node = parsed([{ type: '2.5.4.3', value: 'system:node:n1' }, { type: '2.5.4.10', value: 'system:nodes' }]);
    assert.equal(signerRuleError(signer, node, ['client auth', 'digital signature', 'key encipherment']), undefined);
    assert.match(signerRuleError(signer, node, ['client auth']) ?? '', /usages did not match/);
    assert.match(signerRuleError(signer, parsed([{ type: '2.5.4.3', value: 'jane' }, { type: '2.5.4.10', value: 'system:nodes' }]), ['client auth', 'digital signature']) ?? '', /system:node:/);
    assert.match(signerRuleError(signer, parsed([{ type: '2.5.4.3', value: 'system:node:n1' }]), ['client auth', 'digital signature']) ?? '', /organization/);
    assert.match(signerRuleError(signer, parsed([{ type: '2.5.4.3', value: 'system:node:n1' }, { type: '2.5.4.10', value: 'system:nodes' }], ['n1']), ['client auth', 'digital signature']) ?? '', /DNS/);
  });

  it('duration: expirationSeconds within [10 min, the maximum]', () => {
    const max = 365 * 24 * HOUR;
    assert.equal(signingDurationMs(max, undefined), max);
    assert.equal(signingDurationMs(max, 3600), HOUR);
    assert.equal(signingDurationMs(max, 10 * 365 * 24 * 3600), max);
    assert.equal(signingDurationMs(2 * HOUR, 3 * 3600), 2 * HOUR);
  });
});
