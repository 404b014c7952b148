/**
 * Owns `berth migrate`: copying a cluster's SQLite store (DATA_DIR/state.db) into an etcd prefix so
 * that `berth server --etcd-servers … --data-dir DATA_DIR` carries on with the same objects.
 *
 * What is copied: every live key of the SQLite store at its current revision, byte for byte — the
 * API objects under /registry and the server's own records outside it (node credentials under
 * /berth/credentials/…), through the etcd Backend, so keys land where that backend maps them
 * (`<prefix>/…` and `<prefix>/~/berth/…`). Values are copied in their stored form: Secrets encrypted
 * at rest stay encrypted with the data dir's key, never decrypted on the way. The data dir's secret
 * files (pki/, admin-token, join-secret, encryption-config.yaml) stay files: the first server started
 * on the migrated store stores them in etcd for other servers to join with (auth/cluster-bootstrap.ts).
 *
 * Keeping resourceVersions monotonic: a resourceVersion is a store revision, and a fresh etcd starts
 * near revision 1, below what clients of the SQLite server have seen. etcd has no call that sets its
 * revision (3.4 lacks etcdutl's --bump-revision), and a revision advances by one per write whatever
 * the write, so before copying, the migration writes scratch keys (created and deleted, 64 at a time)
 * until etcd's revision is past SQLite's. Every copied object then gets a resourceVersion above any a
 * SQLite client held. After the copy, history is compacted at the final revision, so a client that
 * presents an old resourceVersion gets 410 Gone and relists — never a state from the middle of the
 * copy, which would look like objects going back in time.
 *
 * Safety and restarts: the SQLite file is opened with its exclusive lock, so a running server on it
 * makes the migration refuse (and no server can start on it while the copy runs). A target prefix
 * that already holds keys is refused unless `force` (which deletes every key under the prefix first).
 * A marker key (/berth/migration, outside the object tree) records the source and its revision
 * before the first write and is marked done at the end; running the same migration again resumes an
 * interrupted one (a key already copied with the same value is skipped) and is a no-op after it
 * finished. A marker naming another source, or a key whose value differs from the source's, is
 * refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { StorageError, type Backend, type KeyValue } from './storage/backend.js';
import { openEtcdBackend, type EtcdTlsFiles } from './storage/etcd.js';
import { openSqliteBackend, type SqliteBackend } from './storage/sqlite.js';

/** The marker key recording a migration into this store (outside /registry: no API lists it). */
export const MIGRATION_MARKER_KEY = '/berth/migration';
/** Scratch keys written only to advance the revision; none is left behind. */
export const REVISION_SCRATCH_PREFIX = '/berth/migration-scratch/';
/** writes in flight at once, both for the revision advance and the copy (etcd's throughput peaks around here) */
const DEFAULT_CONCURRENCY = 64;
/** keys read from SQLite per page */
const SOURCE_PAGE_SIZE = 500;

export interface MigrationMarker {
  /** absolute path of the SQLite file copied */
  source: string;
  /** the SQLite revision the copy was read at */
  sourceRevision: number;
  state: 'copying' | 'done';
  /** with state done: the revision history was compacted at */
  compactedAt?: number;
  /** keys copied (state done) */
  copied?: number;
}

export interface MigrationReport {
  source: string;
  sourceRevision: number;
  /** live keys found in the source */
  keys: number;
  /** keys written by this run (fewer than `keys` when resuming) */
  copied: number;
  /** the target's revision before this run wrote anything */
  targetRevisionBefore: number;
  /** revisions spent on scratch writes to pass sourceRevision */
  scratchRevisions: number;
  /** lowest and highest resourceVersion a copied key got in this run (0 when none) */
  firstCopiedRevision: number;
  lastCopiedRevision: number;
  /** history at or below this revision is compacted: older resourceVersions answer 410 */
  compactedAt: number;
  /** keys removed from the target first (force) */
  removed: number;
  /** 'migrated': copied now; 'resumed': finished an interrupted run; 'already-done': nothing to do */
  outcome: 'migrated' | 'resumed' | 'already-done';
}

export interface MigrateStoresOptions {
  source: Backend;
  /** recorded in the marker; a marker naming another source is refused */
  sourceName: string;
  target: Backend;
  /** delete every key under the target first instead of refusing a non-empty one */
  force?: boolean;
  concurrency?: number;
  log?: (message: string) => void;
}

/** A refusal the operator can act on (exit status 1 with the message, no stack). */
export class MigrationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationRefused';
  }
}

/**
 * How many writes the target needs before copying, so that the first copied key's revision is
 * greater than `sourceRevision`: the next write after `targetRevision + n` writes gets revision
 * `targetRevision + n + 1`, which must exceed `sourceRevision`.
 */
