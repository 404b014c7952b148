/**
 * Request body decoding: raw bytes in, plain JSON-compatible values out, with every hostile-input
 * case (bad UTF-8, deep nesting, YAML alias bombs, non-JSON YAML values) turned into a 400 before
 * it can cost real time or memory. Pure module: the server enforces MAX_BODY_BYTES while reading
 * and hands the bytes over.
 */
import {
  LineCounter,
  isAlias,
  isMap,
  isNode,
  isScalar,
  isSeq,
  parseAllDocuments,
  type Alias,
  type Document,
  type Node as YamlNode,
  type Scalar,
} from 'yaml';
import { ApiError, errors } from './errors.js';
import { isJsonObject, setOwn, type JsonObject } from './patch/json-value.js';
import { KUBERNETES_PROTOBUF_MEDIA_TYPE, decodeKubeProtobuf, type ProtobufKind } from './protobuf/index.js';

/** Largest request body the server reads (Kubernetes uses 3 MiB too). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/**
 * Deepest object/array nesting accepted. Kubernetes' JSON decoder allows 10000, but Berth walks
 * objects with recursive code (patching, yaml's composer and stringifier) and the yaml package
 * overflows V8's default stack at roughly 700 levels. 256 leaves that headroom even when called from
 * a deep server stack, and is still far beyond real manifests (deep CRD schemas reach ~70).
 * JSON is measured exactly; YAML by a conservative bound (yamlNestingBound), so YAML nested more
 * than ~90 levels may be refused where the same JSON is accepted.
 */
export const MAX_NESTING_DEPTH = 256;

/** How many alias expansions one YAML stream may perform in total (nested expansions included). */
export const MAX_YAML_ALIASES = 100;

/** Media types by role; parameters such as `charset` are ignored when matching. */
export const MEDIA_TYPES = {
  json: 'application/json',
  yaml: 'application/yaml',
  jsonPatch: 'application/json-patch+json',
  mergePatch: 'application/merge-patch+json',
  strategicMergePatch: 'application/strategic-merge-patch+json',
  applyPatch: 'application/apply-patch+yaml',
} as const;

const YAML_MEDIA_TYPES = new Set(['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml']);

export interface DecodeOptions {
  /**
   * Media types this endpoint accepts (e.g. only the patch types for PATCH). Anything else is a 415
   * listing these. Default: every JSON (`application/json`, `*+json`) and YAML type.
   * A missing Content-Type is always accepted and sniffed, as curl users expect.
   */
  accept?: readonly string[];
  /** kinds whose protobuf messages their own modules declare (see ProtobufKind) */
  protobufKinds?: readonly ProtobufKind[];
}

type Format = 'json' | 'yaml' | 'sniff' | 'protobuf';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `application/json; charset=utf-8` → `application/json`; undefined for a missing/blank header. */
export function mediaTypeOf(contentType: string | undefined): string | undefined {
  const essence = contentType?.split(';')[0]?.trim().toLowerCase();
  return essence ? essence : undefined;
}

/**
 * Decodes a body holding exactly one document (JSON, or YAML which is converted to JSON values).
 * Throws 400 for an empty body, several YAML documents, or anything undecodable; 415 for an
 * unsupported Content-Type.
 */
export function decodeBody(buf: Buffer, contentType: string | undefined, options: DecodeOptions = {}): unknown {
  const docs = decodeAll(buf, contentType, options);
  if (docs.length === 0) throw errors.badRequest('the request body is empty');
  if (docs.length > 1) {
    throw errors.badRequest(`the request body must hold a single document, found ${docs.length} YAML documents`);
  }
  return docs[0];
}

/**
 * Decodes every document of a (possibly multi-document) YAML body, skipping empty ones; a JSON body
 * is one document. For the "apply many" convenience endpoint.
 */
export function decodeDocuments(buf: Buffer, contentType: string | undefined, options: DecodeOptions = {}): unknown[] {
  return decodeAll(buf, contentType, options);
}

