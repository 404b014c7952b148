/**
 * The log formatter: pino records as lines for people (levels, sources, fields, errors, colour only
 * when asked for), the choice between text and JSON, and loggers writing either to a real file.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import pino from 'pino';
import { colourWanted, createLogger, defaultLogFormat, formatLogRecord, parseLogFormat, textLogDestination } from '../../src/client/log-format.js';

const ANSI = /\x1b\[[0-9;]*m/;
/** 2026-11-24 10:05:03.007 in local time, so the expected time of day does not depend on the zone. */
const TIME = new Date(2026, 10, 24, 10, 5, 3, 7).getTime();

/** pino's own JSON for one call, captured as text lines, with a fixed time. */
function captureText(fn: (log: pino.Logger) => void, opts: { colour?: boolean; level?: string } = {}): string[] {
  let out = '';
  const log = pino(
    { name: 'berth-server', level: opts.level ?? 'trace', timestamp: () => `,"time":${TIME}` },
    textLogDestination({ name: 'berth-server', colour: opts.colour ?? false, write: (t) => (out += t) }),
  );
  fn(log);
  return out.split('\n').filter((l) => l !== '');
}

describe('formatLogRecord', () => {
  it('writes time of day, level, source, message and key=value fields', () => {
    const [line = ''] = captureText((log) => log.child({ component: 'apiserver' }).info({ url: 'https://127.0.0.1:6443', port: 6443, ok: true }, 'control plane ready'));
    assert.equal(line, '10:05:03.007 INFO  server/apiserver: control plane ready url=https://127.0.0.1:6443 port=6443 ok=true');
  });

  it('labels every pino level and pads them to one width', () => {
    const lines = captureText((log) => {
      log.trace('t');
      log.debug('d');
      log.info('i');
      log.warn('w');
      log.error('e');
      log.fatal('f');
    });
    assert.deepEqual(
      lines.map((l) => l.slice(13, 19)),
      ['TRACE ', 'DEBUG ', 'INFO  ', 'WARN  ', 'ERROR ', 'FATAL '],
    );
  });

  it('quotes values that would not read back unambiguously, and prints objects as JSON', () => {
    const [line = ''] = captureText((log) => log.warn({ reason: 'two words', empty: '', eq: 'a=b', quote: 'say "hi"', servers: ['a', 'b'], nested: { x: 1 }, none: null }, 'w'));
    assert.ok(line.endsWith(' w reason="two words" empty="" eq="a=b" quote="say \\"hi\\"" servers=["a","b"] nested={"x":1} none=null'), line);
  });

  it('shows an error message among the fields and its stack indented on the lines below', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const lines = captureText((log) => log.error({ err, node: 'n1' }, 'heartbeat failed'));
    assert.match(lines[0] ?? '', /ERROR server: heartbeat failed err="connect ECONNREFUSED" err\.code=ECONNREFUSED node=n1$/);
    assert.equal(lines[1], '    Error: connect ECONNREFUSED');
    assert.match(lines[2] ?? '', /^ {4}at .*log-format\.test\.js/);
    assert.ok(lines.length > 2 && lines.slice(1).every((l) => l.startsWith('    ')), lines.join('\n'));
  });

  it('a string err (a message only) is an ordinary field', () => {
    const [line = ''] = captureText((log) => log.warn({ err: 'socket hang up' }, 'watch dropped'));
    assert.match(line, / watch dropped err="socket hang up"$/);
  });

  it('keeps a bound object name as a field, not as the source', () => {
    // A child logger binding an object's `name` makes pino write a second "name" key into the JSON.
    const [line = ''] = captureText((log) => log.child({ component: 'system-services', name: 'kube-dns' }).info('created system object'));
    assert.match(line, / INFO {2}server\/system-services: created system object name=kube-dns$/);
  });

  it('no colour unless asked for; with colour, the level and source are coloured', () => {
    const [plain = ''] = captureText((log) => log.error({ a: 1 }, 'boom'));
    assert.doesNotMatch(plain, ANSI);
    const [coloured = ''] = captureText((log) => log.error({ a: 1 }, 'boom'), { colour: true });
    assert.match(coloured, /\x1b\[31mERROR\x1b\[0m/);
    assert.match(coloured, /\x1b\[36mserver:\x1b\[0m/);
    assert.equal(coloured.replace(/\x1b\[[0-9;]*m/g, ''), plain);
  });

  it('uses the record name when no logger name is given, without its berth- prefix', () => {
    const line = formatLogRecord({ level: 40, time: TIME, name: 'berth-dns', msg: 'upstream slow', ms: 12 }, { colour: false });
    assert.equal(line, '10:05:03.007 WARN  dns: upstream slow ms=12');
  });

  it('passes a line that is not JSON through unchanged', () => {
    let out = '';
    textLogDestination({ colour: false, write: (t) => (out += t) }).write('plain text\n');
    assert.equal(out, 'plain text\n');
  });
});

describe('choosing the format', () => {
  it('--log-format takes text or json and names the flag otherwise', () => {
    assert.equal(parseLogFormat(undefined), undefined);
    assert.equal(parseLogFormat('text'), 'text');
    assert.equal(parseLogFormat('json'), 'json');
    assert.throws(() => parseLogFormat('pretty'), /invalid --log-format "pretty": must be one of text, json/);
  });

  it('text for a terminal, JSON otherwise; colour only on a terminal and never with NO_COLOR', () => {
    assert.equal(defaultLogFormat(true), 'text');
    assert.equal(defaultLogFormat(false), 'json');
    assert.equal(colourWanted(true, {}), true);
    assert.equal(colourWanted(false, {}), false);
    assert.equal(colourWanted(true, { NO_COLOR: '1' }), false);
  });
});

describe('createLogger', () => {
  const withFile = async (fn: (fd: number, file: string) => Promise<void>) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-log-format-'));
    const file = path.join(dir, 'out.log');
    const fd = fs.openSync(file, 'w');
    try {
      await fn(fd, file);
    } finally {
      fs.closeSync(fd);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  /** JSON goes through pino's asynchronous destination: the file's text once a line has landed. */
  const landed = async (file: string) => {
    for (let i = 0; i < 200; i++) {
      const text = fs.readFileSync(file, 'utf8');
      if (text.endsWith('\n')) return text;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`nothing written to ${file}`);
  };

  it('writes JSON lines to a file (not a terminal) by default', async () => {
    await withFile(async (fd, file) => {
      const log = createLogger({ name: 'berth-agent', fd });
      log.info({ pods: 3 }, 'synced');
      log.debug('below the default level');
      const lines = (await landed(file)).trim().split('\n');
      assert.equal(lines.length, 1);
      const record = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
      assert.equal(record.name, 'berth-agent');
      assert.equal(record.msg, 'synced');
      assert.equal(record.pods, 3);
    });
  });

  it('writes text without colour to a file when told --log-format text', async () => {
    await withFile(async (fd, file) => {
      const log = createLogger({ name: 'berth-agent', fd, format: 'text', level: 'debug' });
      log.child({ component: 'pod-worker' }).debug({ pod: 'default/web' }, 'started');
      const text = fs.readFileSync(file, 'utf8');
      assert.match(text, /^\d\d:\d\d:\d\d\.\d{3} DEBUG agent\/pod-worker: started pod=default\/web\n$/);
      assert.doesNotMatch(text, ANSI);
    });
  });
});
