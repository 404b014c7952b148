/**
 * The agent's ServiceAccount tokens for projected volumes, as the kubelet's token manager keeps them: each
 * token is requested from the API (TokenRequest, bound to its pod) and cached by everything the request
 * says; a cached token is used until it needs a refresh — more than 80% of its lifetime gone, or older
 * than 24 h (each less a jitter of up to 10 s so many pods do not ask at once). A failed refresh keeps the
 * cached token while it is still valid and waits a doubling delay before asking again; a pod's tokens are
 * forgotten with the pod.
 */
import type { Logger } from 'pino';
import type { Client, ResourceRef } from '../../src/client/client.js';
import type { KubeObject } from '../../src/api/types.js';
import type { Clock } from '../clock.js';

/** A token is refreshed at the latest once it is this old, however long it lives (the kubelet's maxTTL). */
export const MAX_TOKEN_AGE_MS = 24 * 60 * 60 * 1000;
/** Refreshes start up to this much earlier, at random (the kubelet's maxJitter). */
export const MAX_REFRESH_JITTER_MS = 10_000;
/** A token is refreshed once less than this share of its lifetime is left. */
const REFRESH_REMAINING_SHARE = 0.2;
/** How often projected tokens are checked (the kubelet's pod sync period, when it rewrites projected volumes). */
export const DEFAULT_TOKEN_CHECK_INTERVAL_MS = 60_000;
const DEFAULT_BACKOFF_INITIAL_MS = 1_000;
const DEFAULT_BACKOFF_MAX_MS = 5 * 60_000;

/** What a projected token asks for. */
export interface TokenSpec {
  namespace: string;
  serviceAccountName: string;
  /** empty: the API server's own audiences */
  audiences: string[];
  expirationSeconds: number;
  /** the pod the token is bound to */
  pod: { name: string; uid: string };
}

/** A token the API issued. */
export interface IssuedToken {
  token: string;
  /** ms since the epoch */
  expiresAt: number;
  /** the lifetime the server granted (it may differ from the one asked for) */
  expirationSeconds: number;
}

/** Asks the API for a token (POST serviceaccounts/NAME/token). */
export type TokenRequester = (spec: TokenSpec) => Promise<IssuedToken>;

const SERVICE_ACCOUNTS: ResourceRef = { plural: 'serviceaccounts' };

interface TokenRequestObject extends KubeObject {
  spec?: { expirationSeconds?: number };
  status?: { token?: string; expirationTimestamp?: string };
}

/** A requester over the agent's client: a TokenRequest bound to the pod by name and uid. */
export function clientTokenRequester(client: Client): TokenRequester {
  return async (spec) => {
    const request: TokenRequestObject = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: { name: spec.serviceAccountName, namespace: spec.namespace },
      spec: {
        audiences: spec.audiences,
        expirationSeconds: spec.expirationSeconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: spec.pod.name, uid: spec.pod.uid },
      } as TokenRequestObject['spec'],
    };
    const answer = await client.create<TokenRequestObject>(SERVICE_ACCOUNTS, request, { namespace: spec.namespace, name: spec.serviceAccountName, subresource: 'token' });
    const token = answer.status?.token;
    const expiresAt = Date.parse(answer.status?.expirationTimestamp ?? '');
    if (!token || !Number.isFinite(expiresAt)) throw new Error('the token request was answered without a token or its expiry');
    return { token, expiresAt, expirationSeconds: answer.spec?.expirationSeconds ?? spec.expirationSeconds };
  };
}

export interface ServiceAccountTokensOptions {
  request: TokenRequester;
  clock: Clock;
  log: Logger;
  /** in [0, 1): picks the jitter (tests fix it) */
  random?: () => number;
  /** first delay after a failed refresh, doubling up to backoffMaxMs */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
}

interface CachedToken extends IssuedToken {
  podUid: string;
  /** consecutive failed refreshes */
  failures: number;
  /** no refresh is tried before this (ms since the epoch) */
  retryAt: number;
}

export class ServiceAccountTokens {
  private readonly cache = new Map<string, CachedToken>();
  private readonly inFlight = new Map<string, Promise<string>>();
  private readonly random: () => number;

  constructor(private readonly opts: ServiceAccountTokensOptions) {
    this.random = opts.random ?? Math.random;
  }

  /** The token to project: the cached one unless it needs a refresh. Throws only when there is no valid token. */
  token(spec: TokenSpec): Promise<string> {
    const key = cacheKey(spec);
    const cached = this.cache.get(key);
    const now = this.opts.clock.now();
    if (cached && (!this.requiresRefresh(cached, now) || (now < cached.retryAt && now < cached.expiresAt))) return Promise.resolve(cached.token);
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.fetch(key, spec, cached).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  /** Whether the token is due for a refresh at `now` (the kubelet's rule; exported for tests through the manager). */
  requiresRefresh(t: IssuedToken, now: number): boolean {
    const jitter = Math.floor(this.random() * (MAX_REFRESH_JITTER_MS / 1000)) * 1000;
    const lifetimeMs = t.expirationSeconds * 1000;
    const issuedAt = t.expiresAt - lifetimeMs;
    if (now > issuedAt + MAX_TOKEN_AGE_MS - jitter) return true;
    return now > t.expiresAt - Math.floor(t.expirationSeconds * REFRESH_REMAINING_SHARE) * 1000 - jitter;
  }

  /** The pod is gone: its tokens are dropped. */
  forgetPod(uid: string): void {
    for (const [key, t] of this.cache) if (t.podUid === uid) this.cache.delete(key);
  }

  /** Number of cached tokens (tests). */
  size(): number {
    return this.cache.size;
  }

  private async fetch(key: string, spec: TokenSpec, cached: CachedToken | undefined): Promise<string> {
    try {
      const issued = await this.opts.request(spec);
      this.cache.set(key, { ...issued, podUid: spec.pod.uid, failures: 0, retryAt: 0 });
      return issued.token;
    } catch (err) {
      const message = (err as Error).message;
      const now = this.opts.clock.now();
      if (!cached) throw new Error(`failed to fetch token: ${message}`);
      if (now >= cached.expiresAt) {
        this.cache.delete(key);
        throw new Error(`token for ${spec.namespace}/${spec.serviceAccountName} expired and refresh failed: ${message}`);
      }
      cached.failures++;
      const initial = this.opts.backoffInitialMs ?? DEFAULT_BACKOFF_INITIAL_MS;
      const delay = Math.min(this.opts.backoffMaxMs ?? DEFAULT_BACKOFF_MAX_MS, initial * 2 ** (cached.failures - 1));
      cached.retryAt = now + delay;
      this.opts.log.warn({ namespace: spec.namespace, serviceAccount: spec.serviceAccountName, pod: spec.pod.name, err: message, retryInMs: delay }, 'cannot refresh a service account token; keeping the current one');
      return cached.token;
    }
  }
}

/** Everything the request says, as the kubelet keys its cache. */
function cacheKey(spec: TokenSpec): string {
  return JSON.stringify([spec.namespace, spec.serviceAccountName, [...spec.audiences].sort(), spec.expirationSeconds, spec.pod.name, spec.pod.uid]);
}
