/**
 * The resolver's pid file and identity check, shared by the resolver (which writes it) and the agent
 * (which adopts, replaces or stops the process it names). A pid is trusted only when /proc shows a live
 * resolver entry point serving this data directory, so a recycled pid is never signalled.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ResolverPidFile {
  pid: number;
  /** the resolver's arguments; a different set means a different configuration (or build) */
  args: string[];
}

export const RESOLVER_ENTRY = 'resolver-main.js';

export function resolverPidFile(dataDir: string): string {
  return path.join(dataDir, 'dns', 'resolver.pid');
}

export function readResolverPid(dataDir: string): ResolverPidFile | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(resolverPidFile(dataDir), 'utf8')) as ResolverPidFile;
    return Number.isInteger(parsed.pid) && Array.isArray(parsed.args) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** True when `pid` is a live (not zombie) resolver process serving `dataDir`. */
export function isResolverProcess(pid: number, dataDir: string): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/^\d+ \(.*\) Z/.test(stat)) return false;
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const at = argv.indexOf('--data-dir');
    return argv.some((a) => a.endsWith(`/${RESOLVER_ENTRY}`)) && at >= 0 && argv[at + 1] === dataDir;
  } catch {
    return false;
  }
}

/** True while a process with this pid exists (a zombie included). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