export function revisionsToAdvance(sourceRevision: number, targetRevision: number): number {
  return Math.max(0, sourceRevision - targetRevision);
}

/**
 * How to spend `revisions` writes as scratch creates and deletes, at most `concurrency` keys per
 * round: each round creates its keys and then deletes them (two revisions per key). The total may
 * exceed `revisions` by one (an odd count), never fall short.
 */
export function scratchRounds(revisions: number, concurrency: number): number[] {
  const keys = Math.ceil(Math.max(0, revisions) / 2);
  const rounds: number[] = [];
  for (let left = keys; left > 0; left -= concurrency) rounds.push(Math.min(concurrency, left));
  return rounds;
}

/** Runs `work` over `items` with at most `limit` promises pending. */
async function eachLimited<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}

async function readAllLive(source: Backend): Promise<{ revision: number; items: KeyValue[] }> {
  const revision = await source.currentRevision();
  const items: KeyValue[] = [];
  let startAfter: string | undefined;
  for (;;) {
    const page = await source.list('/', { revision, limit: SOURCE_PAGE_SIZE, ...(startAfter !== undefined ? { startAfter } : {}) });
    items.push(...page.items);
    if (!page.more || page.items.length === 0) break;
    startAfter = page.items[page.items.length - 1]!.key;
  }
  return { revision, items };
}

async function readMarker(target: Backend): Promise<MigrationMarker | undefined> {
  const kv = await target.get(MIGRATION_MARKER_KEY);
  return kv === undefined ? undefined : (JSON.parse(kv.value) as MigrationMarker);
}

async function writeMarker(target: Backend, marker: MigrationMarker): Promise<void> {
  const current = await target.get(MIGRATION_MARKER_KEY);
  if (current === undefined) await target.create(MIGRATION_MARKER_KEY, JSON.stringify(marker));
  else await target.update(MIGRATION_MARKER_KEY, JSON.stringify(marker), current.modRevision);
}

/** Deletes every key the target holds (force); returns how many. */
async function wipe(target: Backend, concurrency: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const page = await target.list('/', { limit: 1000 });
    if (page.items.length === 0) return removed;
    await eachLimited(page.items, concurrency, async (kv) => {
      await target.delete(kv.key).catch((err: unknown) => {
        if (!(err instanceof StorageError && err.code === 'NotFound')) throw err;
      });
    });
    removed += page.items.length;
  }
}

/** Writes scratch keys until the target's revision is at least `atLeast`; returns the revisions spent. */
async function advanceRevision(target: Backend, atLeast: number, concurrency: number): Promise<number> {
  // An interrupted run may have left scratch keys behind; they only ever held ''.
  const leftovers = await target.list(REVISION_SCRATCH_PREFIX);
  await Promise.all(leftovers.items.map((kv) => target.delete(kv.key)));
  const before = await target.currentRevision();
  for (const keys of scratchRounds(revisionsToAdvance(atLeast, before), concurrency)) {
    const names = Array.from({ length: keys }, (_, i) => `${REVISION_SCRATCH_PREFIX}${i}`);
    await Promise.all(names.map((k) => target.create(k, '')));
    await Promise.all(names.map((k) => target.delete(k)));
  }
  return (await target.currentRevision()) - before;
}

/**
 * Copies every live key of `source` into `target`; see the module comment for the guarantees.
 * Both stores stay open (the caller owns them).
 */
