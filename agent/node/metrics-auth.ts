/**
 * Who may read the agent's /metrics: the kubelet's delegated authentication and authorization. A
 * bearer token is checked with a TokenReview, then the user it names with a SubjectAccessReview for
 * `get nodes/metrics` on this node, both through the agent's API client. Answers are cached by a
 * hash of the token, as the kubelet caches them (allowed for 2 minutes, denied for 30 seconds), so a
 * Prometheus scraping every few seconds costs the API server two requests every two minutes.
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../src/api/types.js';
import type { Client, ResourceRef } from '../../src/client/client.js';

export type MetricsAccess = 'allowed' | 'unauthenticated' | 'forbidden';

export interface MetricsAuthOptions {
  /** the agent's current client (it changes after a re-join) */
  client: () => Client;
  nodeName: string;
  /** ms since epoch */
  now?: () => number;
  allowedTtlMs?: number;
  deniedTtlMs?: number;
}

const TOKEN_REVIEWS: ResourceRef = { group: 'authentication.k8s.io', version: 'v1', plural: 'tokenreviews', namespaced: false } as ResourceRef;
const SUBJECT_ACCESS_REVIEWS: ResourceRef = { group: 'authorization.k8s.io', version: 'v1', plural: 'subjectaccessreviews', namespaced: false } as ResourceRef;
/** Distinct tokens remembered at most; past it the cache starts over (a flood of bad tokens must not grow it). */
const MAX_CACHED = 1000;

interface TokenReview extends KubeObject {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
}
interface SubjectAccessReview extends KubeObject {
  status?: { allowed?: boolean };
}

export class MetricsAuth {
  private readonly cache = new Map<string, { access: MetricsAccess; until: number }>();
  private readonly now: () => number;
  private readonly allowedTtlMs: number;
  private readonly deniedTtlMs: number;

  constructor(private readonly opts: MetricsAuthOptions) {
    this.now = opts.now ?? Date.now;
    this.allowedTtlMs = opts.allowedTtlMs ?? 120_000;
    this.deniedTtlMs = opts.deniedTtlMs ?? 30_000;
  }

  async check(token: string): Promise<MetricsAccess> {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.cache.get(key);
    if (cached && cached.until > this.now()) return cached.access;
    const access = await this.review(token);
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(key, { access, until: this.now() + (access === 'allowed' ? this.allowedTtlMs : this.deniedTtlMs) });
    return access;
  }

  private async review(token: string): Promise<MetricsAccess> {
    const client = this.opts.client();
    const tr = await client.create<TokenReview>(TOKEN_REVIEWS, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', metadata: {}, spec: { token } } as TokenReview);
    const user = tr.status?.authenticated ? tr.status.user : undefined;
    if (!user?.username) return 'unauthenticated';
    const sar = await client.create<SubjectAccessReview>(SUBJECT_ACCESS_REVIEWS, {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      metadata: {},
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, resourceAttributes: { verb: 'get', group: '', resource: 'nodes', subresource: 'metrics', name: this.opts.nodeName } },
    } as SubjectAccessReview);
    return sar.status?.allowed ? 'allowed' : 'forbidden';
  }
}
