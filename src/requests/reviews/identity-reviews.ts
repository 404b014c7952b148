/**
 * authentication.k8s.io/v1: asking who a credential is.
 *  - TokenReview: who is this bearer token? Answered by the server's own token authenticators, with
 *    audiences checked as kube-apiserver does (webhook token authenticators, proxies).
 *  - SelfSubjectReview: who am I? (`kubectl auth whoami`)
 * Both are virtual kinds (nothing stored; src/requests/virtual-create.ts).
 */
import { errors, type FieldError } from '../../api/errors.js';
import type { KubeObject } from '../../api/types.js';
import type { UserInfo } from '../../api/user-info.js';
import { fieldErrors } from '../../api/validation.js';
import type { KindStrategy } from '../../registry/strategy.js';
import { SELF_SUBJECT_REVIEW_PROTOBUF, TOKEN_REVIEW_PROTOBUF } from './protobuf.js';
import type { ResourceInfo } from '../../api/identities.js';

export const AUTHENTICATION_GROUP = 'authentication.k8s.io';

/** Who a token is, and for which audiences it is valid. */
export interface TokenAuthentication {
  user: UserInfo;
  /**
   * The audiences the token was checked against. Absent for credentials that are not bound to an
   * audience (static and node tokens): those count as valid for the API's own audiences.
   */
  audiences?: string[];
}

/**
 * The server's bearer-token authenticators. `audiences` are what the caller wants the token to be
 * valid for (the API's audiences when the review names none); undefined when no authenticator
 * accepts the token.
 */
export type TokenAuthenticateFunction = (token: string, audiences: string[]) => Promise<TokenAuthentication | undefined>;

export interface TokenReview extends KubeObject {
  spec: { token?: string; audiences?: string[] };
  status?: { authenticated?: boolean; user?: UserInfo; audiences?: string[]; error?: string };
}

export interface SelfSubjectReview extends KubeObject {
  status?: { userInfo: UserInfo };
}

function info(kind: string): ResourceInfo {
  return { group: AUTHENTICATION_GROUP, version: 'v1', kind, listKind: `${kind}List`, plural: `${kind.toLowerCase()}s`, singular: kind.toLowerCase(), namespaced: false, shortNames: [], verbs: ['create'], subresources: [], categories: [] };
}

export const TOKEN_REVIEW_INFO = info('TokenReview');
export const SELF_SUBJECT_REVIEW_INFO = info('SelfSubjectReview');

export function validateTokenReview(obj: KubeObject): FieldError[] {
  const spec = (obj as TokenReview).spec as unknown;
  if (spec === undefined || spec === null) return [];
  if (typeof spec !== 'object' || Array.isArray(spec)) return [fieldErrors.typeInvalid('spec', spec, 'must be an object')];
  const { token, audiences } = spec as Record<string, unknown>;
  const errs: FieldError[] = [];
  if (token !== undefined && typeof token !== 'string') errs.push(fieldErrors.typeInvalid('spec.token', '<redacted>', 'must be a string'));
  if (audiences !== undefined && audiences !== null && !(Array.isArray(audiences) && audiences.every((a) => typeof a === 'string'))) {
    errs.push(fieldErrors.typeInvalid('spec.audiences', audiences, 'must be a list of strings'));
  }
  return errs;
}

/** The user as the API shows it: UserInfo's fields only (no server-side extras such as a node name). */
export function userInfoOf(user: UserInfo): UserInfo {
  const out: UserInfo = { username: user.username, groups: [...user.groups] };
  if (user.uid) out.uid = user.uid;
  if (user.extra && Object.keys(user.extra).length) out.extra = structuredClone(user.extra);
  return out;
}

/**
 * Answer a TokenReview (pkg/registry/authentication/tokenreview upstream): authenticated and the
 * user when an authenticator accepts the token for one of the wanted audiences (spec.audiences, or
 * the API's own), with the audiences it is valid for.
 */
export async function reviewToken(review: TokenReview, opts: { authenticate: TokenAuthenticateFunction; apiAudiences: string[] }): Promise<TokenReview> {
  const token = review.spec?.token;
  if (!token) throw errors.badRequest('token is required for TokenReview in authentication');
  const wanted = review.spec.audiences?.length ? review.spec.audiences : opts.apiAudiences;
  const out: TokenReview = { ...review, metadata: { ...review.metadata, creationTimestamp: null }, status: { authenticated: false, user: { username: '', groups: [] } as UserInfo } };
  let result: TokenAuthentication | undefined;
  try {
    result = await opts.authenticate(token, wanted);
  } catch (e) {
    out.status!.error = (e as Error).message;
    return out;
  }
  if (!result) return out;
  // A credential not bound to an audience is good for the API's audiences only.
  const valid = result.audiences ?? opts.apiAudiences;
  const audiences = wanted.length ? wanted.filter((a) => valid.includes(a)) : valid;
  if (wanted.length && audiences.length === 0) {
    out.status!.error = 'token audiences are invalid';
    return out;
  }
  out.status = { authenticated: true, user: userInfoOf(result.user) };
  if (audiences.length) out.status.audiences = audiences;
  return out;
}

/** TokenReview and SelfSubjectReview. */
export function identityReviewStrategies(opts: { authenticate: TokenAuthenticateFunction; apiAudiences?: string[] }): KindStrategy[] {
  const apiAudiences = opts.apiAudiences ?? [];
  return [
    {
      info: TOKEN_REVIEW_INFO,
      protobuf: TOKEN_REVIEW_PROTOBUF,
      hasStatus: false,
      validate: validateTokenReview,
      virtualCreate: (obj) => reviewToken(obj as TokenReview, { authenticate: opts.authenticate, apiAudiences }),
    },
    {
      info: SELF_SUBJECT_REVIEW_INFO,
      protobuf: SELF_SUBJECT_REVIEW_PROTOBUF,
      hasStatus: false,
      validate: () => [],
      virtualCreate: async (obj, ctx) => {
        if (!ctx.user) throw errors.badRequest('no user present on request');
        const review: SelfSubjectReview = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: { creationTimestamp: null }, status: { userInfo: userInfoOf(ctx.user) } };
        return review;
      },
    },
  ];
}
