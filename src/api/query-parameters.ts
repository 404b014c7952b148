/**
 * Query parameters read the way kube-apiserver reads them, for every endpoint and for the agent's
 * kubelet-like endpoints alike: one place that turns a query string into typed options and words
 * refusals as the apiserver does. Pure, no I/O.
 *
 * Kubernetes decodes a query into ListOptions, CreateOptions, DeleteOptions, PodLogOptions,
 * PodExecOptions … through its ParameterCodec (runtime.parameterCodec.DecodeParameters), whose
 * conversions are the functions named below:
 *   - booleans: runtime.Convert_Slice_string_To_bool / Convert_Slice_string_To_Pointer_bool —
 *     `0` and `false` in any letter case are false, EVERY other value (`True`, `T`, `yes`, the empty
 *     string) is true; nothing is refused. (strconv.ParseBool's stricter set is used only for
 *     `pretty`, whose errors are ignored: handlers.isPrettyPrint.)
 *   - integers: runtime.Convert_Slice_string_To_int64 / Convert_Slice_string_To_Pointer_int64 with
 *     strconv.ParseInt(s, 10, 64); a failure is answered 400 BadRequest whose message is the Go error,
 *     e.g. `strconv.ParseInt: parsing "abc": invalid syntax` (handlers wrap it in errors.NewBadRequest).
 *   - repeated keys: the first value counts (`(*in)[0]`), except list-valued fields such as dryRun.
 * What decodes is then validated (meta/v1/validation.ValidateCreateOptions, ValidateDeleteOptions,
 * core validation.ValidatePodLogOptions …): those refusals are 422 Invalid on the options kind, e.g.
 * `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: …`.
 */
import { ApiError, errors, type FieldError } from './errors.js';
import { fieldErrors } from './validation/field-errors.js';

/**
 * A query as a handler holds it: URLSearchParams (every value of every key), or a record already
 * reduced to one value per key.
 */
export type QuerySource = URLSearchParams | Readonly<Record<string, string | undefined>>;

/** The value that counts for `name`: the first one, as Kubernetes' conversions take `(*in)[0]`. */
export function queryValue(query: QuerySource, name: string): string | undefined {
  if (query instanceof URLSearchParams) return query.get(name) ?? undefined;
  return query[name];
}

/** Every value of `name`, for list-valued parameters (dryRun, command). */
export function queryValues(query: QuerySource, name: string): string[] {
  if (query instanceof URLSearchParams) return query.getAll(name);
  const v = query[name];
  return v === undefined ? [] : [v];
}

/**
 * A URL query reduced to one value per key, the first, as Kubernetes' parameter conversions read
 * it. (fastify hands repeated keys over as arrays.)
 */
export function firstValues(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    out[k] = Array.isArray(v) ? (v.length ? String(v[0]) : undefined) : v === undefined ? undefined : String(v);
  }
  return out;
}

// ---------- scalar conversions ----------

/** runtime.Convert_Slice_string_To_bool: `0` and `false` (any case) are false, anything else true. */
export function parseQueryBool(value: string): boolean {
  return !(value === '0' || value.toLowerCase() === 'false');
}

/** A boolean parameter; undefined when absent (a pointer field left nil). */
export function queryBool(query: QuerySource, name: string): boolean | undefined {
  const v = queryValue(query, name);
  return v === undefined ? undefined : parseQueryBool(v);
}

/** A boolean parameter that is false when absent. */
export function queryFlag(query: QuerySource, name: string): boolean {
  return queryBool(query, name) ?? false;
}

/**
 * strconv.ParseBool, for the one parameter Kubernetes reads with it (`pretty`): undefined for a
 * value it refuses, which the apiserver ignores.
 */
