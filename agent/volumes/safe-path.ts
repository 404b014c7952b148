/**
 * Resolves a volumeMount's subPath inside a volume without ever leaving it — the defence against
 * CVE-2017-1002101 / CVE-2021-25741, where a container plants a symlink (or swaps one in at the right
 * moment) so that the path the node mounts for another container lands outside the volume.
 *
 * Two passes:
 * 1. a lexical walk with lstat/readlink, treating the volume as the root: a symlink is followed only when
 *    it is relative and stays inside the volume; absolute targets and anything climbing above the volume
 *    are refused;
 * 2. an openat-style walk over the symlink-free result: each component is opened relative to its parent's
 *    descriptor (through /proc/self/fd/N) with O_NOFOLLOW, so a component swapped for a symlink after pass 1
 *    fails instead of being followed. The final descriptor is what gets bind-mounted (mounts.ts), so no later
 *    swap can change what the container sees.
 */
import fs from 'node:fs';
import path from 'node:path';

const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY } = fs.constants;
/** Linux O_PATH (Node does not export it): a handle that names an inode without opening its content. */
const O_PATH = 0o10000000;
const MAX_SYMLINK_HOPS = 40;

export class UnsafeSubPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafeSubPathError';
  }
}

/** An opened subPath; `fd` stays valid until close(). */
export interface OpenedSubPath {
  fd: number;
  isDirectory: boolean;
  /** the host path it was opened at (for messages; never use it for mounting) */
  hostPath: string;
  close(): void;
}

function components(p: string): string[] {
  return p.split('/').filter((x) => x !== '' && x !== '.');
}

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}

/**
 * Pass 1: the symlink-free path of `subPath` inside `root`, as components, plus how many trailing
 * components do not exist yet.
 */
export function resolveInsideVolume(root: string, subPath: string): { parts: string[]; missing: number } {
  if (path.isAbsolute(subPath)) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} must be a relative path`);
  if (subPath.split('/').includes('..')) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} must not contain '..'`);
  const pending = components(subPath);
  const resolved: string[] = [];
  let hops = 0;
  while (pending.length) {
    const comp = pending.shift()!;
    if (comp === '..') {
      // Only symlink targets get here; the components already resolved are real directories.
      if (!resolved.length) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} resolves outside the volume`);
      resolved.pop();
      continue;
    }
    let st: fs.Stats;
    try {
      st = fs.lstatSync(path.join(root, ...resolved, comp));
    } catch (err) {
      if (code(err) !== 'ENOENT') throw err;
      const rest = [comp, ...pending];
      if (rest.includes('..')) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} goes through a missing directory and '..'`);
      return { parts: [...resolved, ...rest], missing: rest.length };
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)}: too many levels of symbolic links`);
      const target = fs.readlinkSync(path.join(root, ...resolved, comp));
      if (path.isAbsolute(target)) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} is a symlink that points outside the volume`);
      pending.unshift(...target.split('/').filter((x) => x !== '' && x !== '.'));
      continue;
    }
    if (pending.length && !st.isDirectory()) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)}: ${path.join(...resolved, comp)} is not a directory`);
    resolved.push(comp);
  }
  return { parts: resolved, missing: 0 };
}

/**
 * Opens `subPath` inside the volume at `root` (see the module comment), creating missing directories with
 * the volume root's permissions. Throws UnsafeSubPathError when the path leaves the volume or changes
 * under our feet.
 */
export function openSubPath(root: string, subPath: string): OpenedSubPath {
  const { parts, missing } = resolveInsideVolume(root, subPath);
  const realRoot = fs.realpathSync(root);
  const dirMode = fs.statSync(realRoot).mode & 0o7777;
  const opened: number[] = [];
  const closeAll = () => {
    for (const fd of opened.splice(0)) fs.closeSync(fd);
  };
  try {
    let fd = fs.openSync(realRoot, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    opened.push(fd);
    let isDirectory = true;
    parts.forEach((comp, i) => {
      const at = `/proc/self/fd/${fd}/${comp}`;
      const last = i === parts.length - 1;
      if (i >= parts.length - missing) {
        try {
          fs.mkdirSync(at);
        } catch (err) {
          if (code(err) !== 'EEXIST') throw err;
        }
        const created = fs.openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        opened.push(created);
        fs.fchmodSync(created, dirMode); // on the descriptor: a swapped-in symlink cannot redirect it
        fd = created;
        return;
      }
      if (!last) {
        try {
          fd = fs.openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        } catch (err) {
          if (code(err) === 'ELOOP' || code(err) === 'ENOTDIR') {
            throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} changed while it was being resolved`);
          }
          throw err;
        }
        opened.push(fd);
        return;
      }
      // The last component may be a file: O_PATH opens it without reading it (a FIFO would block).
      fd = fs.openSync(at, O_PATH | O_NOFOLLOW);
      opened.push(fd);
      const st = fs.fstatSync(fd);
      if (st.isSymbolicLink()) throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} changed while it was being resolved`);
      isDirectory = st.isDirectory();
    });
    // Belt and braces: the kernel's own name for what we hold must lie inside the volume.
    const actual = fs.readlinkSync(`/proc/self/fd/${fd}`);
    if (actual !== realRoot && !actual.startsWith(realRoot + '/')) {
      throw new UnsafeSubPathError(`subPath ${JSON.stringify(subPath)} resolves outside the volume`);
    }
    const final = fd;
    const rest = opened.filter((x) => x !== final);
    for (const x of rest) fs.closeSync(x);
    opened.splice(0, opened.length, final);
    return { fd: final, isDirectory, hostPath: actual, close: closeAll };
  } catch (err) {
    closeAll();
    throw err;
  }
}