/**
 * Checks a decoded document is an object with string apiVersion and kind, as every create/update
 * body must be. `index` (0-based) names the document in multi-document bodies.
 */
export function assertObject(
  doc: unknown,
  index?: number,
): asserts doc is JsonObject & { apiVersion: string; kind: string } {
  const where = index === undefined ? '' : `document ${index + 1}: `;
  if (!isJsonObject(doc)) {
    const got = doc === null ? 'null' : Array.isArray(doc) ? 'an array' : `a ${typeof doc}`;
    throw errors.badRequest(`${where}the object must be a JSON object with apiVersion and kind, got ${got}`);
  }
  for (const field of ['kind', 'apiVersion'] as const) {
    const value = doc[field];
    if (typeof value !== 'string' || value === '') {
      const label = field === 'kind' ? 'Kind' : 'apiVersion';
      throw errors.badRequest(`${where}Object '${label}' is missing in '${preview(doc)}'`);
    }
  }
}

/**
 * Paths of keys that appear more than once in the same mapping, formatted as Kubernetes prints
 * them for fieldValidation=Strict (`spec.replicas`, `spec.containers[0].name`). Decoding keeps the
 * last value silently; this lets the server warn or reject. Throws like decodeBody for bodies that
 * cannot be decoded.
 */
export function findDuplicateFields(buf: Buffer, contentType: string | undefined): string[] {
  if (formatFor(contentType, {}) === 'protobuf') return []; // protobuf has no duplicate keys to report
  const text = decodeUtf8(buf);
  const format = formatFor(contentType, {});
  if (format === 'json') {
    parseJson(text); // validates, so the scanner below only ever sees well-formed JSON
    return jsonDuplicateFields(text);
  }
  if (looksLikeJson(text) && tryParseJson(text).ok) return jsonDuplicateFields(text);
  assertYamlNestingWithinLimit(text);
  const found = new Set<string>();
  for (const { doc } of parseYamlStream(text).docs) collectDuplicates(doc.contents, '', (path) => found.add(path));
  return [...found];
}

/** True when `value` nests objects/arrays deeper than `maxDepth`. Iterative: safe on any input. */
export function exceedsDepth(value: unknown, maxDepth = MAX_NESTING_DEPTH): boolean {
  const pending: Array<[unknown, number]> = [[value, 1]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    const children = Array.isArray(item) ? item : isJsonObject(item) ? Object.values(item) : undefined;
    if (!children) continue;
    if (depth > maxDepth) return true;
    for (const child of children) pending.push([child, depth + 1]);
  }
  return false;
}

// ---------- format selection ----------

function decodeAll(buf: Buffer, contentType: string | undefined, options: DecodeOptions): unknown[] {
  const format = formatFor(contentType, options);
  if (format === 'protobuf') return buf.length === 0 ? [] : [decodeKubeProtobuf(buf, options.protobufKinds)]; // client-go typed clients
  const text = decodeUtf8(buf);
  if (text.trim() === '') return [];
  if (format === 'json') return nonNull([parseJson(text)]);
  if (looksLikeJson(text)) {
    // YAML is a superset of JSON, but JSON.parse is far faster and has no nesting limits of its own.
    const json = tryParseJson(text);
    if (json.ok) return nonNull([json.value]);
  }
  return parseYaml(text);
}

function formatFor(contentType: string | undefined, options: DecodeOptions): Format {
  const media = mediaTypeOf(contentType);
  if (media === undefined) return 'sniff';
  const accepted = options.accept?.map((m) => m.toLowerCase());
  if (accepted && !accepted.includes(media)) throw unsupported(accepted);
  if (media === MEDIA_TYPES.json || media.endsWith('+json')) return 'json';
  if (YAML_MEDIA_TYPES.has(media) || media.endsWith('+yaml')) return 'yaml';
  if (media === KUBERNETES_PROTOBUF_MEDIA_TYPE) return 'protobuf';
  throw unsupported(accepted ?? [MEDIA_TYPES.json, MEDIA_TYPES.yaml]);
}

