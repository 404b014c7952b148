/**
 * Label and field selectors as Kubernetes accepts them in `?labelSelector=` / `?fieldSelector=`
 * and in workload specs. Parsing follows Kubernetes' grammar and error wording; matching follows
 * its semantics (notably: `!=` and `notin` also match objects that lack the label).
 */
import { errors } from './errors.js';
import { labelValueErrors, qualifiedNameErrors } from './validation/names.js';
import type { LabelSelector as LabelSelectorObject } from './types.js';

// ---------------------------------------------------------------- label selectors

export type LabelOperator = 'Equals' | 'NotEquals' | 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'GreaterThan' | 'LessThan';

/** One `key op values` term; `values` is sorted and de-duplicated, empty for Exists/DoesNotExist. */
export interface LabelRequirement {
  key: string;
  operator: LabelOperator;
  values: string[];
}

/**
 * All requirements must hold. `matchesNothing` is Kubernetes' "nothing" selector: what a
 * workload whose selector is absent (nil) selects — distinct from `{}`, which selects everything.
 */
export interface LabelSelector {
  requirements: LabelRequirement[];
  matchesNothing: boolean;
}

/** The selector every object matches. */
export function everythingSelector(): LabelSelector {
  return { requirements: [], matchesNothing: false };
}

/** The selector no object matches. */
export function nothingSelector(): LabelSelector {
  return { requirements: [], matchesNothing: true };
}

export function isEverythingSelector(sel: LabelSelector): boolean {
  return !sel.matchesNothing && sel.requirements.length === 0;
}

type TokenKind = 'ident' | 'in' | 'notin' | '=' | '==' | '!=' | '!' | '(' | ')' | ',' | '>' | '<' | 'end';

interface Token {
  kind: TokenKind;
  text: string;
}

const SPECIAL_CHARS = new Set(['=', '!', '(', ')', ',', '>', '<']);
const TWO_CHAR_TOKENS = new Set(['==', '!=']);

function isSpace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '\f' || ch === '\v';
}

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const ch = input[i] ?? '';
    if (isSpace(ch)) {
      i++;
    } else if (SPECIAL_CHARS.has(ch)) {
      const pair = input.slice(i, i + 2);
      const text = TWO_CHAR_TOKENS.has(pair) ? pair : ch;
      tokens.push({ kind: text as TokenKind, text });
      i += text.length;
    } else {
      let end = i;
      while (end < input.length && !isSpace(input[end] ?? '') && !SPECIAL_CHARS.has(input[end] ?? '')) end++;
      const text = input.slice(i, end);
      tokens.push({ kind: text === 'in' ? 'in' : text === 'notin' ? 'notin' : 'ident', text });
      i = end;
    }
  }
  tokens.push({ kind: 'end', text: '' });
  return tokens;
}

class SelectorSyntaxError extends Error {}

/**
 * Recursive-descent parser over Kubernetes' selector grammar:
 *   selector    = requirement ("," requirement)*
 *   requirement = "!" key | key [ ("="|"=="|"!="|">"|"<") value | ("in"|"notin") "(" values ")" ]
 * Outside operator position `in`/`notin` are ordinary words, so `in=x` is a valid term.
 */
