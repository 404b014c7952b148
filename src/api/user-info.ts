/**
 * Owns the shape of an authenticated user as the API passes it on to admission, reviews and
 * certificate requests: Kubernetes' UserInfo (authentication.k8s.io/v1), with the same field names.
 */
export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}
