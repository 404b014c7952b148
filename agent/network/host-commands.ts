/**
 * The host's network tools (iproute2 and iptables), run as child processes in the agent's own network
 * namespace. One place that shells out, so every caller gets the same error text and the same lock wait.
 */
import { execFile } from 'node:child_process';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** default 15 s */
  timeoutMs?: number;
  /** written to the command's stdin (e.g. an `ip -batch -` script) */
  input?: string;
}

/** Runs a command; resolves with its exit code (never rejects for a non-zero exit). */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: opts.timeoutMs ?? 15_000, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
      // A non-zero exit has a numeric code; a command that could not run (ENOENT) a string one.
      const raw = (err as { code?: unknown } | null)?.code;
      const code = !err ? 0 : typeof raw === 'number' ? raw : 127;
      resolve({ code, stdout: String(stdout), stderr: String(stderr || (err && !stderr ? err.message : '')) });
    });
    // A command that died before reading its input must not turn into an unhandled EPIPE.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}

/** Runs a command and throws with its stderr when it fails. */
export async function mustRun(cmd: string, args: string[]): Promise<string> {
  const r = await run(cmd, args);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout;
}

/**
 * One iptables rule, made present idempotently: checked with -C first, then inserted at the top (-I)
 * or appended (-A). `-w` waits for the xtables lock, which Docker holds while it edits rules.
 */
export async function ensureIptablesRule(p: { table: string; chain: string; rule: string[]; position: 'first' | 'last' }): Promise<boolean> {
  const check = await run('iptables', ['-w', '5', '-t', p.table, '-C', p.chain, ...p.rule]);
  if (check.code === 0) return false;
  await mustRun('iptables', ['-w', '5', '-t', p.table, p.position === 'first' ? '-I' : '-A', p.chain, ...(p.position === 'first' ? ['1'] : []), ...p.rule]);
  return true;
}

/** Whether a chain exists in a table (Docker's DOCKER-USER exists only while Docker manages iptables). */
export async function hasChain(table: string, chain: string): Promise<boolean> {
  return (await run('iptables', ['-w', '5', '-t', table, '-S', chain])).code === 0;
}

/** Deletes every rule of a table whose comment is exactly `comment` (how the agent marks its own rules). */
export async function deleteIptablesRulesByComment(table: string, comment: string): Promise<number> {
  const saved = await run('iptables-save', ['-t', table]);
  if (saved.code !== 0) return 0;
  let removed = 0;
  for (const line of saved.stdout.split('\n')) {
    if (!line.startsWith('-A ') || !line.includes(`--comment ${comment}`) && !line.includes(`--comment "${comment}"`)) continue;
    const args = splitRule(line.slice(3));
    const r = await run('iptables', ['-w', '5', '-t', table, '-D', ...args]);
    if (r.code === 0) removed++;
  }
  return removed;
}

/** iptables-save quotes arguments with spaces; our comments have none, but keep quoted words whole. */
function splitRule(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line))) out.push(m[1] !== undefined ? m[1] : m[2]!);
  return out;
}
