/**
 * SPDY/3.1 framing (agent/server/spdy.ts) without a network: the header dictionary, header-block compression
 * both ways against real zlib, frame cutting, the upgrade negotiation, session behaviour on a socket pair,
 * and the resize-stream JSON splitter.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import zlib from 'node:zlib';
import { JsonObjectSplitter } from '../../agent/server/remote-command-spdy.js';
import {
  adler32,
  controlFrame,
  dataFrame,
  decodeHeaderBlock,
  encodeHeaderBlock,
  FrameReader,
  FrameType,
  HEADER_DICTIONARY,
  HeaderDeflater,
  HeaderInflater,
  isSpdyUpgrade,
  negotiateStreamProtocol,
  SpdySession,
  type SpdyStream,
} from '../../agent/server/spdy.js';

/** Compresses blocks the way Go's spdy framer does: one zlib stream with the dictionary, a sync flush per block. */
async function goStyleBlocks(blocks: Buffer[]): Promise<Buffer[]> {
  const deflate = zlib.createDeflate({ dictionary: HEADER_DICTIONARY, level: 9 });
  let out: Buffer[] = [];
  deflate.on('data', (c: Buffer) => out.push(c));
  const result: Buffer[] = [];
  for (const b of blocks) {
    await new Promise<void>((resolve) => {
      deflate.write(b);
      deflate.flush(zlib.constants.Z_SYNC_FLUSH, () => setImmediate(resolve));
    });
    result.push(Buffer.concat(out));
    out = [];
  }
  deflate.close();
  return result;
}

describe('SPDY header blocks', () => {
  it('has the SPDY/3 dictionary (1423 bytes, adler32 e3c6a7c2 as in every SPDY/3 stream header)', () => {
    assert.equal(HEADER_DICTIONARY.length, 1423);
    assert.equal(adler32(HEADER_DICTIONARY).toString(16), 'e3c6a7c2');
  });

  it('encodes and decodes header blocks, NUL-separated values included', () => {
    const h = { streamtype: ['stdout'], 'x-multi': ['a', 'b'] };
    assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock(h)), h);
    assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock({ StreamType: ['error'] })), { streamtype: ['error'] }, 'names are lower case');
    assert.throws(() => decodeHeaderBlock(Buffer.from([0, 0, 0, 1, 0, 0, 0, 9, 1])), /truncated/);
  });

  it('inflates a zlib stream whose blocks reuse earlier ones (as kubectl compresses them)', async () => {
    const headers = ['error', 'stdin', 'stdout', 'stderr', 'resize'].map((t) => ({ streamtype: [t], port: ['8080'] }));
    const compressed = await goStyleBlocks(headers.map(encodeHeaderBlock));
    const inflater = new HeaderInflater();
    assert.deepEqual(
      compressed.map((b) => decodeHeaderBlock(inflater.inflate(b))),
      headers,
    );
    assert.ok(compressed[3]!.length < encodeHeaderBlock(headers[3]!).length, 'later blocks refer back to earlier ones');
    assert.throws(() => new HeaderInflater().inflate(Buffer.from([0x78, 0x9c, 0, 0, 0, 0, 1])), /SPDY\/3 dictionary/);
  });

  it('deflates into a zlib stream any inflater reads block by block, each ending in a sync-flush marker', () => {
    const deflater = new HeaderDeflater();
    const blocks = [encodeHeaderBlock({}), encodeHeaderBlock({ a: ['b'] }), encodeHeaderBlock({ big: ['x'.repeat(70_000)] })];
    const out = blocks.map((b) => deflater.deflate(b));
    for (const o of out) assert.deepEqual([...o.subarray(-5)], [0, 0, 0, 0xff, 0xff]);
    const inflated = zlib.inflateSync(Buffer.concat(out), { dictionary: HEADER_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH });
    assert.deepEqual(inflated, Buffer.concat(blocks));
  });
});

describe('SPDY frames', () => {
  it('cuts frames out of a byte stream however it is chunked', () => {
    const wire = Buffer.concat([controlFrame(FrameType.PING, 0, Buffer.from([0, 0, 0, 1])), dataFrame(3, 1, Buffer.from('hello')), dataFrame(5, 0, Buffer.alloc(0))]);
    for (const size of [1, 2, 7, 8, 9, wire.length]) {
      const reader = new FrameReader();
      const frames = [];
      for (let i = 0; i < wire.length; i += size) frames.push(...reader.push(wire.subarray(i, i + size)));
      assert.equal(frames.length, 3, `chunk size ${size}`);
      assert.deepEqual(frames[0], { control: true, version: 3, type: FrameType.PING, flags: 0, payload: Buffer.from([0, 0, 0, 1]) });
      assert.deepEqual(frames[1], { control: false, streamId: 3, flags: 1, payload: Buffer.from('hello') });
      assert.deepEqual(frames[2], { control: false, streamId: 5, flags: 0, payload: Buffer.alloc(0) });
    }
    const huge = Buffer.alloc(8);
    huge.writeUInt16BE(0x8003, 0);
    huge.writeUInt16BE(FrameType.SYN_STREAM, 2);
    huge.writeUInt32BE(0xffffff, 4);
    assert.throws(() => new FrameReader().push(huge), /control frame of/);
  });

  it('recognises the upgrade and negotiates in the client\'s order of preference', () => {
    assert.ok(isSpdyUpgrade({ connection: 'Upgrade', upgrade: 'SPDY/3.1' }));
    assert.ok(!isSpdyUpgrade({ connection: 'Upgrade', upgrade: 'websocket' }));
    assert.ok(!isSpdyUpgrade({ upgrade: 'SPDY/3.1' }));
    const supported = ['v4.channel.k8s.io', 'v3.channel.k8s.io'];
    assert.equal(negotiateStreamProtocol({ 'x-stream-protocol-version': 'v3.channel.k8s.io, v4.channel.k8s.io' }, supported), 'v3.channel.k8s.io');
    assert.equal(negotiateStreamProtocol({ 'x-stream-protocol-version': 'v5.channel.k8s.io, v4.channel.k8s.io' }, supported), 'v4.channel.k8s.io');
    assert.equal(negotiateStreamProtocol({ 'x-stream-protocol-version': 'channel.k8s.io' }, supported), undefined);
    assert.equal(negotiateStreamProtocol({}, supported), undefined);
  });
});