class LabelSelectorParser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(asValue = true): Token {
    const t = this.tokens[this.pos] ?? { kind: 'end', text: '' };
    return asValue && (t.kind === 'in' || t.kind === 'notin') ? { kind: 'ident', text: t.text } : t;
  }

  private next(asValue = true): Token {
    const t = this.peek(asValue);
    this.pos++;
    return t;
  }

  parse(): LabelRequirement[] {
    const out: LabelRequirement[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === 'end') return out;
      if (t.kind !== 'ident' && t.kind !== '!') throw new SelectorSyntaxError(`found '${t.text}', expected: !, identifier, or 'end of string'`);
      out.push(this.requirement());
      const sep = this.next();
      if (sep.kind === 'end') return out;
      if (sep.kind !== ',') throw new SelectorSyntaxError(`found '${sep.text}', expected: ',' or 'end of string'`);
      const after = this.peek();
      if (after.kind !== 'ident' && after.kind !== '!') throw new SelectorSyntaxError(`found '${after.text}', expected: identifier after ','`);
    }
  }

  private requirement(): LabelRequirement {
    try {
      return this.requirementBody();
    } catch (e) {
      if (e instanceof SelectorSyntaxError) throw new SelectorSyntaxError(`unable to parse requirement: ${e.message}`);
      throw e;
    }
  }

  private requirementBody(): LabelRequirement {
    let negated = false;
    let t = this.next();
    if (t.kind === '!') {
      negated = true;
      t = this.next();
    }
    if (t.kind !== 'ident') throw new SelectorSyntaxError(`found '${t.text}', expected: identifier`);
    const key = t.text;
    checkKey(key);
    const following = this.peek().kind;
    if (negated) return makeRequirement(key, 'DoesNotExist', []);
    if (following === 'end' || following === ',') return makeRequirement(key, 'Exists', []);
    const operator = this.operator();
    const values = operator === 'In' || operator === 'NotIn' ? this.valueSet() : [this.exactValue()];
    return makeRequirement(key, operator, values);
  }

  private operator(): LabelOperator {
    const t = this.next(false);
    switch (t.kind) {
      case '=':
      case '==':
        return 'Equals';
      case '!=':
        return 'NotEquals';
      case 'in':
        return 'In';
      case 'notin':
        return 'NotIn';
      case '>':
        return 'GreaterThan';
      case '<':
        return 'LessThan';
      default:
        throw new SelectorSyntaxError(`found '${t.text}', expected: =, !=, ==, in, notin, >, <`);
    }
  }

  /** `k=` (nothing before `,` or the end) means "equals the empty string". */
  private exactValue(): string {
    const ahead = this.peek();
    if (ahead.kind === 'end' || ahead.kind === ',') return '';
    const t = this.next();
    if (t.kind !== 'ident') throw new SelectorSyntaxError(`found '${t.text}', expected: identifier`);
    return t.text;
  }

  /** `(a,b)`; empty slots (`()`, `(a,)`, `(,a)`) stand for the empty string, as in Kubernetes. */
  private valueSet(): string[] {
    const open = this.next();
    if (open.kind !== '(') throw new SelectorSyntaxError(`found '${open.text}', expected: '('`);
    const values: string[] = [];
    let expectValue = true;
    for (;;) {
      const t = this.next();
      if (t.kind === ')') {
        if (expectValue) values.push('');
        return values;
      }
      if (t.kind === ',') {
        if (expectValue) values.push('');
        expectValue = true;
      } else if (t.kind === 'ident' && expectValue) {
        values.push(t.text);
        expectValue = false;
      } else if (t.kind === 'ident' || t.kind === 'end') {
        throw new SelectorSyntaxError(`found '${t.text}', expected: ',' or ')'`);
      } else {
        throw new SelectorSyntaxError(`found '${t.text}', expected: ',', ')' or identifier`);
      }
    }
  }
}

function checkKey(key: string): void {
  const problems = qualifiedNameErrors(key);
  if (problems.length) throw new SelectorSyntaxError(`invalid label key ${JSON.stringify(key)}: ${problems.join('; ')}`);
}

function checkValue(key: string, value: string): void {
  const problems = labelValueErrors(value);
  if (problems.length) {
    throw new SelectorSyntaxError(`invalid label value: ${JSON.stringify(value)}: at key: ${JSON.stringify(key)}: ${problems.join('; ')}`);
  }
}

/** Builds a requirement with Kubernetes' NewRequirement checks. */
function makeRequirement(key: string, operator: LabelOperator, rawValues: string[]): LabelRequirement {
  checkKey(key);
  const values = [...new Set(rawValues)].sort();
  switch (operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) throw new SelectorSyntaxError("for 'in', 'notin' operators, values set can't be empty");
      break;
    case 'Equals':
    case 'NotEquals':
      if (values.length !== 1) throw new SelectorSyntaxError('exact-match compatibility requires one single value');
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length !== 0) throw new SelectorSyntaxError('values set must be empty for exists and does not exist');
      break;
    case 'GreaterThan':
    case 'LessThan':
      if (values.length !== 1) throw new SelectorSyntaxError("for 'Gt', 'Lt' operators, exactly one value is required");
      if (!/^[+-]?[0-9]+$/.test(values[0] ?? '')) throw new SelectorSyntaxError("for 'Gt', 'Lt' operators, the value must be an integer");
      break;
  }
  for (const v of values) checkValue(key, v);
  return { key, operator, values };
}

