/**
 * Owns service-account tokens: the signing key (`<dataDir>/pki/sa.key`, RSA, 0600, made at first
 * start), issuing JWTs with Kubernetes' claims (for TokenRequest and legacy token Secrets),
 * authenticating them on every request, and the OpenID discovery documents (issuer metadata and the
 * JWKS) outside systems verify them with.
 *
 * Authentication checks the signature, issuer, audience and time claims (with go-jose's leeway, as
 * kube-apiserver), then that the ServiceAccount still exists with the uid the token names, and the
 * Pod or Secret it is bound to as well. Signature results are cached by token digest until the
 * token's expiry; the existence checks read an index kept from watches (BoundObjectIndex), so a
 * deleted or replaced object invalidates its tokens with the next request.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { exportJWK, jwtVerify, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { KubeObject } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import type { Identity } from './tokens.js';
import { writeSecret } from './pki.js';

/** kube-apiserver's `--service-account-issuer` default in Berth: the in-cluster name of the API. */
export function defaultServiceAccountIssuer(clusterDomain: string): string {
  return `https://kubernetes.default.svc.${clusterDomain}`;
}

/** Kubernetes' smallest TokenRequest expirationSeconds (10 minutes). */
export const DEFAULT_MIN_TOKEN_EXPIRATION_SECONDS = 600;
/** go-jose's DefaultLeeway, which kube-apiserver applies to exp, nbf and iat. */
export const DEFAULT_TOKEN_LEEWAY_SECONDS = 60;
/** Where the signing key lives, under the data dir. */
export const SERVICE_ACCOUNT_KEY_FILE = path.join('pki', 'sa.key');
/** The JWKS path kube-apiserver serves; the discovery document points at it. */
export const JWKS_PATH = '/openid/v1/jwks';
export const OPENID_CONFIGURATION_PATH = '/.well-known/openid-configuration';

/** Extra keys of a service account's UserInfo, as upstream names them. */
export const EXTRA_POD_NAME = 'authentication.kubernetes.io/pod-name';
export const EXTRA_POD_UID = 'authentication.kubernetes.io/pod-uid';
export const EXTRA_CREDENTIAL_ID = 'authentication.kubernetes.io/credential-id';

const SUBJECT_PREFIX = 'system:serviceaccount:';
const SIGNING_ALGORITHM = 'RS256';
/** Signature results kept at most (each a few hundred bytes); the oldest go first. */
const DEFAULT_CACHE_ENTRIES = 4096;

export interface ObjectRef {
  name: string;
  uid: string;
}

/** The private `kubernetes.io` claim. */
export interface KubernetesClaim {
  namespace: string;
  serviceaccount: ObjectRef;
  pod?: ObjectRef;
  secret?: ObjectRef;
}

export interface ServiceAccountClaims extends JWTPayload {
  'kubernetes.io': KubernetesClaim;
}

/** What a token is issued for. */
export interface TokenSubject {
  namespace: string;
  serviceAccount: ObjectRef;
  audiences: string[];
  /** lifetime; undefined issues a token without `exp` (legacy Secret tokens) */
  expirationSeconds?: number;
  pod?: ObjectRef;
  secret?: ObjectRef;
}

export interface IssuedToken {
  token: string;
  /** ms since the epoch; undefined for tokens without expiry */
  expiresAt?: number;
  claims: ServiceAccountClaims;
}

/** The kinds a token names, and what the index knows of each: its uid and when it began to be deleted. */
export type BoundKind = 'serviceaccounts' | 'pods' | 'secrets';
export interface IndexedObject {
  uid: string;
  deletionTimestamp?: string;
}

/** Answers "does this object exist now, with which uid"; BoundObjectIndex in production, a map in tests. */
export interface BoundObjectLookup {
  lookup(kind: BoundKind, namespace: string, name: string): IndexedObject | undefined;
  /** false until the index holds the store's objects: tokens are refused until then */
  ready(): boolean;
}

