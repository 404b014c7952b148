/**
 * Host mount operations for pod volumes: tmpfs for memory-backed emptyDirs and secrets, bind mounts that
 * pin a resolved subPath, unmounting, and a removal that never crosses into another filesystem. They use
 * mount(8)/umount(8) and therefore need root (the agent runs as root, like the kubelet).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MOUNT_TIMEOUT_MS = 10_000;

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** Every mount point of this mount namespace at or below `dir`, deepest first. */
export function mountPointsUnder(dir: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const root = path.resolve(dir);
  const found = new Set<string>();
  for (const line of text.split('\n')) {
    const mountPoint = line.split(' ')[4];
    if (!mountPoint) continue;
    const p = unescapeMountPath(mountPoint);
    if (p === root || p.startsWith(root + '/')) found.add(p);
  }
  return [...found].sort((a, b) => b.length - a.length);
}

export function isMountPoint(dir: string): boolean {
  return mountPointsUnder(dir).includes(path.resolve(dir));
}

async function runMount(args: string[], what: string): Promise<void> {
  try {
    await run('mount', args, { timeout: MOUNT_TIMEOUT_MS });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${what} failed: ${(e.stderr || e.message).trim()}`);
  }
}

/** Mounts a fresh tmpfs on `dir` (which must exist) unless one is mounted there already. */
export async function mountTmpfs(dir: string, opts: { sizeBytes?: number | undefined; mode: number }): Promise<void> {
  if (isMountPoint(dir)) return;
  const options = [`mode=${opts.mode.toString(8)}`];
  if (opts.sizeBytes !== undefined && opts.sizeBytes > 0) options.push(`size=${opts.sizeBytes}`);
  await runMount(['-t', 'tmpfs', '-o', options.join(','), 'tmpfs', dir], `mounting tmpfs on ${dir}`);
}

/**
 * Bind-mounts what the open descriptor `fd` refers to onto `target`. The source is the descriptor's
 * /proc magic link and mount(8) is told not to canonicalize it, so the kernel binds the very inode that was
 * opened and checked — a path swapped for a symlink after the check cannot redirect the mount.
 */
export async function bindMountFd(fd: number, target: string): Promise<void> {
  await runMount(['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${fd}`, target], `bind-mounting onto ${target}`);
}

/** Unmounts `target` (all stacked mounts); a busy mount is detached lazily. */
export async function unmount(target: string): Promise<void> {
  for (let i = 0; i < 8 && isMountPoint(target); i++) {
    try {
      await run('umount', [target], { timeout: MOUNT_TIMEOUT_MS });
    } catch {
      await run('umount', ['-l', target], { timeout: MOUNT_TIMEOUT_MS }).catch(() => undefined);
    }
  }
  if (isMountPoint(target)) throw new Error(`cannot unmount ${target}`);
}

/** Unmounts everything mounted at or below `dir`, deepest first. */
export async function unmountAllUnder(dir: string): Promise<void> {
  for (const m of mountPointsUnder(dir)) await unmount(m);
}

/**
 * Removes `dir` recursively without following symlinks and without descending into anything on another
 * device: should an unmount have failed unnoticed, data behind that mount (a hostPath pinned by a subPath,
 * say) is left alone instead of deleted. Returns the paths it refused to enter.
 */
export function removeTreeOnOneDevice(dir: string): string[] {
  let rootStat: fs.Stats;
  try {
    rootStat = fs.lstatSync(dir);
  } catch {
    return [];
  }
  const refused: string[] = [];
  const walk = (p: string): boolean => {
    const st = fs.lstatSync(p);
    if (st.dev !== rootStat.dev) {
      refused.push(p);
      return false;
    }
    if (st.isDirectory()) {
      let emptied = true;
      for (const name of fs.readdirSync(p)) if (!walk(path.join(p, name))) emptied = false;
      if (emptied) fs.rmdirSync(p);
      return emptied;
    }
    fs.unlinkSync(p);
    return true;
  };
  if (!rootStat.isDirectory()) {
    fs.unlinkSync(dir);
    return [];
  }
  walk(dir);
  return refused;
}
