/**
 * Kubernetes strategic merge patch (`application/strategic-merge-patch+json`), the patch type
 * `kubectl apply` (client-side) and `kubectl patch` send by default. It is a merge patch whose lists
 * are schema-aware: lists of objects with a merge key merge item by item, primitive lists with
 * the `merge` strategy merge as sets, other lists are replaced. Directives:
 *   `$patch: replace|delete` (in a map or a list item), `$retainKeys`, `$setElementOrder/<list>`,
 *   `$deleteFromPrimitiveList/<list>`.
 * Ordering follows kube-apiserver: items named by the patch (or `$setElementOrder`) take the patch's
 * order and are interleaved with server-only items by their order on the server, so items new to
 * the list come first unless `$setElementOrder` places them (kubectl always sends it).
 *
 * Deliberate differences: values inserted where the original had nothing are themselves run
 * through the patch logic (so directives and nulls inside them are applied, not stored), lists
 * that replace are stored without the null members of their objects (kube-apiserver decodes such
 * a null into the Go field's zero value, which its serializer then omits), and malformed patches
 * are 400 where kube-apiserver sometimes answers 500.
 */
import { assertPatchedDepth, badPatch, patchRejected } from './patch-errors.js';
import { cloneJson, getOwn, isJsonObject, jsonTypeName, setOwn, withoutNullMembers, type JsonObject } from './json-value.js';
import { mergesLists, type PatchSchema } from './patch-schema.js';

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ELEMENT_ORDER = '$setElementOrder/';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList/';

/**
 * Returns `doc` with the strategic merge `patch` applied, using `schema` for list semantics.
 * Inputs are never modified. Malformed patch → 400; list of lists → 422 (as Kubernetes).
 */
export function applyStrategicMergePatch(doc: unknown, patch: unknown, schema: PatchSchema): unknown {
  if (!isJsonObject(patch)) {
    throw badPatch(`a strategic merge patch must be a JSON object, got ${jsonTypeName(patch)}`);
  }
  const base: JsonObject = isJsonObject(doc) ? cloneJson(doc) : {};
  const result = new StrategicMerge(schema).mergeMap(base, patch, []);
  assertPatchedDepth(result);
  return result;
}

type Key = unknown;

class StrategicMerge {
  constructor(private readonly schema: PatchSchema) {}

  /** `original` is owned (a private copy) and is updated in place; `patch` is only read. */
  mergeMap(original: JsonObject, patch: JsonObject, path: readonly string[]): JsonObject {
    if (Object.hasOwn(patch, DIRECTIVE)) return this.mapDirective(patch, path);
    const handled = new Set<string>();
    if (Object.hasOwn(patch, RETAIN_KEYS)) {
      applyRetainKeys(original, patch, path);
      handled.add(RETAIN_KEYS);
    }
    const keys = Object.keys(patch);
    for (const key of keys) {
      if (key.startsWith(SET_ELEMENT_ORDER)) this.setElementOrder(original, patch, key, path, handled);
    }
    for (const key of keys) {
      if (handled.has(key) || key.startsWith(SET_ELEMENT_ORDER) || key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) continue;
      this.mergeField(original, key, patch[key], [...path, key]);
    }
    // Deletions run after additions so a patch adding and removing list values is deterministic.
    for (const key of keys) {
      if (key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) deleteFromPrimitiveList(original, key, patch[key], path);
    }
    return original;
  }

  private mergeField(original: JsonObject, key: string, value: unknown, path: readonly string[]): void {
    if (value === null) {
      if (Object.hasOwn(original, key)) delete original[key];
      return;
    }
    const current = getOwn(original, key);
    if (isJsonObject(current) && isJsonObject(value)) {
      const replace = this.schema(path)?.strategy === 'replace';
      setOwn(original, key, replace ? this.fresh(value, path) : this.mergeMap(current, value, path));
    } else if (Array.isArray(current) && Array.isArray(value)) {
      setOwn(original, key, this.mergeList(current, value, path));
    } else {
      setOwn(original, key, this.fresh(value, path));
    }
  }

  /** A patch value with nothing to merge into: apply it to an empty value so directives resolve. */
  private fresh(value: unknown, path: readonly string[]): unknown {
    if (isJsonObject(value)) return this.mergeMap({}, value, path);
    if (Array.isArray(value)) return this.mergeList([], value, path);
    return value;
  }

  private mapDirective(patch: JsonObject, path: readonly string[]): JsonObject {
    const directive = patch[DIRECTIVE];
    if (directive === 'replace') {
      const rest: JsonObject = {};
      for (const key of Object.keys(patch)) if (key !== DIRECTIVE) setOwn(rest, key, patch[key]);
      return this.mergeMap({}, rest, path);
    }
    // Kubernetes leaves an empty map behind rather than removing the field.
    if (directive === 'delete') return {};
    throw badPatch(`unknown patch type ${JSON.stringify(directive)} in the map at ${fieldPath(path)}`);
  }