function unsupported(accepted: readonly string[]): ApiError {
  return errors.unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

function decodeUtf8(buf: Buffer): string {
  try {
    return utf8.decode(buf);
  } catch {
    throw errors.badRequest('the request body is not valid UTF-8');
  }
}

function looksLikeJson(text: string): boolean {
  const first = text.trimStart()[0];
  return first === '{' || first === '[';
}

function nonNull(docs: unknown[]): unknown[] {
  return docs.filter((d) => d !== null);
}

function tooDeep(): ApiError {
  return errors.badRequest(`the request body is nested too deeply (more than ${MAX_NESTING_DEPTH} levels)`);
}

function preview(doc: unknown): string {
  const text = JSON.stringify(doc);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

// ---------- JSON ----------

function parseJson(text: string): unknown {
  const result = tryParseJson(text);
  if (!result.ok) throw errors.badRequest(`error decoding JSON: ${result.message}`);
  return result.value;
}

function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  // JSON.parse itself is iterative, but everything downstream recurses, so refuse deep input first.
  if (jsonNestingExceeds(text, MAX_NESTING_DEPTH)) throw tooDeep();
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

/** Exact bracket depth of JSON text (brackets inside strings are skipped), in one cheap pass. */
function jsonNestingExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return false;
}

// ---------- YAML ----------

/** Refuses YAML whose nesting could exceed MAX_NESTING_DEPTH, before the yaml parser sees it. */
function assertYamlNestingWithinLimit(text: string): void {
  if (yamlNestingBound(text, MAX_NESTING_DEPTH) > MAX_NESTING_DEPTH) throw tooDeep();
}

/**
 * Upper bound on the nesting the yaml package could build from `text` (exported for tests). It
 * must be known before parsing: yaml's composer recurses per level, and deep input overflows the
 * stack or, worse, exhausts memory fatally. One cheap pass; stops once the bound passes `stopAbove`.
 *
 * The bound over-counts on purpose and never under-counts, even for invalid YAML that the
 * lenient parser still turns into nested nodes:
 * - flow depth counts every `[`/`{` not yet closed, ignoring quotes and comments entirely, so
 *   text in strings can only raise it;
 * - block collections nest only at strictly greater columns (a sequence may share its parent
 *   mapping's column, hence the factor 2), so the number of distinct columns seen so far that could
 *   start a node, up to this line's deepest, bounds the block depth;
 * - every `- `, `? ` and `: ` on the line may open another level (`- - a: b`, or `a: b: c`, which
 *   the parser nests while reporting an error).
 * Real manifests stay well below the limit (about 2-3 times their true depth); refusing a valid
 * body would take hundreds of unclosed brackets in strings, hundreds of distinct indentation
 * columns, or hundreds of `: ` on one line.
 */
export function yamlNestingBound(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  const columns: number[] = []; // sorted, distinct
  const record = (col: number): void => {
    let lo = 0;
    let hi = columns.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (columns[mid]! < col) lo = mid + 1;
      else hi = mid;
    }
    if (columns[lo] !== col) columns.splice(lo, 0, col);
  };
  const countUpTo = (col: number): number => {
    let lo = 0;
    let hi = columns.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (columns[mid]! <= col) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const isBlank = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0d;

  let flow = 0;
  let worst = 0;
  let lineStart = 0;
  while (lineStart < text.length) {
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    let i = lineStart;
    while (i < lineEnd && text.charCodeAt(i) === 0x20) i++;
    let rest = i;
    while (rest < lineEnd && isBlank(text.charCodeAt(rest))) rest++;
    // Blank and comment lines cannot open block nodes ('#' after indentation is always a comment or
    // scalar text), so they neither record columns nor count.
    if (rest < lineEnd && text.charCodeAt(rest) !== 0x23) {
      let deepestColumn = i - lineStart;
      record(deepestColumn);
      // Columns right after leading indicators and node properties may start nested nodes too.
      let j = rest;
      for (let leading = 1; ; leading++) {
        // Each leading indicator starts a further column on this line: bail out early on long runs.
        if (2 * leading > stopAbove) return 2 * leading;
        const c = text.charCodeAt(j);
        const next = j + 1 < lineEnd ? text.charCodeAt(j + 1) : 0x20;
        if ((c === 0x2d || c === 0x3f || c === 0x3a) && isBlank(next)) j++;
        else if (c === 0x26 || c === 0x21) while (j < lineEnd && !isBlank(text.charCodeAt(j))) j++;
        else break;
        while (j < lineEnd && isBlank(text.charCodeAt(j))) j++;
        if (j >= lineEnd) break;
        deepestColumn = j - lineStart;
        record(deepestColumn);
      }
      let indicators = 0;
      let deepestFlow = flow;
      for (let k = rest; k < lineEnd; k++) {
        const c = text.charCodeAt(k);
        if (c === 0x5b || c === 0x7b) {
          if (++flow > deepestFlow) deepestFlow = flow;
        } else if (c === 0x5d || c === 0x7d) {
          if (flow > 0) flow--;
        } else if ((c === 0x2d || c === 0x3f || c === 0x3a) && (k + 1 >= lineEnd || isBlank(text.charCodeAt(k + 1)))) {
          indicators++;
        } else continue;
        if (indicators + deepestFlow > stopAbove) return indicators + deepestFlow;
      }
      const bound = 2 * countUpTo(deepestColumn) + indicators + deepestFlow;
      if (bound > worst) worst = bound;
      if (worst > stopAbove) return worst;
    }
    lineStart = lineEnd + 1;
  }
  return worst;
}

interface ParsedYamlDocument {
  doc: Document.Parsed;
  /** "document 2: " in multi-document streams, else "" */
  where: string;
}

/** Parses a stream after the nesting guard, turning the first syntax error into a 400. */
function parseYamlStream(text: string): { lineCounter: LineCounter; docs: ParsedYamlDocument[] } {
  const lineCounter = new LineCounter();
  let parsed: Document.Parsed[];
  try {
    parsed = Array.from(
      parseAllDocuments(text, {
        version: '1.2',
        schema: 'core', // YAML 1.2: `yes`/`on` stay strings, no timestamps, no `<<` merges
        merge: false,
        uniqueKeys: false, // duplicates keep the last value, as Kubernetes does; see findDuplicateFields
        strict: true,
        prettyErrors: false,
        intAsBigInt: false,
        logLevel: 'silent',
        lineCounter,
      }),
    );
  } catch (e) {
    throw yamlFailure(e);
  }
  const multi = parsed.length > 1;
  const docs = parsed.map((doc, i) => ({ doc, where: multi ? `document ${i + 1}: ` : '' }));
  for (const { doc, where } of docs) {
    const first = doc.errors[0];
    if (first) {
      const line = lineCounter.linePos(first.pos[0]).line;
      throw errors.badRequest(`${where}error converting YAML to JSON: yaml: line ${line}: ${first.message}`);
    }
  }
  return { lineCounter, docs };
}

function yamlFailure(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof RangeError) return tooDeep();
  return errors.badRequest(`error converting YAML to JSON: ${e instanceof Error ? e.message : String(e)}`);
}

