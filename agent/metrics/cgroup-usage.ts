/**
 * Reads CPU and memory usage straight from cgroup files, as the kubelet's resource metrics (cAdvisor)
 * define them: cumulative CPU time, and the working set = usage minus inactive file-backed memory
 * (page cache the kernel can drop). Both hierarchies:
 *   v1: cpuacct/<path>/cpuacct.usage (ns), memory/<path>/memory.usage_in_bytes and memory.stat's total_inactive_file
 *   v2: <path>/cpu.stat usage_usec, <path>/memory.current and memory.stat's inactive_file
 * Node usage is the root cgroup's on v1, and /proc/stat and /proc/meminfo on v2 (whose root cgroup has no
 * memory.current). Files are read into one reused buffer with open/read/close and parsed in place, so a
 * sample costs a few syscalls per file and no string per file.
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import path from 'node:path';

/** One reading of a cgroup (or the node). */
export interface CgroupUsage {
  /** cumulative CPU time, nanoseconds */
  cpuNanos: number;
  /** bytes: usage minus inactive file */
  workingSetBytes: number;
}

/** Where the hierarchies are mounted. */
export type CgroupLayout =
  | { version: 1; cpuacctRoot: string; memoryRoot: string }
  | { version: 2; root: string };

/** The mounted hierarchy under `root` (default /sys/fs/cgroup); v2 when the unified hierarchy is the root. */
export function detectCgroupLayout(root = '/sys/fs/cgroup'): CgroupLayout {
  if (existsSync(path.join(root, 'cgroup.controllers'))) return { version: 2, root };
  const cpuacct = ['cpuacct', 'cpu,cpuacct', 'cpuacct,cpu'].map((d) => path.join(root, d)).find((d) => existsSync(path.join(d, 'cpuacct.usage'))) ?? path.join(root, 'cpuacct');
  return { version: 1, cpuacctRoot: cpuacct, memoryRoot: path.join(root, 'memory') };
}

/** A container's cgroup, relative to each hierarchy's root. */
export interface CgroupPaths {
  cpu: string;
  memory: string;
}

/**
 * The cgroup paths in a /proc/<pid>/cgroup file: `hierarchy-id:controllers:path` lines; v1 names the
 * cpuacct and memory controllers, v2 has the single `0::path` line.
 */
export function parseProcCgroup(text: string, version: 1 | 2): CgroupPaths | undefined {
  let cpu: string | undefined;
  let memory: string | undefined;
  let unified: string | undefined;
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const p = line.slice(second + 1);
    if (controllers === '') unified = p;
    for (const c of controllers.split(',')) {
      if (c === 'cpuacct') cpu = p;
      else if (c === 'memory') memory = p;
    }
  }
  if (version === 2) return unified === undefined ? undefined : { cpu: unified, memory: unified };
  return cpu !== undefined && memory !== undefined ? { cpu, memory } : undefined;
}

/** Where Docker puts a container's cgroup when its pid cannot be read: cgroupfs (`/docker/<id>`) or systemd (`/system.slice/docker-<id>.scope`). */
export function dockerCgroupCandidates(containerId: string, cgroupParent?: string): string[] {
  const out: string[] = [];
  if (cgroupParent) {
    out.push(cgroupParent.endsWith('.slice') ? `/${cgroupParent.replace(/^\/+/, '')}/docker-${containerId}.scope` : path.posix.join('/', cgroupParent, containerId));
  }
  out.push(`/docker/${containerId}`, `/system.slice/docker-${containerId}.scope`);
  return out;
}

/**
 * Reads cgroup and /proc files. One instance per sampler: it owns the buffer every read goes into, so it
 * is not for concurrent use (the sampler reads synchronously).
 */
export class CgroupReader {
  private readonly buf = Buffer.allocUnsafe(16 * 1024);

  constructor(
    readonly layout: CgroupLayout,
    private readonly procRoot = '/proc',
  ) {}

  /** Whether the container's cgroup directories exist (a path from another cgroup namespace may not). */
  exists(p: CgroupPaths): boolean {
    if (this.layout.version === 2) return existsSync(path.join(this.layout.root, p.memory, 'memory.current'));
    return existsSync(path.join(this.layout.cpuacctRoot, p.cpu, 'cpuacct.usage')) && existsSync(path.join(this.layout.memoryRoot, p.memory, 'memory.usage_in_bytes'));
  }

