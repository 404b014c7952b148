/**
 * A generic reader for the protobuf wire format: splits one message's bytes into (field number,
 * wire type, payload) records without knowing the schema. Schema-aware conversion lives in
 * decode.ts. Every malformed input raises WireFormatError; nothing here allocates more than the
 * input holds, so hostile bytes cost at most one pass.
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