export function parseStrictBool(value: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

/**
 * strconv.ParseInt(value, 10, 64): an optional sign and decimal digits, within int64. Throws 400
 * with Go's own error text. Values beyond 2^53 come back rounded, which no parameter here minds.
 */
export function parseInt64(value: string): number {
  if (!/^[+-]?[0-9]+$/.test(value)) throw errors.badRequest(`strconv.ParseInt: parsing ${goQuote(value)}: invalid syntax`);
  const n = BigInt(value);
  if (n > INT64_MAX || n < INT64_MIN) throw errors.badRequest(`strconv.ParseInt: parsing ${goQuote(value)}: value out of range`);
  return Number(n);
}

/** An int64 parameter; undefined when absent. */
export function queryInt64(query: QuerySource, name: string): number | undefined {
  const v = queryValue(query, name);
  return v === undefined ? undefined : parseInt64(v);
}

const GO_ESCAPES: Record<string, string> = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v' };

/** Go's strconv.Quote for the strings a query carries: printable text kept, the rest escaped. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (GO_ESCAPES[ch]) out += GO_ESCAPES[ch];
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c >= 0x80 && c < 0xa0) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Go's %#v of a []string, as field.NotSupported prints a dryRun list. */
function goStringSlice(values: string[]): string {
  return `[]string{${values.map(goQuote).join(', ')}}`;
}

// ---------- the options kinds of meta.k8s.io ----------

export type OptionsKind = 'ListOptions' | 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/** errors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: kind}, "", errs) */
export function optionsInvalid(kind: OptionsKind, problems: FieldError[]): ApiError {
  const list = problems.map((e) => `${e.field}: ${e.message}`);
  const summary = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
  return new ApiError('Invalid', `${kind}.meta.k8s.io "" is invalid: ${summary}`, {
    group: 'meta.k8s.io',
    kind,
    name: '',
    causes: problems.map((e) => ({ reason: e.type, message: e.message, field: e.field })),
  });
}

/** validation.ValidateDryRun: every value must be `All`. */
export function dryRunProblems(values: string[]): FieldError[] {
  if (values.every((v) => v === 'All')) return [];
  return [{ field: 'dryRun', type: 'FieldValueNotSupported', message: `Unsupported value: ${goStringSlice(values)}: supported values: "All"` }];
}

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

/** validation.ValidateFieldValidation; `""` is allowed and means the default. */
function fieldValidationProblems(value: string | undefined): FieldError[] {
  if (value === undefined || ['', 'Ignore', 'Strict', 'Warn'].includes(value)) return [];
  return [fieldErrors.notSupported('fieldValidation', value, ['', 'Ignore', 'Strict', 'Warn'])];
}

/** validation.ValidateFieldManager: at most 128 bytes, printable characters only. */
function fieldManagerProblems(value: string | undefined): FieldError[] {
  if (!value) return [];
  const problems: FieldError[] = [];
  if (Buffer.byteLength(value) > 128) problems.push(fieldErrors.tooLong('fieldManager', 128));
  let position = 0;
  for (const ch of value) {
    const c = ch.codePointAt(0)!;
    if (!isPrintable(c)) {
      const code = `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
      // field.Invalid prints a string value with %q.
      problems.push({ field: 'fieldManager', type: 'FieldValueInvalid', message: `Invalid value: ${goQuote(value)}: invalid character ${code} (at position ${position})` });
    }
    position += Buffer.byteLength(ch);
  }
  return problems;
}

/** unicode.IsPrint for what matters here: controls and unpaired surrogates are not printable. */
function isPrintable(c: number): boolean {
  return !(c < 0x20 || (c >= 0x7f && c < 0xa0) || (c >= 0xd800 && c <= 0xdfff));
}

/** What a create, update or patch request's query asks for, validated. */
export interface WriteOptions {
  dryRun: boolean;
  fieldManager?: string;
  /** unset → Kubernetes' default, Warn */
  fieldValidation: FieldValidation;
  /** apply patches only */
  force?: boolean;
}

/**
 * The query of a create (POST), update (PUT) or patch (PATCH), as CreateOptions / UpdateOptions /
 * PatchOptions, validated as ValidateCreateOptions / ValidateUpdateOptions / ValidatePatchOptions do.
 * `apply` says whether a patch is a server-side apply (force belongs to it alone).
 */
export function readWriteOptions(query: QuerySource, kind: 'CreateOptions' | 'UpdateOptions' | 'PatchOptions', opts: { apply?: boolean } = {}): WriteOptions {
  const dryRun = queryValues(query, 'dryRun');
  const fieldManager = queryValue(query, 'fieldManager') || undefined;
  const fieldValidation = queryValue(query, 'fieldValidation');
  const force = kind === 'PatchOptions' ? queryBool(query, 'force') : undefined;
  const problems: FieldError[] = [];
  if (kind === 'PatchOptions') {
    if (!opts.apply && force !== undefined) problems.push(fieldErrors.forbidden('force', 'may not be specified for non-apply patch'));
    if (opts.apply && !fieldManager) problems.push(fieldErrors.required('fieldManager', 'is required for apply patch'));
  }
  problems.push(...fieldManagerProblems(fieldManager), ...dryRunProblems(dryRun), ...fieldValidationProblems(fieldValidation));
  if (problems.length) throw optionsInvalid(kind, problems);
  const out: WriteOptions = { dryRun: dryRun.length > 0, fieldValidation: (fieldValidation || 'Warn') as FieldValidation };
  if (fieldManager) out.fieldManager = fieldManager;
  if (force !== undefined) out.force = force;
  return out;
}

export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

/** DeleteOptions as a request states them, before validation. */
export interface DeleteOptionsInput {
  gracePeriodSeconds?: number;
  propagationPolicy?: string;
  orphanDependents?: boolean;
  dryRun: string[];
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** DeleteOptions from a DELETE's query (used by Kubernetes only when the request has no body). */
export function readDeleteOptionsQuery(query: QuerySource): DeleteOptionsInput {
  const out: DeleteOptionsInput = { dryRun: queryValues(query, 'dryRun') };
  const grace = queryInt64(query, 'gracePeriodSeconds');
  if (grace !== undefined) out.gracePeriodSeconds = grace;
  const policy = queryValue(query, 'propagationPolicy');
  if (policy !== undefined) out.propagationPolicy = policy;
  const orphan = queryBool(query, 'orphanDependents');
  if (orphan !== undefined) out.orphanDependents = orphan;
  return out;
}

/**
 * DeleteOptions from a decoded body (a DELETE's, or an Eviction's deleteOptions). Fields of the
 * wrong JSON type are refused as the decoder would refuse them.
 */
export function readDeleteOptionsBody(body: Record<string, unknown>, where = 'DeleteOptions'): DeleteOptionsInput {
  const wrongType = (field: string, goType: string, v: unknown) =>
    errors.badRequest(`json: cannot unmarshal ${jsonTypeName(v)} into Go struct field ${where}.${field} of type ${goType}`);
  const out: DeleteOptionsInput = { dryRun: [] };
  const { gracePeriodSeconds, propagationPolicy, orphanDependents, dryRun, preconditions } = body;
  if (gracePeriodSeconds !== undefined && gracePeriodSeconds !== null) {
    if (typeof gracePeriodSeconds !== 'number' || !Number.isInteger(gracePeriodSeconds)) throw wrongType('gracePeriodSeconds', 'int64', gracePeriodSeconds);
    out.gracePeriodSeconds = gracePeriodSeconds;
  }
  if (propagationPolicy !== undefined && propagationPolicy !== null) {
    if (typeof propagationPolicy !== 'string') throw wrongType('propagationPolicy', 'v1.DeletionPropagation', propagationPolicy);
    out.propagationPolicy = propagationPolicy;
  }
  if (orphanDependents !== undefined && orphanDependents !== null) {
    if (typeof orphanDependents !== 'boolean') throw wrongType('orphanDependents', 'bool', orphanDependents);
    out.orphanDependents = orphanDependents;
  }
  if (dryRun !== undefined && dryRun !== null) {
    if (!Array.isArray(dryRun) || dryRun.some((v) => typeof v !== 'string')) throw wrongType('dryRun', '[]string', dryRun);
    out.dryRun = dryRun as string[];
  }
  if (preconditions !== undefined && preconditions !== null) {
    if (typeof preconditions !== 'object' || Array.isArray(preconditions)) throw wrongType('preconditions', 'v1.Preconditions', preconditions);
    out.preconditions = preconditions as DeleteOptionsInput['preconditions'];
  }
  return out;
}

function jsonTypeName(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** DeleteOptions validated (validation.ValidateDeleteOptions) and resolved. */
export interface ResolvedDeleteOptions {
  dryRun: boolean;
  /** negative values already raised to 1, as rest.BeforeDelete does */
  gracePeriodSeconds?: number;
  /** orphanDependents folded in: true → Orphan, false → Background */
  propagationPolicy?: PropagationPolicy;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export function resolveDeleteOptions(input: DeleteOptionsInput): ResolvedDeleteOptions {
  const problems: FieldError[] = [];
  if (input.orphanDependents !== undefined && input.propagationPolicy !== undefined) {
    problems.push(fieldErrors.invalid('propagationPolicy', input.propagationPolicy, 'orphanDependents and deletionPropagation cannot be both set'));
  }
  if (input.propagationPolicy !== undefined && !['Foreground', 'Background', 'Orphan'].includes(input.propagationPolicy)) {
    problems.push(fieldErrors.notSupported('propagationPolicy', input.propagationPolicy, ['Foreground', 'Background', 'Orphan', 'nil']));
  }
  problems.push(...dryRunProblems(input.dryRun));
  if (problems.length) throw optionsInvalid('DeleteOptions', problems);
  const out: ResolvedDeleteOptions = { dryRun: input.dryRun.length > 0 };
  if (input.gracePeriodSeconds !== undefined) out.gracePeriodSeconds = input.gracePeriodSeconds < 0 ? 1 : input.gracePeriodSeconds;
  if (input.propagationPolicy !== undefined) out.propagationPolicy = input.propagationPolicy as PropagationPolicy;
  else if (input.orphanDependents !== undefined) out.propagationPolicy = input.orphanDependents ? 'Orphan' : 'Background';
  if (input.preconditions) out.preconditions = input.preconditions;
  return out;
}

// ---------- list and watch ----------

/**
 * Whether a collection GET is a watch: `watch` read as every boolean is (so `watch=True` and
 * `watch=` watch too), as RequestInfoFactory.NewRequestInfo decides the verb.
 */
export function isWatch(query: QuerySource): boolean {
  return queryFlag(query, 'watch');
}

/** ListOptions.limit; zero and negative values mean no limit, as the storage layer treats them. */
export function queryLimit(query: QuerySource): number | undefined {
  const limit = queryInt64(query, 'limit');
  return limit !== undefined && limit > 0 ? limit : undefined;
}

// ---------- pods/log, pods/exec, pods/attach ----------

/** PodLogOptions, decoded and validated (validation.ValidatePodLogOptions). */
export interface PodLogOptions {
  container?: string;
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  insecureSkipTLSVerifyBackend: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  /** epoch milliseconds */
  sinceTime?: number;
  limitBytes?: number;
}

/**
 * PodLogOptions from a log request's query. Conversion failures are 400 as above; values out of
 * range are 422 Invalid on `PodLogOptions "<pod>"`.
 */
export function readPodLogOptions(query: QuerySource, podName: string): PodLogOptions {
  const out: PodLogOptions = {
    follow: queryFlag(query, 'follow'),
    previous: queryFlag(query, 'previous'),
    timestamps: queryFlag(query, 'timestamps'),
    insecureSkipTLSVerifyBackend: queryFlag(query, 'insecureSkipTLSVerifyBackend'),
  };
  const container = queryValue(query, 'container');
  if (container) out.container = container;
  const tailLines = queryInt64(query, 'tailLines');
  const sinceSeconds = queryInt64(query, 'sinceSeconds');
  const limitBytes = queryInt64(query, 'limitBytes');
  const sinceTimeText = queryValue(query, 'sinceTime');
  let sinceTime: number | undefined;
  if (sinceTimeText !== undefined && sinceTimeText !== '') {
    // metav1.Time.UnmarshalQueryParameter: time.Parse(time.RFC3339, …). Go's error names the
    // element where parsing stopped; it is reproduced for the year, the usual place, and
    // summarised past it.
    sinceTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(sinceTimeText) ? Date.parse(sinceTimeText) : NaN;
    if (!Number.isFinite(sinceTime)) {
      const prefix = `parsing time ${goQuote(sinceTimeText)} as "2006-01-02T15:04:05Z07:00"`;
      throw errors.badRequest(/^\d{4}/.test(sinceTimeText) ? `${prefix}: not an RFC 3339 time` : `${prefix}: cannot parse ${goQuote(sinceTimeText)} as "2006"`);
    }
  }
  const problems: FieldError[] = [];
  if (tailLines !== undefined && tailLines < 0) problems.push(fieldErrors.invalid('tailLines', tailLines, 'must be greater than or equal to 0'));
  if (limitBytes !== undefined && limitBytes < 1) problems.push(fieldErrors.invalid('limitBytes', limitBytes, 'must be greater than 0'));
  if (sinceSeconds !== undefined && sinceTime !== undefined) problems.push(fieldErrors.forbidden('', 'at most one of `sinceTime` or `sinceSeconds` may be specified'));
  else if (sinceSeconds !== undefined && sinceSeconds < 1) problems.push(fieldErrors.invalid('sinceSeconds', sinceSeconds, 'must be greater than 0'));
  if (problems.length) throw errors.invalid({ resource: 'pods', kind: 'PodLogOptions', name: podName }, problems);
  if (tailLines !== undefined) out.tailLines = tailLines;
  if (sinceSeconds !== undefined) out.sinceSeconds = sinceSeconds;
  if (sinceTime !== undefined) out.sinceTime = sinceTime;
  if (limitBytes !== undefined) out.limitBytes = limitBytes;
  return out;
}

/** The query a validated PodLogOptions is forwarded to a node with: one spelling per value. */
export function podLogOptionsQuery(opts: PodLogOptions): URLSearchParams {
  const q = new URLSearchParams();
  for (const name of ['follow', 'previous', 'timestamps'] as const) if (opts[name]) q.set(name, 'true');
  if (opts.tailLines !== undefined) q.set('tailLines', String(opts.tailLines));
  if (opts.sinceSeconds !== undefined) q.set('sinceSeconds', String(opts.sinceSeconds));
  if (opts.sinceTime !== undefined) q.set('sinceTime', new Date(opts.sinceTime).toISOString().replace(/\.\d{3}Z$/, 'Z'));
  if (opts.limitBytes !== undefined) q.set('limitBytes', String(opts.limitBytes));
  return q;
}

/** PodExecOptions / PodAttachOptions: which streams a session carries, and (exec) the command. */
export interface PodStreamOptions {
  container?: string;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  command: string[];
}

export function readPodStreamOptions(query: QuerySource): PodStreamOptions {
  const out: PodStreamOptions = {
    stdin: queryFlag(query, 'stdin'),
    stdout: queryFlag(query, 'stdout'),
    stderr: queryFlag(query, 'stderr'),
    tty: queryFlag(query, 'tty'),
    command: queryValues(query, 'command'),
  };
  const container = queryValue(query, 'container');
  if (container) out.container = container;
  return out;
}

/** The query validated stream options are forwarded to a node with (the kubelet reads `1`). */
export function podStreamOptionsQuery(opts: PodStreamOptions): URLSearchParams {
  const q = new URLSearchParams();
  for (const c of opts.command) q.append('command', c);
  for (const name of ['stdin', 'stdout', 'stderr', 'tty'] as const) if (opts[name]) q.set(name, '1');
  return q;
}

/**
 * PodPortForwardOptions: `ports`, repeatable, each value a comma list (runtime.Convert_Slice_string_To_Slice_int32,
 * strconv.ParseUint(v, 10, 16); a failure is a 400 in the Go error's words). Only WebSocket clients send it.
 */
export interface PodPortForwardOptions {
  ports: number[];
}

export function readPodPortForwardOptions(query: QuerySource): PodPortForwardOptions {
  const ports: number[] = [];
  for (const value of queryValues(query, 'ports')) {
    for (const item of value.split(',')) {
      if (!/^\d+$/.test(item)) throw errors.badRequest(`cannot convert to []int32: strconv.ParseUint: parsing ${goQuote(item)}: invalid syntax`);
      if (Number(item) > 65535) throw errors.badRequest(`cannot convert to []int32: strconv.ParseUint: parsing ${goQuote(item)}: value out of range`);
      ports.push(Number(item));
    }
  }
  return { ports };
}

/** The query forwarded to a node: the kubelet reads one `port` parameter, a comma list (pod.PortForwardLocation). */
export function podPortForwardOptionsQuery(opts: PodPortForwardOptions): URLSearchParams {
  const q = new URLSearchParams();
  if (opts.ports.length) q.set('port', opts.ports.join(','));
  return q;
}
