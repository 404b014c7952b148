/**
 * Field ownership for server-side apply: which manager set which field, kept in
 * metadata.managedFields in Kubernetes' FieldsV1 form.
 *
 * A field path is a list of segments: `f:<name>` for a map key, `k:<json>` for an item of a list
 * merged by key (containers by name, …), `v:<json>` for a member of a set-like list (finalizers).
 * Lists without merge metadata are atomic: the list is one field. Item markers (`k:`/`v:`) are
 * members too, which is how an applier owns "this container exists".
 */
import { ApiError } from '../api/errors.js';
import { applyStrategicMergePatch, type PatchSchema } from '../api/patch.js';
import { objectFields, type KubeObject } from '../api/types.js';

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion?: string;
  time?: string;
  fieldsType: 'FieldsV1';
  fieldsV1: Record<string, unknown>;
  subresource?: string;
}

type Segments = string[];
const key = (s: Segments) => JSON.stringify(s);
const unkey = (k: string) => JSON.parse(k) as Segments;

/** Fields the server owns or that identify the object: never part of anyone's field set. */
const IGNORED_META = new Set(['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'managedFields', 'selfLink']);

/** Every field path an object sets (status excluded: it is owned through /status). */
export function fieldSet(obj: KubeObject, schema: PatchSchema): Set<string> {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'status') continue;
    if (k === 'metadata') {
      for (const [mk, mv] of Object.entries((v ?? {}) as Record<string, unknown>)) {
        if (IGNORED_META.has(mk)) continue;
        walk(mv, ['f:metadata', `f:${mk}`], ['metadata', mk], schema, out);
      }
      continue;
    }
    walk(v, [`f:${k}`], [k], schema, out);
  }
  return out;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function walk(v: unknown, segs: Segments, names: string[], schema: PatchSchema, out: Set<string>): void {
  if (isMap(v)) {
    const entries = Object.entries(v);
    if (!entries.length) out.add(key(segs));
    for (const [k, child] of entries) walk(child, [...segs, `f:${k}`], [...names, k], schema, out);
    return;
  }
  if (Array.isArray(v)) {
    const meta = schema(names);
    if (meta?.mergeKey) {
      for (const item of v) {
        if (!isMap(item)) continue;
        const itemSegs = [...segs, `k:${JSON.stringify({ [meta.mergeKey]: item[meta.mergeKey] })}`];
        out.add(key(itemSegs));
        for (const [k, child] of Object.entries(item)) walk(child, [...itemSegs, `f:${k}`], [...names, k], schema, out);
      }
      return;
    }
    if (meta?.strategy === 'merge') {
      for (const item of v) out.add(key([...segs, `v:${JSON.stringify(item)}`]));
      return;
    }
  }
  out.add(key(segs));
}

/** The value at a path, or undefined. */
function valueAt(obj: unknown, segs: Segments): unknown {
  let cur: unknown = obj;
  for (const s of segs) {
    if (s.startsWith('f:')) {
      if (!isMap(cur)) return undefined;
      cur = cur[s.slice(2)];
    } else if (s.startsWith('k:')) {
      if (!Array.isArray(cur)) return undefined;
      const want = JSON.parse(s.slice(2)) as Record<string, unknown>;
      const [k, val] = Object.entries(want)[0]!;
      cur = cur.find((item) => isMap(item) && JSON.stringify(item[k]) === JSON.stringify(val));
    } else if (s.startsWith('v:')) {
      if (!Array.isArray(cur)) return undefined;
      const want = s.slice(2);
      cur = cur.some((item) => JSON.stringify(item) === want) ? JSON.parse(want) : undefined;
    }
  }
  return cur;
}

/** Remove the field at a path from obj (in place). */
function removeAt(obj: unknown, segs: Segments): void {
  const parent = valueAt(obj, segs.slice(0, -1));
  const last = segs[segs.length - 1]!;
  if (last.startsWith('f:') && isMap(parent)) delete parent[last.slice(2)];
  else if (Array.isArray(parent)) {
    const idx = parent.findIndex((item) => {
      if (last.startsWith('v:')) return JSON.stringify(item) === last.slice(2);
      const [k, val] = Object.entries(JSON.parse(last.slice(2)) as Record<string, unknown>)[0]!;
      return isMap(item) && JSON.stringify(item[k]) === JSON.stringify(val);
    });
    if (idx >= 0) parent.splice(idx, 1);
  }
}

// ---------- FieldsV1 <-> sets ----------

export function toFieldsV1(set: Set<string>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const k of [...set].sort()) {
    let node = root;
    for (const s of unkey(k)) node = (node[s] ??= {}) as Record<string, unknown>;
    node['.'] = {};
  }
  // Map fields and scalars are leaves `{}`; only list items keep the "." self marker, as FieldsV1 does.
  const tidy = (node: Record<string, unknown>, isItem: boolean): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(node)) {
      if (k === '.') continue;
      out[k] = tidy(child as Record<string, unknown>, k.startsWith('k:') || k.startsWith('v:'));
    }
    if (isItem && '.' in node && Object.keys(out).length) out['.'] = {};
    return out;
  };
  return tidy(root, false);
}