export interface ServiceAccountTokenOptions {
  dataDir: string;
  /** `iss` of every token, and the issuer the discovery document names */
  issuer: string;
  /** the audiences the API accepts (`--api-audiences`); default [issuer] */
  apiAudiences?: string[];
  /** smallest TokenRequest expirationSeconds (default 600) */
  minExpirationSeconds?: number;
  /** largest expirationSeconds; longer requests are cut to it (default none) */
  maxExpirationSeconds?: number;
  /** allowed clock skew on exp/nbf/iat (default 60 s) */
  leewaySeconds?: number;
  /** ms since the epoch; injected in tests */
  now?: () => number;
  objects: BoundObjectLookup;
  cacheEntries?: number;
}

interface CachedToken {
  claims: ServiceAccountClaims;
}

/** The signing key: created on first start, read afterwards. */
export function loadOrCreateSigningKey(dataDir: string): KeyObject {
  const file = path.join(dataDir, SERVICE_ACCOUNT_KEY_FILE);
  if (fs.existsSync(file)) return createPrivateKey(fs.readFileSync(file, 'utf8'));
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeSecret(file, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  return privateKey;
}

/** The key id as kube-apiserver derives it: base64url (unpadded) of sha256 over the public key's DER (PKIX). */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');
}

export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: readonly string[];
  readonly minExpirationSeconds: number;
  readonly maxExpirationSeconds: number | undefined;
  readonly keyId: string;
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private readonly leewaySeconds: number;
  private readonly now: () => number;
  private readonly cache = new Map<string, CachedToken>();
  private readonly cacheEntries: number;
  private jwk: JWK | undefined;

  constructor(private readonly opts: ServiceAccountTokenOptions) {
    this.issuer = opts.issuer;
    this.apiAudiences = opts.apiAudiences?.length ? [...opts.apiAudiences] : [opts.issuer];
    this.minExpirationSeconds = opts.minExpirationSeconds ?? DEFAULT_MIN_TOKEN_EXPIRATION_SECONDS;
    this.maxExpirationSeconds = opts.maxExpirationSeconds;
    this.leewaySeconds = opts.leewaySeconds ?? DEFAULT_TOKEN_LEEWAY_SECONDS;
    this.now = opts.now ?? Date.now;
    this.cacheEntries = opts.cacheEntries ?? DEFAULT_CACHE_ENTRIES;
    this.privateKey = loadOrCreateSigningKey(opts.dataDir);
    this.publicKey = createPublicKey(this.privateKey);
    this.keyId = keyIdOf(this.publicKey);
  }

  /** Signs a token for the subject; the caller has checked that the objects exist. */
  async issue(subject: TokenSubject): Promise<IssuedToken> {
    const iat = Math.floor(this.now() / 1000);
    const kubernetes: KubernetesClaim = { namespace: subject.namespace, serviceaccount: { ...subject.serviceAccount } };
    if (subject.pod) kubernetes.pod = { ...subject.pod };
    if (subject.secret) kubernetes.secret = { ...subject.secret };
    const claims: ServiceAccountClaims = {
      aud: [...subject.audiences],
      iat,
      iss: this.issuer,
      jti: randomUUID(),
      'kubernetes.io': kubernetes,
      nbf: iat,
      sub: `${SUBJECT_PREFIX}${subject.namespace}:${subject.serviceAccount.name}`,
    };
    if (subject.expirationSeconds !== undefined) claims.exp = iat + subject.expirationSeconds;
    const token = await new SignJWT(claims).setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: this.keyId }).sign(this.privateKey);
    return { token, expiresAt: claims.exp === undefined ? undefined : claims.exp * 1000, claims };
  }

  /**
   * The identity of a service-account bearer token, or undefined when the header holds no JWT or
   * one that is not (or no longer) valid here — other authenticators may still know the token.
   */
  async authenticate(authorization: string | undefined): Promise<Identity | undefined> {
    const token = bearerJwt(authorization);
    if (!token) return undefined;
    const claims = await this.verifiedClaims(token);
    if (!claims) return undefined;
    return this.identityOf(claims);
  }

  /** Claims of a token whose signature, issuer and audience hold and that is valid now; cached by digest. */
  private async verifiedClaims(token: string): Promise<ServiceAccountClaims | undefined> {
    const digest = createHash('sha256').update(token).digest('base64url');
    let cached = this.cache.get(digest);
    if (!cached) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, this.publicKey, {
          algorithms: [SIGNING_ALGORITHM],
          issuer: this.issuer,
          audience: [...this.apiAudiences],
          currentDate: new Date(this.now()),
          clockTolerance: this.leewaySeconds,
        }));
      } catch {
        return undefined;
      }
      if (!isServiceAccountClaims(payload)) return undefined;
      cached = { claims: payload };
      if (this.cache.size >= this.cacheEntries) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(digest, cached);
    }
    if (!this.timely(cached.claims)) {
      this.cache.delete(digest);
      return undefined;
    }
    return cached.claims;
  }

  private timely(claims: JWTPayload): boolean {
    const now = this.now() / 1000;
    if (claims.exp !== undefined && now > claims.exp + this.leewaySeconds) return false;
    if (claims.nbf !== undefined && now < claims.nbf - this.leewaySeconds) return false;
    return true;
  }

  /** The UserInfo of valid claims whose objects still exist with the uids they name. */
  private identityOf(claims: ServiceAccountClaims): Identity | undefined {
    const k = claims['kubernetes.io'];
    const { objects } = this.opts;
    if (!objects.ready()) return undefined;
    const deletedBefore = new Date(this.now() - this.leewaySeconds * 1000).toISOString();
    const current = (kind: BoundKind, ref: ObjectRef) => {
      const found = objects.lookup(kind, k.namespace, ref.name);
      if (!found || (ref.uid && found.uid !== ref.uid)) return false;
      // As upstream: an object deleted (gracefully) longer ago than the leeway no longer vouches for its tokens.
      return !(found.deletionTimestamp && new Date(found.deletionTimestamp).toISOString() < deletedBefore);
    };
    const sa = objects.lookup('serviceaccounts', k.namespace, k.serviceaccount.name);
    if (!sa || !current('serviceaccounts', k.serviceaccount)) return undefined;
    if (k.pod && !current('pods', k.pod)) return undefined;
    if (k.secret && !current('secrets', k.secret)) return undefined;
    const extra: Record<string, string[]> = {};
    if (k.pod) {
      extra[EXTRA_POD_NAME] = [k.pod.name];
      extra[EXTRA_POD_UID] = [k.pod.uid];
    }
    if (typeof claims.jti === 'string' && claims.jti) extra[EXTRA_CREDENTIAL_ID] = [`JTI=${claims.jti}`];
    return {
      username: `${SUBJECT_PREFIX}${k.namespace}:${k.serviceaccount.name}`,
      uid: sa.uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${k.namespace}`, 'system:authenticated'],
      ...(Object.keys(extra).length ? { extra } : {}),
    };
  }

  /** GET /.well-known/openid-configuration, as kube-apiserver serves it. */
  openIdConfiguration(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: jwksUriOf(this.issuer),
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [SIGNING_ALGORITHM],
    };
  }

  /** GET /openid/v1/jwks: the public signing key. */
  async jwks(): Promise<{ keys: JWK[] }> {
    this.jwk ??= { ...(await exportJWK(this.publicKey)), use: 'sig', kid: this.keyId, alg: SIGNING_ALGORITHM };
    return { keys: [this.jwk] };
  }
}

/** The issuer's origin with the JWKS path, as kube-apiserver derives jwks_uri when --service-account-jwks-uri is unset. */
export function jwksUriOf(issuer: string): string {
  try {
    const u = new URL(issuer);
    return `${u.protocol}//${u.host}${JWKS_PATH}`;
  } catch {
    return JWKS_PATH;
  }
}

