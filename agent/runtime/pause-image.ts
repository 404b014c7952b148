/**
 * Owns the pause image every pod sandbox runs: its tag, the label recording which pause.c built it, and
 * making it present on the Docker engine — built locally from pause.c when it is missing or stale.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';

const execFileAsync = promisify(execFile);

/**
 * Image of every pod's sandbox container: our own pause program
 * (scripts/images/pause/pause.c) in a FROM scratch image. Built locally because
 * no registry is reachable. Keep in sync with scripts/images/build-images.sh.
 */
export const PAUSE_IMAGE = 'berth/pause:3.9';

/**
 * Image label holding the sha256 of the pause.c that built the image, so both
 * the agent and build-images.sh can tell a current image from a stale one.
 */
export const PAUSE_SOURCE_LABEL = 'io.berth.source-sha256';

/** The slice of a pino logger this module uses. */
export interface PauseImageLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface EnsurePauseImageOptions {
  log?: PauseImageLogger;
  /** folder holding pause.c; default: scripts/images/pause of the repo this file belongs to */
  sourceDir?: string;
  /** tag to ensure; default PAUSE_IMAGE (tests use a throwaway tag) */
  image?: string;
}

/** The Dockerfile both this module and build-images.sh use. */
export function pauseDockerfile(sourceSha256: string): string {
  return [
    'FROM scratch',
    'COPY pause /pause',
    `LABEL ${PAUSE_SOURCE_LABEL}="${sourceSha256}"`,
    'ENTRYPOINT ["/pause"]',
    '',
  ].join('\n');
}

/**
 * Folders that may hold pause.c, nearest first: the compiled file sits in
 * dist/agent/runtime/ (repo root three levels up), the TypeScript source in
 * agent/runtime/ when run directly with a TS loader (two levels up).
 */
export function pauseSourceCandidates(): string[] {
  return ['../../../scripts/images/pause/', '../../scripts/images/pause/'].map((rel) =>
    fileURLToPath(new URL(rel, import.meta.url)),
  );
}