  /** `original` belongs to the working copy; the returned list is new (its items may be reused). */
  mergeList(original: readonly unknown[], patch: readonly unknown[], path: readonly string[]): unknown[] {
    const meta = this.schema(path);
    if (!mergesLists(meta)) return withoutNullMembers([...patch]);
    if (original.length === 0 && patch.length === 0) return [];
    if (elementKind(original, patch, path) === 'scalar') {
      const merged = [...new Set([...original, ...patch])];
      return orderItems({ merged, patchOrder: patch, serverOrder: original, keyOf: (v) => v });
    }

    const mergeKey = meta?.mergeKey;
    if (!mergeKey) throw badPatch(`cannot merge lists without a merge key (at ${fieldPath(path)})`);
    const keyOf = (item: unknown): Key => mergeKeyOf(item, mergeKey);
    let current = [...original];
    const items: JsonObject[] = [];
    let replace = false;
    for (const item of patch as JsonObject[]) {
      if (!Object.hasOwn(item, DIRECTIVE)) {
        items.push(item);
        continue;
      }
      const directive = item[DIRECTIVE];
      if (directive === 'delete') {
        const doomed = keyOf(item);
        current = current.filter((existing) => !(isJsonObject(existing) && getOwn(existing, mergeKey) === doomed));
      } else if (directive === 'replace') {
        replace = true;
      } else if (directive === 'merge') {
        throw badPatch(`merging lists cannot yet be specified in the patch (at ${fieldPath(path)})`);
      } else {
        throw badPatch(`unknown patch type ${JSON.stringify(directive)} in the list at ${fieldPath(path)}`);
      }
    }
    if (replace) return items.map((item) => this.mergeMap({}, item, path));

    const serverOrder = current;
    const merged = [...current];
    const position = new Map<Key, number>();
    merged.forEach((existing, i) => {
      const key = keyOf(existing);
      if (!position.has(key)) position.set(key, i);
    });
    for (const item of items) {
      const key = keyOf(item);
      const at = position.get(key);
      if (at === undefined) {
        position.set(key, merged.length);
        merged.push(this.mergeMap({}, item, path));
      } else {
        merged[at] = this.mergeMap(merged[at] as JsonObject, item, path);
      }
    }
    return orderItems({ merged, patchOrder: items, serverOrder, keyOf });
  }

  private setElementOrder(
    original: JsonObject,
    patch: JsonObject,
    directiveKey: string,
    path: readonly string[],
    handled: Set<string>,
  ): void {
    handled.add(directiveKey);
    const order = patch[directiveKey];
    if (!Array.isArray(order)) throw badPatch(`invalid patch format of setElementOrder list (${directiveKey})`);
    const field = directiveKey.slice(SET_ELEMENT_ORDER.length);
    const listPath = [...path, field];
    const patchList = getOwn(patch, field);
    if (patchList === null) return; // the list is being deleted; nothing to order
    if (patchList !== undefined && !Array.isArray(patchList)) {
      throw badPatch(`${fieldPath(listPath)} must be a list when ${directiveKey} is given`);
    }
    const current = getOwn(original, field);
    const serverList = Array.isArray(current) ? current : undefined;
    if (!serverList && !patchList) return;
    handled.add(field);

    const mergeKey = this.schema(listPath)?.mergeKey;
    const keyOf = mergeKey ? (item: unknown): Key => mergeKeyOf(item, mergeKey) : (item: unknown): Key => item;
    if (patchList) validateAgainstOrder(patchList, order, keyOf, mergeKey !== undefined, listPath);
    const merged = patchList ? this.mergeList(serverList ?? [], patchList, listPath) : serverList!;
    setOwn(original, field, orderItems({ merged, patchOrder: order, serverOrder: serverList ?? [], keyOf }));
  }
}

function applyRetainKeys(original: JsonObject, patch: JsonObject, path: readonly string[]): void {
  const list = patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw badPatch(`invalid patch format of retainKeys (at ${fieldPath(path)})`);
  const retained = new Set<unknown>(list);
  for (const key of Object.keys(patch)) {
    if (key === RETAIN_KEYS || patch[key] === null) continue;
    if (key.startsWith(SET_ELEMENT_ORDER) || key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) continue;
    if (!retained.has(key)) {
      throw badPatch(`invalid patch format of retainKeys: ${fieldPath([...path, key])} is not listed in $retainKeys`);
    }
  }
  for (const key of Object.keys(original)) if (!retained.has(key)) delete original[key];
}

