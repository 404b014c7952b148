/**
 * How Berth's processes write their logs: JSON lines (pino's own output) for machines, or one readable
 * line per record for people — time, level, source, message, then key=value fields, an error's stack
 * indented below. Text is the default when the output is a terminal, JSON otherwise; `--log-format`
 * overrides either way. Colours only ever go to a terminal.
 *
 * The text form is a synchronous pino destination that reformats each JSON line as it is written,
 * not a pino transport: transports run in a worker thread, which costs every process several MB of
 * RSS. It imports nothing from the rest of Berth, so the CLI, the agent and the DNS resolver share it.
 */
import tty from 'node:tty';
import pino, { type DestinationStream, type Logger } from 'pino';

export type LogFormat = 'text' | 'json';

export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

/** `--log-format`'s value, or undefined when the flag is absent; throws naming the flag on anything else. */
export function parseLogFormat(value: string | undefined): LogFormat | undefined {
  if (value === undefined) return undefined;
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new Error(`invalid --log-format "${value}": must be one of ${LOG_FORMATS.join(', ')}`);
}

/** The format a process uses when `--log-format` is not given: text for a terminal, JSON for anything else. */
export function defaultLogFormat(isTerminal: boolean): LogFormat {
  return isTerminal ? 'text' : 'json';
}

/** Colour is for terminals only, and NO_COLOR (https://no-color.org) turns it off there too. */
export function colourWanted(isTerminal: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return isTerminal && !env.NO_COLOR;
}

export interface LoggerOptions {
  /** pino's `name`: berth-server, berth-agent, berth-dns */
  name: string;
  /** pino level; default info */
  level?: string;
  /** the resolved `--log-format`; default: text on a terminal, JSON otherwise */
  format?: LogFormat;
  /** file descriptor written to; default 1 (stdout) */
  fd?: number;
}

/** A pino logger writing `format` to `fd`. */
export function createLogger(opts: LoggerOptions): Logger {
  const fd = opts.fd ?? 1;
  const terminal = tty.isatty(fd);
  const format = opts.format ?? defaultLogFormat(terminal);
  const level = opts.level ?? 'info';
  if (format === 'json') return pino({ name: opts.name, level }, pino.destination({ dest: fd }));
  // Synchronous: lines for people come out in order with what else the process writes (berth up's progress on stderr).
  const out = pino.destination({ dest: fd, sync: true });
  return pino({ name: opts.name, level }, textLogDestination({ name: opts.name, colour: colourWanted(terminal), write: (text) => out.write(text) }));
}

/**
 * A pino destination that turns each JSON line into `formatLogRecord`'s text and hands it to `write`.
 * `name` is the logger's own: a record whose fields include another `name` (an object's, bound by a
 * child logger) parses with that one, so the logger's name is supplied here rather than read back.
 */
export function textLogDestination(opts: { name?: string; colour: boolean; write: (text: string) => void }): DestinationStream {
  return {
    write(line: string) {
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        opts.write(line); // not pino's JSON: passed on as it came
        return;
      }
      opts.write(formatLogRecord(record as Record<string, unknown>, { colour: opts.colour, loggerName: opts.name }) + '\n');
    },
  };
}

const LEVEL_LABELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLOURS: Record<number, string> = { 10: '90', 20: '34', 30: '32', 40: '33', 50: '31', 60: '1;31' };
/** Shown in the line's head or dropped (pid and hostname say nothing on one terminal). */
const HEAD_KEYS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'component', 'v']);

function paint(colour: boolean, code: string, text: string): string {
  return colour ? `\x1b[${code}m${text}\x1b[0m` : text;
}

function twoDigits(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** HH:MM:SS.mmm in local time: on a terminal the day is known, the moment within it is what matters. */
function timeOfDay(epochMs: number): string {
  const d = new Date(epochMs);
  return `${twoDigits(d.getHours())}:${twoDigits(d.getMinutes())}:${twoDigits(d.getSeconds())}.${twoDigits(d.getMilliseconds(), 3)}`;
}

/** A field value as key=value shows it: bare when that reads unambiguously, else JSON. */
function fieldValue(value: unknown): string {
  if (typeof value === 'string') return value !== '' && /^[^\s"=\\\x00-\x1f\x7f]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (value === undefined) return 'undefined';
  return JSON.stringify(value);
}

interface ErrorLike {
  message?: unknown;
  stack?: unknown;
  type?: unknown;
  [key: string]: unknown;
}

function isErrorLike(value: unknown): value is ErrorLike {
  return typeof value === 'object' && value !== null && typeof (value as ErrorLike).stack === 'string';
}

/**
 * One record as a line: `12:04:05.123 INFO  server/apiserver: message key=value …`, the source being
 * the logger's name (`loggerName`, else the record's) without its `berth-` prefix and the record's
 * component; a record `name` other than the logger's is an ordinary field. Errors (any field holding a
 * serialized error, pino's `err` above all) show their message among the fields and their stack on the
 * lines below, indented.
 */
export function formatLogRecord(record: Record<string, unknown>, opts: { colour: boolean; loggerName?: string }): string {
  const colour = opts.colour;
  const level = typeof record.level === 'number' ? record.level : 30;
  const label = (LEVEL_LABELS[level] ?? `L${level}`).padEnd(5);
  const time = typeof record.time === 'number' ? timeOfDay(record.time) : typeof record.time === 'string' ? record.time : '';
  const loggerName = opts.loggerName ?? (typeof record.name === 'string' ? record.name : '');
  const name = loggerName.replace(/^berth-/, '');
  const component = typeof record.component === 'string' ? record.component : '';
  const source = [name, component].filter(Boolean).join('/');
  const msg = record.msg === undefined ? '' : String(record.msg);

  const fields: string[] = [];
  const stacks: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (HEAD_KEYS.has(key) && !(key === 'name' && value !== loggerName)) continue;
    if (isErrorLike(value)) {
      fields.push(`${paint(colour, '90', `${key}=`)}${paint(colour, '31', fieldValue(value.message ?? value.type ?? 'error'))}`);
      for (const [k, v] of Object.entries(value)) {
        if (k === 'message' || k === 'stack' || k === 'type' || v === undefined) continue;
        fields.push(`${paint(colour, '90', `${key}.${k}=`)}${fieldValue(v)}`);
      }
      stacks.push(...String(value.stack).split('\n').map((line) => `    ${paint(colour, '90', line.trim() === '' ? '' : line.trimStart())}`));
      continue;
    }
    fields.push(`${paint(colour, '90', `${key}=`)}${fieldValue(value)}`);
  }

  let line = `${paint(colour, '2', time)} ${paint(colour, LEVEL_COLOURS[level] ?? '0', label)}`;
  if (source) line += ` ${paint(colour, '36', `${source}:`)}`;
  if (msg) line += ` ${msg}`;
  if (fields.length) line += ` ${fields.join(' ')}`;
  return stacks.length ? `${line}\n${stacks.join('\n')}` : line;
}