function parseYaml(text: string): unknown[] {
  assertYamlNestingWithinLimit(text);
  const stream = parseYamlStream(text);
  const ctx: YamlContext = {
    lineCounter: stream.lineCounter,
    where: '',
    anchors: new Map(),
    active: new Set(),
    replaying: 0,
    aliasesLeft: MAX_YAML_ALIASES,
    // Plain documents convert to about their own size; only aliases can blow past this.
    sizeLeft: 8 * text.length + 1024 * 1024,
  };
  const out: unknown[] = [];
  try {
    for (const { doc, where } of stream.docs) {
      const contents = doc.contents;
      if (contents === null || (isScalar(contents) && contents.value === null)) continue;
      ctx.where = where;
      ctx.anchors.clear(); // anchors never cross document boundaries
      out.push(convertNode(contents, ctx, 1));
    }
  } catch (e) {
    throw yamlFailure(e);
  }
  return out;
}

interface YamlContext {
  readonly lineCounter: LineCounter;
  where: string;
  /** anchor name → latest node carrying it, in document order */
  readonly anchors: Map<string, YamlNode>;
  /** nodes being converted right now: an alias to one of them is a cycle */
  readonly active: Set<YamlNode>;
  /** > 0 while expanding an alias: anchors met again must not be re-registered */
  replaying: number;
  aliasesLeft: number;
  /** remaining budget, in approximate JSON bytes, for the converted output */
  sizeLeft: number;
}

