/**
 * Schema-driven conversion of protobuf message bytes into the JSON value Kubernetes' JSON encoding
 * gives the same object. Field numbers not in the schema are skipped (newer clients may send
 * fields this server does not know); anything malformed raises ProtobufDecodeError naming the
 * JSON path of the offending field.
 */
import { setOwn, isJsonObject, type JsonObject } from '../patch/json-value.js';
import { SPECIAL_FIELDS } from './messages.js';
import type { CompiledField, CompiledMessage, CompiledSchema, ScalarType, SpecialType } from './schema.js';
import { WIRE_TYPE, WireFormatError, readFields, readPacked, type WireField, type WireType } from './wire.js';

/** The bytes do not decode as the message the schema expects. */
export class ProtobufDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtobufDecodeError';
  }
}

/** Deepest JSON nesting accepted inside an embedded FieldsV1 document. */
const MAX_FIELDS_V1_DEPTH = 64;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes `bytes` as message `messageName` of `schema` into a fresh JSON object. `path` prefixes
 * error messages (e.g. the kind being decoded).
 */
export function decodeMessage(schema: CompiledSchema, messageName: string, bytes: Uint8Array, path = ''): JsonObject {
  const out: JsonObject = {};
  decodeInto(schema, messageOf(schema, messageName), bytes, out, path);
  return out;
}

function messageOf(schema: CompiledSchema, name: string): CompiledMessage {
  const message = schema.get(name);
  // compileSchema guarantees every reference resolves; this only guards direct callers.
  if (!message) throw new ProtobufDecodeError(`no schema for message ${name}`);
  return message;
}

/** Merges the fields in `bytes` into `out`, as protobuf merges a message seen more than once. */
function decodeInto(schema: CompiledSchema, message: CompiledMessage, bytes: Uint8Array, out: JsonObject, path: string): void {
  for (const wire of fieldsOf(bytes, path)) {
    const field = message.fields.get(wire.number);
    if (!field) continue;
    const fieldPath = field.inline ? path : join(path, field.jsonName);
    switch (field.shape) {
      case 'single':
        decodeSingle(schema, field, wire, out, fieldPath, path);
        break;
      case 'repeated':
        decodeRepeated(schema, field, wire, out, fieldPath);
        break;
      case 'map':
        decodeMapEntry(schema, field, wire, out, fieldPath);
        break;
    }
  }
}

function decodeSingle(schema: CompiledSchema, field: CompiledField, wire: WireField, out: JsonObject, fieldPath: string, parentPath: string): void {
  const { value: type, jsonName } = field;
  if (type.kind === 'message') {
    const bytes = lengthDelimited(wire, fieldPath);
    if (field.inline) {
      decodeInto(schema, messageOf(schema, type.message), bytes, out, parentPath);
      return;
    }
    const existing = Object.hasOwn(out, jsonName) ? out[jsonName] : undefined;
    const target = isJsonObject(existing) ? existing : {};
    decodeInto(schema, messageOf(schema, type.message), bytes, target, fieldPath);
    setOwn(out, jsonName, target);
    return;
  }
  const value = type.kind === 'special' ? decodeSpecial(type.special, lengthDelimited(wire, fieldPath), fieldPath) : decodeScalar(type.scalar, wire, fieldPath);
  // The last occurrence of a singular field wins; a zero value that Go would hold in a plain
  // (non-pointer) field is the same as unset, and its JSON encoding would omit it.
  if (value === undefined || (type.kind === 'scalar' && !field.pointer && isZero(value))) delete out[jsonName];
  else setOwn(out, jsonName, value);
}