  /** A cgroup's usage; undefined when its files are gone (the container stopped). */
  container(p: CgroupPaths): CgroupUsage | undefined {
    if (this.layout.version === 2) {
      const dir = path.join(this.layout.root, p.memory);
      const usec = this.readKey(path.join(dir, 'cpu.stat'), 'usage_usec');
      const current = this.readNumber(path.join(dir, 'memory.current'));
      const inactive = this.readKey(path.join(dir, 'memory.stat'), 'inactive_file');
      if (usec === undefined || current === undefined) return undefined;
      return { cpuNanos: usec * 1000, workingSetBytes: workingSet(current, inactive) };
    }
    const cpuNanos = this.readNumber(path.join(this.layout.cpuacctRoot, p.cpu, 'cpuacct.usage'));
    const usage = this.readNumber(path.join(this.layout.memoryRoot, p.memory, 'memory.usage_in_bytes'));
    const inactive = this.readKey(path.join(this.layout.memoryRoot, p.memory, 'memory.stat'), 'total_inactive_file');
    if (cpuNanos === undefined || usage === undefined) return undefined;
    return { cpuNanos, workingSetBytes: workingSet(usage, inactive) };
  }

  /** The node's usage: the root cgroup on v1, /proc/stat and /proc/meminfo on v2. */
  node(): CgroupUsage | undefined {
    if (this.layout.version === 1) return this.container({ cpu: '/', memory: '/' });
    const n = this.read(path.join(this.procRoot, 'stat'));
    if (n === 0) return undefined;
    const cpuNanos = procStatCpuNanos(this.buf.toString('latin1', 0, n));
    const m = this.read(path.join(this.procRoot, 'meminfo'));
    if (m === 0 || cpuNanos === undefined) return undefined;
    return { cpuNanos, workingSetBytes: meminfoWorkingSet(this.buf.toString('latin1', 0, m)) };
  }

  /** Bytes read into the buffer; 0 when the file is missing or unreadable. */
  private read(file: string): number {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      return 0;
    }
    try {
      let total = 0;
      for (;;) {
        const n = readSync(fd, this.buf, total, this.buf.length - total, null);
        if (n <= 0) break;
        total += n;
        if (total === this.buf.length) break;
      }
      return total;
    } catch {
      return 0;
    } finally {
      closeSync(fd);
    }
  }

  private readNumber(file: string): number | undefined {
    const n = this.read(file);
    return n === 0 ? undefined : parseDecimal(this.buf, 0, n);
  }

  /** The value of `key <number>` in a flat-keyed file (memory.stat, cpu.stat). */
  private readKey(file: string, key: string): number | undefined {
    const n = this.read(file);
    return n === 0 ? undefined : keyedValue(this.buf, n, key);
  }
}

function workingSet(usage: number, inactiveFile: number | undefined): number {
  // cAdvisor: usage minus inactive file, never below zero.
  if (inactiveFile === undefined) return usage;
  return usage > inactiveFile ? usage - inactiveFile : 0;
}

/** The leading decimal number of buf[start, end); undefined when there is none. */
export function parseDecimal(buf: Buffer, start: number, end: number): number | undefined {
  let i = start;
  while (i < end && (buf[i] === 0x20 || buf[i] === 0x09)) i++;
  let v = 0;
  let digits = 0;
  for (; i < end; i++) {
    const c = buf[i]!;
    if (c < 0x30 || c > 0x39) break;
    v = v * 10 + (c - 0x30);
    digits++;
  }
  return digits ? v : undefined;
}

/** In `key value\n` lines, the value of the line that starts with exactly `key`. */
export function keyedValue(buf: Buffer, length: number, key: string): number | undefined {
  let line = 0;
  while (line < length) {
    let eol = buf.indexOf(0x0a, line);
    if (eol < 0 || eol > length) eol = length;
    if (eol - line > key.length && buf[line + key.length] === 0x20 && startsWith(buf, line, key)) {
      return parseDecimal(buf, line + key.length + 1, eol);
    }
    line = eol + 1;
  }
  return undefined;
}

function startsWith(buf: Buffer, at: number, key: string): boolean {
  for (let i = 0; i < key.length; i++) if (buf[at + i] !== key.charCodeAt(i)) return false;
  return true;
}

/** USER_HZ on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Busy CPU time in /proc/stat's `cpu` line (user nice system irq softirq steal; not idle, iowait or guest, which user already counts). */
export function procStatCpuNanos(text: string): number | undefined {
  const line = text.slice(0, text.indexOf('\n') >>> 0);
  const f = line.trim().split(/\s+/);
  if (f[0] !== 'cpu' || f.length < 8) return undefined;
  const n = (i: number) => Number(f[i] ?? 0) || 0;
  const ticks = n(1) + n(2) + n(3) + n(6) + n(7) + n(8);
  return (ticks * 1e9) / CLOCK_TICKS_PER_SECOND;
}

/** Node working set from /proc/meminfo: used (MemTotal − MemFree) minus inactive file pages, as cAdvisor computes the root's. */
export function meminfoWorkingSet(text: string): number {
  const kib = (key: string) => {
    const m = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+)`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return workingSet(kib('MemTotal') - kib('MemFree'), kib('Inactive(file)'));
}
