import { createHash, createPublicKey, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { errors } from '../api/errors.js';
import type { UserInfo } from '../api/user-info.js';
import type { Backend } from '../storage/backend.js';
import { caHash, issueNodeServingCert, writeSecret } from './pki.js';

/** Who is calling. Nodes authenticate with their own credential issued at join time. */
export interface Identity extends UserInfo {
  /** set for node agents: the node the credential was issued to */
  nodeName?: string;
}

export interface TokenAuthOptions {
  dataDir: string;
  backend: Backend;
  caCert: string;
}

/** Where node credentials are stored; the control plane encrypts values under it like Secrets. */
export const NODE_CREDENTIAL_PREFIX = '/berth/credentials/nodes/';
const CREDENTIAL_PREFIX = NODE_CREDENTIAL_PREFIX;

/** What a node sends to join (POST /berth/v1/join). Fields after nodeName are optional: older agents omit them. */
export interface JoinRequest {
  nodeName: string;
  /** SPKI PEM (RSA, ≥ 2048 bits) of the key the agent serves its HTTPS endpoint with */
  servingPublicKey?: unknown;
  /** the node's IPs, for the serving certificate's SANs */
  addresses?: unknown;
}

/** What a node gets back from a join. */
export interface JoinResponse {
  /** the node's own API credential */
  token: string;
  /** serving certificate (PEM, signed by the cluster CA) for the key the node sent; absent if it sent none */
  servingCert?: string;
  /** what the control plane presents as `Authorization: Bearer` when it calls the agent (logs, exec) */
  proxySecret?: string;
}

/**
 * The stored record of a node's credentials. The proxy secret cannot be kept as a digest (the server
 * must present it to the agent), so the store it is written to has to encrypt it at rest: the control
 * plane gives this class a backend that encrypts values under NODE_CREDENTIAL_PREFIX like Secrets.
 */
interface NodeCredentialRecord {
  digest: string;
  issuedAt: string;
  proxySecret?: string;
}

/**
 * Owns bearer-token authentication: the admin token (in the kubeconfig), the node join secret
 * (in `node-token`) and the per-node credentials issued at join. Of the tokens, only sha256
 * digests are kept in memory and in the store; the plain tokens exist only in the 0600 files
 * handed to users. Each node's proxy secret is the exception (see NodeCredentialRecord).
 */
export class TokenAuthenticator {
  private readonly adminDigest: Buffer;
  private readonly joinDigest: Buffer;
  /** digest(hex) → node name */
  private readonly nodeDigests = new Map<string, string>();
  readonly adminToken: string;
  readonly nodeToken: string;

  /** Reads or creates the token files and loads the issued node credentials from the store. */
  static async open(opts: TokenAuthOptions): Promise<TokenAuthenticator> {
    const auth = new TokenAuthenticator(opts);
    for (const kv of (await opts.backend.list(CREDENTIAL_PREFIX)).items) {
      const { digest: d } = JSON.parse(kv.value) as { digest: string };
      auth.nodeDigests.set(d, kv.key.slice(CREDENTIAL_PREFIX.length));
    }
    return auth;
  }

  private constructor(private readonly opts: TokenAuthOptions) {
    this.adminToken = readOrCreateToken(path.join(opts.dataDir, 'admin-token'));
    const joinSecret = readOrCreateToken(path.join(opts.dataDir, 'join-secret'));
    this.adminDigest = digest(this.adminToken);
    this.joinDigest = digest(joinSecret);
    // The node token pins the CA so a joining agent can trust the first TLS connection.
    this.nodeToken = `berth1::${caHash(opts.caCert)}::${joinSecret}`;
    writeSecret(path.join(opts.dataDir, 'node-token'), this.nodeToken + '\n');
  }

  /** Identity for an Authorization header, or undefined when missing/unknown. */
  authenticate(authorization: string | undefined): Identity | undefined {
    const token = bearer(authorization);
    if (!token) return undefined;
    const d = digest(token);
    if (timingSafeEqual(d, this.adminDigest)) return { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
    const node = this.nodeDigests.get(d.toString('hex'));
    if (node !== undefined) return { username: `system:node:${node}`, groups: ['system:nodes', 'system:authenticated'], nodeName: node };
    return undefined;
  }

  /** Exchange the join secret for a credential of the node's own; re-joining replaces the old one. */
  join(authorization: string | undefined, nodeName: string): Promise<string> {
    this.checkJoinSecret(authorization);
    return this.storeNodeCredential(nodeName, undefined);
  }

  /**
   * The full join: the node's API credential and, when the node sent a serving key, a serving certificate
   * for its agent endpoint and the proxy secret the control plane will present to it. All of it is replaced
   * on every join, so a re-join revokes what the node had before.
   */
  async joinNode(authorization: string | undefined, req: JoinRequest): Promise<JoinResponse> {
    this.checkJoinSecret(authorization);
    if (req.servingPublicKey === undefined) return { token: await this.storeNodeCredential(req.nodeName, undefined) };
    const publicKeyPem = servingPublicKeyOf(req.servingPublicKey);
    const addresses = addressesOf(req.addresses);
    // Signing first: a failure leaves the node's previous credentials untouched.
    const servingCert = await issueNodeServingCert({ dataDir: this.opts.dataDir, nodeName: req.nodeName, addresses, publicKeyPem });
    const proxySecret = randomBytes(32).toString('base64url');
    return { token: await this.storeNodeCredential(req.nodeName, proxySecret), servingCert, proxySecret };
  }

  /** The secret to present to a node's agent endpoint; undefined for a node that joined without one. */
  async proxySecretFor(nodeName: string): Promise<string | undefined> {
    const kv = await this.opts.backend.get(CREDENTIAL_PREFIX + nodeName);
    if (!kv) return undefined;
    return (JSON.parse(kv.value) as NodeCredentialRecord).proxySecret;
  }

  private checkJoinSecret(authorization: string | undefined): void {
    const secret = bearer(authorization);
    if (!secret || !timingSafeEqual(digest(secret), this.joinDigest)) throw errors.unauthorized('invalid join secret');
  }

  private async storeNodeCredential(nodeName: string, proxySecret: string | undefined): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const d = digest(token).toString('hex');
    const key = CREDENTIAL_PREFIX + nodeName;
    const existing = await this.opts.backend.get(key);
    const record: NodeCredentialRecord = { digest: d, issuedAt: new Date().toISOString() };
    if (proxySecret !== undefined) record.proxySecret = proxySecret;
    const value = JSON.stringify(record);
    if (existing) {
      const old = (JSON.parse(existing.value) as { digest: string }).digest;
      await this.opts.backend.update(key, value, existing.modRevision);
      this.nodeDigests.delete(old);
    } else {
      await this.opts.backend.create(key, value);
    }
    this.nodeDigests.set(d, nodeName);
    return token;
  }
}

function servingPublicKeyOf(v: unknown): string {
  if (typeof v !== 'string' || v.length > 16_384) throw errors.badRequest('servingPublicKey must be a PEM public key');
  let key;
  try {
    key = createPublicKey(v);
  } catch {
    throw errors.badRequest('servingPublicKey is not a valid PEM public key');
  }
  // The CA library certifies RSA keys only.
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType !== 'rsa' || bits < 2048) throw errors.badRequest('servingPublicKey must be an RSA key of at least 2048 bits');
  return key.export({ type: 'spki', format: 'pem' }).toString();
}

function addressesOf(v: unknown): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.length > 16 || !v.every((a) => typeof a === 'string' && net.isIP(a) !== 0)) {
    throw errors.badRequest('addresses must be a list of at most 16 IP addresses');
  }
  return [...new Set(v as string[])];
}

function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function readOrCreateToken(file: string): string {
  if (fs.existsSync(file)) {
    const t = fs.readFileSync(file, 'utf8').trim();
    if (t) return t;
  }
  const t = randomBytes(32).toString('base64url');
  writeSecret(file, t + '\n');
  return t;
}