const CORE = 'tag:yaml.org,2002:';
const SCALAR_TAGS = new Set(['!', `${CORE}str`, `${CORE}int`, `${CORE}float`, `${CORE}bool`, `${CORE}null`]);

/**
 * YAML AST → JSON value. Written by hand rather than using Document.toJS so that aliases are
 * copied (not shared references), expansion is budgeted, and anything JSON cannot represent
 * (custom tags, binary, .inf/.nan, collection keys, `<<` merges) is refused with its line number.
 */
function convertNode(node: unknown, ctx: YamlContext, depth: number): unknown {
  if (node === null || node === undefined) return null;
  if (isAlias(node)) return convertAlias(node, ctx, depth);
  if (!isScalar(node) && !isMap(node) && !isSeq(node)) throw yamlError(ctx, node, 'unsupported YAML node');
  if (node.anchor && ctx.replaying === 0) ctx.anchors.set(node.anchor, node);
  ctx.active.add(node);
  try {
    if (isScalar(node)) return convertScalar(node, ctx);
    if (depth > MAX_NESTING_DEPTH) throw tooDeep();
    if (isMap(node)) {
      if (node.tag !== undefined && node.tag !== `${CORE}map`) throw unsupportedTag(ctx, node, node.tag);
      spend(ctx, node, 2);
      const out: JsonObject = {};
      for (const pair of node.items) {
        const key = convertKey(pair.key, ctx);
        setOwn(out, key, convertNode(pair.value, ctx, depth + 1));
      }
      return out;
    }
    if (node.tag !== undefined && node.tag !== `${CORE}seq`) throw unsupportedTag(ctx, node, node.tag);
    spend(ctx, node, 2);
    return node.items.map((item) => convertNode(item, ctx, depth + 1));
  } finally {
    ctx.active.delete(node);
  }
}

function convertAlias(alias: Alias, ctx: YamlContext, depth: number): unknown {
  if (--ctx.aliasesLeft < 0) {
    throw yamlError(ctx, alias, `too many alias expansions (at most ${MAX_YAML_ALIASES} are allowed)`);
  }
  const target = ctx.anchors.get(alias.source);
  if (!target) throw yamlError(ctx, alias, `unknown anchor '${alias.source}' referenced`);
  if (ctx.active.has(target)) throw yamlError(ctx, alias, `anchor '${alias.source}' is referenced from inside itself`);
  ctx.replaying++;
  try {
    return convertNode(target, ctx, depth);
  } finally {
    ctx.replaying--;
  }
}

function convertScalar(node: Scalar, ctx: YamlContext): unknown {
  if (node.tag !== undefined && !SCALAR_TAGS.has(node.tag)) throw unsupportedTag(ctx, node, node.tag);
  const value: unknown = node.value;
  if (typeof value === 'string') {
    spend(ctx, node, value.length + 2);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw yamlError(ctx, node, `${String(value)} cannot be represented in JSON`);
    spend(ctx, node, 8);
    return value;
  }
  if (typeof value === 'boolean' || value === null) {
    spend(ctx, node, 5);
    return value;
  }
  throw yamlError(ctx, node, 'unsupported scalar value');
}