export function fromFieldsV1(tree: Record<string, unknown>): Set<string> {
  const out = new Set<string>();
  const visit = (node: Record<string, unknown>, segs: Segments) => {
    const children = Object.keys(node).filter((k) => k !== '.');
    if ((!children.length || '.' in node) && segs.length) out.add(key(segs));
    for (const k of children) visit(node[k] as Record<string, unknown>, [...segs, k]);
  };
  visit(tree ?? {}, []);
  return out;
}

// ---------- apply and update ----------

export interface ApplyResult {
  object: KubeObject;
  managedFields: ManagedFieldsEntry[];
}

export interface Conflict {
  manager: string;
  field: string;
}

function entriesOf(obj: KubeObject): ManagedFieldsEntry[] {
  return Array.isArray(obj.metadata.managedFields) ? (structuredClone(obj.metadata.managedFields) as ManagedFieldsEntry[]) : [];
}

/** `.spec.replicas`, `.spec.containers[name="web"].image` — the way kube-apiserver names fields in conflicts. */
export function describePath(k: string): string {
  return unkey(k)
    .map((s) => (s.startsWith('f:') ? `.${s.slice(2)}` : s.startsWith('k:') ? `[${Object.entries(JSON.parse(s.slice(2)) as object).map(([a, b]) => `${a}=${JSON.stringify(b)}`).join(',')}]` : `[=${s.slice(2)}]`))
    .join('');
}

/**
 * Server-side apply of `applied` by `manager` onto `live` (undefined on create). Conflicts — a
 * field the config sets to a different value than another manager left it — fail with 409 unless
 * `force`, which takes the fields over. Fields this manager applied before and now omits are
 * removed when no one else owns them. Returns the merged object and its new managedFields.
 */
