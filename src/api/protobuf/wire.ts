/**
 * The protobuf wire format without a schema. Reading: splits one message's bytes into (field
 * number, wire type, payload) records; schema-aware conversion lives in decode.ts. Every malformed
 * input raises WireFormatError; nothing here allocates more than the input holds, so hostile bytes
 * cost at most one pass. Writing: MessageWriter appends fields in proto3 form and nests messages
 * without copying them until the final bytes are taken.
 */

/** The encodings a field's payload can have on the wire. Groups (3, 4) are obsolete and refused. */
export const WIRE_TYPE = { varint: 0, fixed64: 1, lengthDelimited: 2, fixed32: 5 } as const;
export type WireType = (typeof WIRE_TYPE)[keyof typeof WIRE_TYPE];

/** One field occurrence in a message, payload still undecoded. */
export type WireField =
  | { number: number; wireType: typeof WIRE_TYPE.varint; value: bigint }
  | { number: number; wireType: typeof WIRE_TYPE.fixed64; bytes: Uint8Array }
  | { number: number; wireType: typeof WIRE_TYPE.lengthDelimited; bytes: Uint8Array }
  | { number: number; wireType: typeof WIRE_TYPE.fixed32; bytes: Uint8Array };

/** The bytes are not a well-formed protobuf message. The message says where and why. */
export class WireFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireFormatError';
  }
}

/** Largest field number protobuf allows (2^29 - 1). */
const MAX_FIELD_NUMBER = 0x1fffffff;

/** Cursor over one message's bytes. */
export class WireReader {
  private pos = 0;

  constructor(private readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** Reads a base-128 varint of at most 10 bytes as an unsigned 64-bit value. */
  varint(): bigint {
    let result = 0n;
    for (let i = 0; i < 10; i++) {
      const byte = this.buf[this.pos++];
      if (byte === undefined) throw new WireFormatError('truncated varint');
      result |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return BigInt.asUintN(64, result);
    }
    throw new WireFormatError('varint longer than 10 bytes');
  }

  /** Takes the next `length` bytes (a view, not a copy). */
  take(length: number): Uint8Array {
    if (length > this.buf.length - this.pos) throw new WireFormatError('field runs past the end of its message');
    const bytes = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return bytes;
  }

  /** Reads the next field record (tag plus payload). */
  field(): WireField {
    const tag = this.varint();
    if (tag > BigInt(MAX_FIELD_NUMBER) * 8n + 7n) throw new WireFormatError('field tag out of range');
    const number = Number(tag >> 3n);
    const wireType = Number(tag & 7n);
    if (number === 0) throw new WireFormatError('field number 0 is invalid');
    switch (wireType) {
      case WIRE_TYPE.varint:
        return { number, wireType, value: this.varint() };
      case WIRE_TYPE.fixed64:
        return { number, wireType, bytes: this.take(8) };
      case WIRE_TYPE.lengthDelimited: {
        const length = this.varint();
        if (length > BigInt(this.buf.length)) throw new WireFormatError('field runs past the end of its message');
        return { number, wireType, bytes: this.take(Number(length)) };
      }
      case WIRE_TYPE.fixed32:
        return { number, wireType, bytes: this.take(4) };
      default:
        throw new WireFormatError(`unsupported wire type ${wireType} for field ${number}`);
    }
  }
}

/** Every field record of a message, in wire order. */
export function readFields(buf: Uint8Array): WireField[] {
  const reader = new WireReader(buf);
  const fields: WireField[] = [];
  while (!reader.done) fields.push(reader.field());
  return fields;
}

/**
 * The elements of a packed repeated scalar field (proto3 style, also legal in proto2): a
 * length-delimited run of varints, or of 4- or 8-byte fixed values.
 */
export function readPacked(bytes: Uint8Array, elementWireType: WireType): Array<bigint | Uint8Array> {
  const reader = new WireReader(bytes);
  const out: Array<bigint | Uint8Array> = [];
  while (!reader.done) {
    if (elementWireType === WIRE_TYPE.varint) out.push(reader.varint());
    else if (elementWireType === WIRE_TYPE.fixed64) out.push(reader.take(8));
    else if (elementWireType === WIRE_TYPE.fixed32) out.push(reader.take(4));
    else throw new WireFormatError('only scalar fields can be packed');
  }
  return out;
}

const utf8 = new TextEncoder();

/**
 * Builds one message's bytes field by field. Nested messages are other writers whose parts are
 * adopted, not copied, so a deep document is concatenated exactly once, in finish(). Scalars at
 * their proto3 default are the caller's choice to skip (oneof members must still be written).
 */
export class MessageWriter {
  private readonly parts: Uint8Array[] = [];
  private length = 0;

  /** Bytes written so far. */
  get byteLength(): number {
    return this.length;
  }

  private push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.length += bytes.length;
  }

  private pushVarint(value: bigint): void {
    let v = BigInt.asUintN(64, value);
    const out: number[] = [];
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) byte |= 0x80;
      out.push(byte);
    } while (v !== 0n);
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wireType: WireType): void {
    this.pushVarint((BigInt(field) << 3n) | BigInt(wireType));
  }

  /** A varint field (int32/int64/uint64/bool/enum); negative numbers take ten bytes, as protobuf's int64 does. */
  varint(field: number, value: number | bigint | boolean): this {
    this.tag(field, WIRE_TYPE.varint);
    this.pushVarint(typeof value === 'boolean' ? (value ? 1n : 0n) : BigInt(value));
    return this;
  }

  /** A `double` field: 8 bytes little-endian. */
  double(field: number, value: number): this {
    this.tag(field, WIRE_TYPE.fixed64);
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setFloat64(0, value, true);
    this.push(bytes);
    return this;
  }

  /** A `bytes` field. */
  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_TYPE.lengthDelimited);
    this.pushVarint(BigInt(value.length));
    this.push(value);
    return this;
  }

  /** A `string` field, UTF-8 encoded. */
  string(field: number, value: string): this {
    return this.bytes(field, utf8.encode(value));
  }

  /** An embedded message field; an empty message is still written (it marks the field as set). */
  message(field: number, value: MessageWriter): this {
    this.tag(field, WIRE_TYPE.lengthDelimited);
    this.pushVarint(BigInt(value.length));
    for (const part of value.parts) this.push(part);
    return this;
  }

  /** The message's bytes. */
  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const part of this.parts) {
      out.set(part, offset);
      offset += part.length;
    }
    return out;
  }
}
