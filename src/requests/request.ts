/**
 * The shape of one API request and its answer as the request-handling layer sees them: decoded
 * from HTTP by the server, or built directly by the in-process client. Free of fastify types.
 */
import type { UserInfo } from '../api/user-info.js';
import type { ResourceTarget } from './request-path.js';

/** The decoded pieces of one API request that the handlers need (kept free of fastify types). */
export interface ApiRequest {
  method: string;
  target: ResourceTarget;
  /** the version in the request's path (a CRD may serve several); defaults to the storage version */
  version?: string;
  query: Record<string, string | undefined>;
  contentType: string | undefined;
  body: Buffer | undefined;
  /** the authenticated user, passed on to admission */
  user?: UserInfo;
  /** the client's User-Agent, naming the field manager when the request does not */
  userAgent?: string;
}

export interface HandlerResult {
  code: number;
  body: unknown;
  /** sent as `Warning: 299 - "…"` headers (kubectl prints them) */
  warnings?: string[];
}