function byKey(a: LabelRequirement, b: LabelRequirement): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * Parses `?labelSelector=` syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`,
 * `!k`, `k>1`, `k<1`, comma-separated. Empty or blank input selects everything.
 * @throws ApiError BadRequest (400) describing the first syntax problem.
 */
export function parseLabelSelector(input: string): LabelSelector {
  try {
    const requirements = new LabelSelectorParser(tokenize(input)).parse();
    return { requirements: requirements.sort(byKey), matchesNothing: false };
  } catch (e) {
    if (e instanceof SelectorSyntaxError) throw errors.badRequest(e.message);
    throw e;
  }
}

function parseIntegerLabel(value: string): bigint | undefined {
  return /^[+-]?[0-9]+$/.test(value) ? BigInt(value) : undefined;
}

function requirementMatches(r: LabelRequirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case 'Equals':
    case 'In':
      return value !== undefined && r.values.includes(value);
    case 'NotEquals':
    case 'NotIn':
      return value === undefined || !r.values.includes(value);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'GreaterThan':
    case 'LessThan': {
      const actual = value === undefined ? undefined : parseIntegerLabel(value);
      const bound = parseIntegerLabel(r.values[0] ?? '');
      if (actual === undefined || bound === undefined) return false;
      return r.operator === 'GreaterThan' ? actual > bound : actual < bound;
    }
  }
}

/** True when `labels` (absent = no labels) satisfy every requirement. */
export function matchesLabels(sel: LabelSelector, labels?: Record<string, string> | null): boolean {
  if (sel.matchesNothing) return false;
  const actual = labels ?? {};
  return sel.requirements.every((r) => requirementMatches(r, actual));
}

const OBJECT_OPERATORS: Record<string, LabelOperator> = { In: 'In', NotIn: 'NotIn', Exists: 'Exists', DoesNotExist: 'DoesNotExist' };

/**
 * Converts a spec selector object to a LabelSelector. Like Kubernetes, an absent selector
 * (null/undefined) selects nothing while an empty one (`{}`) selects everything.
 * @throws ApiError BadRequest (400) for an unknown operator or invalid key/values.
 */
export function labelSelectorFromObject(sel: LabelSelectorObject | null | undefined): LabelSelector {
  if (sel === null || sel === undefined) return nothingSelector();
  try {
    const requirements: LabelRequirement[] = [];
    for (const [k, v] of Object.entries(sel.matchLabels ?? {})) requirements.push(makeRequirement(k, 'Equals', [v]));
    for (const expr of sel.matchExpressions ?? []) {
      const operator = OBJECT_OPERATORS[expr.operator];
      if (!operator) throw new SelectorSyntaxError(`${JSON.stringify(expr.operator)} is not a valid label selector operator`);
      requirements.push(makeRequirement(expr.key, operator, expr.values ?? []));
    }
    return { requirements: requirements.sort(byKey), matchesNothing: false };
  } catch (e) {
    if (e instanceof SelectorSyntaxError) throw errors.badRequest(e.message);
    throw e;
  }
}

function requirementToString(r: LabelRequirement): string {
  const list = r.values.join(',');
  switch (r.operator) {
    case 'Equals':
      return `${r.key}=${list}`;
    case 'NotEquals':
      return `${r.key}!=${list}`;
    case 'In':
      return `${r.key} in (${list})`;
    case 'NotIn':
      return `${r.key} notin (${list})`;
    case 'Exists':
      return r.key;
    case 'DoesNotExist':
      return `!${r.key}`;
    case 'GreaterThan':
      return `${r.key}>${list}`;
    case 'LessThan':
      return `${r.key}<${list}`;
  }
}

/**
 * The selector in query-string syntax, requirements sorted by key (as Kubernetes prints them).
 * A "nothing" selector has no string form that parses back; it prints as ''.
 */
export function labelSelectorToString(sel: LabelSelector): string {
  return sel.requirements.map(requirementToString).join(',');
}

// ---------------------------------------------------------------- field selectors

export type FieldOperator = 'Equals' | 'NotEquals';

export interface FieldRequirement {
  field: string;
  operator: FieldOperator;
  value: string;
}

/** All requirements must hold. */
export interface FieldSelector {
  requirements: FieldRequirement[];
}

/** Splits on commas that are not backslash-escaped, keeping escapes for unescapeFieldValue. */
function splitFieldTerms(input: string): string[] {
  const terms: string[] = [];
  let current = '';
  let escaped = false;
  for (const ch of input) {
    if (escaped) {
      current += ch;
      escaped = false;
    } else if (ch === '\\') {
      current += ch;
      escaped = true;
    } else if (ch === ',') {
      terms.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  terms.push(current);
  return terms;
}

/** Values may contain `,` `=` `\` only backslash-escaped, so a term splits unambiguously. */
function unescapeFieldValue(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] ?? '';
    if (ch === '\\') {
      const nextCh = raw[i + 1];
      if (nextCh !== '\\' && nextCh !== ',' && nextCh !== '=') {
        throw errors.badRequest(`invalid field selector: invalid escape sequence: \\${nextCh ?? ''}`);
      }
      out += nextCh;
      i++;
    } else if (ch === '=' || ch === ',') {
      throw errors.badRequest(`invalid field selector: unescaped character in value: ${ch}`);
    } else {
      out += ch;
    }
  }
  return out;
}

/** Escapes a value for use on the right of `=` in a field selector. */
export function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (c) => `\\${c}`);
}

const FIELD_OPERATORS: Array<[string, FieldOperator]> = [
  ['!=', 'NotEquals'],
  ['==', 'Equals'],
  ['=', 'Equals'],
];

/**
 * Parses `?fieldSelector=`: `f=v`, `f==v`, `f!=v` joined by commas (values backslash-escaped).
 * Empty terms are skipped; empty input selects everything.
 * @throws ApiError BadRequest (400) for a term without an operator or a badly escaped value.
 */
export function parseFieldSelector(input: string): FieldSelector {
  const requirements: FieldRequirement[] = [];
  for (const term of splitFieldTerms(input)) {
    if (term === '') continue;
    const split = FIELD_OPERATORS.map(([symbol, operator]) => ({ at: term.indexOf(symbol), symbol, operator })).find((s) => s.at >= 0);
    if (!split) throw errors.badRequest(`invalid selector: '${input}'; can't understand '${term}'`);
    requirements.push({
      field: term.slice(0, split.at),
      operator: split.operator,
      value: unescapeFieldValue(term.slice(split.at + split.symbol.length)),
    });
  }
  requirements.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  return { requirements };
}

