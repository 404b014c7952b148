/**
 * Owns the SQLite storage Backend: a kine-style append-only log in one file (revisions, lists at a
 * revision, create, update and delete with revision checks, compaction), its durability settings and
 * single-writer lock, and running out of disk gracefully (the reserve file and the NOSPACE alarm).
 * Watch delivery is fanout.ts's, when to compact is compactor.ts's, and encryption at rest wraps it
 * (transforming-backend.ts).
 */
import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  MAX_VALUE_BYTES,
  StorageError,
  type Backend,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type StoreEvent,
  type Watcher,
  type WatchOptions,
} from './backend.js';
import { EventFanout, type StorageLogger } from './fanout.js';

export type { StorageLogger } from './fanout.js';

export { MAX_VALUE_BYTES } from './backend.js';

export interface SqliteBackendOptions {
  /** database file path, or ':memory:' (tests) */
  file: string;
  logger?: StorageLogger;
  /**
   * Hold SQLite's lock for the life of the process (default true). The revision cache and the
   * in-memory watch fan-out are only correct with a single writer, so a second control plane on
   * the same file must fail at open instead of silently writing events nobody here would see.
   */
  exclusive?: boolean;
  /** how long to wait for a lock held by another process before failing (default 5000 ms) */
  busyTimeoutMs?: number;
  /** optional cap on the database size (a quota below the disk); reaching it raises the NOSPACE alarm */
  maxSizeBytes?: number;
  /**
   * Bytes kept in a preallocated file next to the database (`<file>.reserve`, default 0 = none).
   * When the filesystem fills up the file is deleted, so deletes and compaction still have room to
   * write while creates and updates are refused (the NOSPACE alarm); it is re-created, and the alarm
   * cleared, once the filesystem again has room for twice the reserve.
   */
  reserveBytes?: number;
}

/** pages handed back to the filesystem per step while reclaiming space (1 MiB of 4 KiB pages) */
const VACUUM_SLICE_PAGES = 256;

/** the message of every write refused for lack of space (kube-apiserver says "etcdserver: mvcc: database space exceeded") */
export const NO_SPACE_MESSAGE =
  'database space exceeded (storage alarm NOSPACE): the filesystem holding the data directory is full; ' +
  'reads and deletes still work, so delete objects (or free disk space) and writes resume by themselves';

/** One row of the log table; one row per write, its id is the write's revision. */
interface LogRow {
  id: number;
  name: string;
  created: number;
  deleted: number;
  create_revision: number;
  prev_revision: number;
  value: string;
}

const LOG_COLUMNS = 'id, name, created, deleted, create_revision, prev_revision, value';
const SCHEMA_VERSION = 1;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS kv (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);
  CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
  ) WITHOUT ROWID;
