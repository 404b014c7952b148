/**
 * Owns the secrets every control-plane replica on one shared store must hold alike — the cluster CA
 * (pki/ca.crt, pki/ca.key), the service-account signing key (pki/sa.key), the admin token
 * (admin-token), the node join secret (join-secret) and, unless given by
 * --encryption-provider-config, the encryption-at-rest key (encryption-config.yaml) — and how they
 * reach each replica's data dir (k3s' shape).
 *
 * The first replica that starts on an empty store makes them (or takes those already in its data
 * dir), encrypts them and stores them under one key outside the registry's object tree with a create
 * transaction; any other replica reads that key, decrypts it and writes the same files into its own
 * data dir before anything else reads them. Two replicas starting at the same moment: one create
 * wins, the other gets AlreadyExists and takes the winner's files in place of those it had just made.
 * A file that was already in a data dir before the start and differs from the stored one stops the
 * start: a replica never serves with a second CA or key.
 *
 * The encryption key is derived (scrypt) from the cluster token, which is the node join secret:
 * the secret in DATA_DIR/node-token (`berth1::<ca hash>::<secret>`) that agents already join with,
 * so an operator handles one secret, as with k3s' token. A joining server gets it by `--token` /
 * `--token-file` (the whole node token, whose CA hash is then checked against the stored CA, or the
 * bare secret), or from a join-secret or node-token file already in its data dir.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StorageError, type Backend } from '../storage/backend.js';
import { DEFAULT_ENCRYPTION_CONFIG_FILE, generatedEncryptionConfiguration } from '../storage/encryption.js';
import { caHash, ensureCa, writeSecret } from './pki.js';
import { SERVICE_ACCOUNT_KEY_FILE, loadOrCreateSigningKey } from './service-account-tokens.js';

/** The store key of the encrypted bundle: outside `/registry/`, so no API ever lists or watches it. */
export const CLUSTER_BOOTSTRAP_KEY = '/berth/cluster-bootstrap';
export const JOIN_SECRET_FILE = 'join-secret';
export const ADMIN_TOKEN_FILE = 'admin-token';
const NODE_TOKEN_FILE = 'node-token';
const CA_CERT_FILE = path.join('pki', 'ca.crt');
const CA_KEY_FILE = path.join('pki', 'ca.key');
/** files issued by the CA on each replica for itself: re-issued when the CA is replaced */
const SERVING_FILES = [path.join('pki', 'server.crt'), path.join('pki', 'server.key'), path.join('pki', 'server.names')];

