/**
 * Owns the server's own bearer tokens and the node join: the admin token, the join secret (or a live
 * bootstrap token) a node presents at `POST /berth/v1/join`, the credential, proxy secret and serving
 * certificate it gets back, and the node passwords that keep a joined name its own. ServiceAccount
 * tokens, the static token file and client certificates are authenticated elsewhere
 * (service-account-tokens.ts, static-tokens.ts, client-certificates.ts); authentication.ts tries them
 * all in order.
 */
import { createHash, createPublicKey, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { errors } from '../api/errors.js';
import type { UserInfo } from '../api/user-info.js';
import type { Logger } from 'pino';
import type { Backend, KeyValue, StoreEvent, Watcher } from '../storage/backend.js';
import { bootstrapTokenRefusal, parseBootstrapToken } from '../api/bootstrap-tokens.js';
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
  /** wait before following the stored credentials again after their watch was lost (default 1 s) */
  resyncDelayMs?: number;
  /**
   * Whether the Node object exists. A node name whose Node was deleted is free again: a join under it
   * needs no node password. Without it every name with a recorded password stays taken.
   */
  nodeExists?: (nodeName: string) => Promise<boolean>;
  /**
   * The string data of the bootstrap-token Secret with this id (src/api/bootstrap-tokens.ts), or
   * undefined when there is none. Without it only the cluster's own join secret admits a join.
   */
  bootstrapToken?: (tokenId: string) => Promise<Record<string, string> | undefined>;
  /** the time, for token expiry (default Date.now) */
  now?: () => number;
  log?: Logger;
}

const DEFAULT_RESYNC_DELAY_MS = 1_000;

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
  /**
   * A secret the agent made at its first join and keeps (0600): the first join of a node name records
   * its digest, and a later join under that name must present it while the Node exists, as k3s's node
   * passwords. Only a holder of the node's own files can re-join as it.
   */
  nodePassword?: unknown;
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
  /** sha256 (hex) of the node password the name was joined with */
  passwordDigest?: string;
}

/** Node passwords are random; anything shorter or longer than this is not one of ours. */
const NODE_PASSWORD_LENGTH = { min: 16, max: 256 };

/** What this replica knows of one node's credential: its digest (none once deleted) as of a store revision. */
interface KnownCredential {
  digest: string | undefined;
  revision: number;
}

/**
 * Owns bearer-token authentication: the admin token (in the kubeconfig), the node join secret
 * (in `node-token`) and the per-node credentials issued at join, with the node passwords that keep
 * a joined name from being taken over by another holder of the join secret. Of the tokens, only sha256
 * digests are kept in memory and in the store; the plain tokens exist only in the 0600 files
 * handed to users. Each node's proxy secret is the exception (see NodeCredentialRecord).
 *
 * Several replicas may share one store, and a node joins through any of them, so the node
 * credentials in memory follow the store: listed at start, then kept current by a watch on their
 * prefix, so a credential issued or replaced (revoked) through another replica takes effect here
 * as soon as its event arrives. A lost watch is followed again from a fresh list.
 */
export class TokenAuthenticator {
  private readonly adminDigest: Buffer;
  private readonly joinDigest: Buffer;
  /** digest(hex) → node name, for the credentials live now */
  private readonly nodeDigests = new Map<string, string>();
  /** node name → its credential as of the newest revision seen, by watch or by this replica's own write */
  private readonly known = new Map<string, KnownCredential>();
  private watcher: Watcher | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly adminToken: string;
  readonly nodeToken: string;

  /** Reads or creates the token files, loads the issued node credentials and follows their changes in the store. */
  static async open(opts: TokenAuthOptions): Promise<TokenAuthenticator> {
    const auth = new TokenAuthenticator(opts);
    await auth.follow();
    return auth;
  }

