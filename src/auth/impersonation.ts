/**
 * Owns user impersonation (kube-apiserver's impersonation filter): a caller acting as another
 * user through the Impersonate-User, Impersonate-Group, Impersonate-Uid and Impersonate-Extra-<key>
 * headers (`kubectl --as U --as-group G --as-uid X`). Every impersonated attribute is authorized for
 * the caller with verb `impersonate`: users, groups and (for system:serviceaccount:NS:NAME names)
 * serviceaccounts in the core group, uids and userextras/<key> in authentication.k8s.io. Once all
 * are allowed, the request runs as the impersonated user, who is in system:authenticated (added as
 * upstream does) and whose service-account groups are implied when no group is named.
 */
import { ApiError, errors } from '../api/errors.js';
import type { Decision, RequestAttributes } from './authz.js';
import type { Identity } from './tokens.js';

export const IMPERSONATE_USER_HEADER = 'impersonate-user';
export const IMPERSONATE_GROUP_HEADER = 'impersonate-group';
export const IMPERSONATE_UID_HEADER = 'impersonate-uid';
export const IMPERSONATE_EXTRA_PREFIX = 'impersonate-extra-';

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';
const AUTHENTICATED_GROUP = 'system:authenticated';
const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
const ANONYMOUS_USER = 'system:anonymous';

/** What the impersonation check asks of the authorizer (src/auth/authz.ts's Authorizer fits). */
export interface ImpersonationAuthorizer {
  authorize(who: Identity, attrs: RequestAttributes): Decision;
}

/** Request headers with every value of a repeated header kept apart (node's `headersDistinct`). */
export type DistinctHeaders = Record<string, string[] | undefined>;

/**
 * The identity a request runs as: `requestor` itself when it impersonates no one, else the
 * impersonated user once every attribute is allowed. Throws 403 with upstream's message for the
 * first one refused, and 500 (as upstream) for groups, uid or extras without a user.
 */
export function impersonate(requestor: Identity, headers: DistinctHeaders, authorizer: ImpersonationAuthorizer): Identity {
  const values = (name: string) => (headers[name] ?? []).filter((v) => v.length > 0);
  const user = values(IMPERSONATE_USER_HEADER)[0];
  const groups = values(IMPERSONATE_GROUP_HEADER);
  const uid = values(IMPERSONATE_UID_HEADER)[0];
  const extras: Array<[string, string]> = [];
  for (const [name, vs] of Object.entries(headers)) {
    if (!name.startsWith(IMPERSONATE_EXTRA_PREFIX) || !vs) continue;
    const key = unescapeExtraKey(name.slice(IMPERSONATE_EXTRA_PREFIX.length).toLowerCase());
    for (const v of vs) extras.push([key, v]);
  }
  if (user === undefined) {
    if (groups.length || uid !== undefined || extras.length) {
      const asked = [...groups.map((g) => `group "${g}"`), ...(uid !== undefined ? [`uid "${uid}"`] : []), ...extras.map(([k, v]) => `extra "${k}"="${v}"`)];
      throw errors.internal(`requested [${asked.join(', ')}] without impersonating a user`);
    }
    return requestor;
  }

  const requests: RequestAttributes[] = [];
  const serviceAccount = splitServiceAccount(user);
  if (serviceAccount) {
    requests.push({ verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: serviceAccount.namespace, name: serviceAccount.name });
  } else {
    requests.push({ verb: 'impersonate', group: '', resource: 'users', name: user });
  }
  for (const g of groups) requests.push({ verb: 'impersonate', group: '', resource: 'groups', name: g });
  for (const [key, v] of extras) requests.push({ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'userextras', subresource: key, name: v });
  if (uid !== undefined) requests.push({ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: uid });

  for (const attrs of requests) {
    const decision = authorizer.authorize(requestor, attrs);
    if (!decision.allowed) throw forbidden(requestor.username, attrs, decision.reason);
  }

  const impersonatedGroups = [...groups];
  // A service account's groups follow from its name; they are implied unless groups are named.
  if (serviceAccount && groups.length === 0) impersonatedGroups.push('system:serviceaccounts', `system:serviceaccounts:${serviceAccount.namespace}`);
  if (user !== ANONYMOUS_USER) {
    if (!impersonatedGroups.includes(AUTHENTICATED_GROUP)) impersonatedGroups.push(AUTHENTICATED_GROUP);
  } else if (!impersonatedGroups.includes(UNAUTHENTICATED_GROUP)) {
    impersonatedGroups.push(UNAUTHENTICATED_GROUP);
  }
  const out: Identity = { username: user, groups: impersonatedGroups };
  if (uid !== undefined) out.uid = uid;
  if (extras.length) {
    const extra: Record<string, string[]> = {};
    for (const [k, v] of extras) (extra[k] ??= []).push(v);
    out.extra = extra;
  }
  const nodeName = nodeNameOf(out);
  if (nodeName !== undefined) out.nodeName = nodeName;
  return out;
}

/**
 * A request's headers with repeated ones kept apart (a group per Impersonate-Group header): node's
 * `headersDistinct`, or rebuilt from the raw header list where a request object lacks it.
 */
export function distinctHeaders(req: { headersDistinct?: DistinctHeaders; rawHeaders?: string[]; headers: Record<string, string | string[] | undefined> }): DistinctHeaders {
  if (req.headersDistinct) return req.headersDistinct;
  const out: Record<string, string[]> = {};
  if (req.rawHeaders?.length) {
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) (out[req.rawHeaders[i]!.toLowerCase()] ??= []).push(req.rawHeaders[i + 1]!);
    return out;
  }
  for (const [name, v] of Object.entries(req.headers)) if (v !== undefined) out[name] = Array.isArray(v) ? v : [v];
  return out;
}

/** Whether a request carries any impersonation header (cheap test for the common case). */
export function hasImpersonationHeaders(headers: Record<string, unknown>): boolean {
  for (const name of Object.keys(headers)) if (name.startsWith('impersonate-')) return true;
  return false;
}

/**
 * The node a user is, to the Node authorizer: `system:node:<name>` in group system:nodes, as
 * upstream's NodeIdentifier reads a user whatever credential it came from.
 */
export function nodeNameOf(user: { username: string; groups: string[] }): string | undefined {
  const prefix = 'system:node:';
  if (!user.username.startsWith(prefix) || user.username.length === prefix.length || !user.groups.includes('system:nodes')) return undefined;
  return user.username.slice(prefix.length);
}

/** `system:serviceaccount:NS:NAME` → its namespace and name; anything else is a plain user name. */
function splitServiceAccount(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SERVICE_ACCOUNT_PREFIX)) return undefined;
  const parts = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined;
  return { namespace: parts[0], name: parts[1] };
}

/** Extra keys are percent-encoded in header names (keys may hold `/`, which header names cannot). */
function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** responsewriters.Forbidden upstream: `<resource> "<name>" is forbidden: User "<u>" cannot impersonate …`. */
function forbidden(username: string, attrs: RequestAttributes, reason: string | undefined): ApiError {
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
  let message = `User "${username}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.group}" ${scope}`;
  if (reason) message += `: ${reason}`;
  const qualified = attrs.group ? `${attrs.resource}.${attrs.group}` : attrs.resource;
  return new ApiError('Forbidden', `${qualified} "${attrs.name ?? ''}" is forbidden: ${message}`, { name: attrs.name ?? '', group: attrs.group || undefined, kind: attrs.resource });
}