/** True when every requirement holds; a missing field reads as '' (so `f=` matches it). */
export function matchesFields(sel: FieldSelector, fields: Record<string, string>): boolean {
  return sel.requirements.every((r) => {
    const actual = Object.prototype.hasOwnProperty.call(fields, r.field) ? fields[r.field] ?? '' : '';
    return r.operator === 'Equals' ? actual === r.value : actual !== r.value;
  });
}

/** The requirements, for callers that need to inspect which fields are used. */
export function fieldSelectorRequirements(sel: FieldSelector): readonly FieldRequirement[] {
  return sel.requirements;
}

/** The selector in query-string syntax, values escaped. */
export function fieldSelectorToString(sel: FieldSelector): string {
  return sel.requirements.map((r) => `${r.field}${r.operator === 'Equals' ? '=' : '!='}${escapeFieldValue(r.value)}`).join(',');
}

/** Every kind supports selecting on these, as in Kubernetes. */
export const ALWAYS_SUPPORTED_FIELDS = ['metadata.name', 'metadata.namespace'] as const;

/**
 * Rejects selectors on fields the kind cannot filter by, with kube-apiserver's 400 wording
 * (`field label not supported: xyz`). metadata.name and metadata.namespace are always allowed.
 * `kind` is accepted for the caller's context; Kubernetes' message does not name it.
 * @throws ApiError BadRequest (400)
 */
export function assertFieldsSupported(sel: FieldSelector, supported: readonly string[], kind: string): void {
  void kind;
  for (const r of sel.requirements) {
    if (!supported.includes(r.field) && !(ALWAYS_SUPPORTED_FIELDS as readonly string[]).includes(r.field)) {
      throw errors.badRequest(`field label not supported: ${r.field}`);
    }
  }
}
