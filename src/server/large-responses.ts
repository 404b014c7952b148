/**
 * Sending response bodies that are already JSON bytes, in a way large ones cannot stall the server.
 *
 * `end(buffer)` on a TLS socket encrypts the whole body in one go on the event loop and queues all
 * of the ciphertext in memory, however slowly the client reads: for a 1.4 MB object that is
 * milliseconds of blocking per response and a second full copy per slow reader. A large body is
 * instead written a slice at a time, the next slice only when the socket has drained the last.
 *
 * Many large responses at once would still encrypt one slice each in the same event-loop turn, so
 * slices are handed out by one scheduler, a few per turn, round robin: whatever the number of large
 * responses in flight, other requests wait for at most that many slices before they are read.
 * A client that stops reading only stops asking for slices; it holds up no one else.
 *
 * Each slice costs the body at least one turn of the event loop (it waits for the socket to drain
 * the last), and on a busy server a turn takes tens of milliseconds: in 64 KiB slices a list of
 * 6,000 pods (18 MB) took 280 turns, 9.5 s at p99 while 200 nodes reported to the server. So a
 * body's slices grow: the first is 64 KiB, each next one twice the last, up to 1 MiB, which takes
 * that list 22 turns. Encrypting 1 MiB takes under a millisecond (AES-GCM at 2.4 GB/s), small
 * beside such a turn. The slices of all bodies in flight share 8 MiB, so with many large responses
 * at once each keeps to small slices and memory stays bounded.
 *
 * A list whose items are already serialized (shared bytes, one copy per object for every reader)
 * goes out the same way, the slices gathered from its items as the socket asks for them: no
 * reader ever builds the whole list as one string.
 */
import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** Bodies up to this size go out in one write; larger ones in slices, the first of this size. */
export const RESPONSE_SLICE_BYTES = 64 * 1024;
/** The largest slice a body's slices grow to. */
export const MAX_SLICE_BYTES = 1024 * 1024;
/** What the slices of all large bodies in flight may add up to: each body's share bounds its slices. */
export const SLICE_BUDGET_BYTES = 8 * 1024 * 1024;
/** Slices written per event-loop turn across all large responses (0.1–1 ms of encryption each). */
export const SLICES_PER_TURN = 4;

/** Large bodies being sent now (see SliceSizes). */
let bodiesInFlight = 0;

/**
 * The sizes of one body's slices: RESPONSE_SLICE_BYTES first, then each twice the last, up to
 * MAX_SLICE_BYTES and to the body's share of SLICE_BUDGET_BYTES, never under RESPONSE_SLICE_BYTES.
 */
export class SliceSizes {
  private last = 0;

  next(): number {
    const share = Math.floor(SLICE_BUDGET_BYTES / Math.max(1, bodiesInFlight));
    const size = this.last === 0 ? RESPONSE_SLICE_BYTES : Math.max(RESPONSE_SLICE_BYTES, Math.min(this.last * 2, MAX_SLICE_BYTES, share));
    this.last = size;
    return size;
  }
}

/** Counts a body as in flight from now until it closes (ended or destroyed). */
function inFlight(body: Readable): void {
  bodiesInFlight++;
  body.once('close', () => bodiesInFlight--);
}

/** large bodies being sent now (for tests) */
export function largeBodiesInFlight(): number {
  return bodiesInFlight;
}

export function sendJsonBytes(reply: FastifyReply, code: number, bytes: Buffer): FastifyReply {
  // The same header fastify gives the JSON it serializes itself.
  void reply.code(code).type('application/json; charset=utf-8').header('content-length', String(bytes.length));
  if (bytes.length <= RESPONSE_SLICE_BYTES) return reply.send(bytes);
  return reply.send(new SlicedBody(bytes, sliceTurns));
}

/**
 * Runs queued jobs a bounded number per turn, in arrival order; the rest wait for the next turn
 * (setImmediate, so the I/O that arrived meanwhile — other requests — is handled in between).
 */
