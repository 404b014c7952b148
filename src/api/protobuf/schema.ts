/**
 * How Berth describes Kubernetes protobuf messages: per message, its JSON field names with the
 * field number and type Kubernetes assigned them. The tables themselves are generated from the
 * protobuf facts by scripts/gen-protobuf.ts (messages.ts reads them); this module defines their
 * notation and compiles them into number-indexed lookups for the decoder.
 *
 * Notation of one field: `jsonName: [fieldNumber, type, ...flags]`, where type is
 * - a scalar: `string`, `bytes` (base64 in JSON), `bool`, `int32`, `int64`, `uint32`, `uint64`,
 *   `double`, `float`;
 * - a special Kubernetes type with its own JSON form: `Time` and `MicroTime` (RFC 3339 strings),
 *   `Duration` (Go duration string), `Quantity` (string), `IntOrString` (number or string),
 *   `FieldsV1` (an embedded JSON object);
 * - the name of another message in the tables;
 * - `[]T` for a repeated T, or `map<T>` for a map from string keys to T.
 * Flags: `pointer` marks a field that Go holds by pointer, so a zero value on the wire is a real
 * value (`replicas: 0`, `optional: false`) and is kept; other scalar fields equal to their zero
 * value are omitted, as Go's JSON encoding (omitempty) would. `inline` merges the nested message's
 * fields into the parent object (Go's `json:",inline"` embedding, e.g. Volume's VolumeSource).
 */

/** Protobuf scalar types the tables use. */
export const SCALAR_TYPES = ['string', 'bytes', 'bool', 'int32', 'int64', 'uint32', 'uint64', 'double', 'float'] as const;
export type ScalarType = (typeof SCALAR_TYPES)[number];

/** Kubernetes types whose JSON form is not their message shape; decode.ts converts them. */
export const SPECIAL_TYPES = ['Time', 'MicroTime', 'Duration', 'Quantity', 'IntOrString', 'FieldsV1'] as const;
export type SpecialType = (typeof SPECIAL_TYPES)[number];

export type FieldFlag = 'pointer' | 'inline';

/** `[fieldNumber, type, ...flags]`, see the module comment. */
export type FieldDecl = readonly [number, string, ...FieldFlag[]];

/** Message name → JSON field name → declaration. */
export type MessageTable = Readonly<Record<string, Readonly<Record<string, FieldDecl>>>>;

/** What a field's value (or each element, for repeated and map fields) is. */
export type ValueType =
  | { kind: 'scalar'; scalar: ScalarType }
  | { kind: 'special'; special: SpecialType }
  | { kind: 'message'; message: string };

/** One field, ready for the decoder. */
export interface CompiledField {
  readonly jsonName: string;
  readonly number: number;
  readonly shape: 'single' | 'repeated' | 'map';
  readonly value: ValueType;
  readonly pointer: boolean;
  readonly inline: boolean;
}

/** One message: its fields by number. */
export interface CompiledMessage {
  readonly name: string;
  readonly fields: ReadonlyMap<number, CompiledField>;
}

/** All messages by name. */
export type CompiledSchema = ReadonlyMap<string, CompiledMessage>;

const SCALARS: ReadonlySet<string> = new Set(SCALAR_TYPES);
const SPECIALS: ReadonlySet<string> = new Set(SPECIAL_TYPES);

/**
 * Merges message tables and checks them: no message defined twice, no field number used twice in
 * a message, every referenced message defined, `inline` only on single message fields. Throws on
 * any mistake, so a bad table fails at startup (and in the unit tests), never on a request.
 */
export function compileSchema(tables: readonly MessageTable[]): CompiledSchema {
  const declared = new Map<string, Readonly<Record<string, FieldDecl>>>();
  for (const table of tables) {
    for (const [name, fields] of Object.entries(table)) {
      if (declared.has(name)) throw new Error(`protobuf schema: message ${name} is defined twice`);
      declared.set(name, fields);
    }
  }
  const compiled = new Map<string, CompiledMessage>();
  for (const [name, decls] of declared) {
    const fields = new Map<number, CompiledField>();
    for (const [jsonName, decl] of Object.entries(decls)) {
      const [number, type, ...flags] = decl;
      const where = `${name}.${jsonName}`;
      if (!Number.isInteger(number) || number < 1) throw new Error(`protobuf schema: ${where} has an invalid field number`);
      if (fields.has(number)) throw new Error(`protobuf schema: ${where} reuses field number ${number}`);
      const field = compileField(jsonName, number, type, flags, where);
      if (field.value.kind === 'message' && !declared.has(field.value.message)) {
        throw new Error(`protobuf schema: ${where} refers to undefined message ${field.value.message}`);
      }
      fields.set(number, field);
    }
    compiled.set(name, { name, fields });
  }
  assertAcyclic(compiled);
  return compiled;
}

/**
 * Refuses message types that contain themselves: with none, decoding depth is bounded by the
 * schema, so hostile input cannot nest messages deeply.
 */
function assertAcyclic(schema: CompiledSchema): void {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, trail: string[]): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`protobuf schema: message cycle ${[...trail, name].join(' → ')}`);
    state.set(name, 'visiting');
    for (const field of schema.get(name)?.fields.values() ?? []) {
      if (field.value.kind === 'message') visit(field.value.message, [...trail, name]);
    }
    state.set(name, 'done');
  };
  for (const name of schema.keys()) visit(name, []);
}

function compileField(jsonName: string, number: number, type: string, flags: readonly FieldFlag[], where: string): CompiledField {
  let shape: CompiledField['shape'] = 'single';
  let element = type;
  if (type.startsWith('[]')) {
    shape = 'repeated';
    element = type.slice(2);
  } else if (type.startsWith('map<') && type.endsWith('>')) {
    shape = 'map';
    element = type.slice(4, -1);
  }
  const value: ValueType = SCALARS.has(element)
    ? { kind: 'scalar', scalar: element as ScalarType }
    : SPECIALS.has(element)
      ? { kind: 'special', special: element as SpecialType }
      : { kind: 'message', message: element };
  const inline = flags.includes('inline');
  if (inline && (shape !== 'single' || value.kind !== 'message')) {
    throw new Error(`protobuf schema: ${where} can only be inline if it is a single message`);
  }
  return { jsonName, number, shape, value, pointer: flags.includes('pointer'), inline };
}