function decodeRepeated(schema: CompiledSchema, field: CompiledField, wire: WireField, out: JsonObject, fieldPath: string): void {
  const list = listOf(out, field.jsonName);
  const type = field.value;
  const at = (): string => `${fieldPath}[${list.length}]`;
  if (type.kind === 'message') {
    list.push(decodeMessageValue(schema, type.message, lengthDelimited(wire, at()), at()));
  } else if (type.kind === 'special') {
    list.push(decodeSpecial(type.special, lengthDelimited(wire, at()), at()) ?? null);
  } else if (wire.wireType === WIRE_TYPE.lengthDelimited && isPackable(type.scalar)) {
    let elements: Array<bigint | Uint8Array>;
    try {
      elements = readPacked(wire.bytes, scalarWireType(type.scalar));
    } catch (e) {
      throw rewrap(e, at());
    }
    for (const element of elements) {
      list.push(element instanceof Uint8Array ? fixedScalar(type.scalar, element) : varintScalar(type.scalar, element, at()));
    }
  } else {
    list.push(decodeScalar(type.scalar, wire, at()));
  }
}

/** A map field is a repeated entry message: key = 1, value = 2. A missing part is its zero value. */
function decodeMapEntry(schema: CompiledSchema, field: CompiledField, wire: WireField, out: JsonObject, fieldPath: string): void {
  const entryBytes = lengthDelimited(wire, fieldPath);
  let key = '';
  let valueWire: WireField | undefined;
  for (const part of fieldsOf(entryBytes, fieldPath)) {
    if (part.number === 1) key = decodeScalar('string', part, fieldPath) as string;
    else if (part.number === 2) valueWire = part;
  }
  const entryPath = `${fieldPath}[${JSON.stringify(key)}]`;
  const type = field.value;
  let value: unknown;
  if (type.kind === 'message') {
    value = decodeMessageValue(schema, type.message, valueWire ? lengthDelimited(valueWire, entryPath) : new Uint8Array(0), entryPath);
  } else if (type.kind === 'special') {
    value = decodeSpecial(type.special, valueWire ? lengthDelimited(valueWire, entryPath) : new Uint8Array(0), entryPath) ?? null;
  } else {
    value = valueWire ? decodeScalar(type.scalar, valueWire, entryPath) : zeroOf(type.scalar);
  }
  const existing = Object.hasOwn(out, field.jsonName) ? out[field.jsonName] : undefined;
  const map = isJsonObject(existing) ? existing : {};
  setOwn(map, key, value);
  setOwn(out, field.jsonName, map);
}

function decodeMessageValue(schema: CompiledSchema, name: string, bytes: Uint8Array, path: string): JsonObject {
  const out: JsonObject = {};
  decodeInto(schema, messageOf(schema, name), bytes, out, path);
  return out;
}

// ---------- scalars ----------

function decodeScalar(type: ScalarType, wire: WireField, path: string): string | number | boolean {
  switch (type) {
    case 'string':
      return utf8Text(lengthDelimited(wire, path), path);
    case 'bytes':
      return Buffer.from(lengthDelimited(wire, path)).toString('base64');
    case 'double':
      if (wire.wireType !== WIRE_TYPE.fixed64) throw wrongWireType(wire, path);
      return fixedScalar(type, wire.bytes);
    case 'float':
      if (wire.wireType !== WIRE_TYPE.fixed32) throw wrongWireType(wire, path);
      return fixedScalar(type, wire.bytes);
    default:
      if (wire.wireType !== WIRE_TYPE.varint) throw wrongWireType(wire, path);
      return varintScalar(type, wire.value, path);
  }
}

function varintScalar(type: ScalarType, raw: bigint, path: string): number | boolean {
  switch (type) {
    case 'bool':
      return raw !== 0n;
    case 'int32':
      return Number(BigInt.asIntN(32, raw));
    case 'uint32':
      return Number(BigInt.asUintN(32, raw));
    case 'int64':
      // Beyond 2^53 JSON consumers in JavaScript lose precision anyway; no Kubernetes field gets there.
      return Number(BigInt.asIntN(64, raw));
    case 'uint64':
      return Number(raw);
    default:
      throw new ProtobufDecodeError(`${describe(path)}: a ${type} cannot be a varint`);
  }
}

