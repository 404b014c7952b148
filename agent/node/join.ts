/**
 * Owns the joining protocol: turning a node token into node credentials, and keeping them.
 *
 * 1. `<dataDir>/credentials.json` (0600: {server, nodeName, token, ca}) for the same node name, joined
 *    through one of the servers given, is reused as is: replicas of one control plane share the CA and
 *    the node credentials, so adding a replica to an agent's server list keeps its credentials.
 * 2. Otherwise the token file (`berth1::<sha256 hex of the CA PEM>::<secret>`) is read; for https the CA
 *    is fetched from `<server>/cacerts` without verification — trust comes from its hash matching the token,
 *    as in k3s — and every later call pins that CA.
 * 3. `POST <server>/berth/v1/join` with `Authorization: Bearer <secret>` and `{"nodeName", "servingPublicKey",
 *    "addresses", "nodePassword"}` returns the node's own credential, a serving certificate for the agent's HTTPS endpoint
 *    (for a key generated here, which never leaves the node) and the proxy secret the control plane will
 *    present to that endpoint. All of it is stored in credentials.json before use; of the proxy secret only
 *    its sha256 is kept, since the agent only ever checks it.
 * Credentials from before the agent endpoint existed (no serving certificate) are replaced by a fresh join
 * when a token file is at hand. The secret and the credentials are never logged.
 *
 * The node password (`<dataDir>/node-password`, 0600, made before the first join and kept) is what lets
 * this node, and no other holder of the join secret, join under its name again while its Node exists.
 */
import { createHash, generateKeyPair, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { Logger } from 'pino';
import { parseServerList } from '../../src/client/endpoints.js';
import { HttpClient } from '../../src/client/http-client.js';

export interface NodeCredentials {
  server: string;
  nodeName: string;
  token: string;
  /** CA PEM; absent for plain-http servers */
  ca?: string;
  /** the agent endpoint's certificate (PEM, signed by the cluster CA) and its private key (PKCS#8 PEM) */
  servingCert?: string;
  servingKey?: string;
  /** sha256 (hex) of the secret the control plane presents to the agent endpoint */
  proxySecretSha256?: string;
}

/** The part of the credentials the agent's own HTTPS endpoint needs. */
export interface ServingCredentials {
  servingCert: string;
  servingKey: string;
  proxySecretSha256: string;
}

/** The serving credentials, if the join that produced these credentials provided them. */
export function servingCredentialsOf(c: NodeCredentials): ServingCredentials | undefined {
  if (!c.servingCert || !c.servingKey || !c.proxySecretSha256) return undefined;
  return { servingCert: c.servingCert, servingKey: c.servingKey, proxySecretSha256: c.proxySecretSha256 };
}

export interface JoinOptions {
  /** the control plane's URL, or its replicas' in order of preference: the join goes through the first that answers */
  server: string | readonly string[];
  nodeName: string;
  tokenFile: string | undefined;
  dataDir: string;
  log: Logger;
  /** per-request timeout */
  timeoutMs?: number;
  /** the node's IPs, certified (with the node name) in the agent endpoint's serving certificate */
  addresses?: string[];
  /** with several servers: the client's health check of the one in use (see ServerEndpoints) */
  checkIntervalMs?: number;
  checkTimeoutMs?: number;
}

function serverList(server: string | readonly string[]): string[] {
  return parseServerList(server);
}

export const TOKEN_PREFIX = 'berth1';

export interface NodeToken {
  caHash: string;
  secret: string;
}

/** Parses `berth1::<ca sha256 hex>::<secret>`. */
export function parseNodeToken(text: string): NodeToken {
  const parts = text.trim().split('::');
  if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX || !/^[0-9a-f]{64}$/i.test(parts[1] ?? '') || !parts[2]) {
    throw new Error(`node token is malformed: expected ${TOKEN_PREFIX}::<sha256 of the CA>::<secret>`);
  }
  return { caHash: parts[1]!.toLowerCase(), secret: parts[2] };
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function credentialsPath(dataDir: string): string {
  return path.join(dataDir, 'credentials.json');
}

export function nodePasswordPath(dataDir: string): string {
  return path.join(dataDir, 'node-password');
}

/** The node's password: read, or made (32 random bytes) and written 0600 before its first use. */
export async function readOrCreateNodePassword(dataDir: string): Promise<string> {
  const file = nodePasswordPath(dataDir);
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (text) return text;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const password = randomBytes(32).toString('base64url');
  await writeSecretFile(file, password + '\n');
  return password;
}

async function readCredentials(file: string): Promise<NodeCredentials | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const c = JSON.parse(text) as Partial<NodeCredentials>;
    if (typeof c.server === 'string' && typeof c.nodeName === 'string' && typeof c.token === 'string') return c as NodeCredentials;
  } catch {
    // unreadable: join again and overwrite it
  }
  return undefined;
}

