/**
 * Image garbage collection and disk pressure, as the kubelet's image GC manager and eviction signals do
 * them. Every period the image filesystem (the engine's data root) is measured: past the high threshold
 * (85 % used) unused images are removed, least recently used first, until usage is under the low
 * threshold (80 %). Never an image any container on the engine uses (running or not, of any cluster),
 * never the pause image, never one first seen less than the minimum age ago. The same measurements
 * give the node's DiskPressure: image filesystem under 15 % available or the agent's filesystem under
 * 10 % (the kubelet's default hard eviction thresholds imagefs.available and nodefs.available).
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../clock.js';

export interface GcImage {
  id: string;
  names: string[];
  sizeBytes: number;
}

/** The engine's part: its images, the ids its containers use, the removal, and where it keeps images. */
export interface ImageGcRuntime {
  imageInventory(): Promise<GcImage[]>;
  imageIdsInUse(): Promise<Set<string>>;
  removeImage(id: string): Promise<void>;
  imageFsPath(): Promise<string>;
}

export interface FsUsage {
  capacityBytes: number;
  availableBytes: number;
}

export interface ImageGcOptions {
  runtime: ImageGcRuntime;
  /** the pause image's reference (never removed) */
  pauseImage: string;
  /** the agent's data dir: the nodefs of DiskPressure */
  nodeFsPath: string;
  clock: Clock;
  log: Logger;
  /** percent used that starts a collection (default 85) */
  highThresholdPercent?: number;
  /** percent used a collection brings usage under (default 80) */
  lowThresholdPercent?: number;
  /** an image first seen less than this long ago is kept (default 2 min) */
  minimumAgeMs?: number;
  /** how often (default 5 min, the kubelet's image GC period) */
  periodMs?: number;
  /** tests: measures a filesystem */
  statfs?: (path: string) => Promise<FsUsage>;
  /** the DiskPressure condition changed (undefined: none) */
  onPressureChange?: (message: string | undefined) => void;
}

/** The kubelet's default hard eviction thresholds for the disk signals. */
export const IMAGEFS_MIN_AVAILABLE = 0.15;
export const NODEFS_MIN_AVAILABLE = 0.1;

async function statfsUsage(path: string): Promise<FsUsage> {
  const s = await fs.promises.statfs(path);
  return { capacityBytes: s.blocks * s.bsize, availableBytes: s.bavail * s.bsize };
}

/**
 * Which images to remove, in order, to free `bytesToFree`: unused, not the pause image, old enough;
 * least recently used first (never used: by when first seen), stopping once enough is freed.
 */
export function imagesToRemove(opts: {
  images: GcImage[];
  inUse: Set<string>;
  pauseImage: string;
  lastUsed: Map<string, number>;
  firstSeen: Map<string, number>;
  now: number;
  minimumAgeMs: number;
  bytesToFree: number;
}): GcImage[] {
  const candidates = opts.images
    .filter((i) => !opts.inUse.has(i.id) && !i.names.includes(opts.pauseImage))
    .filter((i) => opts.now - (opts.firstSeen.get(i.id) ?? opts.now) >= opts.minimumAgeMs)
    .sort((a, b) => (opts.lastUsed.get(a.id) ?? opts.firstSeen.get(a.id) ?? 0) - (opts.lastUsed.get(b.id) ?? opts.firstSeen.get(b.id) ?? 0));
  const out: GcImage[] = [];
  let freed = 0;
  for (const image of candidates) {
    if (freed >= opts.bytesToFree) break;
    out.push(image);
    freed += image.sizeBytes;
  }
  return out;
}

export class ImageGc {
  private readonly firstSeen = new Map<string, number>();
  private readonly lastUsed = new Map<string, number>();
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private pressure: string | undefined;

  constructor(private readonly opts: ImageGcOptions) {}

  /** The DiskPressure condition's message while the node has it. */
  diskPressure(): string | undefined {
    return this.pressure;
  }

  start(): void {
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.opts.clock.setTimeout(() => {
      this.running = this.runOnce()
        .catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message }, 'image garbage collection failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.opts.periodMs ?? 5 * 60_000);
        });
    }, delayMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: note images and their use, collect when past the high threshold, then say whether the node is under pressure. */
  async runOnce(): Promise<void> {
    const { runtime, clock, log } = this.opts;
    const statfs = this.opts.statfs ?? statfsUsage;
    const now = clock.now();
    const [images, inUse, imageFs] = await Promise.all([runtime.imageInventory(), runtime.imageIdsInUse(), runtime.imageFsPath()]);
    for (const i of images) if (!this.firstSeen.has(i.id)) this.firstSeen.set(i.id, now);
    for (const id of inUse) this.lastUsed.set(id, now);
    for (const id of this.firstSeen.keys()) if (!images.some((i) => i.id === id)) (this.firstSeen.delete(id), this.lastUsed.delete(id));
    let usage = await statfs(imageFs);
    const high = this.opts.highThresholdPercent ?? 85;
    const low = this.opts.lowThresholdPercent ?? 80;
    const usedPercent = (u: FsUsage) => (u.capacityBytes ? (100 * (u.capacityBytes - u.availableBytes)) / u.capacityBytes : 0);
    if (usedPercent(usage) >= high) {
      const bytesToFree = usage.capacityBytes - usage.availableBytes - (low / 100) * usage.capacityBytes;
      const victims = imagesToRemove({ images, inUse, pauseImage: this.opts.pauseImage, lastUsed: this.lastUsed, firstSeen: this.firstSeen, now, minimumAgeMs: this.opts.minimumAgeMs ?? 120_000, bytesToFree });
      let freed = 0;
      for (const image of victims) {
        try {
          await runtime.removeImage(image.id);
          freed += image.sizeBytes;
          log.info({ image: image.names[0] ?? image.id, bytes: image.sizeBytes }, 'image garbage collection removed an unused image');
        } catch (err) {
          // In use by a container created meanwhile, or gone: the next pass looks again.
          log.info({ image: image.id, err: (err as Error).message }, 'image garbage collection could not remove an image');
        }
      }
      if (freed < bytesToFree) log.warn({ usedPercent: Math.round(usedPercent(usage)), wanted: Math.round(bytesToFree), freed }, `image garbage collection freed ${freed} bytes of the ${Math.round(bytesToFree)} wanted`);
      usage = await statfs(imageFs);
    }
    const nodeFs = await statfs(this.opts.nodeFsPath).catch(() => undefined);
    const problems: string[] = [];
    if (usage.capacityBytes && usage.availableBytes / usage.capacityBytes < IMAGEFS_MIN_AVAILABLE) problems.push(`imagefs.available<${IMAGEFS_MIN_AVAILABLE * 100}%`);
    if (nodeFs?.capacityBytes && nodeFs.availableBytes / nodeFs.capacityBytes < NODEFS_MIN_AVAILABLE) problems.push(`nodefs.available<${NODEFS_MIN_AVAILABLE * 100}%`);
    const pressure = problems.length ? `kubelet has disk pressure (${problems.join(', ')})` : undefined;
    if (pressure !== this.pressure) {
      this.pressure = pressure;
      this.opts.onPressureChange?.(pressure);
    }
  }
}
