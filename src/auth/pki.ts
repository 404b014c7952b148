/**
 * Owns the cluster's certificates on disk and issuing them: the CA and the API server's serving
 * certificate under `<dataDir>/pki`, node agents' serving certificates (for keys the nodes keep),
 * and the client certificates CertificateSigningRequest signers issue. It does not decide who gets a
 * certificate: the join (tokens.ts) and CSR approval and signing (src/controllers/csr-signing/) do;
 * sharing the CA between replicas is cluster-bootstrap.ts's.
 */
import { generateKeyPairSync, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** What a TLS listener and its clients need, as PEM text. */
export interface ServingPki {
  caCert: string;
  serverCert: string;
  serverKey: string;
}

export interface PkiOptions {
  dataDir: string;
  /** extra DNS names / IPs the serving certificate must cover (besides localhost, 127.0.0.1 and the host's addresses) */
  altNames?: string[];
}

const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * Owns the cluster CA and the API server's serving certificate in `<dataDir>/pki`. Made once at
 * first start and reused; the serving certificate is re-issued (by the same CA) when the host's
 * names change, so agents that pinned the CA keep working. Validity is ten years, because lab
 * clusters outlive k3s' one-year certificates and nobody rotates them.
 */
export async function ensurePki(opts: PkiOptions): Promise<ServingPki> {
  const dir = path.join(opts.dataDir, 'pki');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = { caCert: path.join(dir, 'ca.crt'), caKey: path.join(dir, 'ca.key'), cert: path.join(dir, 'server.crt'), key: path.join(dir, 'server.key'), names: path.join(dir, 'server.names') };
  // node-forge is only needed when something must be issued; keep it out of the steady-state heap.
  const forge = (await import('node-forge')).default;
  const { pki } = forge;

  await ensureCa(opts.dataDir);
  const caCert = fs.readFileSync(files.caCert, 'utf8');
  const wanted = servingNames(opts.altNames ?? []);
  const haveNames = fs.existsSync(files.names) ? fs.readFileSync(files.names, 'utf8') : '';
  if (!fs.existsSync(files.cert) || !fs.existsSync(files.key) || haveNames !== wanted.join(',')) {
    const ca = { cert: pki.certificateFromPem(caCert), key: pki.privateKeyFromPem(fs.readFileSync(files.caKey, 'utf8')) };
    const { cert, key } = issue(forge, { commonName: 'berth-apiserver', isCA: false, altNames: wanted, signer: ca });
    writeSecret(files.key, key);
    fs.writeFileSync(files.cert, cert, { mode: 0o644 });
    fs.writeFileSync(files.names, wanted.join(','));
  }
  return { caCert, serverCert: fs.readFileSync(files.cert, 'utf8'), serverKey: fs.readFileSync(files.key, 'utf8') };
}

/** Makes the cluster CA in `<dataDir>/pki` unless it is there; a new CA drops the serving certificate of the old one. */
export async function ensureCa(dataDir: string): Promise<void> {
  const dir = path.join(dataDir, 'pki');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const caCert = path.join(dir, 'ca.crt');
  const caKey = path.join(dir, 'ca.key');
  if (fs.existsSync(caCert) && fs.existsSync(caKey)) return;
  const forge = (await import('node-forge')).default;
  const { cert, key } = issue(forge, { commonName: 'berth-ca', isCA: true });
  writeSecret(caKey, key);
  fs.writeFileSync(caCert, cert, { mode: 0o644 });
  fs.rmSync(path.join(dir, 'server.crt'), { force: true });
}

/**
 * The names in-cluster clients use for the API server, which its serving certificate must carry:
 * the `kubernetes` Service's ClusterIP and kubernetes, kubernetes.default, kubernetes.default.svc,
 * kubernetes.default.svc.<cluster domain> (as kube-apiserver adds them).
 */
export function kubernetesServiceNames(opts: { clusterIP: string; clusterDomain: string }): string[] {
  return [opts.clusterIP, 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', `kubernetes.default.svc.${opts.clusterDomain}`];
}

/** What a joining node asks to be certified for. */
export interface NodeServingCertRequest {
  dataDir: string;
  nodeName: string;
  /** the node's IP addresses, added as IP SANs */
  addresses: string[];
  /** SPKI PEM of an RSA key the node generated and keeps: the private key never leaves the node */
  publicKeyPem: string;
}

/**
 * Issues the serving certificate of a node agent's HTTPS endpoint, signed by the cluster CA, for the node's
 * own key. The node name is a DNS SAN because the control plane verifies agents by name (TLS servername), so
 * a certificate issued to one node never passes for another even if it listed the other's IP.
 */
export async function issueNodeServingCert(req: NodeServingCertRequest): Promise<string> {
  const forge = (await import('node-forge')).default;
  const ca = loadCa(forge, req.dataDir);
  const { cert } = issue(forge, {
    commonName: `system:node:${req.nodeName}`,
    organization: 'system:nodes',
    isCA: false,
    altNames: [req.nodeName, ...req.addresses],
    signer: ca,
    publicKeyPem: req.publicKeyPem,
  });
  return cert;
}

/** What a signer asks the cluster CA to certify (a client certificate from a CertificateSigningRequest). */
export interface ClientCertificateRequest {
  dataDir: string;
  /** the subject's attributes by OID, in order (copied from the request, as Kubernetes' signers do) */
  subject: Array<{ oid: string; value: string }>;
  /** SPKI PEM of the requester's RSA key */
  publicKeyPem: string;
  notBefore: Date;
  /** capped at the CA's own notAfter */
  notAfter: Date;
  /** CSR key usages (`digital signature`, `key encipherment`, `client auth`, …) */
  usages: string[];
}

/** The key usages and extended key usages of a CSR's `usages`, as node-forge names them. */
const KEY_USAGE_FLAGS: Record<string, string> = {
  'digital signature': 'digitalSignature',
  signing: 'digitalSignature',
  'content commitment': 'nonRepudiation',
  'key encipherment': 'keyEncipherment',
  'key agreement': 'keyAgreement',
  'data encipherment': 'dataEncipherment',
};
const EXT_KEY_USAGE_FLAGS: Record<string, string> = {
  'client auth': 'clientAuth',
  'server auth': 'serverAuth',
  'code signing': 'codeSigning',
  'email protection': 'emailProtection',
  timestamping: 'timeStamping',
};

/**
 * Issues a certificate signed by the cluster CA for a requester's key; returns its PEM. node-forge
 * certifies RSA keys only, so other keys are refused with an Error saying so.
 */
export async function issueClientCertificate(req: ClientCertificateRequest): Promise<string> {
  const forge = (await import('node-forge')).default;
  const { pki } = forge;
  const ca = loadCa(forge, req.dataDir);
  let publicKey: import('node-forge').pki.PublicKey;
  try {
    publicKey = pki.publicKeyFromPem(req.publicKeyPem);
  } catch {
    throw new Error('only RSA keys can be certified by this signer');
  }
  const cert = pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = '01' + randomBytes(15).toString('hex');
  cert.validity.notBefore = req.notBefore;
  cert.validity.notAfter = req.notAfter.getTime() > ca.cert.validity.notAfter.getTime() ? ca.cert.validity.notAfter : req.notAfter;
  // UTF8String: user names may hold characters PrintableString cannot (@, _).
  cert.setSubject(req.subject.map((a) => ({ type: a.oid, value: forge.util.encodeUtf8(a.value), valueTagClass: forge.asn1.Type.UTF8 as unknown as import('node-forge').asn1.Class })));
  cert.setIssuer(ca.cert.subject.attributes);
  const keyUsage: Record<string, unknown> = { name: 'keyUsage', critical: true };
  const extKeyUsage: Record<string, unknown> = { name: 'extKeyUsage' };
  for (const u of req.usages) {
    if (KEY_USAGE_FLAGS[u]) keyUsage[KEY_USAGE_FLAGS[u]] = true;
    if (EXT_KEY_USAGE_FLAGS[u]) extKeyUsage[EXT_KEY_USAGE_FLAGS[u]] = true;
  }
  const extensions: object[] = [{ name: 'basicConstraints', cA: false, critical: true }, { name: 'authorityKeyIdentifier', keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() }];
  // An extension without a single usage set is malformed (OpenSSL then rejects the whole certificate).
  if (Object.keys(keyUsage).length > 2) extensions.push(keyUsage);
  if (Object.keys(extKeyUsage).length > 1) extensions.push(extKeyUsage);
  cert.setExtensions(extensions);
  cert.sign(ca.key as import('node-forge').pki.rsa.PrivateKey, forge.md.sha256.create());
  return pki.certificateToPem(cert);
}

/** sha256 of the CA PEM text, hex: what a join token pins. */
export function caHash(caPem: string): string {
  return createHash('sha256').update(caPem).digest('hex');
}

export function writeSecret(file: string, content: string): void {
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chmodSync(file, 0o600); // an existing file keeps its old mode on write
}

function servingNames(extra: string[]): string[] {
  const names = new Set<string>(['localhost', '127.0.0.1', '::1', os.hostname(), ...extra]);
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (!a.internal) names.add(a.address);
  }
  return [...names].sort();
}

type Forge = typeof import('node-forge');

/** The cluster CA's certificate and key: the one place outside ensurePki that reads the key. */
function loadCa(forge: Forge, dataDir: string): { cert: import('node-forge').pki.Certificate; key: import('node-forge').pki.PrivateKey } {
  const dir = path.join(dataDir, 'pki');
  return {
    cert: forge.pki.certificateFromPem(fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8')),
    key: forge.pki.privateKeyFromPem(fs.readFileSync(path.join(dir, 'ca.key'), 'utf8')),
  };
}

function issue(
  forge: Forge,
  opts: {
    commonName: string;
    /** subject O; default berth */
    organization?: string;
    isCA: boolean;
    altNames?: string[];
    signer?: { cert: import('node-forge').pki.Certificate; key: import('node-forge').pki.PrivateKey };
    /** certify this public key instead of generating a key pair (the returned key is then '') */
    publicKeyPem?: string;
  },
): { cert: string; key: string } {
  const { pki } = forge;
  // Node's native keygen is ~100× faster than forge's pure-JS one.
  const { privateKey, publicKey } = opts.publicKeyPem
    ? { privateKey: '', publicKey: opts.publicKeyPem }
    : generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  const cert = pki.createCertificate();
  cert.publicKey = pki.publicKeyFromPem(publicKey);
  cert.serialNumber = '01' + randomBytes(15).toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 3600_000);
  cert.validity.notAfter = new Date(now + TEN_YEARS_MS);
  const subject = [{ name: 'commonName', value: opts.commonName }, { name: 'organizationName', value: opts.organization ?? 'berth' }];
  cert.setSubject(subject);
  cert.setIssuer(opts.signer ? opts.signer.cert.subject.attributes : subject);
  const extensions: object[] = [
    { name: 'basicConstraints', cA: opts.isCA, critical: true },
    opts.isCA
      ? { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true }
      : { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ];
  if (!opts.isCA) {
    extensions.push({ name: 'extKeyUsage', serverAuth: true });
    extensions.push({
      name: 'subjectAltName',
      altNames: (opts.altNames ?? []).map((n) => (/^[\d.]+$/.test(n) || n.includes(':') ? { type: 7, ip: n } : { type: 2, value: n })),
    });
  }
  cert.setExtensions(extensions);
  const signingKey = opts.signer ? opts.signer.key : pki.privateKeyFromPem(privateKey);
  cert.sign(signingKey as import('node-forge').pki.rsa.PrivateKey, forge.md.sha256.create());
  return { cert: pki.certificateToPem(cert), key: privateKey };
}
