/**
 * `berth kubeconfig --user NAME`: a kubeconfig for a user authenticated by an x509 client certificate,
 * made the way a user would get one — through the API, not by reading the CA key: a key pair is made
 * locally, a CertificateSigningRequest for the kubernetes.io/kube-apiserver-client signer is created
 * with the admin credential, approved (the `approval` subresource), and the issued certificate waited
 * for. The private key never leaves this process except into the written kubeconfig.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { KUBE_APISERVER_CLIENT_SIGNER, csrCondition } from './api/certificates.js';
import { HttpClient } from './client/http-client.js';
import { kubeconfigText } from './kubeconfig-text.js';
import type { CertificateSigningRequest } from './api/types.js';

const CSRS = { group: 'certificates.k8s.io', version: 'v1', plural: 'certificatesigningrequests', namespaced: false };

export interface UserKubeconfigOptions {
  /** the admin kubeconfig's text (server URL, CA, admin token) */
  adminKubeconfig: string;
  user: string;
  groups: string[];
  /** requested validity in seconds (the signer caps it at --cluster-signing-duration) */
  expirationSeconds?: number;
  /** how long to wait for the signer (default 30 s) */
  timeoutMs?: number;
  /** the server to ask and to name in the kubeconfig (default the admin kubeconfig's): another replica of an HA control plane */
  server?: string | undefined;
}

export interface AdminConfig {
  server: string;
  ca?: string;
  token: string;
}

export function readAdminKubeconfig(text: string): AdminConfig {
  const cfg = parseYaml(text) as {
    clusters?: Array<{ cluster?: { server?: string; 'certificate-authority-data'?: string } }>;
    users?: Array<{ user?: { token?: string } }>;
  };
  const cluster = cfg.clusters?.[0]?.cluster;
  const token = cfg.users?.find((u) => u.user?.token)?.user?.token;
  if (!cluster?.server || !token) throw new Error('the admin kubeconfig must name a server and a token user');
  const caData = cluster['certificate-authority-data'];
  return { server: cluster.server, token, ...(caData ? { ca: Buffer.from(caData, 'base64').toString('utf8') } : {}) };
}

/**
 * The admin kubeconfig naming `server` instead of the one it was written for: replicas of one control
 * plane share the CA and the admin token, so only the address changes.
 */
export function adminKubeconfigFor(opts: { adminKubeconfig: string; server: string }): string {
  readAdminKubeconfig(opts.adminKubeconfig); // the same checks as for a user's: a server and a token
  const cfg = parseYaml(opts.adminKubeconfig) as { clusters: Array<{ cluster: { server: string } }> };
  for (const c of cfg.clusters) c.cluster.server = opts.server;
  return stringifyYaml(cfg);
}

/** Go-style durations as kubectl takes them: 1h, 30m, 720h, 1h30m, 90s. */
export function parseDurationSeconds(text: string): number {
  const re = /(\d+(?:\.\d+)?)(h|m|s)/g;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    total += Number(m[1]) * (m[2] === 'h' ? 3600 : m[2] === 'm' ? 60 : 1);
    consumed += m[0].length;
  }
  if (!text || consumed !== text.length) throw new Error(`invalid duration "${text}" (e.g. 24h, 30m, 1h30m)`);
  return Math.round(total);
}

/** A minimal PKCS#10 request for the key: made with node-forge, which signs RSA requests. */
async function certificateRequest(user: string, groups: string[], keys: { publicKey: string; privateKey: string }): Promise<string> {
  const forge = (await import('node-forge')).default;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.publicKeyFromPem(keys.publicKey);
  const utf8 = forge.asn1.Type.UTF8 as unknown as import('node-forge').asn1.Class;
  csr.setSubject([
    { type: '2.5.4.3', value: forge.util.encodeUtf8(user), valueTagClass: utf8 },
    ...groups.map((g) => ({ type: '2.5.4.10', value: forge.util.encodeUtf8(g), valueTagClass: utf8 })),
  ]);
  csr.sign(forge.pki.privateKeyFromPem(keys.privateKey) as import('node-forge').pki.rsa.PrivateKey, forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(csr);
}

/** Builds the user's kubeconfig text; throws when the request is denied, fails, or is not signed in time. */
export async function userKubeconfig(opts: UserKubeconfigOptions): Promise<string> {
  const admin = readAdminKubeconfig(opts.adminKubeconfig);
  if (opts.server !== undefined) admin.server = opts.server;
  const client = new HttpClient({ server: admin.server, token: admin.token, ca: admin.ca });
  try {
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    const request = await certificateRequest(opts.user, opts.groups, keys);
    const name = `berth-user-${opts.user.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '') || 'user'}-${randomBytes(4).toString('hex')}`;
    const body: CertificateSigningRequest = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: {
        request: Buffer.from(request).toString('base64'),
        signerName: KUBE_APISERVER_CLIENT_SIGNER,
        usages: ['digital signature', 'key encipherment', 'client auth'],
        ...(opts.expirationSeconds !== undefined ? { expirationSeconds: opts.expirationSeconds } : {}),
      },
    };
    const created = await client.create<CertificateSigningRequest>(CSRS, body);
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    created.status = {
      ...created.status,
      conditions: [...(created.status?.conditions ?? []), { type: 'Approved', status: 'True', reason: 'BerthKubeconfig', message: 'approved by berth kubeconfig', lastUpdateTime: now }],
    };
    await client.update(CSRS, created, { subresource: 'approval' });
    const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
    for (;;) {
      const csr = await client.get<CertificateSigningRequest>(CSRS, { name });
      const failed = csrCondition(csr, 'Failed') ?? csrCondition(csr, 'Denied');
      if (failed) throw new Error(`certificate request ${name} ${failed.type.toLowerCase()}: ${failed.message ?? failed.reason ?? ''}`);
      if (csr.status?.certificate) return kubeconfigText({ server: admin.server, caCert: admin.ca, userName: opts.user, contextName: `${opts.user}@berth`, credential: { certificate: Buffer.from(csr.status.certificate, 'base64').toString('utf8'), key: keys.privateKey } });
      if (Date.now() > deadline) throw new Error(`certificate request ${name} was not signed in time (is the csrsigning controller running?)`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    client.close();
  }
}
