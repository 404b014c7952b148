/**
 * Sending response bodies that are already JSON bytes, in a way a large one cannot stall the server.
 *
 * `end(buffer)` on a TLS socket encrypts the whole body in one go on the event loop and queues all
 * of the ciphertext in memory, however slowly the client reads: for a 1.4 MB object that is
 * milliseconds of blocking per response and a second full copy per slow reader. A large body is
 * instead written a slice at a time, the next slice only when the socket has drained the last, so
 * other requests are served between slices and each response holds at most one slice of ciphertext.
 */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** Bodies up to this size go out in one write; larger ones in slices of this size. */
export const RESPONSE_SLICE_BYTES = 64 * 1024;

export function sendJsonBytes(reply: FastifyReply, code: number, bytes: Buffer): FastifyReply {
  // The same header fastify gives the JSON it serializes itself.
  void reply.code(code).type('application/json; charset=utf-8').header('content-length', String(bytes.length));
  if (bytes.length <= RESPONSE_SLICE_BYTES) return reply.send(bytes);
  // A pull stream: Readable.from asks for the next slice only when the consumer (the socket, through
  // pipe) wants more, so backpressure reaches all the way here. Slices share the buffer's memory.
  return reply.send(Readable.from(slices(bytes), { objectMode: false }));
}

function* slices(bytes: Buffer): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += RESPONSE_SLICE_BYTES) yield bytes.subarray(at, at + RESPONSE_SLICE_BYTES);
}
