/**
 * User certificates end to end, with openssl-made keys and stock kubectl: a CertificateSigningRequest
 * is created, approved with `kubectl certificate approve`, signed by the csrsigning controller, and the
 * certificate then authenticates to the real HTTPS listener as its CN/O (403 from today's authorizer,
 * which names the user, not 401). A denied request gets no certificate; a certificate past its
 * notAfter gives 401; `berth kubeconfig --user` produces a kubeconfig that works the same way.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { kubeconfigText } from '../../src/kubeconfig-text.js';
import forge from 'node-forge';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { HttpClient } from '../../src/client/http-client.js';
import { BERTH_BIN, runKubectl, serviceAccountToken, startCluster, waitFor, type Cluster } from './harness.js';

const execFileAsync = promisify(execFile);

type Csr = { status?: { certificate?: string; conditions?: Array<{ type: string }> }; spec: { username?: string; groups?: string[] } };

/** A kubeconfig that authenticates with this certificate and key only. */
function certKubeconfig(c: Cluster, certPem: string, keyPem: string): string {
  const caCert = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
  return kubeconfigText({ server: c.url, caCert, userName: 'u', contextName: 'c', credential: { certificate: certPem, key: keyPem } });
}

function openssl(dir: string, name: string, subject: string): { csrPem: string; keyPem: string } {
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  execFileSync('openssl', ['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject], { stdio: 'ignore' });
  return { csrPem: fs.readFileSync(csr, 'utf8'), keyPem: fs.readFileSync(key, 'utf8') };
}

function csrManifest(name: string, csrPem: string, extra = ''): string {
  return `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: ${name}
spec:
  request: ${Buffer.from(csrPem).toString('base64')}
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth, digital signature, key encipherment]
  username: mallory
  groups: [system:masters]
${extra}`;
}

describe('x509 client certificates and CertificateSigningRequests', () => {
  let c: Cluster;

  before(async () => {
    c = await startCluster({ agents: [] });
  });
  after(async () => {
    await c?.stop();
  });

  it('an approved CSR is signed and its certificate authenticates as CN/O (403 from the authorizer, naming the user)', async () => {
    const { csrPem, keyPem } = openssl(c.dir, 'jane', '/CN=jane/O=dev');
    await c.kubectl(['create', '-f', c.writeFile('jane-csr.yaml', csrManifest('jane', csrPem, '  expirationSeconds: 3600\n'))]);
    const created = await c.client.request<Csr>({ method: 'GET', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests/jane' });
    // The requester, not what the body claimed.
    assert.equal(created.spec.username, 'admin');
    assert.ok(created.spec.groups?.includes('system:masters'));
    const pending = await c.kubectl(['get', 'csr', 'jane']);
    assert.match(pending.stdout, /NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION/);
    assert.match(pending.stdout, /jane\s+\S+\s+kubernetes\.io\/kube-apiserver-client\s+admin\s+60m\s+Pending/);

    const approved = await c.kubectl(['certificate', 'approve', 'jane']);
    assert.match(approved.stdout, /approved/);
    let certB64 = '';
    await waitFor(async () => {
      certB64 = (await c.kubectl(['get', 'csr', 'jane', '-o', 'jsonpath={.status.certificate}'])).stdout;
      return certB64 !== '';
    }, 20_000, () => 'no certificate issued');
    assert.match((await c.kubectl(['get', 'csr', 'jane'])).stdout, /Approved,Issued/);
    const certPem = Buffer.from(certB64, 'base64').toString('utf8');
    const cert = forge.pki.certificateFromPem(certPem);
    assert.equal(cert.subject.getField('CN').value, 'jane');
    // expirationSeconds honoured (the signer backdates notBefore by 5 minutes).
    const lifetimeMs = cert.validity.notAfter.getTime() - cert.validity.notBefore.getTime();
    assert.ok(Math.abs(lifetimeMs - 65 * 60_000) < 5_000, `lifetime ${lifetimeMs}`);

    const kc = c.writeFile('jane.kubeconfig', certKubeconfig(c, certPem, keyPem));
    const res = await runKubectl(kc, ['get', 'pods'], { allowFail: true });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /Forbidden|forbidden/);
    assert.match(res.stderr, /jane/);
    assert.doesNotMatch(res.stderr, /Unauthorized/);
  });

  it('a denied CSR gets no certificate', async () => {
    const { csrPem } = openssl(c.dir, 'bob', '/CN=bob');
    await c.kubectl(['create', '-f', c.writeFile('bob-csr.yaml', csrManifest('bob', csrPem))]);
    await c.kubectl(['certificate', 'deny', 'bob']);
    await new Promise((r) => setTimeout(r, 1500));
    const csr = await c.client.request<Csr>({ method: 'GET', path: '/apis/certificates.k8s.io/v1/certificatesigningrequests/bob' });
    assert.deepEqual(csr.status?.conditions?.map((x) => x.type), ['Denied']);
    assert.equal(csr.status?.certificate, undefined);
    assert.match((await c.kubectl(['get', 'csr', 'bob'])).stdout, /bob\s+.*\sDenied\s*$/m);
    // Approving a denied request is refused.
    const again = await c.kubectl(['certificate', 'approve', 'bob'], { allowFail: true });
    assert.notEqual(again.code, 0);
  });

  it('a CSR for system:masters to the client signer is forbidden at create', async () => {
    const { csrPem } = openssl(c.dir, 'root', '/CN=root/O=system:masters');
    const res = await c.kubectl(['create', '-f', c.writeFile('root-csr.yaml', csrManifest('root', csrPem))], { allowFail: true });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /system:masters group is not allowed/);
  });

  it("approving needs `approve` on the CSR's signer and issuing a certificate needs `sign`, as CertificateApproval and CertificateSigning admit", async () => {
    // A ServiceAccount with every CSR right but none on signers: before these plugins it approved its
    // own request for a node's client certificate.
    await c.kubectl(['create', 'serviceaccount', 'csr-bot', '-n', 'default']);
    await c.kubectl(['create', 'clusterrole', 'csr-writer', '--verb=create,get,list,watch', '--resource=certificatesigningrequests']);
    await c.kubectl(['create', 'clusterrole', 'csr-approval-writer', '--verb=update', '--resource=certificatesigningrequests/approval,certificatesigningrequests/status']);
    for (const role of ['csr-writer', 'csr-approval-writer']) await c.kubectl(['create', 'clusterrolebinding', `bot-${role}`, `--clusterrole=${role}`, '--serviceaccount=default:csr-bot']);
    const token = await serviceAccountToken(c.client, 'default', 'csr-bot');
    const caCert = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
    const bot = c.writeFile('bot.kubeconfig', kubeconfigText({ server: c.url, caCert, userName: 'bot', contextName: 'c', credential: { token } }));

    const { csrPem } = openssl(c.dir, 'node2', '/CN=system:node:node2/O=system:nodes');
    await runKubectl(bot, ['create', '-f', c.writeFile('node2-csr.yaml', csrManifest('node2', csrPem))]);
    const refused = await runKubectl(bot, ['certificate', 'approve', 'node2'], { allowFail: true });
    assert.notEqual(refused.code, 0, refused.stdout);
    assert.match(refused.stderr, /certificatesigningrequests\.certificates\.k8s\.io "node2" is forbidden: user not permitted to approve requests with signerName "kubernetes\.io\/kube-apiserver-client"/);
    // What the bot may do, asked as kube-apiserver is asked (`kubectl auth can-i` cannot ask it: it
    // sends an undiscovered resource like `signers` without its group).
    const botClient = new HttpClient({ server: c.url, token, ca: caCert });
    const mayApprove = async () =>
      (
        await botClient.request<{ status: { allowed: boolean } }>({
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
          body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { group: 'certificates.k8s.io', resource: 'signers', verb: 'approve', name: 'kubernetes.io/kube-apiserver-client' } } },
        })
      ).status.allowed;
    assert.equal(await mayApprove(), false);
    // Nor may it write a certificate of its own making into the status.
    const csrPath = '/apis/certificates.k8s.io/v1/certificatesigningrequests/node2';
    const current = await botClient.request<Csr & { metadata: Record<string, unknown> }>({ method: 'GET', path: csrPath });
    // A well-formed certificate (the CA's own), so validation passes and admission decides.
    const forgedStatus = { ...current, status: { certificate: Buffer.from(caCert).toString('base64') } };
    await assert.rejects(botClient.request({ method: 'PUT', path: `${csrPath}/status`, body: forgedStatus }), /user not permitted to sign requests with signerName "kubernetes\.io\/kube-apiserver-client"/);
    assert.equal((await c.client.request<Csr>({ method: 'GET', path: csrPath })).status?.certificate, undefined);

    // Upstream's approver role for the signer, bound: the same approval succeeds and the signer issues.
    await c.kubectl(['create', 'clusterrolebinding', 'bot-approver', '--clusterrole=system:certificates.k8s.io:kube-apiserver-client-approver', '--serviceaccount=default:csr-bot']);
    await waitFor(mayApprove, 10_000, 'the binding to take effect');
    const approved = await runKubectl(bot, ['certificate', 'approve', 'node2']);
    assert.match(approved.stdout, /approved/);
    await waitFor(async () => !!(await c.client.request<Csr>({ method: 'GET', path: csrPath })).status?.certificate, 20_000, () => 'no certificate issued');
  });

  it('an expired certificate from the cluster CA gives 401; a forged one too', async () => {
    const caCert = forge.pki.certificateFromPem(fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8'));
    const caKey = forge.pki.privateKeyFromPem(fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.key'), 'utf8'));
    const keys = forge.pki.rsa.generateKeyPair(2048);
    const make = (notAfter: Date, signer: forge.pki.PrivateKey) => {
      const cert = forge.pki.createCertificate();
      cert.publicKey = keys.publicKey;
      cert.serialNumber = '0a1b';
      cert.validity.notBefore = new Date(Date.now() - 2 * 3600_000);
      cert.validity.notAfter = notAfter;
      cert.setSubject([{ name: 'commonName', value: 'old' }]);
      cert.setIssuer(caCert.subject.attributes);
      cert.setExtensions([{ name: 'extKeyUsage', clientAuth: true }]);
      cert.sign(signer as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
      return forge.pki.certificateToPem(cert);
    };
    const keyPem = forge.pki.privateKeyToPem(keys.privateKey);
    const expired = c.writeFile('expired.kubeconfig', certKubeconfig(c, make(new Date(Date.now() - 3600_000), caKey), keyPem));
    const res = await runKubectl(expired, ['get', 'pods'], { allowFail: true });
    assert.notEqual(res.code, 0, `expired certificate: kubectl succeeded: ${res.stdout}`);
    assert.match(res.stderr, /Unauthorized|must be logged in/, `expired certificate: kubectl exited ${res.code}: ${res.stderr}`);
    // The same certificate while valid authenticates (403 names the user): the 401 above was the expiry.
    const valid = c.writeFile('valid.kubeconfig', certKubeconfig(c, make(new Date(Date.now() + 3600_000), caKey), keyPem));
    const ok = await runKubectl(valid, ['get', 'pods'], { allowFail: true });
    assert.match(ok.stderr, /forbidden/i, `valid certificate: kubectl exited ${ok.code}: ${ok.stderr}`);
    assert.match(ok.stderr, /old/);
    // Signed by some other key than the CA's, with the CA's name as issuer.
    const forged = c.writeFile('forged.kubeconfig', certKubeconfig(c, make(new Date(Date.now() + 3600_000), keys.privateKey), keyPem));
    const bad = await runKubectl(forged, ['get', 'pods'], { allowFail: true });
    assert.match(bad.stderr, /Unauthorized|must be logged in/, `forged certificate: kubectl exited ${bad.code}: ${bad.stderr}`);
  });

  it('berth kubeconfig --user writes a kubeconfig whose certificate kubectl authenticates with', async () => {
    const out = path.join(c.dir, 'carol.kubeconfig');
    await execFileAsync(process.execPath, [...NODE_FLAGS, BERTH_BIN, 'kubeconfig', '--data-dir', path.join(c.dir, 'server'), '--user', 'carol', '--group', 'qa', '--group', 'ops', '--expiration', '2h', '--out', out]);
    assert.equal(fs.statSync(out).mode & 0o777, 0o600);
    const res = await runKubectl(out, ['get', 'pods', '-n', 'kube-system'], { allowFail: true });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /forbidden/i);
    assert.match(res.stderr, /carol/);
    const list = await c.kubectl(['get', 'csr', '-o', 'jsonpath={range .items[*]}{.metadata.name}{" "}{.spec.expirationSeconds}{"\\n"}{end}']);
    assert.match(list.stdout, /berth-user-carol-[0-9a-f]+ 7200/);
  });
});