const FORMAT_VERSION = 1;
/** scrypt's cost: ~50 ms once per start, and a brute force of a 256-bit random secret is hopeless anyway */
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export interface ClusterBootstrapOptions {
  dataDir: string;
  /** the store every replica shares */
  store: Backend;
  /** --token / --token-file: the node token or its bare join secret */
  token?: string;
  /** whether encryption-config.yaml in the data dir is shared (false with --encryption-provider-config) */
  shareEncryptionConfig: boolean;
  log?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

export interface ClusterBootstrapResult {
  /** 'bootstrapped': this replica stored the secrets; 'joined': it took them from the store */
  outcome: 'bootstrapped' | 'joined';
  /** data-dir files written from the store */
  written: string[];
}

interface SealedBundle {
  version: number;
  salt: string;
  iv: string;
  tag: string;
  data: string;
}

/** The cluster-wide secrets as stored; see the module comment. */
export async function bootstrapClusterSecrets(opts: ClusterBootstrapOptions): Promise<ClusterBootstrapResult> {
  const names = sharedFiles(opts.shareEncryptionConfig);
  const token = parseToken(opts.token);
  const preexisting = new Set(names.filter((n) => fs.existsSync(path.join(opts.dataDir, n))));
  const stored = await opts.store.get(CLUSTER_BOOTSTRAP_KEY);
  if (stored) return { outcome: 'joined', written: adopt(opts, stored.value, token, preexisting) };

  // Nothing stored yet: this replica's secrets, made now where missing, become the cluster's.
  const joinSecretFile = path.join(opts.dataDir, JOIN_SECRET_FILE);
  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  if (token && !preexisting.has(JOIN_SECRET_FILE)) writeSecret(joinSecretFile, token.secret + '\n');
  await materialise(opts.dataDir, opts.shareEncryptionConfig);
  const files = Object.fromEntries(names.map((n) => [n, fs.readFileSync(path.join(opts.dataDir, n), 'utf8')]));
  const secret = files[JOIN_SECRET_FILE]!.trim();
  if (token && !sameSecret(token.secret, secret)) {
    throw new Error(`--token does not match ${joinSecretFile}: the cluster token is the join secret; give the node token of this data dir or remove --token`);
  }
  if (token?.caHash !== undefined && token.caHash !== caHash(files[CA_CERT_FILE]!)) {
    throw new Error(`--token names CA ${token.caHash}, but ${path.join(opts.dataDir, CA_CERT_FILE)} is another CA`);
  }
  try {
    await opts.store.create(CLUSTER_BOOTSTRAP_KEY, JSON.stringify(seal(files, secret)));
    opts.log?.info({ key: CLUSTER_BOOTSTRAP_KEY }, 'stored the cluster secrets for other servers to join with');
    return { outcome: 'bootstrapped', written: [] };
  } catch (err) {
    if (!(err instanceof StorageError && err.code === 'AlreadyExists')) throw err;
    // Another replica stored first: its secrets win over those made here a moment ago.
    const winner = await opts.store.get(CLUSTER_BOOTSTRAP_KEY);
    if (!winner) throw new Error(`${CLUSTER_BOOTSTRAP_KEY} was created and deleted while this server started; start it again`);
    if (!token) {
      throw new Error('another server stored its cluster secrets in this etcd while this one started: start this server with that server\'s --token (or its node token) to join it');
    }
    return { outcome: 'joined', written: adopt(opts, winner.value, token, preexisting) };
  }
}

/** The data-dir files replicas share, relative to the data dir. */
export function sharedFiles(shareEncryptionConfig: boolean): string[] {
  return [CA_CERT_FILE, CA_KEY_FILE, SERVICE_ACCOUNT_KEY_FILE, ADMIN_TOKEN_FILE, JOIN_SECRET_FILE, ...(shareEncryptionConfig ? [DEFAULT_ENCRYPTION_CONFIG_FILE] : [])];
}

/** `berth1::<ca hash>::<secret>` (a node token) or a bare secret. */
export function parseToken(token: string | undefined): { secret: string; caHash?: string } | undefined {
  const t = token?.trim();
  if (!t) return undefined;
  const m = /^berth1::([0-9a-f]{64})::(.+)$/.exec(t);
  return m ? { secret: m[2]!, caHash: m[1]! } : { secret: t };
}

/** Writes the stored secrets into the data dir; a file there before this start must already agree. */
function adopt(opts: ClusterBootstrapOptions, sealedText: string, token: { secret: string; caHash?: string } | undefined, preexisting: Set<string>): string[] {
  const secret = token?.secret ?? localJoinSecret(opts.dataDir);
  if (secret === undefined) {
    throw new Error(
      `the store already holds this cluster's secrets (${CLUSTER_BOOTSTRAP_KEY}); start this server with --token or --token-file ` +
        `naming the first server's node token (DATA_DIR/${NODE_TOKEN_FILE}) to join it`,
    );
  }
  const files = open(JSON.parse(sealedText) as SealedBundle, secret);
  if (!opts.shareEncryptionConfig && files[DEFAULT_ENCRYPTION_CONFIG_FILE] !== undefined) {
    // Cannot be compared with the operator's file: it may be a deliberate move to one. Say so loudly.
    opts.log?.warn({ key: CLUSTER_BOOTSTRAP_KEY }, 'the other servers encrypt with the shared generated key, this one with --encryption-provider-config: each must be able to read what the others write');
  }
  if (token?.caHash !== undefined && token.caHash !== caHash(files[CA_CERT_FILE] ?? '')) {
    throw new Error(`--token names CA ${token.caHash}, but the cluster in the store has CA ${caHash(files[CA_CERT_FILE] ?? '')}`);
  }
  const names = sharedFiles(opts.shareEncryptionConfig);
  for (const name of names) {
    const want = files[name];
    if (want === undefined) throw new Error(`the cluster secrets in the store lack ${name}; they were stored with another encryption setting (--encryption-provider-config)`);
    if (preexisting.has(name) && fs.readFileSync(path.join(opts.dataDir, name), 'utf8') !== want) {
      throw new Error(
        `${path.join(opts.dataDir, name)} differs from the cluster's copy in the store (${CLUSTER_BOOTSTRAP_KEY}): ` +
          'this data dir belongs to another cluster; remove the file to take the cluster\'s, or point the server at its own store',
      );
    }
  }
  const written: string[] = [];
  for (const name of names) {
    const file = path.join(opts.dataDir, name);
    const want = files[name]!;
    if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === want) continue;
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    if (name === CA_CERT_FILE) {
      fs.writeFileSync(file, want, { mode: 0o644 });
      // A serving certificate of another CA would fail every client that pins this one.
      for (const f of SERVING_FILES) fs.rmSync(path.join(opts.dataDir, f), { force: true });
    } else {
      writeSecret(file, want);
    }
    written.push(name);
  }
  opts.log?.info({ key: CLUSTER_BOOTSTRAP_KEY, written }, 'took the cluster secrets from the store');
  return written;
}

