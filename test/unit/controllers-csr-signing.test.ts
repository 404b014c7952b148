/**
 * The csrsigning controller's passes against the real registry, with the real cluster-CA issuer and
 * the bench's injected clock: approved requests of the two kube-apiserver client signers get a
 * certificate with the requested subject and usages and the validity upstream computes; denied,
 * pending, already-issued and other signers' requests are left alone; a request its signer's rules
 * refuse gets Failed (SignerValidationFailure) and no certificate.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import forge from 'node-forge';
import type { CertificateSigningRequest } from '../../src/api/types.js';
import { ensureCa, issueClientCertificate } from '../../src/auth/pki.js';
import { CsrSigningController, type IssueRequest } from '../../src/controllers/csr-signing/csr-signing-controller.js';
import { SharedInformers } from '../../src/controllers/runtime/informer-factory.js';
import { CSR_RESOURCE } from '../../src/registry/kinds/certificates.js';
import { controllerEnv, T0, type ControllerEnv } from './controllers-env.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';
const KUBELET_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';

/** One requester key for every request: the controller certifies whatever key a request carries. */
const requesterKey = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });

function requestPem(subject: Array<{ type: string; value: string }>): string {
  const req = forge.pki.createCertificationRequest();
  req.publicKey = forge.pki.publicKeyFromPem(requesterKey.publicKey);
  req.setSubject(subject);
  req.sign(forge.pki.privateKeyFromPem(requesterKey.privateKey) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(req);
}

const CN = '2.5.4.3';
const O = '2.5.4.10';

async function waitFor(cond: () => unknown, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) assert.fail('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Running {
  controller: CsrSigningController;
  stop: () => Promise<void>;
}

interface Bench {
  env: ControllerEnv;
  caPem: string;
  /** every request the controller asked the CA to sign */
  issued: IssueRequest[];
  /** a controller with caches of its own (as after a restart), started: its first pass is done */
  start: (opts?: { clusterSigningDurationMs?: number }) => Promise<Running>;
  /** one controller's first pass, then stop */
  pass: (opts?: { clusterSigningDurationMs?: number }) => Promise<void>;
  /** a request as a user would create it, then approved or denied through `approval` as kubectl does */
  submit: (name: string, spec: Partial<CertificateSigningRequest['spec']> & { subject: Array<{ type: string; value: string }> }, decision?: 'Approved' | 'Denied') => Promise<void>;
  csr: (name: string) => CertificateSigningRequest;
}

async function bench(): Promise<Bench> {
  const env = await controllerEnv();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-csrsigning-'));
  await ensureCa(dataDir);
  const caPem = fs.readFileSync(path.join(dataDir, 'pki', 'ca.crt'), 'utf8');
  const issued: IssueRequest[] = [];
  const start = async (opts: { clusterSigningDurationMs?: number } = {}): Promise<Running> => {
    const informers = new SharedInformers({ client: env.client });
    const controller = new CsrSigningController({
      client: env.client,
      informers,
      log: env.log,
      now: env.now,
      ...opts,
      issue: async (req) => {
        issued.push(req);
        return issueClientCertificate({ dataDir, ...req });
      },
    });
    await controller.start();
    return {
      controller,
      stop: async () => {
        await controller.stop();
        informers.stop();
      },
    };
  };
  const pass = async (opts: { clusterSigningDurationMs?: number } = {}) => (await start(opts)).stop();
  const submit: Bench['submit'] = async (name, { subject, ...spec }, decision) => {
    const user = { username: 'jane', uid: 'jane-uid', groups: ['system:authenticated'] };
    const created = (await env.registry.create(CSR_RESOURCE, undefined, {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: { request: Buffer.from(requestPem(subject)).toString('base64'), signerName: CLIENT_SIGNER, usages: ['client auth'], ...spec },
    } as CertificateSigningRequest, { user })) as CertificateSigningRequest;
    if (!decision) return;
    created.status = { conditions: [{ type: decision, status: 'True', reason: 'KubectlApprove', message: 'decided by the test' }] };
    await env.registry.update(CSR_RESOURCE, undefined, name, created, { subresource: 'approval' });
  };
  const csr = (name: string) => env.get<CertificateSigningRequest>('certificates.k8s.io', 'certificatesigningrequests', name, undefined);
  return { env, caPem, issued, start, pass, submit, csr };
}

/** The certificate a request was issued, decoded. */
function certificateOf(csr: CertificateSigningRequest): { pem: string; cert: forge.pki.Certificate } {
  assert.ok(csr.status?.certificate, `${csr.metadata.name} has no certificate`);
  const pem = Buffer.from(csr.status.certificate, 'base64').toString('utf8');
  return { pem, cert: forge.pki.certificateFromPem(pem) };
}

const conditionTypes = (csr: CertificateSigningRequest) => (csr.status?.conditions ?? []).map((c) => c.type);

describe('csrsigning controller', () => {
  it('signs an approved kube-apiserver-client request: its subject and usages, backdated five minutes, for expirationSeconds', async () => {
    const b = await bench();
    await b.submit('jane', { subject: [{ type: CN, value: 'jane' }, { type: O, value: 'dev' }], usages: ['client auth', 'digital signature', 'key encipherment'], expirationSeconds: 3600 }, 'Approved');
    const running = await b.start();
    try {
      const csr = b.csr('jane');
      assert.deepEqual(conditionTypes(csr), ['Approved'], 'signing adds no condition');
      const { pem, cert } = certificateOf(csr);
      assert.equal(cert.subject.getField('CN').value, 'jane');
      assert.equal(cert.subject.getField('O').value, 'dev');
      assert.equal(cert.validity.notBefore.getTime(), T0 - 5 * MINUTE);
      assert.equal(cert.validity.notAfter.getTime(), T0 + HOUR);
      const keyUsage = cert.getExtension('keyUsage') as Record<string, unknown>;
      assert.equal(keyUsage.digitalSignature, true);
      assert.equal(keyUsage.keyEncipherment, true);
      assert.ok(!keyUsage.keyCertSign, 'not a CA');
      const extKeyUsage = cert.getExtension('extKeyUsage') as Record<string, unknown>;
      assert.equal(extKeyUsage.clientAuth, true);
      assert.ok(!extKeyUsage.serverAuth, 'only the usages asked for');
      // Issued by the cluster CA, for the requester's own key.
      const x509 = new X509Certificate(pem);
      const ca = new X509Certificate(b.caPem);
      assert.ok(x509.checkIssued(ca) && x509.verify(ca.publicKey), 'signed by the cluster CA');
      assert.equal(x509.publicKey.export({ type: 'spki', format: 'pem' }), requesterKey.publicKey);
      // The one write: the certificate, through the status subresource.
      assert.deepEqual(b.env.writes().map((w) => `${w.verb} ${w.name}/${w.subresource}`), ['update jane/status']);
    } finally {
      await running.stop();
    }
  });

  it('signs a kube-apiserver-client-kubelet request for system:node:<name> in system:nodes', async () => {
    const b = await bench();
    await b.submit('node-n1', { subject: [{ type: CN, value: 'system:node:n1' }, { type: O, value: 'system:nodes' }], signerName: KUBELET_SIGNER, usages: ['digital signature', 'client auth'] }, 'Approved');
    const running = await b.start({ clusterSigningDurationMs: 48 * HOUR });
    try {
      const { cert } = certificateOf(b.csr('node-n1'));
      assert.equal(cert.subject.getField('CN').value, 'system:node:n1');
      assert.equal(cert.subject.getField('O').value, 'system:nodes');
      // No expirationSeconds: the signer's maximum (--cluster-signing-duration).
      assert.equal(cert.validity.notAfter.getTime(), T0 + 48 * HOUR);
      const keyUsage = cert.getExtension('keyUsage') as Record<string, unknown>;
      assert.equal(keyUsage.digitalSignature, true);
      assert.ok(!keyUsage.keyEncipherment, 'key encipherment was not asked for');
      assert.equal((cert.getExtension('extKeyUsage') as Record<string, unknown>).clientAuth, true);
    } finally {
      await running.stop();
    }
  });

  it('validity: expirationSeconds is cut to the signer maximum, and nothing outlives the CA', async () => {
    const b = await bench();
    await b.submit('week', { subject: [{ type: CN, value: 'week' }], expirationSeconds: 7 * 24 * 3600 }, 'Approved');
    await b.pass({ clusterSigningDurationMs: 2 * 24 * HOUR });
    assert.equal(certificateOf(b.csr('week')).cert.validity.notAfter.getTime(), T0 + 2 * 24 * HOUR);

    await b.submit('forever', { subject: [{ type: CN, value: 'forever' }] }, 'Approved');
    await b.pass({ clusterSigningDurationMs: 50 * 365 * 24 * HOUR });
    const ca = forge.pki.certificateFromPem(b.caPem);
    assert.equal(b.issued.at(-1)?.notAfter.getTime(), T0 + 50 * 365 * 24 * HOUR, 'the controller asks for its maximum');
    assert.equal(certificateOf(b.csr('forever')).cert.validity.notAfter.getTime(), ca.validity.notAfter.getTime(), 'the CA caps it at its own end');
  });

  it('leaves denied, pending and other signers\' requests alone', async () => {
    const b = await bench();
    await b.submit('denied', { subject: [{ type: CN, value: 'denied' }] }, 'Denied');
    await b.submit('pending', { subject: [{ type: CN, value: 'pending' }] });
    await b.submit('custom', { subject: [{ type: CN, value: 'custom' }], signerName: 'example.com/custom' }, 'Approved');
    b.env.clearActions();
    await b.pass();
    assert.deepEqual(b.issued, [], 'nothing was sent to the CA');
    assert.deepEqual(b.env.writes(), []);
    assert.equal(b.csr('denied').status?.certificate, undefined);
    assert.deepEqual(conditionTypes(b.csr('denied')), ['Denied']);
    assert.equal(b.csr('pending').status?.certificate, undefined);
    assert.equal(b.csr('custom').status?.certificate, undefined);
    assert.deepEqual(conditionTypes(b.csr('custom')), ['Approved']);
  });

  it('a request its signer refuses gets Failed with SignerValidationFailure at the clock\'s time, and no certificate', async () => {
    const b = await bench();
    await b.submit('server', { subject: [{ type: CN, value: 'web' }], usages: ['client auth', 'server auth'] }, 'Approved');
    await b.submit('fake-node', { subject: [{ type: CN, value: 'jane' }, { type: O, value: 'system:nodes' }], signerName: KUBELET_SIGNER, usages: ['client auth', 'digital signature'] }, 'Approved');
    b.env.clock.t = T0 + 90_000;
    await b.pass();
    assert.deepEqual(b.issued, []);
    const server = b.csr('server');
    assert.equal(server.status?.certificate, undefined);
    assert.deepEqual(conditionTypes(server), ['Approved', 'Failed']);
    const failed = server.status!.conditions!.find((c) => c.type === 'Failed')!;
    assert.deepEqual({ status: failed.status, reason: failed.reason, message: failed.message, lastUpdateTime: failed.lastUpdateTime }, {
      status: 'True',
      reason: 'SignerValidationFailure',
      message: 'invalid usage for client certificate: server auth',
      lastUpdateTime: '2026-01-01T00:01:30Z',
    });
    const fakeNode = b.csr('fake-node');
    assert.equal(fakeNode.status?.certificate, undefined);
    assert.match(fakeNode.status!.conditions!.find((c) => c.type === 'Failed')!.message ?? '', /does not begin with system:node:/);
  });

  it('after a restart, issued and failed requests are left as they are', async () => {
    const b = await bench();
    await b.submit('jane', { subject: [{ type: CN, value: 'jane' }] }, 'Approved');
    await b.submit('server', { subject: [{ type: CN, value: 'web' }], usages: ['client auth', 'server auth'] }, 'Approved');
    await b.pass();
    const certificate = b.csr('jane').status?.certificate;
    assert.ok(certificate);
    assert.equal(b.issued.length, 1);

    b.env.clearActions();
    await b.pass();
    assert.equal(b.issued.length, 1, 'not signed twice');
    assert.deepEqual(b.env.writes(), []);
    assert.equal(b.csr('jane').status?.certificate, certificate);
    assert.deepEqual(conditionTypes(b.csr('server')), ['Approved', 'Failed'], 'one Failed condition, not another');
  });

  it('running, signs a request as soon as it is approved', async () => {
    const b = await bench();
    const running = await b.start();
    try {
      await b.submit('later', { subject: [{ type: CN, value: 'later' }] });
      const pending = b.csr('later');
      pending.status = { conditions: [{ type: 'Approved', status: 'True', reason: 'KubectlApprove', message: 'approved later' }] };
      await b.env.registry.update(CSR_RESOURCE, undefined, 'later', pending, { subresource: 'approval' });
      await waitFor(() => b.csr('later').status?.certificate);
      assert.equal(certificateOf(b.csr('later')).cert.subject.getField('CN').value, 'later');
    } finally {
      await running.stop();
    }
  });
});
