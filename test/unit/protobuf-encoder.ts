/**
 * A tiny protobuf encoder for tests that hand-build Kubernetes protobuf bodies: field helpers in
 * the wire format and the "k8s\0" + runtime.Unknown envelope client-go sends.
 */

export function varint(value: number | bigint): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}
export const tag = (no: number, wireType: number): Buffer => varint((no << 3) | wireType);
export const int = (no: number, value: number | bigint): Buffer => Buffer.concat([tag(no, 0), varint(value)]);
export const bool = (no: number, value: boolean): Buffer => int(no, value ? 1 : 0);
export const bytes = (no: number, payload: Uint8Array): Buffer => Buffer.concat([tag(no, 2), varint(payload.length), payload]);
export const str = (no: number, text: string): Buffer => bytes(no, Buffer.from(text, 'utf8'));
export const msg = (no: number, ...parts: Buffer[]): Buffer => bytes(no, Buffer.concat(parts));
export const map = (no: number, entries: Record<string, string>): Buffer =>
  Buffer.concat(Object.entries(entries).map(([k, v]) => msg(no, str(1, k), str(2, v))));
export const quantity = (no: number, text: string): Buffer => msg(no, str(1, text));
export const intOrStringInt = (no: number, n: number): Buffer => msg(no, int(1, 0), int(2, n));
export const intOrStringStr = (no: number, s: string): Buffer => msg(no, int(1, 1), str(3, s));

export function envelope(apiVersion: string, kind: string, raw: Buffer, extra: { contentEncoding?: string; contentType?: string } = {}): Buffer {
  return Buffer.concat([
    Buffer.from('k8s\0', 'latin1'),
    msg(1, str(1, apiVersion), str(2, kind)),
    bytes(2, raw),
    str(3, extra.contentEncoding ?? ''),
    str(4, extra.contentType ?? ''),
  ]);
}