/** Written to a temporary file (0600 from the start) and renamed, so a crash never leaves half a secret. */
async function writeCredentials(file: string, creds: NodeCredentials): Promise<void> {
  await writeSecretFile(file, JSON.stringify(creds, null, 2) + '\n');
}

async function writeSecretFile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, text, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

interface PlainResponse {
  status: number;
  body: string;
}

function request(url: URL, opts: { method: string; headers?: Record<string, string>; body?: string; ca?: string; insecure?: boolean; timeoutMs: number }): Promise<PlainResponse> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
    if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
    const base = { method: opts.method, hostname: url.hostname, port: url.port, path: url.pathname + url.search, headers };
    const onResponse = (res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    };
    // No keep-alive agent: these calls happen once, and a private agent keeps the insecure setting contained.
    const req = secure
      ? https.request({ ...base, agent: false, ca: opts.ca, rejectUnauthorized: !opts.insecure }, onResponse)
      : http.request({ ...base, agent: false }, onResponse);
    req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`${opts.method} ${url.pathname} timed out`)));
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

function describeFailure(what: string, res: PlainResponse): Error {
  let message = res.body.slice(0, 200);
  try {
    const st = JSON.parse(res.body) as { message?: string };
    if (st.message) message = st.message;
  } catch {
    // not JSON
  }
  return new Error(`${what} failed: HTTP ${res.status}: ${message}`);
}

/**
 * Performs the join exchange (steps 2–3) through the first server that can be reached and returns
 * fresh credentials (not yet stored); with every server unreachable, the last connection error.
 */
export async function requestCredentials(opts: JoinOptions): Promise<NodeCredentials> {
  if (!opts.tokenFile) throw new Error('agent has no stored credentials and no token file to join with (--token-file)');
  const token = parseNodeToken(await readFile(opts.tokenFile, 'utf8'));
  let lastError: unknown;
  for (const server of serverList(opts.server)) {
    try {
      return await requestCredentialsFrom(server, token, opts);
    } catch (e) {
      if (!isUnreachable(e)) throw e;
      lastError = e;
    }
  }
  throw lastError;
}