function deleteFromPrimitiveList(original: JsonObject, directiveKey: string, values: unknown, path: readonly string[]): void {
  if (!Array.isArray(values)) {
    throw badPatch(`invalid patch format of primitive list (${fieldPath([...path, directiveKey])})`);
  }
  const field = directiveKey.slice(DELETE_FROM_PRIMITIVE_LIST.length);
  const current = getOwn(original, field);
  if (!Array.isArray(current)) return;
  const doomed = new Set<unknown>(values);
  setOwn(original, field, current.filter((v) => !doomed.has(v)));
}

/** Items of a merging list must be all objects or all scalars; lists of lists are unsupported. */
function elementKind(original: readonly unknown[], patch: readonly unknown[], path: readonly string[]): 'object' | 'scalar' {
  let kind: 'object' | 'scalar' | undefined;
  for (const item of [...original, ...patch]) {
    if (Array.isArray(item)) throw patchRejected(`lists of lists are not supported (at ${fieldPath(path)})`);
    const itemKind = isJsonObject(item) ? 'object' : 'scalar';
    if (kind !== undefined && kind !== itemKind) {
      throw badPatch(`list element types are not identical (at ${fieldPath(path)})`);
    }
    kind = itemKind;
  }
  return kind ?? 'scalar';
}

function mergeKeyOf(item: unknown, mergeKey: string): Key {
  if (!isJsonObject(item) || !Object.hasOwn(item, mergeKey)) {
    throw badPatch(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`);
  }
  return item[mergeKey];
}

/**
 * kube-apiserver's check that the patch list follows the `$setElementOrder` order (deleted items and
 * directive-only items aside).
 */
function validateAgainstOrder(
  patchList: readonly unknown[],
  order: readonly unknown[],
  keyOf: (item: unknown) => Key,
  byMergeKey: boolean,
  path: readonly string[],
): void {
  const listed = patchList.filter((item) => !(byMergeKey && isJsonObject(item) && Object.hasOwn(item, DIRECTIVE)));
  let p = 0;
  for (let o = 0; p < listed.length && o < order.length; o++) {
    if (keyOf(listed[p]) === keyOf(order[o])) p++;
  }
  if (p < listed.length) {
    throw badPatch(`the order of the patch list at ${fieldPath(path)} does not match its $setElementOrder list`);
  }
}

interface OrderInput {
  /** every item of the resulting list */
  merged: readonly unknown[];
  /** the order the patch asks for (patch list or $setElementOrder) */
  patchOrder: readonly unknown[];
  /** the list as it was on the server, for items the patch did not mention */
  serverOrder: readonly unknown[];
  keyOf: (item: unknown) => Key;
}

/**
 * kube-apiserver's ordering: items the patch names follow the patch order; server-only items keep
 * their server order; the two runs interleave, a server-only item going first only when it
 * preceded the next patch item on the server.
 */
function orderItems({ merged, patchOrder, serverOrder, keyOf }: OrderInput): unknown[] {
  const patchIndex = firstIndexByKey(patchOrder, keyOf);
  const serverIndex = firstIndexByKey(serverOrder, keyOf);
  const named: unknown[] = [];
  const serverOnly: unknown[] = [];
  for (const item of merged) (patchIndex.has(keyOf(item)) ? named : serverOnly).push(item);
  sortByIndex(named, patchIndex, keyOf);
  sortByIndex(serverOnly, serverIndex, keyOf);

  const out: unknown[] = [];
  let s = 0;
  let n = 0;
  while (s < serverOnly.length && n < named.length) {
    const serverPos = serverIndex.get(keyOf(serverOnly[s]));
    const namedPos = serverIndex.get(keyOf(named[n]));
    if (serverPos !== undefined && namedPos !== undefined && serverPos < namedPos) out.push(serverOnly[s++]);
    else out.push(named[n++]);
  }
  return [...out, ...serverOnly.slice(s), ...named.slice(n)];
}

function firstIndexByKey(list: readonly unknown[], keyOf: (item: unknown) => Key): Map<Key, number> {
  const index = new Map<Key, number>();
  list.forEach((item, i) => {
    const key = keyOf(item);
    if (!index.has(key)) index.set(key, i);
  });
  return index;
}

/** Stable sort by position in `index`; items missing from it keep their relative order at the end. */
function sortByIndex(items: unknown[], index: Map<Key, number>, keyOf: (item: unknown) => Key): void {
  const rank = (item: unknown): number => index.get(keyOf(item)) ?? Number.MAX_SAFE_INTEGER;
  items.sort((a, b) => rank(a) - rank(b));
}

function fieldPath(path: readonly string[]): string {
  return path.length === 0 ? 'the object root' : path.join('.');
}
