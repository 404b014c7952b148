/**
 * The read-consistency parameters of get, list and watch — `resourceVersion`,
 * `resourceVersionMatch`, `sendInitialEvents`, `allowWatchBookmarks` — decoded from the query and
 * checked the way kube-apiserver checks its ListOptions (invalid combinations are 422 Invalid on
 * `ListOptions.meta.k8s.io`), with `limit` and `timeoutSeconds`: every parameter read by the shared
 * rules of src/api/query-parameters.ts (booleans as Kubernetes converts them, integers 400 when
 * strconv.ParseInt would refuse them).
 */
import { ApiError, errors, type FieldError } from '../api/errors.js';
import { fieldErrors } from '../api/validation/field-errors.js';
import { optionsInvalid, queryBool, queryInt64, queryLimit } from '../api/query-parameters.js';

export type ResourceVersionMatch = 'NotOlderThan' | 'Exact';

export interface ReadConsistency {
  resourceVersion?: string;
  resourceVersionMatch?: ResourceVersionMatch;
  /** watch only: start with the current state as ADDED events (true) or not (false); unset → legacy rule */
  sendInitialEvents?: boolean;
  /** watch only: the client accepts BOOKMARK events */
  allowWatchBookmarks: boolean;
  /** list only: page size; unset for none (zero and negative values ask for none) */
  limit?: number;
  /** watch only: end the stream after this long; unset or ≤ 0 for never */
  timeoutSeconds?: number;
}

/** Reads and validates the consistency parameters of a list (watch=false) or watch request. */
export function readConsistency(query: Record<string, string | undefined>, opts: { watch: boolean }): ReadConsistency {
  const resourceVersion = query.resourceVersion || undefined;
  const match = query.resourceVersionMatch || undefined;
  // Decoding (400) comes before validation (422), as in the ListResource handler.
  const limit = queryLimit(query);
  const timeoutSeconds = queryInt64(query, 'timeoutSeconds');
  const sendInitialEvents = queryBool(query, 'sendInitialEvents');
  const allowWatchBookmarks = queryBool(query, 'allowWatchBookmarks') ?? false;
  const problems: FieldError[] = [];
  if (!opts.watch) {
    if (match !== undefined) {
      if (resourceVersion === undefined) problems.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
      if (query.continue) problems.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
      if (match !== 'Exact' && match !== 'NotOlderThan') problems.push(fieldErrors.notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']));
      if (match === 'Exact' && resourceVersion === '0') problems.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
    }
    if (sendInitialEvents !== undefined) problems.push(fieldErrors.forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  } else {
    if (sendInitialEvents !== undefined && match !== 'NotOlderThan') {
      problems.push(fieldErrors.forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
    }
    if (match !== undefined) {
      if (sendInitialEvents === undefined) problems.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
      if (match !== 'NotOlderThan') problems.push(fieldErrors.notSupported('resourceVersionMatch', match, ['NotOlderThan']));
      if (query.continue) problems.push(fieldErrors.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    }
  }
  if (problems.length) throw optionsInvalid('ListOptions', problems);
  if (resourceVersion !== undefined) parseResourceVersion(resourceVersion);
  const out: ReadConsistency = { resourceVersion, resourceVersionMatch: match as ResourceVersionMatch | undefined, sendInitialEvents, allowWatchBookmarks };
  if (limit !== undefined) out.limit = limit;
  if (timeoutSeconds !== undefined && timeoutSeconds > 0) out.timeoutSeconds = timeoutSeconds;
  return out;
}

/** A resourceVersion as the store's revision number; anything else is 400 as upstream. */
export function parseResourceVersion(rv: string): number {
  const n = /^[0-9]+$/.test(rv) ? Number(rv) : NaN;
  if (!Number.isSafeInteger(n)) throw errors.badRequest(`invalid resource version: ${rv}`);
  return n;
}

/**
 * A resourceVersion newer than anything stored: kube-apiserver waits up to 3 s for its cache to
 * catch up and then answers 504 with this text. Berth's store is never behind, so it answers at once.
 */
export function tooLargeResourceVersion(requested: number, current: number): ApiError {
  return new ApiError('Timeout', `Too large resource version: ${requested}, current: ${current}`, { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
}

/** What a list request asks for: selectors, paging and consistency, read and checked from its query. */
export function readListOptions(query: Record<string, string | undefined>) {
  const consistency = readConsistency(query, { watch: false });
  return {
    labelSelector: query.labelSelector,
    fieldSelector: query.fieldSelector,
    limit: consistency.limit,
    continue: query.continue,
    resourceVersion: consistency.resourceVersion,
    resourceVersionMatch: consistency.resourceVersionMatch,
  };
}
