/**
 * The agent process's last line of defence against errors nothing handled. A failed I/O call (a daemon
 * that went away, a reset connection, an API error) that slipped through is logged, loudly, and the agent
 * keeps running: losing Docker or the control plane is a state the agent recovers from. Anything else —
 * a TypeError, a failed assertion — is a bug the process cannot reason about: it is logged and the
 * process exits non-zero, so a supervisor restarts it and the failure is visible. Nothing passes silently.
 */

/** The slice of a pino logger the guard uses. */
export interface GuardLogger {
  error(obj: object, msg?: string): void;
  fatal(obj: object, msg?: string): void;
}

const PROGRAMMER_ERRORS = new Set(['TypeError', 'ReferenceError', 'RangeError', 'SyntaxError', 'EvalError', 'URIError', 'AssertionError']);

/** True for failures of I/O the agent recovers from (errno codes, socket hang-ups, HTTP status errors). */
export function isRecoverableFailure(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { name?: unknown; code?: unknown; statusCode?: unknown; message?: unknown };
  if (typeof e.name === 'string' && PROGRAMMER_ERRORS.has(e.name)) return false;
  if (typeof e.code === 'string' && /^E[A-Z0-9_]+$/.test(e.code) && !e.code.startsWith('ERR_')) return true;
  if (typeof e.statusCode === 'number') return true;
  return typeof e.message === 'string' && /socket hang up|connection reset|event stream (ended|closed)/i.test(e.message);
}

export interface ProcessGuardOptions {
  log: GuardLogger;
  /** default process.exit */
  exit?: (code: number) => void;
  /** default process */
  target?: NodeJS.EventEmitter;
}

/** Installs the handlers; returns a function that removes them. */
export function installProcessGuard(opts: ProcessGuardOptions): () => void {
  const target = opts.target ?? process;
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const handle = (kind: string) => (reason: unknown) => {
    const err = reason instanceof Error ? { name: reason.name, message: reason.message, code: (reason as { code?: unknown }).code, stack: reason.stack } : { value: String(reason) };
    if (isRecoverableFailure(reason)) {
      opts.log.error({ kind, err }, `${kind}: an I/O failure nothing handled (a bug to fix); the agent keeps running`);
      return;
    }
    opts.log.fatal({ kind, err }, `${kind}: programmer error; exiting`);
    exit(1);
  };
  const onRejection = handle('unhandledRejection');
  const onException = handle('uncaughtException');
  target.on('unhandledRejection', onRejection);
  target.on('uncaughtException', onException);
  return () => {
    target.off('unhandledRejection', onRejection);
    target.off('uncaughtException', onException);
  };
}
