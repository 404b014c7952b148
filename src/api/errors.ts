/**
 * Owns the error vocabulary of every layer: ApiError (a Kubernetes Status reason and its HTTP code),
 * FieldError for validation, constructors that word messages as kube-apiserver does
 * (`pods "web" not found`, `… is invalid: …`), and the one place an error becomes a Status body
 * (toStatus), so the transport never invents codes or wording.
 */
import type { ListMeta, Status, StatusCause } from './types.js';

/** Stable reasons, as Kubernetes names them in Status.reason. */
export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Invalid'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'Expired'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout';

const CODES: Record<StatusReason, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  AlreadyExists: 409,
  Conflict: 409,
  Gone: 410,
  Expired: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
};

/** One invalid field: `field` is the JSON path Kubernetes prints, e.g. `spec.containers[0].image`. */
export interface FieldError {
  field: string;
  /** FieldValueRequired, FieldValueInvalid, FieldValueNotSupported, FieldValueDuplicate, FieldValueTooLong, FieldValueForbidden */
  type: string;
  message: string;
}

/**
 * The one error type every layer throws. It carries a Kubernetes reason and maps to a Status
 * object in exactly one place (toStatus), so the HTTP layer never invents codes.
 */
export class ApiError extends Error {
  readonly reason: StatusReason;
  readonly code: number;
  readonly details: Status['details'];
  /** ListMeta carried by the Status (an expired continue token's replacement) */
  declare listMeta?: ListMeta;

  constructor(reason: StatusReason, message: string, details?: Status['details']) {
    super(message);
    this.name = 'ApiError';
    this.reason = reason;
    this.code = CODES[reason];
    this.details = details;
  }

  /**
   * The Status kube-apiserver writes for this error, its members in metav1.Status's Go field order
   * (kind, apiVersion, metadata, status, message, reason, details, code): clients that compare
   * the body's text see the same bytes.
   */
  toStatus(): Status {
    const status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: this.listMeta ? { ...this.listMeta } : {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
    } as Status;
    if (this.details) status.details = orderedDetails(this.details);
    status.code = this.code;
    return status;
  }

  /** The response body as kube-apiserver writes it: the Status JSON and a newline (Go's json.Encoder ends with one). */
  toStatusJson(): string {
    return `${JSON.stringify(this.toStatus())}\n`;
  }
}

/** StatusDetails in Go field order (name, group, kind, uid, causes, retryAfterSeconds); empty members left out. */
function orderedDetails(d: NonNullable<Status['details']>): NonNullable<Status['details']> {
  const out: NonNullable<Status['details']> = {};
  if (d.name) out.name = d.name;
  if (d.group) out.group = d.group;
  if (d.kind) out.kind = d.kind;
  if (d.uid) out.uid = d.uid;
  if (d.causes?.length) out.causes = d.causes.map(orderedCause);
  if (d.retryAfterSeconds) out.retryAfterSeconds = d.retryAfterSeconds;
  return out;
}

function orderedCause(c: StatusCause): StatusCause {
  const out: StatusCause = {};
  if (c.reason) out.reason = c.reason;
  if (c.message) out.message = c.message;
  if (c.field) out.field = c.field;
  return out;
}

export interface Target {
  group?: string;
  kind?: string;
  /** plural resource name, used in messages the way Kubernetes does: `pods "web" not found` */
  resource: string;
  name?: string;
}

function qualified(t: Target): string {
  return t.group ? `${t.resource}.${t.group}` : t.resource;
}

function detailsOf(t: Target): NonNullable<Status['details']> {
  const d: NonNullable<Status['details']> = {};
  if (t.name) d.name = t.name;
  if (t.group) d.group = t.group;
  d.kind = t.resource;
  return d;
}

export const errors = {
  badRequest: (message: string) => new ApiError('BadRequest', message),
  unauthorized: (message = 'Unauthorized') => new ApiError('Unauthorized', message),
  /** `details` as kube-apiserver fills them for an authorization refusal: name, group and kind = the resource. */
  forbidden: (message: string, details?: Status['details']) => new ApiError('Forbidden', message, details),
  /**
   * A path under a served API version that names no resource (or no subresource of it): the
   * Status kube-apiserver answers when no route matches, with empty details.
   */
  noSuchResource: () => new ApiError('NotFound', 'the server could not find the requested resource', {}),
  notFound: (t: Target) => new ApiError('NotFound', `${qualified(t)} "${t.name ?? ''}" not found`, detailsOf(t)),
  alreadyExists: (t: Target) =>
    new ApiError('AlreadyExists', `${qualified(t)} "${t.name ?? ''}" already exists`, detailsOf(t)),
  conflict: (t: Target, why = 'the object has been modified; please apply your changes to the latest version and try again') =>
    new ApiError('Conflict', `Operation cannot be fulfilled on ${qualified(t)} "${t.name ?? ''}": ${why}`, detailsOf(t)),
  gone: (message: string) => new ApiError('Expired', message),
  tooLarge: (message = 'Request entity too large') => new ApiError('RequestEntityTooLarge', message),
  unsupportedMediaType: (message: string) => new ApiError('UnsupportedMediaType', message),
  methodNotAllowed: (message: string) => new ApiError('MethodNotAllowed', message),
  internal: (message: string) => new ApiError('InternalError', message),
  unavailable: (message: string) => new ApiError('ServiceUnavailable', message),
  /** 422 with one cause per field, message formatted as kube-apiserver does (`Deployment.apps "web" is invalid: …`). */
  invalid: (t: Target & { kind: string }, fieldErrors: FieldError[]) => {
    const list = fieldErrors.map((e) => `${e.field}: ${e.message}`);
    const summary = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
    const causes: StatusCause[] = fieldErrors.map((e) => ({ reason: e.type, message: e.message, field: e.field }));
    const details = { ...detailsOf(t), kind: t.kind, causes };
    const qualifiedKind = t.group ? `${t.kind}.${t.group}` : t.kind;
    return new ApiError('Invalid', `${qualifiedKind} "${t.name ?? ''}" is invalid: ${summary}`, details);
  },
};

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

/** Status for a successful delete of something with no object to return. */
export function successStatus(details?: Status['details']): Status {
  const s = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' } as Status;
  if (details) s.details = orderedDetails(details);
  s.code = 200;
  return s;
}