/** A bearer token shaped like a compact JWS (three base64url parts); other tokens are not ours to judge. */
function bearerJwt(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)\s*$/i.exec(header);
  return m?.[1];
}

function isRef(v: unknown): v is ObjectRef {
  return !!v && typeof v === 'object' && typeof (v as ObjectRef).name === 'string' && typeof (v as ObjectRef).uid === 'string';
}

function isServiceAccountClaims(p: JWTPayload): p is ServiceAccountClaims {
  const k = (p as Partial<ServiceAccountClaims>)['kubernetes.io'];
  if (!k || typeof k !== 'object' || typeof k.namespace !== 'string' || !isRef(k.serviceaccount)) return false;
  if (k.pod !== undefined && !isRef(k.pod)) return false;
  if (k.secret !== undefined && !isRef(k.secret)) return false;
  return p.sub === `${SUBJECT_PREFIX}${k.namespace}:${k.serviceaccount.name}`;
}

// ---------- the index of bound objects ----------

/** how long to wait before trying again to rebuild the index when the store refused */
const REBUILD_RETRY_MS = 1000;
const INDEXED_KINDS: BoundKind[] = ['serviceaccounts', 'pods', 'secrets'];

/**
 * ServiceAccounts, Pods and Secrets by namespace/name → uid (and deletion time), kept from watches
 * on the registry, so authenticating a token never waits for the store. As NodeGraph, it is as
 * current as the store for every request: watch events are delivered in a microtask right after the
 * commit, before the next request's I/O callback runs. A lost watch drops the index (tokens are
 * refused) until it is rebuilt.
 */
