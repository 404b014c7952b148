/**
 * The review kinds the API server answers without storing anything: access reviews
 * (authorization.k8s.io/v1) and identity reviews (authentication.k8s.io/v1). The server registers
 * them with its own authorizer and token authenticators.
 */
import type { KindStrategy } from '../../registry/strategy.js';
import { accessReviewStrategies, type ReviewAuthorizer } from './access-reviews.js';
import { identityReviewStrategies, type TokenAuthenticateFunction } from './identity-reviews.js';

export type { ReviewAuthorizer, AccessAttributes, SubjectRules } from './access-reviews.js';
export type { TokenAuthenticateFunction, TokenAuthentication } from './identity-reviews.js';

export interface ReviewOptions {
  authorizer: ReviewAuthorizer;
  authenticateToken: TokenAuthenticateFunction;
  /** the audiences the API accepts tokens for (kube-apiserver's --api-audiences); default none */
  apiAudiences?: string[];
}

export function reviewStrategies(opts: ReviewOptions): KindStrategy[] {
  return [...accessReviewStrategies(opts.authorizer), ...identityReviewStrategies({ authenticate: opts.authenticateToken, apiAudiences: opts.apiAudiences })];
}