function fixedScalar(type: ScalarType, bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const value = type === 'float' ? view.getFloat32(0, true) : view.getFloat64(0, true);
  // JSON has no NaN or Infinity; Go's encoder refuses them too.
  if (!Number.isFinite(value)) throw new ProtobufDecodeError(`a ${type} value is not finite`);
  return value;
}

function isPackable(type: ScalarType): boolean {
  return type !== 'string' && type !== 'bytes';
}

function scalarWireType(type: ScalarType): WireType {
  if (type === 'double') return WIRE_TYPE.fixed64;
  if (type === 'float') return WIRE_TYPE.fixed32;
  return WIRE_TYPE.varint;
}

function zeroOf(type: ScalarType): string | number | boolean {
  if (type === 'string' || type === 'bytes') return '';
  if (type === 'bool') return false;
  return 0;
}

function isZero(value: unknown): boolean {
  return value === '' || value === 0 || value === false;
}

// ---------- special types ----------

/** JSON form of a special message, or undefined when Go's encoder would omit it (a zero Time). */
function decodeSpecial(type: SpecialType, bytes: Uint8Array, path: string): unknown {
  switch (type) {
    case 'Time':
    case 'MicroTime':
      return decodeTime(bytes, type === 'MicroTime', path);
    case 'Duration': {
      let nanos = 0n;
      for (const f of fieldsOf(bytes, path)) if (f.number === SPECIAL_FIELDS.duration.duration) nanos = BigInt.asIntN(64, varintOf(f, path));
      return goDuration(nanos);
    }
    case 'Quantity': {
      let text = '';
      for (const f of fieldsOf(bytes, path)) if (f.number === SPECIAL_FIELDS.quantity.string) text = utf8Text(lengthDelimited(f, path), path);
      // Go's zero Quantity prints as "0".
      return text === '' ? '0' : text;
    }
    case 'IntOrString': {
      let kind = 0n;
      let intVal = 0;
      let strVal = '';
      for (const f of fieldsOf(bytes, path)) {
        if (f.number === SPECIAL_FIELDS.intOrString.type) kind = varintOf(f, path);
        else if (f.number === SPECIAL_FIELDS.intOrString.intVal) intVal = Number(BigInt.asIntN(32, varintOf(f, path)));
        else if (f.number === SPECIAL_FIELDS.intOrString.strVal) strVal = utf8Text(lengthDelimited(f, path), path);
      }
      return kind === 1n ? strVal : intVal;
    }
    case 'FieldsV1': {
      let raw: Uint8Array = new Uint8Array(0);
      for (const f of fieldsOf(bytes, path)) if (f.number === SPECIAL_FIELDS.fieldsV1.raw) raw = lengthDelimited(f, path);
      return decodeFieldsV1(raw, path);
    }
  }
}

/** Unix seconds before Go's zero time (0001-01-01T00:00:00Z), which its JSON encoder writes as null. */
const GO_ZERO_TIME_SECONDS = -62135596800n;

function decodeTime(bytes: Uint8Array, micro: boolean, path: string): string | undefined {
  let seconds = 0n;
  let nanos = 0n;
  let present = false;
  for (const f of fieldsOf(bytes, path)) {
    if (f.number === SPECIAL_FIELDS.time.seconds) seconds = BigInt.asIntN(64, varintOf(f, path));
    else if (f.number === SPECIAL_FIELDS.time.nanos) nanos = BigInt.asIntN(32, varintOf(f, path));
    else continue;
    present = true;
  }
  // An empty Time message is how Go marshals the zero time (metadata.creationTimestamp on create).
  if (!present || (seconds === GO_ZERO_TIME_SECONDS && nanos === 0n)) return undefined;
  if (nanos < 0n || nanos > 999_999_999n) throw new ProtobufDecodeError(`${describe(path)}: nanos out of range`);
  const ms = seconds * 1000n + nanos / 1_000_000n;
  const date = new Date(Number(ms));
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 0 || year > 9999) {
    throw new ProtobufDecodeError(`${describe(path)}: time is outside the years 0000-9999`);
  }
  const base = date.toISOString().slice(0, 19); // YYYY-MM-DDTHH:MM:SS
  if (!micro) return `${base}Z`;
  return `${base}.${String(nanos / 1000n).padStart(6, '0')}Z`;
}

