/**
 * The read-consistency parameters of get, list and watch — `resourceVersion`,
 * `resourceVersionMatch`, `sendInitialEvents`, `allowWatchBookmarks` — decoded from the query and
 * checked the way kube-apiserver checks its ListOptions (invalid combinations are 422 Invalid on
 * `ListOptions.meta.k8s.io`, unparseable booleans 400).
 */
import { ApiError, errors, type FieldError } from '../api/errors.js';
import { fieldErrors } from '../api/validation/field-errors.js';

export type ResourceVersionMatch = 'NotOlderThan' | 'Exact';

export interface ReadConsistency {
  resourceVersion?: string;
  resourceVersionMatch?: ResourceVersionMatch;
  /** watch only: start with the current state as ADDED events (true) or not (false); unset → legacy rule */
  sendInitialEvents?: boolean;
  /** watch only: the client accepts BOOKMARK events */
  allowWatchBookmarks: boolean;
}

/** Reads and validates the consistency parameters of a list (watch=false) or watch request. */
export function readConsistency(query: Record<string, string | undefined>, opts: { watch: boolean }): ReadConsistency {
  const resourceVersion = query.resourceVersion || undefined;
  const match = query.resourceVersionMatch || undefined;
  const sendInitialEvents = parseBool(query.sendInitialEvents, 'sendInitialEvents');
  const allowWatchBookmarks = parseBool(query.allowWatchBookmarks, 'allowWatchBookmarks') ?? false;
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
  if (problems.length) throw listOptionsInvalid(problems);
  if (resourceVersion !== undefined) parseResourceVersion(resourceVersion);
  return { resourceVersion, resourceVersionMatch: match as ResourceVersionMatch | undefined, sendInitialEvents, allowWatchBookmarks };
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

function parseBool(v: string | undefined, name: string): boolean | undefined {
  if (v === undefined || v === '') return undefined;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw errors.badRequest(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax (${name})`);
}

function listOptionsInvalid(problems: FieldError[]): ApiError {
  const list = problems.map((e) => `${e.field}: ${e.message}`);
  const summary = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
  return new ApiError('Invalid', `ListOptions.meta.k8s.io "" is invalid: ${summary}`, {
    group: 'meta.k8s.io',
    kind: 'ListOptions',
    name: '',
    causes: problems.map((e) => ({ reason: e.type, message: e.message, field: e.field })),
  });
}