async function requestCredentialsFrom(serverUrl: string, token: NodeToken, opts: JoinOptions): Promise<NodeCredentials> {
  const server = new URL(serverUrl);
  const timeoutMs = opts.timeoutMs ?? 15_000;
  let ca: string | undefined;
  if (server.protocol === 'https:') {
    // The one unverified call: what it returns is trusted only if its hash matches the token.
    const res = await request(new URL('/cacerts', server), { method: 'GET', insecure: true, timeoutMs });
    if (res.status !== 200) throw describeFailure('fetching the cluster CA', res);
    if (sha256Hex(res.body) !== token.caHash) {
      throw new Error(`CA hash mismatch: the CA served by ${server.origin} does not match the node token`);
    }
    ca = res.body;
  }
  const serving = await newServingKey();
  const nodePassword = await readOrCreateNodePassword(opts.dataDir);
  const res = await request(new URL('/berth/v1/join', server), {
    method: 'POST',
    headers: { authorization: `Bearer ${token.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ nodeName: opts.nodeName, servingPublicKey: serving.publicKey, addresses: opts.addresses ?? [], nodePassword }),
    ca,
    timeoutMs,
  });
  if (res.status < 200 || res.status >= 300) throw describeFailure('joining the cluster', res);
  const issued = JSON.parse(res.body) as { token?: unknown; servingCert?: unknown; proxySecret?: unknown };
  if (typeof issued.token !== 'string' || !issued.token) throw new Error('joining the cluster failed: the server returned no token');
  const creds: NodeCredentials = { server: serverUrl, nodeName: opts.nodeName, token: issued.token };
  if (ca !== undefined) creds.ca = ca;
  // A server that predates the agent endpoint answers with the token only; the agent then serves nothing.
  if (typeof issued.servingCert === 'string' && typeof issued.proxySecret === 'string' && issued.proxySecret) {
    creds.servingCert = issued.servingCert;
    creds.servingKey = serving.privateKey;
    creds.proxySecretSha256 = sha256Hex(issued.proxySecret);
  }
  return creds;
}

/** RSA, because the control plane's CA library certifies RSA keys only. */
function newServingKey(): Promise<{ publicKey: string; privateKey: string }> {
  return new Promise((resolve, reject) =>
    generateKeyPair('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } }, (err, publicKey, privateKey) =>
      err ? reject(err) : resolve({ publicKey, privateKey }),
    ),
  );
}

export interface Joined {
  client: HttpClient;
  credentials: NodeCredentials;
  /** true when stored credentials were reused (a caller may re-join if the server rejects them) */
  reused: boolean;
}

/** Stored credentials for this server and node, else a fresh join; the result is an authenticated client. */
export async function join(opts: JoinOptions, { forceRejoin = false } = {}): Promise<Joined> {
  const file = credentialsPath(opts.dataDir);
  const log = opts.log.child({ component: 'join' });
  const servers = serverList(opts.server);
  if (!forceRejoin) {
    const stored = await readCredentials(file);
    const upToDate = stored && (servingCredentialsOf(stored) !== undefined || !opts.tokenFile);
    const storedServer = stored && parseServerList(stored.server)[0];
    if (stored && upToDate && storedServer !== undefined && servers.includes(storedServer) && stored.nodeName === opts.nodeName) {
      log.info({ server: stored.server, servers }, 'using stored node credentials');
      return { client: clientFor(stored, servers, opts, log), credentials: stored, reused: true };
    }
    if (stored && !upToDate) log.info('stored node credentials have no serving certificate for the agent endpoint; joining again');
  } else {
    await rm(file, { force: true });
  }
  const credentials = await retryWhileUnreachable(() => requestCredentials(opts), log);
  await writeCredentials(file, credentials);
  log.info({ server: credentials.server, servers }, 'joined the cluster; node credentials stored');
  return { client: clientFor(credentials, servers, opts, log), credentials, reused: false };
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * An agent often starts before its control plane is up (boot order, a server being upgraded):
 * keep trying a join that fails for want of a connection, backing off from 1 s to 30 s. Any answer
 * from the server (a wrong token, a CA mismatch) fails at once.
 */
async function retryWhileUnreachable<T>(fn: () => Promise<T>, log: { warn(o: unknown, m?: string): void }): Promise<T> {
  for (let delay = 1000; ; delay = Math.min(delay * 2, 30_000)) {
    try {
      return await fn();
    } catch (e) {
      if (!isUnreachable(e)) throw e;
      log.warn({ err: (e as Error).message, retryInMs: delay }, 'control plane unreachable; retrying the join');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

function isUnreachable(e: unknown): boolean {
  const code = (e as { code?: string; cause?: { code?: string } }).code ?? (e as { cause?: { code?: string } }).cause?.code;
  return code !== undefined && UNREACHABLE.has(code);
}

/** A client for every server given, pinned to the stored CA, with the node's own credential. */
function clientFor(c: NodeCredentials, servers: string[], opts: JoinOptions, log: Logger): HttpClient {
  const o: ConstructorParameters<typeof HttpClient>[0] = { server: servers, token: c.token, log };
  if (c.ca) o.ca = c.ca;
  if (opts.timeoutMs !== undefined) o.timeoutMs = opts.timeoutMs;
  if (opts.checkIntervalMs !== undefined) o.checkIntervalMs = opts.checkIntervalMs;
  if (opts.checkTimeoutMs !== undefined) o.checkTimeoutMs = opts.checkTimeoutMs;
  return new HttpClient(o);
}