/** Go's time.Duration.String(): "0s", "250ms", "1.5µs", "1h2m3.5s". */
export function goDuration(nanos: bigint): string {
  if (nanos === 0n) return '0s';
  const sign = nanos < 0n ? '-' : '';
  let rest = nanos < 0n ? -nanos : nanos;
  if (rest < 1_000n) return `${sign}${rest}ns`;
  if (rest < 1_000_000n) return `${sign}${decimal(rest, 1_000n)}µs`;
  if (rest < 1_000_000_000n) return `${sign}${decimal(rest, 1_000_000n)}ms`;
  const hours = rest / 3_600_000_000_000n;
  rest %= 3_600_000_000_000n;
  const minutes = rest / 60_000_000_000n;
  rest %= 60_000_000_000n;
  const seconds = `${decimal(rest, 1_000_000_000n)}s`;
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

/** `value / unit` as a decimal with trailing zeros trimmed (unit is a power of ten). */
function decimal(value: bigint, unit: bigint): string {
  const whole = value / unit;
  const fraction = value % unit;
  if (fraction === 0n) return String(whole);
  const digits = String(unit).length - 1;
  return `${whole}.${String(fraction).padStart(digits, '0').replace(/0+$/, '')}`;
}

function decodeFieldsV1(raw: Uint8Array, path: string): unknown {
  if (raw.length === 0) return {};
  const text = utf8Text(raw, path);
  if (jsonDepthExceeds(text, MAX_FIELDS_V1_DEPTH)) throw new ProtobufDecodeError(`${describe(path)}: nested too deeply`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ProtobufDecodeError(`${describe(path)}: not valid JSON`);
  }
  if (!isJsonObject(value)) throw new ProtobufDecodeError(`${describe(path)}: must be a JSON object`);
  return value;
}

/** Bracket depth of JSON text, skipping string contents; one pass. */
function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return false;
}

// ---------- helpers ----------

function fieldsOf(bytes: Uint8Array, path: string): WireField[] {
  try {
    return readFields(bytes);
  } catch (e) {
    throw rewrap(e, path);
  }
}

function lengthDelimited(wire: WireField, path: string): Uint8Array {
  if (wire.wireType !== WIRE_TYPE.lengthDelimited) throw wrongWireType(wire, path);
  return wire.bytes;
}

function varintOf(wire: WireField, path: string): bigint {
  if (wire.wireType !== WIRE_TYPE.varint) throw wrongWireType(wire, path);
  return wire.value;
}

function utf8Text(bytes: Uint8Array, path: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ProtobufDecodeError(`${describe(path)}: string is not valid UTF-8`);
  }
}

function listOf(out: JsonObject, key: string): unknown[] {
  const existing = Object.hasOwn(out, key) ? out[key] : undefined;
  if (Array.isArray(existing)) return existing;
  const list: unknown[] = [];
  setOwn(out, key, list);
  return list;
}

function wrongWireType(wire: WireField, path: string): ProtobufDecodeError {
  return new ProtobufDecodeError(`${describe(path)}: unexpected wire type ${wire.wireType} for field ${wire.number}`);
}

function rewrap(e: unknown, path: string): unknown {
  if (e instanceof WireFormatError) return new ProtobufDecodeError(`${describe(path)}: ${e.message}`);
  return e;
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function describe(path: string): string {
  return path || 'object';
}