`;

/**
 * The smallest string greater than every string starting with `prefix` (undefined when there is
 * none, i.e. the prefix is empty). Works on code points because SQLite compares TEXT as UTF-8
 * bytes, whose order is code-point order; a range query on it is exact where LIKE would treat
 * '_' and '%' in keys as wildcards.
 */
export function prefixUpperBound(prefix: string): string | undefined {
  const codePoints = Array.from(prefix);
  while (codePoints.length > 0) {
    const last = codePoints.pop()!.codePointAt(0)!;
    let next = last + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000; // surrogates are not characters
    if (next <= 0x10ffff) return codePoints.join('') + String.fromCodePoint(next);
  }
  return undefined;
}

function rowToKeyValue(row: LogRow): KeyValue {
  return {
    key: row.name,
    value: row.value,
    // A create row cannot know its own id before the insert, so it stores 0 and the flag says "me".
    createRevision: row.created ? row.id : row.create_revision,
    modRevision: row.id,
  };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function storageFailure(message: string, cause: unknown): StorageError {
  const e = new StorageError('Failed', message);
  e.cause = cause;
  return e;
}

/**
 * Backend over one SQLite file in the kine layout: an append-only log, one row per write, whose
 * AUTOINCREMENT id is the revision. Durable on acknowledgement: a write's promise settles only once
 * the WAL holding it is fsynced (group commit, below).
 *
 * better-sqlite3 answers synchronously, so each contract method does all its work at once: a write
 * is committed and queued for watchers before any other operation can run, and none can interleave
 * with it. Only its acknowledgement waits: commits do not fsync (synchronous=NORMAL), and one
 * fdatasync of the WAL on libuv's thread pool covers every commit made before it started, so a burst
 * of writes costs one or two fsyncs and the event loop never blocks on the disk (with FULL, each
 * commit held the loop for the whole fsync, ≈3 ms here, which under 20 pods/s of churn was most of
 * the server's time). Watchers and readers may see a commit up to one fsync before it is durable;
 * only a power loss in that window can take back what they saw (a process crash cannot: the data is
 * in the OS's page cache). Methods outside the contract
 * (alarm state, compacted revision, row and watcher counts, file sizes) are synchronous.
 */
export class SqliteBackend implements Backend {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly logger: StorageLogger | undefined;
  private readonly fanout: EventFanout;
  private readonly statements = new Map<string, Database.Statement>();
  private revision = 0;
  private compacted = 0;
  private closed = false;
  private readonly reserveBytes: number;
  private readonly reserveFile: string | undefined;
  private readonly maxSizeBytes: number | undefined;
  /** the NOSPACE alarm: set when a write hit a full disk (or the size cap) until space is back */
  private noSpace = false;
  /** the WAL file that fsyncs make durable (none in memory), and its descriptor once opened */
  private readonly walFile: string | undefined;
  private walFd: number | undefined;
  /** group commit: an fsync is in flight; callers committed before it started wait on it, later ones on the next */
  private syncing = false;
  private waitingForSync: Array<(err?: Error) => void> = [];
  private waitingForNextSync: Array<(err?: Error) => void> = [];

  constructor(opts: SqliteBackendOptions) {
    this.file = opts.file;
    this.logger = opts.logger;
    this.fanout = new EventFanout({ logger: opts.logger });
    const inMemory = opts.file === ':memory:' || opts.file === '';
    this.reserveBytes = inMemory ? 0 : Math.max(0, Math.floor(opts.reserveBytes ?? 0));
    this.reserveFile = this.reserveBytes > 0 ? `${opts.file}.reserve` : undefined;
    this.maxSizeBytes = opts.maxSizeBytes;
    this.walFile = inMemory ? undefined : `${opts.file}-wal`;
    this.db = openDatabase(opts);
    try {
      this.db.exec(SCHEMA);
      this.db.pragma(`user_version = ${SCHEMA_VERSION}`);
      this.compacted = this.readCompactedRevision();
      this.revision = this.readLastRevision();
    } catch (err) {
      this.db.close();
      throw storageFailure(`cannot initialise SQLite store ${opts.file}: ${errorMessage(err)}`, err);
    }
    if (!inMemory && (this.db.pragma('auto_vacuum', { simple: true }) as number) !== 2) {
      // A file from before incremental vacuum: converting needs one VACUUM (room for a copy of the
      // file). Without it everything still works; deletes then free pages inside the file only.
      try {
        this.db.pragma('auto_vacuum = INCREMENTAL');
        this.db.exec('VACUUM');
      } catch (err) {
        this.logger?.warn({ err, file: opts.file }, 'storage could not switch to incremental vacuum');
      }
    }
    if (this.reserveFile) {
      // Pages in the WAL need room again in the database file when they are checkpointed. Keeping
      // the WAL at a quarter of the reserve (SQLite's default is 1000 pages) means that, once the
      // reserve is released, the WAL can always be checkpointed and emptied.
      const pageSize = this.db.pragma('page_size', { simple: true }) as number;
      this.db.pragma(`wal_autocheckpoint = ${Math.max(16, Math.min(1000, Math.floor(this.reserveBytes / 4 / pageSize)))}`);
    }
    if (this.reserveFile && (!this.fillReserve() || this.freeBytes() < this.reserveBytes / 4)) {
      // Starting on a full disk: the WAL starts empty, so even a delete needs new room. Release the
      // reserve now and serve reads and deletes rather than failing later (or refusing to start).
      this.raiseAlarm('startup');
    }
    this.logger?.info(
      { file: opts.file, revision: this.revision, compactedRevision: this.compacted, noSpace: this.noSpace },
      'storage opened',
    );
  }

  /** true while the NOSPACE alarm is raised (creates and updates refused) */
  spaceAlarm(): boolean {
    return this.noSpace;
  }

  async currentRevision(): Promise<number> {
    return this.revision;
  }

  /** Every commit is published to the fan-out as it happens: the latest commit. */
  observedRevision(): number {
    return this.revision;
  }

  /** This process is the only writer: the stream is always at the latest commit. */
  async waitObserved(revision: number): Promise<boolean> {
    return this.revision >= revision;
  }

  /** the oldest revision still readable (SQLite keeps it in its meta table; for metrics and tests) */
  compactedRevision(): number {
    return this.compacted;
  }

  async get(key: string): Promise<KeyValue | undefined> {
    return this.guard('get', () => {
      const row = this.latestRow(key);
      return row && !row.deleted ? rowToKeyValue(row) : undefined;
    });
  }

  async modRevisionOf(key: string): Promise<number | undefined> {
    return this.guard('get', () => {
      // Answered from the (name, id) index alone: the value column, possibly megabytes, is not read.
      const row = this.statement('SELECT id, deleted FROM kv WHERE name = ? ORDER BY id DESC LIMIT 1').get(key) as
        | { id: number; deleted: number }
        | undefined;
      return row && !row.deleted ? row.id : undefined;
    });
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    return this.guard('list', () => {
      const revision = this.readableRevision(opts.revision);
      const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
      const range = { prefix, startAfter: opts.startAfter, revision };
      // One extra row tells us whether anything follows without a second query in the common case.
      const rows = this.liveAt(range, 'rows').all({ ...this.rangeParams(range), limit: limit ? limit + 1 : -1 }) as LogRow[];
      const more = limit > 0 && rows.length > limit;
      const items = (more ? rows.slice(0, limit) : rows).map(rowToKeyValue);
      let remaining = 0;
      if (more && !opts.withoutRemaining) {
        const after = { ...range, startAfter: items[items.length - 1]!.key };
        remaining = (this.liveAt(after, 'count').get(this.rangeParams(after)) as { n: number }).n;
      }
      return { items, revision, more, remaining };
    });
  }

  async count(prefix: string): Promise<number> {
    return this.guard('count', () => {
      const range = { prefix, startAfter: undefined, revision: this.revision };
      return (this.liveAt(range, 'count').get(this.rangeParams(range)) as { n: number }).n;
    });
  }

  async create(key: string, value: string): Promise<KeyValue> {
    this.checkValueSize(key, value);
    const event = this.write('create', 'grows', () => {
      const latest = this.latestRow(key);
      if (latest && !latest.deleted) {
        throw new StorageError('AlreadyExists', `key "${key}" already exists`, { current: rowToKeyValue(latest) });
      }
      const id = this.insert({ name: key, created: 1, deleted: 0, createRevision: 0, prevRevision: latest?.id ?? 0, value });
      const ev: StoreEvent = { type: 'create', kv: { key, value, createRevision: id, modRevision: id } };
      return ev;
    });
    await this.durable();
    return { ...event.kv };
  }

  async update(key: string, value: string, expectedRevision: number): Promise<KeyValue> {
    this.checkValueSize(key, value);
    const event = this.write('update', 'grows', () => {
      const prev = this.liveKeyValue(key);
      if (prev.modRevision !== expectedRevision) {
        throw new StorageError(
          'Conflict',
          `key "${key}" is at revision ${prev.modRevision}, not ${expectedRevision}`,
          { current: prev },
        );
      }
      const id = this.insert({
        name: key,
        created: 0,
        deleted: 0,
        createRevision: prev.createRevision,
        prevRevision: prev.modRevision,
        value,
      });
      const ev: StoreEvent = { type: 'update', kv: { key, value, createRevision: prev.createRevision, modRevision: id }, prev };
      return ev;
    });
    await this.durable();
    return { ...event.kv };
  }

  /**
   * Writes a tombstone. Resolves to the value as it was before the delete, at the delete's own
   * revision (the one the watch event carries).
   */
  async delete(key: string, expectedRevision?: number): Promise<KeyValue> {
    const event = this.write('delete', 'frees', () => {
      const prev = this.liveKeyValue(key);
      if (expectedRevision !== undefined && prev.modRevision !== expectedRevision) {
        throw new StorageError(
          'Conflict',
          `key "${key}" is at revision ${prev.modRevision}, not ${expectedRevision}`,
          { current: prev },
        );
      }
      // The tombstone stores no value: replay takes it from the prev row, and a delete on a
      // nearly full disk then needs a few bytes, not another copy of the object.
      const id = this.insert({
        name: key,
        created: 0,
        deleted: 1,
        createRevision: prev.createRevision,
        prevRevision: prev.modRevision,
        value: '',
      });
      const ev: StoreEvent = {
        type: 'delete',
        kv: { key, value: prev.value, createRevision: prev.createRevision, modRevision: id },
        prev,
      };
      return ev;
    });
    if (this.noSpace) this.reclaimSpace();
    await this.durable();
    // The value as it was, at the revision of the deletion (what watchers get on DELETED).
    return { ...event.kv };
  }

  /** Never calls `onError`: a watch on the in-process fan-out cannot be lost. */
  async watch(prefix: string, opts: WatchOptions): Promise<Watcher> {
    return this.guard('watch', () => {
      if (opts.fromRevision < this.compacted) {
        throw new StorageError(
          'Compacted',
          `revision ${opts.fromRevision} has been compacted; the oldest watchable revision is ${this.compacted}`,
          { compactedRevision: this.compacted },
        );
      }
      // Reading the backlog and subscribing happen in one synchronous step: no commit can run in
      // between, so the first live event is exactly the one after the last replayed row.
      const backlog = this.history(prefix, opts.fromRevision);
      return this.fanout.subscribe({ prefix, afterRevision: opts.fromRevision, backlog, onEvent: opts.onEvent });
    });
  }

  /**
   * Drops every row at or below `revision` that a newer row at or below it supersedes, and every
   * tombstone at or below it. State as of `revision` and everything after stays readable.
   * Compacting past the current revision compacts to the current revision.
   */
  async compact(revision: number): Promise<void> {
    this.compactTo(revision);
  }

  /** rows in the log, live or historical (for metrics and tests) */
  logRowCount(): number {
    return this.guard('count', () => (this.statement('SELECT COUNT(*) AS n FROM kv').get() as { n: number }).n);
  }

  /** open watchers (for metrics and tests) */
  watcherCount(): number {
    return this.fanout.size;
  }

  /** the database, WAL and reserve file sizes in bytes (for metrics and tests) */
  fileSizes(): { database: number; wal: number; reserve: number } {
    const size = (f: string | undefined) => {
      if (!f) return 0;
      try {
        return fs.statSync(f).size;
      } catch {
        return 0;
      }
    };
    return { database: size(this.file), wal: size(`${this.file}-wal`), reserve: size(this.reserveFile) };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.fanout.closeAll();
    this.statements.clear();
    // Closing checkpoints the WAL into the database file and syncs it: what was committed stays.
    this.db.close();
    if (this.walFd !== undefined && !this.syncing) fs.closeSync(this.walFd);
  }

  /**
   * Resolves once every commit made so far is on disk: the group commit. The first caller starts an
   * fdatasync of the WAL; callers that commit while it runs wait for the next one, which covers them all.
   */
  private durable(): Promise<void> {
    if (!this.walFile) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => (err ? reject(storageFailure(`cannot make the write durable in ${this.file}: ${err.message}`, err)) : resolve());
      if (this.syncing) this.waitingForNextSync.push(done);
      else {
        this.waitingForSync.push(done);
        this.startSync();
      }
    });
  }

  private startSync(): void {
    const batch = this.waitingForSync;
    this.waitingForSync = [];
    let fd: number;
    try {
      // Opened once: checkpoints truncate the WAL in place, and it is only removed when the database closes.
      fd = this.walFd ??= fs.openSync(this.walFile!, 'r');
    } catch (err) {
      // No WAL yet: nothing was committed into one, so there is nothing to sync.
      for (const done of batch) done((err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : (err as Error));
      return;
    }
    this.syncing = true;
    fs.fdatasync(fd, (err) => {
      this.syncing = false;
      for (const done of batch) done(err ?? undefined);
      if (this.closed) {
        if (this.walFd !== undefined) fs.closeSync(this.walFd);
        this.walFd = undefined;
        for (const done of this.waitingForNextSync) done();
        this.waitingForNextSync = [];
        return;
      }
      if (this.waitingForNextSync.length > 0) {
        this.waitingForSync = this.waitingForNextSync;
        this.waitingForNextSync = [];
        this.startSync();
      }
    });
  }

  // --- internals -------------------------------------------------------------------------------

  /** compact(), synchronously: reclaiming space runs it between checkpoints */
  private compactTo(revision: number): void {
    this.guard('compact', () => {
      const target = Math.min(revision, this.revision);
      if (target <= this.compacted) return;
      const from = this.compacted;
      const removed = this.db
        .transaction(() => {
          // Rows at or below `from` that are superseded were removed by earlier compactions, so
          // only keys written in (from, target] can have rows to drop.
          const superseded = this.statement(`
            DELETE FROM kv WHERE id IN (
              SELECT older.id
              FROM (SELECT name, MAX(id) AS top FROM kv WHERE id > @from AND id <= @target GROUP BY name) AS touched
              JOIN kv AS older ON older.name = touched.name AND older.id < touched.top
            )`).run({ from, target }).changes;
          const tombstones = this.statement('DELETE FROM kv WHERE deleted = 1 AND id > @from AND id <= @target').run({
            from,
            target,
          }).changes;
          this.statement(
            `INSERT INTO meta (name, value) VALUES ('compacted_revision', @target)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
          ).run({ target });
          return superseded + tombstones;
        })
        .immediate();
      this.compacted = target;
      this.logger?.info({ revision: target, removedRows: removed }, 'storage compacted');
    });
  }

  /**
   * Runs one write as one IMMEDIATE transaction, then publishes its event only after commit.
   * Writes that grow the store are refused while the NOSPACE alarm is up; a delete that meets a
   * full disk raises the alarm (releasing the reserve) and tries once more in the room it frees.
   */
  private write(what: string, kind: 'grows' | 'frees', body: () => StoreEvent): StoreEvent {
    if (kind === 'grows' && this.noSpace && !this.tryClearAlarm()) throw new StorageError('NoSpace', NO_SPACE_MESSAGE);
    const run = () => this.guard(what, () => this.db.transaction(body).immediate());
    let event: StoreEvent;
    try {
      event = run();
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      this.raiseAlarm(what);
      if (kind === 'grows') throw new StorageError('NoSpace', NO_SPACE_MESSAGE);
      event = run();
    }
    this.revision = event.kv.modRevision;
    this.fanout.publish(deepFreeze(event));
    return event;
  }

  private raiseAlarm(what: string): void {
    const first = !this.noSpace;
    this.noSpace = true;
    if (this.reserveFile) {
      fs.rmSync(this.reserveFile, { force: true });
      // Empty the WAL into the room just freed, so the deletes that follow write into a short WAL.
      try {
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      } catch (err) {
        this.logger?.warn({ err, file: this.file }, 'storage checkpoint after releasing the reserve failed');
      }
    }
    if (this.maxSizeBytes !== undefined) {
      // Past the cap, deletes need room as well: lift it by the reserve while the alarm is up.
      const pageSize = this.db.pragma('page_size', { simple: true }) as number;
      const pages = this.db.pragma('page_count', { simple: true }) as number;
      const headroom = Math.max(this.reserveBytes, 1024 * 1024);
      this.db.pragma(`max_page_count = ${pages + Math.ceil(headroom / pageSize)}`);
    }
    if (first) {
      this.logger?.warn(
        { file: this.file, write: what, reserveBytes: this.reserveBytes },
        'storage alarm NOSPACE raised: creates and updates are refused until space is freed; reads and deletes still work',
      );
    }
  }

  /**
   * After a delete under the alarm: drop all history (what a delete frees is only reusable once the
   * rows are gone), hand free pages back to the filesystem, empty the WAL, then see if the alarm can
   * be cleared. Watchers resuming from before this point relist (410 Gone), as after any compaction.
   *
   * Every step writes into the WAL before a checkpoint lets the files shrink, so the steps are small
   * and each is followed by a truncating checkpoint: the peak stays within what the reserve freed.
   */
  private reclaimSpace(): void {
    const step = (what: string, fn: () => unknown): boolean => {
      try {
        fn();
        return true;
      } catch (err) {
        this.logger?.warn({ err, file: this.file, step: what }, 'storage could not reclaim space under the NOSPACE alarm');
        return false;
      }
    };
    const checkpoint = () => step('checkpoint', () => this.db.pragma('wal_checkpoint(TRUNCATE)'));
    checkpoint();
    if (step('compact', () => this.compactTo(this.revision))) checkpoint();
    for (let slices = 0; slices < 100_000; slices++) {
      if ((this.db.pragma('freelist_count', { simple: true }) as number) === 0) break;
      if (!step('incremental vacuum', () => this.db.pragma(`incremental_vacuum(${VACUUM_SLICE_PAGES})`)) || !checkpoint()) break;
    }
    this.tryClearAlarm();
  }

  /** bytes the filesystem holding the database has free for this process (Infinity when unknown) */
  private freeBytes(): number {
    try {
      const st = fs.statfsSync(path.dirname(path.resolve(this.file)));
      return st.bavail * st.bsize;
    } catch {
      return Infinity;
    }
  }

  /** Clears the alarm when there is room again: the reserve is back in place and the size cap has headroom. */
  private tryClearAlarm(): boolean {
    if (!this.noSpace) return true;
    if (this.maxSizeBytes !== undefined) {
      const pageSize = this.db.pragma('page_size', { simple: true }) as number;
      const used = ((this.db.pragma('page_count', { simple: true }) as number) - (this.db.pragma('freelist_count', { simple: true }) as number)) * pageSize;
      const headroom = this.reserveBytes > 0 ? this.reserveBytes : this.maxSizeBytes / 10;
      if (used > this.maxSizeBytes - headroom) return false;
    }
    if (this.reserveFile) {
      const free = this.freeBytes();
      // Room for the reserve and as much again, so the next write does not trip the alarm at once.
      if (free < 2 * this.reserveBytes) return false;
      if (!this.fillReserve()) return false;
    }
    if (this.maxSizeBytes !== undefined) {
      const pageSize = this.db.pragma('page_size', { simple: true }) as number;
      this.db.pragma(`max_page_count = ${Math.max(1, Math.floor(this.maxSizeBytes / pageSize))}`);
    }
    this.noSpace = false;
    this.logger?.info({ file: this.file }, 'storage alarm NOSPACE cleared: writes accepted again');
    return true;
  }

  /** Makes the reserve file its full size with real blocks; false (and no partial file) when the disk has no room. */
  private fillReserve(): boolean {
    const file = this.reserveFile!;
    try {
      if (fs.statSync(file).size >= this.reserveBytes) return true;
    } catch {
      // not there yet
    }
    // Random rather than zero bytes: a compressing filesystem would store zeros in no space at all.
    const chunk = randomFillSync(Buffer.alloc(Math.min(this.reserveBytes, 1024 * 1024)));
    let fd: number | undefined;
    try {
      fd = fs.openSync(file, 'w', 0o600);
      for (let written = 0; written < this.reserveBytes; ) {
        const n = Math.min(chunk.length, this.reserveBytes - written);
        written += fs.writeSync(fd, chunk, 0, n);
      }
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      return true;
    } catch (err) {
      if (fd !== undefined) fs.closeSync(fd);
      fs.rmSync(file, { force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') return false;
      throw err;
    }
  }

  private guard<T>(what: string, fn: () => T): T {
    if (this.closed) throw new StorageError('Failed', `storage ${what} failed: store ${this.file} is closed`);
    try {
      return fn();
    } catch (err) {
      if (err instanceof StorageError) throw err;
      this.logger?.warn({ err, file: this.file }, `storage ${what} failed`);
      throw storageFailure(`storage ${what} failed: ${errorMessage(err)}`, err);
    }
  }

  private checkValueSize(key: string, value: string): void {
    // byteLength is O(n); skip it when even 3 bytes per UTF-16 unit cannot exceed the limit.
    if (value.length * 3 <= MAX_VALUE_BYTES) return;
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > MAX_VALUE_BYTES) {
      throw new StorageError('TooLarge', `value for key "${key}" is ${bytes} bytes; the limit is ${MAX_VALUE_BYTES}`);
    }
  }

  private readableRevision(requested: number | undefined): number {
    if (!requested) return this.revision;
    if (requested < this.compacted) {
      throw new StorageError(
        'Compacted',
        `revision ${requested} has been compacted; the oldest readable revision is ${this.compacted}`,
        { compactedRevision: this.compacted },
      );
    }
    // Nothing exists beyond the current revision yet; reading "as of the future" is reading now.
    return Math.min(requested, this.revision);
  }

  private latestRow(key: string): LogRow | undefined {
    return this.statement(`SELECT ${LOG_COLUMNS} FROM kv WHERE name = ? ORDER BY id DESC LIMIT 1`).get(key) as
      | LogRow
      | undefined;
  }

  private liveKeyValue(key: string): KeyValue {
    const row = this.latestRow(key);
    if (!row || row.deleted) throw new StorageError('NotFound', `key "${key}" not found`);
    return rowToKeyValue(row);
  }

  private insert(row: {
    name: string;
    created: number;
    deleted: number;
    createRevision: number;
    prevRevision: number;
    value: string;
  }): number {
    const info = this.statement(
      `INSERT INTO kv (name, created, deleted, create_revision, prev_revision, value)
       VALUES (@name, @created, @deleted, @createRevision, @prevRevision, @value)`,
    ).run(row);
    return Number(info.lastInsertRowid);
  }

  /** Log rows after `fromRevision` under `prefix`, as events, oldest first. */
  private history(prefix: string, fromRevision: number): StoreEvent[] {
    const upper = prefixUpperBound(prefix);
    // Unary + keeps SQLite on the primary-key range (rows after fromRevision, already in order)
    // instead of the name index, which would need a sort.
    const sql =
      `SELECT ${LOG_COLUMNS} FROM kv WHERE id > @from AND +name >= @lo` +
      (upper === undefined ? '' : ' AND +name < @hi') +
      ' ORDER BY id';
    const params = upper === undefined ? { from: fromRevision, lo: prefix } : { from: fromRevision, lo: prefix, hi: upper };
    const rows = this.statement(sql).all(params) as LogRow[];
    const byId = this.statement(`SELECT ${LOG_COLUMNS} FROM kv WHERE id = ?`);
    return rows.map((row) => {
      const kv = rowToKeyValue(row);
      if (row.created) return deepFreeze<StoreEvent>({ type: 'create', kv });
      // Compaction keeps the newest row at or below the compacted revision, so the row an
      // uncompacted update/delete replaced is still there.
      const prevRow = row.prev_revision ? (byId.get(row.prev_revision) as LogRow | undefined) : undefined;
      const prev = prevRow ? rowToKeyValue(prevRow) : undefined;
      if (row.deleted) {
        // A delete event carries the last value, which the tombstone itself does not store.
        const ev: StoreEvent = { type: 'delete', kv: { ...kv, value: prev?.value ?? '' } };
        if (prev) ev.prev = prev;
        return deepFreeze(ev);
      }
      const ev: StoreEvent = { type: 'update', kv };
      if (prev) ev.prev = prev;
      return deepFreeze(ev);
    });
  }

  /**
   * The live keys under a prefix as of a revision: per key, its newest row at or below the
   * revision, unless that row is a tombstone. `rows` lists them in key order; `count` counts.
   */
  private liveAt(range: { prefix: string; startAfter: string | undefined }, shape: 'rows' | 'count'): Database.Statement {
    const hasUpper = prefixUpperBound(range.prefix) !== undefined;
    const hasAfter = range.startAfter !== undefined;
    const conditions = ['k.name >= @lo', 'k.id <= @rev', 'k.deleted = 0'];
    if (hasUpper) conditions.push('k.name < @hi');
    if (hasAfter) conditions.push('k.name > @after');
    // Correlated form: SQLite walks the (name, id) index in key order and can stop at LIMIT,
    // where a GROUP BY subquery joined back would need a full sort first.
    conditions.push('k.id = (SELECT MAX(id) FROM kv WHERE name = k.name AND id <= @rev)');
    const where = conditions.join(' AND ');
    const sql =
      shape === 'rows'
        ? `SELECT ${LOG_COLUMNS.split(', ').map((c) => `k.${c}`).join(', ')} FROM kv AS k WHERE ${where} ORDER BY k.name LIMIT @limit`
        : `SELECT COUNT(*) AS n FROM kv AS k WHERE ${where}`;
    return this.statement(sql);
  }

  private rangeParams(range: { prefix: string; startAfter: string | undefined; revision: number }): Record<string, string | number> {
    const params: Record<string, string | number> = { lo: range.prefix, rev: range.revision };
    const upper = prefixUpperBound(range.prefix);
    if (upper !== undefined) params.hi = upper;
    if (range.startAfter !== undefined) params.after = range.startAfter;
    return params;
  }

  private statement(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  private readCompactedRevision(): number {
    const row = this.db.prepare("SELECT value FROM meta WHERE name = 'compacted_revision'").get() as
      | { value: number }
      | undefined;
    return row?.value ?? 0;
  }

  private readLastRevision(): number {
    // sqlite_sequence remembers the highest id ever issued even after compaction deleted the
    // newest rows (a trailing tombstone), so the revision never goes backwards across restarts.
    const seq = this.db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'kv'").get() as { seq: number } | undefined;
    const max = this.db.prepare('SELECT MAX(id) AS id FROM kv').get() as { id: number | null };
    return Math.max(seq?.seq ?? 0, max.id ?? 0, this.compacted);
  }
}

/** SQLITE_FULL: the disk (or max_page_count) is full; it may arrive wrapped in a StorageError. */
function isDiskFull(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (code === 'SQLITE_FULL') return true;
    if (typeof code === 'string' && code.startsWith('SQLITE_IOERR') && /ENOSPC|disk is full/i.test(String((e as Error).message))) return true;
  }
  return false;
}