function convertKey(keyNode: unknown, ctx: YamlContext): string {
  let node = keyNode;
  if (isAlias(node)) {
    const resolved = convertAlias(node, ctx, 1);
    if (typeof resolved === 'string') return resolved;
    if (typeof resolved === 'number' || typeof resolved === 'boolean') return String(resolved);
    throw yamlError(ctx, node, 'mapping keys must be strings, numbers or booleans');
  }
  if (!isScalar(node)) {
    throw yamlError(ctx, node, 'mapping keys must be strings, numbers or booleans');
  }
  if (node.anchor && ctx.replaying === 0) ctx.anchors.set(node.anchor, node);
  if (node.type === 'PLAIN' && node.value === '<<') {
    throw yamlError(ctx, node, "merge keys ('<<') are not supported");
  }
  const value = convertScalar(node, ctx);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw yamlError(ctx, node, 'mapping keys must be strings, numbers or booleans');
}

function spend(ctx: YamlContext, node: YamlNode, bytes: number): void {
  ctx.sizeLeft -= bytes;
  if (ctx.sizeLeft < 0) throw yamlError(ctx, node, 'the document expands to too much data (check its aliases)');
}

function unsupportedTag(ctx: YamlContext, node: YamlNode, tag: string): ApiError {
  const shown = tag.startsWith(CORE) ? `!!${tag.slice(CORE.length)}` : tag;
  return yamlError(ctx, node, `unsupported tag ${shown}: only JSON-compatible values are allowed`);
}

function yamlError(ctx: YamlContext, node: unknown, message: string): ApiError {
  const offset = isNode(node) ? node.range?.[0] : undefined;
  const line = offset === undefined ? '' : `line ${ctx.lineCounter.linePos(offset).line}: `;
  return errors.badRequest(`${ctx.where}error converting YAML to JSON: yaml: ${line}${message}`);
}

/**
 * Duplicate keys in well-formed JSON, found in one pass with an explicit stack: kubectl sends JSON
 * with fieldValidation=Strict on every write, so this must stay cheap.
 */
function jsonDuplicateFields(text: string): string[] {
  interface Frame {
    isObject: boolean;
    path: string;
    keys: Set<string>;
    key: string;
    index: number;
    expectKey: boolean;
  }
  const stack: Frame[] = [];
  const found = new Set<string>();
  const childPath = (): string => {
    const top = stack[stack.length - 1];
    if (!top) return '';
    if (!top.isObject) return `${top.path}[${top.index}]`;
    return top.path ? `${top.path}.${top.key}` : top.key;
  };
  const open = (isObject: boolean): void => {
    stack.push({ isObject, path: childPath(), keys: new Set(), key: '', index: 0, expectKey: isObject });
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1];
    if (c === 0x7b) open(true);
    else if (c === 0x5b) open(false);
    else if (c === 0x7d || c === 0x5d) stack.pop();
    else if (c === 0x3a && top) top.expectKey = false;
    else if (c === 0x2c && top) {
      if (top.isObject) top.expectKey = true;
      else top.index++;
    } else if (c === 0x22) {
      let end = i + 1;
      let escaped = false;
      for (let d = text.charCodeAt(end); d !== 0x22; d = text.charCodeAt(end)) {
        if (d === 0x5c) {
          escaped = true;
          end += 2;
        } else end++;
      }
      if (top?.isObject && top.expectKey) {
        const key = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        top.key = key;
        if (top.keys.has(key)) found.add(childPath());
        else top.keys.add(key);
      }
      i = end;
    }
  }
  return [...found];
}

function collectDuplicates(node: unknown, path: string, report: (path: string) => void): void {
  if (isMap(node)) {
    const keys = new Set<string>();
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
      const childPath = key === undefined ? path : path ? `${path}.${key}` : key;
      if (key !== undefined) {
        if (keys.has(key)) report(childPath);
        keys.add(key);
      }
      collectDuplicates(pair.value, childPath, report);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => collectDuplicates(item, `${path}[${i}]`, report));
  }
}
