/**
 * Air-gapped images: `docker save` tarballs (`.tar`, `.tar.gz`/`.tgz`, `.tar.zst` when zstd is
 * installed) in the agent's images directory are loaded into the runtime at start, before the pod
 * loop begins, and whenever a new or changed file appears (a short poll: fs.watch misses files copied
 * in over some network filesystems). Each file is loaded once per agent run per (size, mtime); what it
 * brought is logged, as k3s logs its imports.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../clock.js';

/** The runtime's load of one uncompressed or gzip tar stream; resolves with the image names it brought. */
export type LoadImages = (tar: Readable) => Promise<string[]>;

export interface ImageImporterOptions {
  dir: string;
  load: LoadImages;
  clock: Clock;
  log: Logger;
  /** how often the directory is looked at again (default 5 s) */
  pollMs?: number;
}

const TARBALL = /\.(tar|tar\.gz|tgz|tar\.zst|tar\.zstd)$/;

export class ImageImporter {
  /** file → `size:mtime` of what was loaded */
  private readonly loaded = new Map<string, string>();
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: ImageImporterOptions) {}

  /** Loads what the directory holds now, then keeps looking. */
  async start(): Promise<void> {
    await this.scan();
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.running = this.scan().finally(() => {
        this.running = undefined;
        this.schedule();
      });
    }, this.opts.pollMs ?? 5_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    await this.running;
  }

  /** One look at the directory: every tarball not loaded in its current state is loaded now. */
  async scan(): Promise<void> {
    let names: string[];
    try {
      names = (await fs.promises.readdir(this.opts.dir)).filter((n) => TARBALL.test(n)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.log.warn({ dir: this.opts.dir, err: (err as Error).message }, 'cannot read the images directory');
      return;
    }
    for (const name of names) {
      const file = path.join(this.opts.dir, name);
      let stat: fs.Stats;
      try {
        stat = await fs.promises.stat(file);
      } catch {
        continue;
      }
      const state = `${stat.size}:${stat.mtimeMs}`;
      if (!stat.isFile() || this.loaded.get(file) === state) continue;
      // A file still being copied in changes between two looks: wait for it to settle.
      if (this.opts.clock.now() - stat.mtimeMs < 1_000) continue;
      const began = this.opts.clock.now();
      try {
        const images = await this.opts.load(openTarball(file));
        this.loaded.set(file, state);
        this.opts.log.info({ file, images, ms: this.opts.clock.now() - began }, `imported ${images.join(', ') || 'no named image'} from ${name}`);
      } catch (err) {
        // Not retried until the file changes: a broken tarball would otherwise be read every poll.
        this.loaded.set(file, state);
        this.opts.log.error({ file, err: (err as Error).message }, `cannot import images from ${name}`);
      }
    }
  }
}

/** The tarball as the runtime's load takes it: gzip passes through (the engine reads it), zstd is unpacked here. */
function openTarball(file: string): Readable {
  if (!/\.zstd?$/.test(file)) return fs.createReadStream(file);
  const child = spawn('zstd', ['-dc', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.on('error', (err) => child.stdout.destroy(new Error(`zstd: ${err.message} (install zstd to import .tar.zst files)`)));
  child.on('exit', (code) => {
    if (code) child.stdout.destroy(new Error(`zstd exited with ${code}: ${stderr.trim()}`));
  });
  return child.stdout;
}