/** The join secret from a join-secret or node-token file in the data dir. */
function localJoinSecret(dataDir: string): string | undefined {
  for (const name of [JOIN_SECRET_FILE, NODE_TOKEN_FILE]) {
    try {
      const parsed = parseToken(fs.readFileSync(path.join(dataDir, name), 'utf8'));
      if (parsed) return parsed.secret;
    } catch {
      // absent: try the next
    }
  }
  return undefined;
}

/** Makes whichever shared files the data dir lacks, as a single server makes them on first start. */
async function materialise(dataDir: string, shareEncryptionConfig: boolean): Promise<void> {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  await ensureCa(dataDir);
  loadOrCreateSigningKey(dataDir);
  for (const name of [ADMIN_TOKEN_FILE, JOIN_SECRET_FILE]) {
    const file = path.join(dataDir, name);
    if (!fs.existsSync(file) || !fs.readFileSync(file, 'utf8').trim()) writeSecret(file, randomBytes(32).toString('base64url') + '\n');
  }
  if (shareEncryptionConfig) {
    const file = path.join(dataDir, DEFAULT_ENCRYPTION_CONFIG_FILE);
    if (!fs.existsSync(file)) writeSecret(file, generatedEncryptionConfiguration());
  }
}

function keyFrom(secret: string, salt: Buffer): Buffer {
  return scryptSync(secret, salt, 32, SCRYPT);
}

function seal(files: Record<string, string>, secret: string): SealedBundle {
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFrom(secret, salt), iv);
  cipher.setAAD(Buffer.from(CLUSTER_BOOTSTRAP_KEY));
  const data = Buffer.concat([cipher.update(JSON.stringify(files), 'utf8'), cipher.final()]);
  return { version: FORMAT_VERSION, salt: salt.toString('base64'), iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

function open(bundle: SealedBundle, secret: string): Record<string, string> {
  if (bundle.version !== FORMAT_VERSION) throw new Error(`${CLUSTER_BOOTSTRAP_KEY} has format version ${bundle.version}; this server reads version ${FORMAT_VERSION}`);
  const decipher = createDecipheriv('aes-256-gcm', keyFrom(secret, Buffer.from(bundle.salt, 'base64')), Buffer.from(bundle.iv, 'base64'));
  decipher.setAAD(Buffer.from(CLUSTER_BOOTSTRAP_KEY));
  decipher.setAuthTag(Buffer.from(bundle.tag, 'base64'));
  try {
    return JSON.parse(Buffer.concat([decipher.update(Buffer.from(bundle.data, 'base64')), decipher.final()]).toString('utf8')) as Record<string, string>;
  } catch {
    throw new Error(`the cluster token does not open the cluster secrets in the store (${CLUSTER_BOOTSTRAP_KEY}): give the node token of a server of this cluster (--token / --token-file)`);
  }
}

/** Constant-time equality of two secrets, for callers comparing tokens. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
