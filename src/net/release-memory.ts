/**
 * Owns handing freed native memory back to the operating system: after a burst of connections closed,
 * and once after a process has started (releaseFreedMemoryAfterStart).
 *
 * Why: each TLS connection costs ≈ 35 KB of OpenSSL state allocated with malloc in small pieces. When 2,000
 * of them close, glibc keeps the freed pages inside its heap (only the top of the heap is trimmed on free),
 * so the process stays ≈ 70 MB larger even though nothing is in use. glibc's malloc_trim(0) returns those
 * pages (measured: 121 → 74 MB). Node has no binding for it, so it is called through koffi's FFI, loaded
 * only the first time it is needed; on a libc other than glibc this does nothing.
 */
import { createRequire } from 'node:module';

type Trim = (pad: number) => number;
let trim: Trim | null | undefined;

function loadTrim(): Trim | null {
  const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header?.glibcVersionRuntime;
  if (!glibc) return null;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(name: string): { func(signature: string): Trim } };
    return koffi.load('libc.so.6').func('int malloc_trim(size_t)');
  } catch {
    return null;
  }
}

/** Returns freed heap pages to the OS; true when it could try. Costs a few milliseconds on a large heap. */
export function releaseFreedMemory(): boolean {
  if (trim === undefined) trim = loadTrim();
  if (!trim) return false;
  trim(0);
  return true;
}

export interface ReleaseAfterStartOptions {
  /** how long after start the startup garbage is handed back (default 30 s) */
  delayMs?: number;
  /** injected in tests */
  release?: () => boolean;
  setTimer?: (fn: () => void, ms: number) => { unref?(): void };
  clearTimer?: (timer: unknown) => void;
}

/**
 * Hands back, once, the native memory a process freed while starting. Parsing and compiling every
 * module, generating keys and opening the store leave ≈ 10 MB of freed blocks inside glibc's heaps
 * (measured: 14.7 MB in the allocator, 4.5 MB of it in use, on an idle control plane), which glibc
 * keeps because they are not at the top of a heap; how much depends on timing, so the idle size
 * varied by 4 MB from run to run. One trim once start-up work is done returns them: idle RSS ≈ 5 MB
 * lower after paying ≈ 2 MB for the FFI library. Returns a function that cancels it if still pending.
 */
export function releaseFreedMemoryAfterStart(opts: ReleaseAfterStartOptions = {}): () => void {
  const setTimer = opts.setTimer ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
  const clearTimer = opts.clearTimer ?? ((t: unknown) => clearTimeout(t as NodeJS.Timeout));
  let pending = true;
  const timer = setTimer(() => {
    pending = false;
    (opts.release ?? releaseFreedMemory)();
  }, opts.delayMs ?? 30_000);
  // A process that is stopping never waits for this.
  timer.unref?.();
  return () => {
    if (pending) clearTimer(timer);
    pending = false;
  };
}
