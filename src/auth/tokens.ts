import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errors } from '../api/errors.js';
import type { Backend } from '../storage/backend.js';
import { caHash, writeSecret } from './pki.js';

/** Who is calling. Nodes authenticate with their own credential issued at join time. */
export interface Identity {
  user: string;
  groups: string[];
  /** set for node agents: the node the credential was issued to */
  nodeName?: string;
}

export interface TokenAuthOptions {
  dataDir: string;
  backend: Backend;
  caCert: string;
}

const CREDENTIAL_PREFIX = '/berth/credentials/nodes/';

/**
 * Owns bearer-token authentication: the admin token (in the kubeconfig), the node join secret
 * (in `node-token`) and the per-node credentials issued at join. Only sha256 digests are kept
 * in memory and in the store; the plain tokens exist only in the 0600 files handed to users.
 */
export class TokenAuthenticator {
  private readonly adminDigest: Buffer;
  private readonly joinDigest: Buffer;
  /** digest(hex) → node name */
  private readonly nodeDigests = new Map<string, string>();
  readonly adminToken: string;
  readonly nodeToken: string;

  constructor(private readonly opts: TokenAuthOptions) {
    this.adminToken = readOrCreateToken(path.join(opts.dataDir, 'admin-token'));
    const joinSecret = readOrCreateToken(path.join(opts.dataDir, 'join-secret'));
    this.adminDigest = digest(this.adminToken);
    this.joinDigest = digest(joinSecret);
    // The node token pins the CA so a joining agent can trust the first TLS connection.
    this.nodeToken = `berth1::${caHash(opts.caCert)}::${joinSecret}`;
    writeSecret(path.join(opts.dataDir, 'node-token'), this.nodeToken + '\n');
    for (const kv of opts.backend.list(CREDENTIAL_PREFIX).items) {
      const { digest: d } = JSON.parse(kv.value) as { digest: string };
      this.nodeDigests.set(d, kv.key.slice(CREDENTIAL_PREFIX.length));
    }
  }

  /** Identity for an Authorization header, or undefined when missing/unknown. */
  authenticate(authorization: string | undefined): Identity | undefined {
    const token = bearer(authorization);
    if (!token) return undefined;
    const d = digest(token);
    if (timingSafeEqual(d, this.adminDigest)) return { user: 'admin', groups: ['system:masters', 'system:authenticated'] };
    const node = this.nodeDigests.get(d.toString('hex'));
    if (node !== undefined) return { user: `system:node:${node}`, groups: ['system:nodes', 'system:authenticated'], nodeName: node };
    return undefined;
  }

  /** Exchange the join secret for a credential of the node's own; re-joining replaces the old one. */
  join(authorization: string | undefined, nodeName: string): string {
    const secret = bearer(authorization);
    if (!secret || !timingSafeEqual(digest(secret), this.joinDigest)) throw errors.unauthorized('invalid join secret');
    const token = randomBytes(32).toString('base64url');
    const d = digest(token).toString('hex');
    const key = CREDENTIAL_PREFIX + nodeName;
    const existing = this.opts.backend.get(key);
    const value = JSON.stringify({ digest: d, issuedAt: new Date().toISOString() });
    if (existing) {
      const old = (JSON.parse(existing.value) as { digest: string }).digest;
      this.opts.backend.update(key, value, existing.modRevision);
      this.nodeDigests.delete(old);
    } else {
      this.opts.backend.create(key, value);
    }
    this.nodeDigests.set(d, nodeName);
    return token;
  }
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