export class TurnScheduler {
  private readonly queue: Array<() => void> = [];
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  enqueue(job: () => void): void {
    this.queue.push(job);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.runTurn);
    }
  }

  private readonly runTurn = (): void => {
    this.scheduled = false;
    for (let n = 0; n < this.perTurn && this.queue.length > 0; n++) this.queue.shift()!();
    if (this.queue.length > 0) {
      this.scheduled = true;
      setImmediate(this.runTurn);
    }
  };
}

const sliceTurns = new TurnScheduler(SLICES_PER_TURN);

/** Resolves at this process's next turn for a slice: writers outside a stream (watches) take their turns here too. */
export function nextSliceTurn(): Promise<void> {
  return new Promise((resolve) => sliceTurns.enqueue(resolve));
}

/** A list as its JSON head (apiVersion, kind, metadata) and its items' JSON, in order. */
export interface SerializedListBody {
  apiVersion: string;
  kind: string;
  metadata: unknown;
  items: Buffer[];
}

const ITEMS_END = Buffer.from(']}');
const COMMA = Buffer.from(',');

/**
 * Sends `{"apiVersion":…,"kind":…,"metadata":…,"items":[…]}` from already serialized items:
 * the same bytes JSON.stringify would make of the list, gathered a slice at a time.
 */
export function sendJsonList(reply: FastifyReply, code: number, list: SerializedListBody): FastifyReply {
  const head = JSON.stringify({ apiVersion: list.apiVersion, kind: list.kind, metadata: list.metadata });
  const pieces: Buffer[] = [Buffer.from(`${head.slice(0, -1)},"items":[`)];
  list.items.forEach((item, i) => {
    if (i > 0) pieces.push(COMMA);
    pieces.push(item);
  });
  pieces.push(ITEMS_END);
  let length = 0;
  for (const piece of pieces) length += piece.length;
  if (length <= RESPONSE_SLICE_BYTES) return sendJsonBytes(reply, code, Buffer.concat(pieces, length));
  void reply.code(code).type('application/json; charset=utf-8').header('content-length', String(length));
  return reply.send(new GatheredBody(pieces, sliceTurns));
}

/**
 * A pull stream over a buffer: the next slice is produced only when the consumer (the socket,
 * through pipe) asks for more, and only when the scheduler gives it a turn. Slices share the buffer.
 */
export class SlicedBody extends Readable {
  private offset = 0;
  private readonly sizes = new SliceSizes();

  constructor(
    private readonly bytes: Buffer,
    private readonly scheduler: TurnScheduler,
  ) {
    // One slice buffered ahead at most: the stream never holds more than the socket asked for.
    super({ highWaterMark: RESPONSE_SLICE_BYTES });
    inFlight(this);
  }

  override _read(): void {
    this.scheduler.enqueue(() => {
      if (this.destroyed) return;
      const slice = this.bytes.subarray(this.offset, this.offset + this.sizes.next());
      this.offset += slice.length;
      this.push(slice);
      if (this.offset >= this.bytes.length) this.push(null);
    });
  }
}

/**
 * A pull stream over many buffers (a list's items): each slice gathers as many bytes of them as
 * SliceSizes gives, in order, only when the consumer asks and the scheduler gives it a turn. A
 * buffer larger than a slice is cut into slices of its own.
 */
export class GatheredBody extends Readable {
  private piece = 0;
  private offset = 0;
  private readonly sizes = new SliceSizes();

  constructor(
    private readonly pieces: readonly Buffer[],
    private readonly scheduler: TurnScheduler,
  ) {
    super({ highWaterMark: RESPONSE_SLICE_BYTES });
    inFlight(this);
  }

  override _read(): void {
    this.scheduler.enqueue(() => {
      if (this.destroyed) return;
      const parts: Buffer[] = [];
      let size = 0;
      const sliceBytes = this.sizes.next();
      while (size < sliceBytes && this.piece < this.pieces.length) {
        const current = this.pieces[this.piece]!;
        const part = current.subarray(this.offset, this.offset + sliceBytes - size);
        parts.push(part);
        size += part.length;
        this.offset += part.length;
        if (this.offset >= current.length) {
          this.piece++;
          this.offset = 0;
        }
      }
      if (size > 0) this.push(parts.length === 1 ? parts[0] : Buffer.concat(parts, size));
      if (this.piece >= this.pieces.length) this.push(null);
    });
  }
}