describe('SPDY session on a socket pair', () => {
  let server: net.Server;
  let sessions: SpdySession[] = [];
  let port = 0;

  before(async () => {
    server = net.createServer((socket) => {
      const session = new SpdySession({ socket });
      sessions.push(session);
      session.on('stream', (s: SpdyStream) => {
        s.reply();
        s.on('data', (d: Buffer) => s.write(Buffer.from(d.toString().toUpperCase())));
        s.on('end', () => s.end());
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as net.AddressInfo).port;
  });
  after(() => {
    for (const s of sessions) s.destroy();
    server.close();
  });

  /** Connects, sends `frames`, collects what comes back until `until` says enough (or the server closes). */
  const exchange = (frames: Buffer[], until: (got: ReturnType<FrameReader['push']>) => boolean) =>
    new Promise<ReturnType<FrameReader['push']>>((resolve) => {
      const sock = net.connect(port, '127.0.0.1', () => frames.forEach((f) => sock.write(f)));
      const reader = new FrameReader();
      const got: ReturnType<FrameReader['push']> = [];
      const done = () => {
        sock.destroy();
        resolve(got);
      };
      sock.on('data', (d: Buffer) => {
        got.push(...reader.push(d));
        if (until(got)) done();
      });
      sock.on('close', done);
      sock.on('error', done);
    });

  it('replies to a stream, echoes its data, half-closes after the client did, answers PING', async () => {
    const [block] = await goStyleBlocks([encodeHeaderBlock({ streamtype: ['stdout'] })]);
    const syn = controlFrame(FrameType.SYN_STREAM, 0, Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), block!]));
    const got = await exchange([syn, dataFrame(1, 0, Buffer.from('abc')), dataFrame(1, 1, Buffer.alloc(0)), controlFrame(FrameType.PING, 0, Buffer.from([0, 0, 0, 7]))], (g) => g.some((f) => f.control && f.type === FrameType.PING));
    const reply = got.find((f) => f.control && f.type === FrameType.SYN_REPLY);
    assert.ok(reply, 'SYN_REPLY sent');
    assert.ok(got.some((f) => !f.control && f.streamId === 1 && f.payload.toString() === 'ABC'));
    assert.ok(got.some((f) => !f.control && f.streamId === 1 && f.flags === 1), 'FIN');
    const ping = got.find((f) => f.control && f.type === FrameType.PING);
    assert.deepEqual(ping?.payload, Buffer.from([0, 0, 0, 7]));
  });

  it('resets data for unknown streams and ends the session on a protocol error', async () => {
    const rst = await exchange([dataFrame(9, 0, Buffer.from('x'))], (g) => g.length > 0);
    assert.ok(rst[0]?.control && rst[0].type === FrameType.RST_STREAM && rst[0].payload.readUInt32BE(0) === 9 && rst[0].payload.readUInt32BE(4) === 2, 'RST_STREAM INVALID_STREAM');

    const [block] = await goStyleBlocks([encodeHeaderBlock({ streamtype: ['stdout'] })]);
    // Stream ids from a client are odd.
    const even = controlFrame(FrameType.SYN_STREAM, 0, Buffer.concat([Buffer.from([0, 0, 0, 2, 0, 0, 0, 0, 0, 0]), block!]));
    const goaway = await exchange([even], () => false);
    const g = goaway.find((f) => f.control && f.type === FrameType.GOAWAY);
    assert.ok(g?.control && g.payload.readUInt32BE(4) === 1, 'GOAWAY PROTOCOL_ERROR, then the connection closes');
  });
});

describe('resize stream', () => {
  it('splits concatenated JSON objects however DATA frames cut them', () => {
    const s = new JsonObjectSplitter();
    assert.deepEqual(s.push('{"Width":80,"Hei'), []);
    assert.deepEqual(s.push('ght":24}\n{"Width":100,"Height":30}\n{"Wid'), ['{"Width":80,"Height":24}', '{"Width":100,"Height":30}']);
    assert.deepEqual(s.push('th":1,"Height":2}'), ['{"Width":1,"Height":2}']);
    assert.deepEqual(s.push('junk {"a":"}{"}'), ['{"a":"}{"}'], 'braces inside strings do not count');
  });
});