export async function migrateStores(opts: MigrateStoresOptions): Promise<MigrationReport> {
  const { source, target } = opts;
  const concurrency = Math.max(1, opts.concurrency ?? DEFAULT_CONCURRENCY);
  const log = opts.log ?? (() => undefined);
  const { revision: sourceRevision, items } = await readAllLive(source);
  if (items.some((kv) => kv.key === MIGRATION_MARKER_KEY || kv.key.startsWith(REVISION_SCRATCH_PREFIX))) {
    throw new MigrationRefused(`${opts.sourceName} holds ${MIGRATION_MARKER_KEY}: it is itself a migrated store, not a SQLite server's`);
  }
  const targetRevisionBefore = await target.currentRevision();
  const report: MigrationReport = {
    source: opts.sourceName,
    sourceRevision,
    keys: items.length,
    copied: 0,
    targetRevisionBefore,
    scratchRevisions: 0,
    firstCopiedRevision: 0,
    lastCopiedRevision: 0,
    compactedAt: 0,
    removed: 0,
    outcome: 'migrated',
  };

  let marker = await readMarker(target);
  const targetKeys = await target.count('/');
  if (opts.force && targetKeys > 0) {
    report.removed = await wipe(target, concurrency);
    log(`removed ${report.removed} keys from the target (--force)`);
    marker = undefined;
  } else if (marker !== undefined) {
    if (marker.source !== opts.sourceName || marker.sourceRevision !== sourceRevision) {
      throw new MigrationRefused(
        `the target already holds a migration of ${marker.source} at revision ${marker.sourceRevision} (${marker.state}), ` +
          `not of ${opts.sourceName} at revision ${sourceRevision}; use --force to delete everything under the prefix and copy again`,
      );
    }
    if (marker.state === 'done') {
      return { ...report, compactedAt: marker.compactedAt ?? 0, outcome: 'already-done' };
    }
    report.outcome = 'resumed';
    log(`resuming the interrupted migration of ${marker.source} at revision ${marker.sourceRevision}`);
  } else if (targetKeys > 0) {
    throw new MigrationRefused(
      `the target prefix already holds ${targetKeys} keys (another cluster, or a server started on it): refusing to mix stores; ` +
        'use another --etcd-prefix, or --force to delete everything under the prefix first',
    );
  }

  if (marker === undefined) {
    // Recorded before the first copied key, so an interrupted run is recognised as resumable.
    await writeMarker(target, { source: opts.sourceName, sourceRevision, state: 'copying' });
  }
  report.scratchRevisions = await advanceRevision(target, sourceRevision, concurrency);
  if (report.scratchRevisions > 0) log(`advanced the target's revision by ${report.scratchRevisions} to pass the source's ${sourceRevision}`);

  // Oldest first, so copied objects keep roughly the relative order of their resourceVersions.
  const ordered = [...items].sort((a, b) => a.modRevision - b.modRevision);
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  await eachLimited(ordered, concurrency, async (kv) => {
    try {
      const written = await target.create(kv.key, kv.value);
      if (written.modRevision <= sourceRevision) {
        throw new Error(`copied ${kv.key} at revision ${written.modRevision}, not above the source's ${sourceRevision}; something else is writing to the target`);
      }
      first = Math.min(first, written.modRevision);
      last = Math.max(last, written.modRevision);
      report.copied++;
    } catch (err) {
      if (!(err instanceof StorageError && err.code === 'AlreadyExists')) throw err;
      if (err.current?.value !== kv.value) {
        throw new MigrationRefused(`${kv.key} already exists in the target with another value: something else wrote to it; use --force to copy again from scratch`);
      }
    }
  });
  report.firstCopiedRevision = report.copied > 0 ? first : 0;
  report.lastCopiedRevision = last;

  report.compactedAt = await target.currentRevision();
  // Older revisions show the store half-copied (or empty): drop them, so a request at any earlier
  // resourceVersion answers Compacted (410) instead of that state.
  await target.compact(report.compactedAt);
  await writeMarker(target, { source: opts.sourceName, sourceRevision, state: 'done', compactedAt: report.compactedAt, copied: items.length });
  return report;
}

export interface MigrateOptions {
  /** the SQLite file (DATA_DIR/state.db) */
  sqliteFile: string;
  etcd: { servers: string[]; prefix?: string; tls?: EtcdTlsFiles };
  force?: boolean;
  concurrency?: number;
  log?: (message: string) => void;
}

/** Opens the SQLite file with its exclusive lock; refuses when a server holds it. */
export function openSourceExclusively(file: string): SqliteBackend {
  if (!fs.existsSync(file)) throw new MigrationRefused(`${file} does not exist: --from-sqlite names the state.db of a Berth data dir`);
  try {
    // No wait: a server holds the lock for its whole life, waiting would only delay the refusal.
    return openSqliteBackend({ file, exclusive: true, busyTimeoutMs: 0 });
  } catch (err) {
    for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
      const code = (e as { code?: unknown }).code;
      if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) {
        throw new MigrationRefused(`${file} is locked by a running berth server: stop it first (the copy must see a store nothing writes to)`);
      }
    }
    throw err;
  }
}

/** `berth migrate`: SQLite file → etcd prefix. */
export async function migrateSqliteToEtcd(opts: MigrateOptions): Promise<MigrationReport> {
  const sqliteFile = path.resolve(opts.sqliteFile);
  const source = openSourceExclusively(sqliteFile);
  try {
    const target = await openEtcdBackend({ endpoints: opts.etcd.servers, ...(opts.etcd.prefix !== undefined ? { prefix: opts.etcd.prefix } : {}), ...(opts.etcd.tls ? { tls: opts.etcd.tls } : {}) });
    try {
      return await migrateStores({
        source,
        sourceName: sqliteFile,
        target,
        ...(opts.force !== undefined ? { force: opts.force } : {}),
        ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
        ...(opts.log ? { log: opts.log } : {}),
      });
    } finally {
      target.close();
    }
  } finally {
    source.close();
  }
}