  /** Stops following the store (the backend itself stays open). */
  close(): void {
    this.closed = true;
    if (this.resyncTimer) clearTimeout(this.resyncTimer);
    this.resyncTimer = undefined;
    this.watcher?.close();
    this.watcher = undefined;
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

  /** List the stored credentials, then watch from the list's revision: no change falls in between. */
  private async follow(): Promise<void> {
    const listed = await this.opts.backend.list(CREDENTIAL_PREFIX);
    const present = new Set<string>();
    for (const kv of listed.items) {
      const nodeName = kv.key.slice(CREDENTIAL_PREFIX.length);
      present.add(nodeName);
      this.apply(nodeName, digestOf(kv), kv.modRevision);
    }
    // After a lost watch: credentials deleted meanwhile are absent from the list.
    for (const [nodeName, cred] of this.known) if (!present.has(nodeName) && cred.revision <= listed.revision) this.apply(nodeName, undefined, listed.revision);
    this.watcher = await this.opts.backend.watch(CREDENTIAL_PREFIX, {
      fromRevision: listed.revision,
      onEvent: (ev) => this.onStoreEvent(ev),
      onError: (err) => {
        this.opts.log?.warn({ err: err.message }, 'lost the watch on node credentials: listing them again');
        this.watcher = undefined;
        this.scheduleResync();
      },
    });
    if (this.closed) this.close();
  }

  private scheduleResync(): void {
    if (this.closed || this.resyncTimer) return;
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = undefined;
      if (this.closed) return;
      this.follow().catch((err: unknown) => {
        this.opts.log?.warn({ err: (err as Error).message }, 'could not follow node credentials: retrying');
        this.scheduleResync();
      });
    }, this.opts.resyncDelayMs ?? DEFAULT_RESYNC_DELAY_MS);
    this.resyncTimer.unref();
  }

  private onStoreEvent(ev: StoreEvent): void {
    const nodeName = ev.kv.key.slice(CREDENTIAL_PREFIX.length);
    if (ev.type === 'delete') return this.apply(nodeName, undefined, ev.kv.modRevision);
    let d: string | undefined;
    try {
      d = digestOf(ev.kv);
    } catch (err) {
      // An unreadable record authenticates nobody: the node's previous credential must not outlive it.
      this.opts.log?.warn({ err: (err as Error).message, node: nodeName }, 'unreadable node credential');
    }
    this.apply(nodeName, d, ev.kv.modRevision);
  }

  /**
   * Record a node's credential as of `revision`. Older news is ignored: the watch also delivers this
   * replica's own writes, after they were applied, and must not bring back a digest they replaced.
   */
  private apply(nodeName: string, d: string | undefined, revision: number): void {
    const current = this.known.get(nodeName);
    if (current && current.revision >= revision) return;
    if (current?.digest !== undefined && this.nodeDigests.get(current.digest) === nodeName) this.nodeDigests.delete(current.digest);
    this.known.set(nodeName, { digest: d, revision });
    if (d !== undefined) this.nodeDigests.set(d, nodeName);
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
  async join(authorization: string | undefined, nodeName: string, nodePassword?: string): Promise<string> {
    await this.checkJoinSecret(authorization);
    const passwordDigest = await this.checkNodePassword(nodeName, nodePassword);
    return this.storeNodeCredential(nodeName, undefined, passwordDigest);
  }

  /**
   * The full join: the node's API credential and, when the node sent a serving key, a serving certificate
   * for its agent endpoint and the proxy secret the control plane will present to it. All of it is replaced
   * on every join, so a re-join revokes what the node had before.
   */
  async joinNode(authorization: string | undefined, req: JoinRequest): Promise<JoinResponse> {
    await this.checkJoinSecret(authorization);
    const passwordDigest = await this.checkNodePassword(req.nodeName, req.nodePassword);
    if (req.servingPublicKey === undefined) return { token: await this.storeNodeCredential(req.nodeName, undefined, passwordDigest) };
    const publicKeyPem = servingPublicKeyOf(req.servingPublicKey);
    const addresses = addressesOf(req.addresses);
    // Signing first: a failure leaves the node's previous credentials untouched.
    const servingCert = await issueNodeServingCert({ dataDir: this.opts.dataDir, nodeName: req.nodeName, addresses, publicKeyPem });
    const proxySecret = randomBytes(32).toString('base64url');
    return { token: await this.storeNodeCredential(req.nodeName, proxySecret, passwordDigest), servingCert, proxySecret };
  }

  /**
   * A name joined with a node password stays that node's while its Node exists: a join under it must
   * present the same password (403 otherwise). Returns the digest to record: the one presented, or
   * none when none was (an agent from before node passwords, whose name then has no lock).
   */
  private async checkNodePassword(nodeName: string, password: unknown): Promise<string | undefined> {
    if (password !== undefined && (typeof password !== 'string' || password.length < NODE_PASSWORD_LENGTH.min || password.length > NODE_PASSWORD_LENGTH.max)) {
      throw errors.badRequest(`nodePassword must be a string of ${NODE_PASSWORD_LENGTH.min} to ${NODE_PASSWORD_LENGTH.max} characters`);
    }
    const presented = typeof password === 'string' ? digest(password) : undefined;
    const kv = await this.opts.backend.get(CREDENTIAL_PREFIX + nodeName);
    const recorded = kv ? (JSON.parse(kv.value) as NodeCredentialRecord).passwordDigest : undefined;
    if (recorded === undefined) return presented?.toString('hex');
    const nodeExists = this.opts.nodeExists ? await this.opts.nodeExists(nodeName) : true;
    if (!nodeExists) return presented?.toString('hex');
    const matches = presented !== undefined && timingSafeEqual(presented, Buffer.from(recorded, 'hex'));
    if (!matches) {
      throw errors.forbidden(`node "${nodeName}" is already joined with another node password; only that node can join under its name again. To give the name to a new node, delete the Node first: kubectl delete node ${nodeName}`);
    }
    return recorded;
  }

  /** The secret to present to a node's agent endpoint; undefined for a node that joined without one. */
  async proxySecretFor(nodeName: string): Promise<string | undefined> {
    const kv = await this.opts.backend.get(CREDENTIAL_PREFIX + nodeName);
    if (!kv) return undefined;
    return (JSON.parse(kv.value) as NodeCredentialRecord).proxySecret;
  }

  /** The cluster's own join secret (node-token), or a bootstrap token that is live now. */
  private async checkJoinSecret(authorization: string | undefined): Promise<void> {
    const secret = bearer(authorization);
    if (secret && timingSafeEqual(digest(secret), this.joinDigest)) return;
    const token = secret ? parseBootstrapToken(secret) : undefined;
    const data = token && this.opts.bootstrapToken ? await this.opts.bootstrapToken(token.id) : undefined;
    const refusal = token && data ? bootstrapTokenRefusal(data, token, (this.opts.now ?? Date.now)()) : 'not a known join secret or token';
    if (refusal !== undefined) {
      // The reason goes to the log only: a caller learns nothing about which tokens exist.
      this.opts.log?.info({ tokenId: token?.id, reason: refusal }, 'join refused');
      throw errors.unauthorized('invalid join token: unknown, deleted or expired');
    }
  }

  private async storeNodeCredential(nodeName: string, proxySecret: string | undefined, passwordDigest: string | undefined): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const d = digest(token).toString('hex');
    const key = CREDENTIAL_PREFIX + nodeName;
    const existing = await this.opts.backend.get(key);
    const record: NodeCredentialRecord = { digest: d, issuedAt: new Date().toISOString() };
    if (proxySecret !== undefined) record.proxySecret = proxySecret;
    if (passwordDigest !== undefined) record.passwordDigest = passwordDigest;
    const value = JSON.stringify(record);
    const written = existing ? await this.opts.backend.update(key, value, existing.modRevision) : await this.opts.backend.create(key, value);
    // At once rather than when the watch brings it: the node's first request may come right after.
    this.apply(nodeName, d, written.modRevision);
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

/** The digest a stored credential record holds. */
function digestOf(kv: KeyValue): string {
  const { digest: d } = JSON.parse(kv.value) as { digest: unknown };
  if (typeof d !== 'string') throw new Error(`${kv.key}: no digest`);
  return d;
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