export function serverSideApply(o: {
  live: KubeObject | undefined;
  applied: KubeObject;
  manager: string;
  force: boolean;
  schema: PatchSchema;
  apiVersion: string;
  now: string;
}): ApplyResult {
  const appliedSet = fieldSet(o.applied, o.schema);
  const entries = o.live ? entriesOf(o.live) : [];
  const mine = entries.find((e) => e.manager === o.manager && e.operation === 'Apply');
  const previous = mine ? fromFieldsV1(mine.fieldsV1) : new Set<string>();

  const conflicts: Conflict[] = [];
  let tookFields = false;
  if (o.live) {
    for (const e of entries) {
      if (e.manager === o.manager && e.operation === 'Apply') continue;
      const theirs = fromFieldsV1(e.fieldsV1);
      for (const f of appliedSet) {
        if (!theirs.has(f)) continue;
        const segs = unkey(f);
        if (JSON.stringify(valueAt(o.live, segs)) === JSON.stringify(valueAt(o.applied, segs))) continue;
        if (o.force) {
          theirs.delete(f);
          tookFields = true;
        } else conflicts.push({ manager: e.manager, field: describePath(f) });
      }
      if (o.force) e.fieldsV1 = toFieldsV1(theirs);
    }
  }
  if (conflicts.length) {
    const msg = conflicts.map((c) => `conflict with "${c.manager}": ${c.field}`).join('\n- ');
    throw new ApiError('Conflict', `Apply failed with ${conflicts.length} conflict${conflicts.length > 1 ? 's' : ''}: ${conflicts.length > 1 ? '\n- ' : ''}${msg}`, {
      causes: conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with "${c.manager}"`, field: c.field })),
    });
  }

  const base = o.live ? structuredClone(o.live) : ({ metadata: {} } as KubeObject);
  const merged = applyStrategicMergePatch(base, stripServerFields(o.applied), o.schema) as KubeObject;
  // Drop what this manager applied before but no longer does — unless someone else still owns it.
  const others = new Set<string>();
  for (const e of entries) if (!(e.manager === o.manager && e.operation === 'Apply')) for (const f of fromFieldsV1(e.fieldsV1)) others.add(f);
  const dropped = [...previous].filter((f) => !appliedSet.has(f) && ![...others].some((g) => g === f || g.startsWith(f.slice(0, -1) + ',')));
  // Deepest first, so items go before the lists that hold them.
  for (const f of dropped.sort((a, b) => unkey(b).length - unkey(a).length)) removeAt(merged, unkey(f));

  // An apply that changes neither the object nor what anyone manages is no write at all, as
  // kube-apiserver's field manager keeps the entry's time then: re-applying the same configuration
  // makes no new revision (Ansible's `apply` reports "changed" otherwise).
  if (o.live && mine && !tookFields && mine.apiVersion === o.apiVersion && sameFields(previous, appliedSet) && sameContent(merged, o.live)) {
    return { object: structuredClone(o.live), managedFields: entriesOf(o.live) };
  }
  const next = entries.filter((e) => !(e.manager === o.manager && e.operation === 'Apply') && Object.keys(e.fieldsV1).length);
  next.push({ manager: o.manager, operation: 'Apply', apiVersion: o.apiVersion, time: o.now, fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(appliedSet) });
  merged.metadata.managedFields = next;
  return { object: merged, managedFields: next };
}

function sameFields(a: Set<string>, b: Set<string>): boolean {
  return a.size === b.size && [...a].every((f) => b.has(f));
}

/** Two objects alike but for their managedFields, whatever the order of their keys. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  const canonical = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(canonical);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
    }
    return value;
  };
  const withoutManagedFields = (o: KubeObject) => ({ ...o, metadata: { ...o.metadata, managedFields: undefined } });
  return JSON.stringify(canonical(withoutManagedFields(a))) === JSON.stringify(canonical(withoutManagedFields(b)));
}

function stripServerFields(obj: KubeObject): KubeObject {
  const copy = structuredClone(obj);
  delete objectFields(copy).status;
  if (copy.metadata) delete copy.metadata.managedFields;
  return copy;
}

/**
 * Record an ordinary write (PUT, PATCH, create) by `manager`: the fields whose value it changed
 * become its own (operation Update) and stop being anyone else's.
 */
export function recordUpdate(o: { old: KubeObject | undefined; next: KubeObject; manager: string; schema: PatchSchema; apiVersion: string; now: string }): ManagedFieldsEntry[] {
  const entries = o.old ? entriesOf(o.old) : [];
  const after = fieldSet(o.next, o.schema);
  const before = o.old ? fieldSet(o.old, o.schema) : new Set<string>();
  const changed = new Set<string>();
  for (const f of after) if (!before.has(f) || JSON.stringify(valueAt(o.old, unkey(f))) !== JSON.stringify(valueAt(o.next, unkey(f)))) changed.add(f);
  const removed = [...before].filter((f) => !after.has(f));
  if (!changed.size && !removed.length) return entries;
  for (const e of entries) {
    const set = fromFieldsV1(e.fieldsV1);
    for (const f of [...changed, ...removed]) set.delete(f);
    e.fieldsV1 = toFieldsV1(set);
  }
  let mine = entries.find((e) => e.manager === o.manager && e.operation === 'Update');
  if (!mine) {
    mine = { manager: o.manager, operation: 'Update', apiVersion: o.apiVersion, time: o.now, fieldsType: 'FieldsV1', fieldsV1: {} };
    entries.push(mine);
  }
  const set = fromFieldsV1(mine.fieldsV1);
  for (const f of changed) set.add(f);
  mine.fieldsV1 = toFieldsV1(set);
  mine.time = o.now;
  return entries.filter((e) => Object.keys(e.fieldsV1).length);
}