function deepFreeze<T extends StoreEvent>(ev: T): T {
  // Events are shared by every watcher; freezing keeps one handler from altering another's view.
  Object.freeze(ev.kv);
  if (ev.prev) Object.freeze(ev.prev);
  return Object.freeze(ev);
}

function openDatabase(opts: SqliteBackendOptions): Database.Database {
  const file = opts.file;
  const inMemory = file === ':memory:' || file === '';
  if (!inMemory) {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    // SQLite creates the WAL and shared-memory files with the database file's mode, so making the
    // database 0600 before SQLite first opens it keeps all of them owner-only; chmod fixes older files.
    fs.closeSync(fs.openSync(file, 'a', 0o600));
    for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
      if (fs.existsSync(f)) fs.chmodSync(f, 0o600);
    }
  }
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw storageFailure(`cannot open SQLite store ${file}: ${errorMessage(err)}`, err);
  }
  try {
    // Before any table exists (a no-op on an existing file): lets a delete hand pages back to the
    // filesystem (PRAGMA incremental_vacuum) without VACUUM, which needs room for a second copy.
    db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
    // Must precede the switch to WAL so SQLite keeps the WAL index in process memory (no -shm).
    if (opts.exclusive ?? true) db.pragma('locking_mode = EXCLUSIVE');
    const mode = db.pragma('journal_mode = WAL', { simple: true }) as string;
    if (!inMemory && mode.toLowerCase() !== 'wal') {
      throw new Error(`journal_mode is ${mode}, expected wal`);
    }
    // NORMAL: commits do not fsync (checkpoints still do); SqliteBackend fsyncs the WAL itself, off the
    // event loop and once per group of commits, before it acknowledges a write.
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = OFF');
    if (opts.maxSizeBytes !== undefined) {
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.pragma(`max_page_count = ${Math.max(1, Math.floor(opts.maxSizeBytes / pageSize))}`);
    }
    // A full check at startup is affordable because compaction keeps the file small; it catches
    // a damaged file before we serve (or extend) it. The argument caps the report at 5 problems.
    const problems = (db.pragma('integrity_check(5)', { simple: false }) as Array<{ integrity_check: string }>).map(
      (r) => r.integrity_check,
    );
    if (problems.length !== 1 || problems[0] !== 'ok') {
      const summary = problems.join('; ').replace(/\s+/g, ' ').slice(0, 500);
      throw new Error(`integrity check failed (${summary}); restore the file from a backup or move it aside`);
    }
  } catch (err) {
    db.close();
    const locked = (err as { code?: string }).code === 'SQLITE_BUSY';
    const hint = locked ? ' (is another control plane using this file?)' : '';
    throw storageFailure(`cannot open SQLite store ${file}: ${errorMessage(err)}${hint}`, err);
  }
  return db;
}

/** Opens (creating if needed) a SQLite-backed store; throws StorageError 'Failed' naming the file on any problem. */
export function openSqliteBackend(opts: SqliteBackendOptions): SqliteBackend {
  return new SqliteBackend(opts);
}

// The compactor works on any Backend; re-exported here for callers that imported it from the SQLite module.
export { startCompactor, type CompactorOptions } from './compactor.js';