export class BoundObjectIndex implements BoundObjectLookup {
  private readonly objects = new Map<BoundKind, Map<string, IndexedObject>>(INDEXED_KINDS.map((k) => [k, new Map()]));
  private watches: Array<{ close(): void }> = [];
  private synced = false;
  private wanted = false;
  private generation = 0;

  constructor(private readonly opts: { registry: Registry }) {}

  ready(): boolean {
    return this.synced;
  }

  lookup(kind: BoundKind, namespace: string, name: string): IndexedObject | undefined {
    return this.objects.get(kind)?.get(`${namespace}/${name}`);
  }

  /** Resolves once the objects that exist now are indexed. */
  async start(): Promise<void> {
    if (this.synced) return;
    this.wanted = true;
    const generation = ++this.generation;
    const onError = () => this.rebuild(generation);
    const opened = await Promise.all(
      INDEXED_KINDS.map((kind) => {
        const info = this.opts.registry.lookup('', kind)?.info;
        const index = this.objects.get(kind)!;
        return info
          ? this.opts.registry.watch(info, undefined, {
              onEvent: (ev) => {
                const obj = ev.object as KubeObject;
                const key = `${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`;
                if (ev.type === 'DELETED') index.delete(key);
                else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
                  const entry: IndexedObject = { uid: obj.metadata.uid ?? '' };
                  if (obj.metadata.deletionTimestamp) entry.deletionTimestamp = obj.metadata.deletionTimestamp;
                  index.set(key, entry);
                }
              },
              onError,
            })
          : undefined;
      }),
    );
    const watches = opened.filter((w): w is NonNullable<typeof w> => !!w);
    if (generation !== this.generation) {
      for (const w of watches) w.close();
      return;
    }
    this.watches = watches;
    this.synced = true;
  }

  stop(): void {
    this.wanted = false;
    this.closeWatches();
  }

  private closeWatches(): void {
    this.generation++;
    this.synced = false;
    for (const w of this.watches) w.close();
    this.watches = [];
    for (const m of this.objects.values()) m.clear();
  }

  private rebuild(generation: number): void {
    if (generation !== this.generation) return;
    this.closeWatches();
    const retry = () => {
      if (!this.wanted) return;
      this.start().catch(() => setTimeout(retry, REBUILD_RETRY_MS).unref());
    };
    retry();
  }
}
