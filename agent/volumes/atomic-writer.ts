/**
 * Writes a set of files into a volume directory so that a reader in a running container sees either the old
 * set or the new one, never a mix — the layout the kubelet uses for configMap, secret, downwardAPI and
 * projected volumes:
 *
 *   <dir>/..2024_05_01_12_00_00.abc123/<files>   one directory per version
 *   <dir>/..data -> ..2024_05_01_12_00_00.abc123  swapped by rename(2), which is atomic
 *   <dir>/<key>  -> ..data/<key>                 what users see (top-level names only)
 *
 * A new version is written in full beside the old one, then `..data` is replaced by renaming a temporary
 * symlink over it; the old version is removed afterwards.
 */
import fs from 'node:fs';
import path from 'node:path';

/** One file of a volume's payload. */
export interface FileProjection {
  data: Buffer;
  /** permission bits, e.g. 0o644 */
  mode: number;
}

/** Relative path (may contain '/') → file. */
export type Payload = Map<string, FileProjection>;

const DATA_LINK = '..data';
const TMP_DATA_LINK = '..data_tmp';

/** Refuses paths that could leave the volume or collide with the writer's own `..` entries. */
export function payloadPathErrors(p: string): string | undefined {
  if (!p) return 'must not be empty';
  if (path.isAbsolute(p)) return 'must be a relative path';
  if (p.length > 4096) return 'must be no more than 4096 characters';
  const parts = p.split('/');
  if (parts.some((x) => x === '..')) return "must not contain '..'";
  if (p.startsWith('..')) return "must not start with '..'";
  if (parts.some((x) => x === '' || x === '.')) return 'must not contain empty or "." path elements';
  if (p.includes('\0')) return 'must not contain NUL';
  return undefined;
}

function timestampDirPrefix(now: Date): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `..${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}.`;
}

/** What the current version holds, or undefined when there is none yet. */
function readCurrent(dir: string): { versionDir: string; files: Map<string, { data: Buffer; mode: number; gid: number }> } | undefined {
  let target: string;
  try {
    target = fs.readlinkSync(path.join(dir, DATA_LINK));
  } catch {
    return undefined;
  }
  if (target.includes('/') || !target.startsWith('..')) return undefined; // not one of ours
  const versionDir = path.join(dir, target);
  const files = new Map<string, { data: Buffer; mode: number; gid: number }>();
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(path.join(versionDir, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(path.join(versionDir, r));
      if (st.isDirectory()) walk(r);
      else if (st.isFile()) files.set(r, { data: fs.readFileSync(path.join(versionDir, r)), mode: st.mode & 0o7777, gid: st.gid });
    }
  };
  try {
    walk('');
  } catch {
    return undefined;
  }
  return { versionDir, files };
}

/** Permission bits a file ends up with; fsGroup adds group read, as the kubelet's ownership change does. */
function effectiveMode(mode: number, fsGroup: number | undefined): number {
  return fsGroup === undefined ? mode & 0o7777 : (mode | 0o440) & 0o7777;
}

function sameAsCurrent(current: ReturnType<typeof readCurrent>, payload: Payload, fsGroup: number | undefined): boolean {
  if (!current || current.files.size !== payload.size) return false;
  for (const [p, f] of payload) {
    const c = current.files.get(p);
    if (!c || c.mode !== effectiveMode(f.mode, fsGroup) || !c.data.equals(f.data)) return false;
    if (fsGroup !== undefined && c.gid !== fsGroup) return false;
  }
  return true;
}

export interface WriteOptions {
  /** group owning every file (group-readable), directories setgid */
  fsGroup?: number | undefined;
  now?: Date;
}

/**
 * Makes `dir` (an existing directory) hold exactly `payload`. Returns false when it already did (nothing
 * written). Throws on an invalid path; the previous version stays in place on any failure.
 */
export function writeAtomically(dir: string, payload: Payload, opts: WriteOptions = {}): boolean {
  for (const p of payload.keys()) {
    const err = payloadPathErrors(p);
    if (err) throw new Error(`invalid path ${JSON.stringify(p)} in volume: ${err}`);
  }
  const current = readCurrent(dir);
  if (sameAsCurrent(current, payload, opts.fsGroup)) return false;

  const versionDir = fs.mkdtempSync(path.join(dir, timestampDirPrefix(opts.now ?? new Date())));
  try {
    const dirMode = opts.fsGroup === undefined ? 0o755 : 0o2755;
    const chgrp = (p: string) => {
      if (opts.fsGroup !== undefined) fs.chownSync(p, fs.lstatSync(p).uid, opts.fsGroup);
    };
    fs.chmodSync(versionDir, dirMode);
    chgrp(versionDir);
    for (const [rel, file] of payload) {
      const full = path.join(versionDir, rel);
      let parent = path.dirname(full);
      const toCreate: string[] = [];
      while (parent !== versionDir && !fs.existsSync(parent)) {
        toCreate.unshift(parent);
        parent = path.dirname(parent);
      }
      for (const d of toCreate) {
        fs.mkdirSync(d);
        fs.chmodSync(d, dirMode);
        chgrp(d);
      }
      fs.writeFileSync(full, file.data, { flag: 'wx' });
      chgrp(full);
      // chmod after writing: the mode given to open(2) would be cut by the umask.
      fs.chmodSync(full, effectiveMode(file.mode, opts.fsGroup));
    }
    // The swap: a fresh symlink renamed over ..data.
    const tmpLink = path.join(dir, TMP_DATA_LINK);
    fs.rmSync(tmpLink, { force: true });
    fs.symlinkSync(path.basename(versionDir), tmpLink);
    fs.renameSync(tmpLink, path.join(dir, DATA_LINK));
  } catch (err) {
    fs.rmSync(versionDir, { recursive: true, force: true });
    throw err;
  }

  // User-visible names point through ..data, so they follow every later swap without being rewritten.
  const visible = new Set([...payload.keys()].map((p) => p.split('/')[0]!));
  for (const name of visible) {
    const link = path.join(dir, name);
    try {
      fs.lstatSync(link);
    } catch {
      fs.symlinkSync(path.join(DATA_LINK, name), link);
    }
  }
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('..') || visible.has(name)) continue;
    const full = path.join(dir, name);
    if (fs.lstatSync(full).isSymbolicLink()) fs.unlinkSync(full);
  }
  if (current) fs.rmSync(current.versionDir, { recursive: true, force: true });
  // Versions orphaned by a crash between the swap and the cleanup above.
  const live = fs.readlinkSync(path.join(dir, DATA_LINK));
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('..') && name !== DATA_LINK && name !== live && fs.lstatSync(path.join(dir, name)).isDirectory()) {
      fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    }
  }
  return true;
}
