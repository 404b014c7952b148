/**
 * JSON Patch (RFC 6902, `application/json-patch+json`). Pure: works on a private copy of the
 * document, so a failing operation leaves the caller's object untouched (patches are atomic).
 */
import { errors } from '../errors.js';
import { assertPatchedDepth, badPatch, patchRejected } from './patch-errors.js';
import {
  approximateJsonSize,
  cloneJson,
  getOwn,
  isJsonObject,
  jsonEqual,
  setOwn,
  type JsonObject,
} from './json-value.js';

/** kube-apiserver refuses longer patches with 413 (maxJSONPatchOperations). */
export const MAX_JSON_PATCH_OPERATIONS = 10000;

/**
 * `copy` can double the document per operation; cap the bytes all copies may add together so
 * 10000 copies cannot grow a 3 MiB body exponentially.
 */
export const MAX_JSON_PATCH_COPY_BYTES = 10 * 1024 * 1024;

export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

/**
 * Applies RFC 6902 operations to `doc` and returns the new document; neither input is modified.
 * `ops` is the decoded request body: not an array of objects → 400; more than
 * MAX_JSON_PATCH_OPERATIONS → 413; an operation that cannot apply → 422 Invalid.
 */
export function applyJsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops) || !ops.every(isJsonObject)) {
    throw badPatch('a JSON patch must be a JSON array of operation objects');
  }
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw errors.tooLarge(
      `Request entity too large: The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
    );
  }
  const state: PatchState = { root: cloneJson(doc), copyBytesLeft: MAX_JSON_PATCH_COPY_BYTES };
  ops.forEach((op, index) => applyOperation(state, op, index));
  assertPatchedDepth(state.root);
  return state.root;
}

interface PatchState {
  root: unknown;
  copyBytesLeft: number;
}

function applyOperation(state: PatchState, op: JsonObject, index: number): void {
  const name = getOwn(op, 'op');
  const path = getOwn(op, 'path');
  const fail = (why: string): Error =>
    patchRejected(`JSON patch operation ${index} (${JSON.stringify(name)} at ${JSON.stringify(path)}): ${why}`);
  if (typeof name !== 'string') throw fail('"op" must be a string');
  if (typeof path !== 'string') throw fail('"path" must be a string');
  const target = parsePointer(path, fail);
  const value = (): unknown => {
    if (!Object.hasOwn(op, 'value')) throw fail('the operation needs a "value"');
    return cloneJson(op.value);
  };
  const source = (): string[] => {
    const from = getOwn(op, 'from');
    if (typeof from !== 'string') throw fail('the operation needs a "from" string');
    return parsePointer(from, fail);
  };

  switch (name) {
    case 'add':
      add(state, target, value(), fail);
      return;
    case 'remove':
      remove(state, target, fail);
      return;
    case 'replace':
      replace(state, target, value(), fail);
      return;
    case 'move': {
      const from = source();
      if (from.length < target.length && from.every((token, i) => token === target[i])) {
        throw fail('a value cannot be moved into one of its own children');
      }
      if (from.length === target.length && from.every((token, i) => token === target[i])) {
        get(state, from, fail); // RFC 6902: must exist, otherwise a no-op
        return;
      }
      const moved = remove(state, from, fail);
      add(state, target, moved, fail);
      return;
    }
    case 'copy': {
      const copied = get(state, source(), fail);
      state.copyBytesLeft -= approximateJsonSize(copied, state.copyBytesLeft);
      if (state.copyBytesLeft < 0) {
        throw fail(`copy operations may add at most ${MAX_JSON_PATCH_COPY_BYTES} bytes in total`);
      }
      add(state, target, cloneJson(copied), fail);
      return;
    }
    case 'test': {
      const expected = value();
      const actual = get(state, target, fail);
      if (!jsonEqual(actual, expected)) throw fail(`test failed: the value is ${JSON.stringify(actual)}`);
      return;
    }
    default:
      throw fail('unknown operation, expected add, remove, replace, move, copy or test');
  }
}

type Fail = (why: string) => Error;

/** RFC 6901 pointer → reference tokens (`~1` is `/`, `~0` is `~`). */
function parsePointer(pointer: string, fail: Fail): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw fail(`JSON pointer ${JSON.stringify(pointer)} must start with "/"`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => {
      if (/~(?![01])/.test(token)) throw fail(`JSON pointer ${JSON.stringify(pointer)} has an invalid ~ escape`);
      return token.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

/** Array index token: `0` or a number without leading zeros. */
function arrayIndex(token: string, length: number, allowEnd: boolean, fail: Fail): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw fail(`${JSON.stringify(token)} is not a valid array index`);
  const index = Number(token);
  if (index > (allowEnd ? length : length - 1)) throw fail(`array index ${index} is out of bounds (length ${length})`);
  return index;
}

function describe(tokens: string[]): string {
  return tokens.length === 0 ? 'the document root' : `/${tokens.map((t) => t.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

/** The container holding the last token; every step of the way must exist. */
function parentOf(state: PatchState, tokens: string[], fail: Fail): unknown {
  return get(state, tokens.slice(0, -1), fail);
}

function get(state: PatchState, tokens: string[], fail: Fail): unknown {
  let node = state.root;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length, false, fail)];
    else if (isJsonObject(node) && Object.hasOwn(node, token)) node = node[token];
    else throw fail(`${describe(tokens.slice(0, i + 1))} does not exist`);
  }
  return node;
}

function add(state: PatchState, tokens: string[], value: unknown, fail: Fail): void {
  const last = tokens[tokens.length - 1];
  if (last === undefined) {
    state.root = value;
    return;
  }
  const parent = parentOf(state, tokens, fail);
  if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true, fail), 0, value);
  else if (isJsonObject(parent)) setOwn(parent, last, value);
  else throw fail(`cannot add a member to ${describe(tokens.slice(0, -1))}, which is not an object or array`);
}

function remove(state: PatchState, tokens: string[], fail: Fail): unknown {
  const last = tokens[tokens.length - 1];
  if (last === undefined) throw fail('the document root cannot be removed');
  const parent = parentOf(state, tokens, fail);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(last, parent.length, false, fail), 1)[0];
  if (isJsonObject(parent) && Object.hasOwn(parent, last)) {
    const removed = parent[last];
    delete parent[last];
    return removed;
  }
  throw fail(`${describe(tokens)} does not exist`);
}

function replace(state: PatchState, tokens: string[], value: unknown, fail: Fail): void {
  const last = tokens[tokens.length - 1];
  if (last === undefined) {
    state.root = value;
    return;
  }
  const parent = parentOf(state, tokens, fail);
  if (Array.isArray(parent)) parent[arrayIndex(last, parent.length, false, fail)] = value;
  else if (isJsonObject(parent) && Object.hasOwn(parent, last)) setOwn(parent, last, value);
  else throw fail(`${describe(tokens)} does not exist`);
}