async function findPauseSource(sourceDir: string | undefined): Promise<string | undefined> {
  const dirs = sourceDir === undefined ? pauseSourceCandidates() : [sourceDir];
  for (const dir of dirs) {
    const file = join(dir, 'pause.c');
    try {
      await access(file);
      return file;
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

// Concurrent callers (several pods starting at once) share one build per daemon and tag.
const inFlight = new WeakMap<Dockerode, Map<string, Promise<void>>>();

/**
 * Makes sure the pause image exists on the daemon before the first pod needs
 * it. Builds it from pause.c (gcc -static, then a docker build of an in-memory
 * context) when missing, or when the image's source label shows pause.c has
 * changed. An existing image is kept if its source is unavailable or a rebuild
 * fails; a missing image that cannot be built is an error naming the fix.
 */
export function ensurePauseImage(docker: Dockerode, opts: EnsurePauseImageOptions = {}): Promise<void> {
  const image = opts.image ?? PAUSE_IMAGE;
  let perDaemon = inFlight.get(docker);
  if (perDaemon === undefined) {
    perDaemon = new Map();
    inFlight.set(docker, perDaemon);
  }
  const running = perDaemon.get(image);
  if (running !== undefined) return running;
  const work = ensureImage(docker, image, opts).finally(() => perDaemon.delete(image));
  perDaemon.set(image, work);
  return work;
}

async function ensureImage(docker: Dockerode, image: string, opts: EnsurePauseImageOptions): Promise<void> {
  const existing = await inspectExisting(docker, image);
  const sourceFile = await findPauseSource(opts.sourceDir);

  if (sourceFile === undefined) {
    if (existing !== undefined) return; // present; nothing to compare it with
    throw new Error(
      `pause image ${image} is not on the Docker daemon and its source pause.c was not found ` +
        `(looked in ${(opts.sourceDir === undefined ? pauseSourceCandidates() : [opts.sourceDir]).join(', ')}); ` +
        'run scripts/images/build-images.sh from the Berth repository to build it',
    );
  }

  const source = await readFile(sourceFile);
  const sourceSha256 = createHash('sha256').update(source).digest('hex');
  if (existing?.sourceLabel === sourceSha256) return;

  opts.log?.info({ image, reason: existing ? 'source changed' : 'missing' }, 'building pause image');
  try {
    await buildPauseImage({ docker, image, sourceFile, sourceSha256 });
  } catch (err) {
    if (existing === undefined) {
      throw new Error(
        `could not build pause image ${image}: ${(err as Error).message}; ` +
          'run scripts/setup.sh (installs gcc and libc6-dev) or scripts/images/build-images.sh',
        { cause: err },
      );
    }
    // A stale pause image still holds namespaces fine; don't block pods on it.
    opts.log?.warn({ image, err: (err as Error).message }, 'pause image rebuild failed; keeping the existing image');
    return;
  }
  const rebuilt = await inspectExisting(docker, image);
  if (existing !== undefined && rebuilt !== undefined && rebuilt.id !== existing.id) {
    // The old build is now untagged; drop it unless a container still uses it.
    await docker
      .getImage(existing.id)
      .remove()
      .catch(() => undefined);
  }
  opts.log?.info({ image }, 'built pause image');
}

interface ExistingImage {
  id: string;
  /** the source label, '' when the image has none */
  sourceLabel: string;
}

async function inspectExisting(docker: Dockerode, image: string): Promise<ExistingImage | undefined> {
  try {
    const info = await docker.getImage(image).inspect();
    return { id: info.Id, sourceLabel: info.Config?.Labels?.[PAUSE_SOURCE_LABEL] ?? '' };
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return undefined;
    throw err;
  }
}

async function buildPauseImage(args: {
  docker: Dockerode;
  image: string;
  sourceFile: string;
  sourceSha256: string;
}): Promise<void> {
  const workDir = await mkdtemp(join(tmpdir(), 'berth-pause-'));
  try {
    const binary = join(workDir, 'pause');
    try {
      // Static: a FROM scratch image has no libc to link against at run time.
      await execFileAsync('gcc', ['-static', '-Os', '-o', binary, args.sourceFile]);
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === 'ENOENT') throw new Error('gcc is not installed');
      throw new Error(`gcc -static failed: ${(e.stderr ?? e.message).trim()}`);
    }
    await execFileAsync('strip', [binary]).catch(() => undefined); // smaller, not required

    const context = ustarArchive([
      { name: 'Dockerfile', body: Buffer.from(pauseDockerfile(args.sourceSha256)), mode: 0o644 },
      { name: 'pause', body: await readFile(binary), mode: 0o755 },
    ]);
    const progress = await args.docker.buildImage(Readable.from([context]), { t: args.image, rm: true, forcerm: true });
    const events = await new Promise<Array<{ error?: string; errorDetail?: { message?: string } }>>(
      (resolve, reject) => {
        args.docker.modem.followProgress(progress, (err, output) => (err ? reject(err) : resolve(output)));
      },
    );
    // The build API answers 200 and reports failures inside the stream.
    const failure = events.find((ev) => ev.error !== undefined || ev.errorDetail !== undefined);
    if (failure !== undefined) {
      throw new Error(`docker build failed: ${failure.errorDetail?.message ?? failure.error ?? 'unknown error'}`);
    }
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** One regular file of a tar archive. */
export interface TarFile {
  name: string;
  body: Buffer;
  mode: number;
}

/**
 * A minimal POSIX ustar archive of regular files (names < 100 bytes, owned by
 * root), enough for a docker build context without a tar dependency.
 */
export function ustarArchive(files: TarFile[]): Buffer {
  const blocks: Buffer[] = [];
  const mtime = Math.floor(Date.now() / 1000);
  for (const file of files) {
    if (Buffer.byteLength(file.name) >= 100) throw new Error(`tar entry name too long: ${file.name}`);
    const header = Buffer.alloc(512);
    header.write(file.name, 0, 100, 'utf8');
    writeOctal(header, file.mode, 100, 8);
    writeOctal(header, 0, 108, 8); // uid
    writeOctal(header, 0, 116, 8); // gid
    writeOctal(header, file.body.length, 124, 12);
    writeOctal(header, mtime, 136, 12);
    header.fill(' ', 148, 156); // the checksum is computed with its own field as spaces
    header.write('0', 156, 'latin1'); // regular file
    header.write('ustar\0', 257, 'latin1');
    header.write('00', 263, 'latin1');
    let checksum = 0;
    for (const byte of header) checksum += byte;
    header.write(`${checksum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
    blocks.push(header, file.body, Buffer.alloc((512 - (file.body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024)); // two zero blocks mark the end
  return Buffer.concat(blocks);
}

function writeOctal(block: Buffer, value: number, offset: number, width: number): void {
  block.write(`${value.toString(8).padStart(width - 1, '0')}\0`, offset, width, 'latin1');
}
