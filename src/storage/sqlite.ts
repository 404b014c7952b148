import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
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

/** etcd's default request limit; Kubernetes objects larger than this cannot be stored there either. */
export const MAX_VALUE_BYTES = 1.5 * 1024 * 1024;

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
  /** optional cap on the database size; writes beyond it fail with StorageError 'Failed' */
  maxSizeBytes?: number;
}

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
 * AUTOINCREMENT id is the revision. Durable on acknowledgement (WAL + synchronous=FULL).
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

  constructor(opts: SqliteBackendOptions) {
    this.file = opts.file;
    this.logger = opts.logger;
    this.fanout = new EventFanout({ logger: opts.logger });
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
    this.logger?.info(
      { file: opts.file, revision: this.revision, compactedRevision: this.compacted },
      'storage opened',
    );
  }

  currentRevision(): number {
    return this.revision;
  }

  compactedRevision(): number {
    return this.compacted;
  }

  get(key: string): KeyValue | undefined {
    return this.guard('get', () => {
      const row = this.latestRow(key);
      return row && !row.deleted ? rowToKeyValue(row) : undefined;
    });
  }

  modRevisionOf(key: string): number | undefined {
    return this.guard('get', () => {
      // Answered from the (name, id) index alone: the value column, possibly megabytes, is not read.
      const row = this.statement('SELECT id, deleted FROM kv WHERE name = ? ORDER BY id DESC LIMIT 1').get(key) as
        | { id: number; deleted: number }
        | undefined;
      return row && !row.deleted ? row.id : undefined;
    });
  }

  list(prefix: string, opts: ListOptions = {}): ListResult {
    return this.guard('list', () => {
      const revision = this.readableRevision(opts.revision);
      const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
      const range = { prefix, startAfter: opts.startAfter, revision };
      // One extra row tells us whether anything follows without a second query in the common case.
      const rows = this.liveAt(range, 'rows').all({ ...this.rangeParams(range), limit: limit ? limit + 1 : -1 }) as LogRow[];
      const more = limit > 0 && rows.length > limit;
      const items = (more ? rows.slice(0, limit) : rows).map(rowToKeyValue);
      let remaining = 0;
      if (more) {
        const after = { ...range, startAfter: items[items.length - 1]!.key };
        remaining = (this.liveAt(after, 'count').get(this.rangeParams(after)) as { n: number }).n;
      }
      return { items, revision, more, remaining };
    });
  }

  count(prefix: string): number {
    return this.guard('count', () => {
      const range = { prefix, startAfter: undefined, revision: this.revision };
      return (this.liveAt(range, 'count').get(this.rangeParams(range)) as { n: number }).n;
    });
  }

  create(key: string, value: string): KeyValue {
    this.checkValueSize(key, value);
    const event = this.write('create', () => {
      const latest = this.latestRow(key);
      if (latest && !latest.deleted) {
        throw new StorageError('AlreadyExists', `key "${key}" already exists`, rowToKeyValue(latest));
      }
      const id = this.insert({ name: key, created: 1, deleted: 0, createRevision: 0, prevRevision: latest?.id ?? 0, value });
      const ev: StoreEvent = { type: 'create', kv: { key, value, createRevision: id, modRevision: id } };
      return ev;
    });
    return { ...event.kv };
  }

  update(key: string, value: string, expectedRevision: number): KeyValue {
    this.checkValueSize(key, value);
    const event = this.write('update', () => {
      const prev = this.liveKeyValue(key);
      if (prev.modRevision !== expectedRevision) {
        throw new StorageError(
          'Conflict',
          `key "${key}" is at revision ${prev.modRevision}, not ${expectedRevision}`,
          prev,
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
    return { ...event.kv };
  }

  /**
   * Writes a tombstone. Returns the value as it was before the delete (its modRevision is the last
   * write's, as kube-apiserver returns a deleted object); the delete's own revision is
   * currentRevision() right after this call, and the watch event carries it.
   */
  delete(key: string, expectedRevision?: number): KeyValue {
    const event = this.write('delete', () => {
      const prev = this.liveKeyValue(key);
      if (expectedRevision !== undefined && prev.modRevision !== expectedRevision) {
        throw new StorageError(
          'Conflict',
          `key "${key}" is at revision ${prev.modRevision}, not ${expectedRevision}`,
          prev,
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
    return { ...event.prev! };
  }

  watch(prefix: string, opts: WatchOptions): Watcher {
    return this.guard('watch', () => {
      if (opts.fromRevision < this.compacted) {
        throw new StorageError(
          'Compacted',
          `revision ${opts.fromRevision} has been compacted; the oldest watchable revision is ${this.compacted}`,
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
  compact(revision: number): void {
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

  /** rows in the log, live or historical (for metrics and tests) */
  logRowCount(): number {
    return this.guard('count', () => (this.statement('SELECT COUNT(*) AS n FROM kv').get() as { n: number }).n);
  }

  /** open watchers (for metrics and tests) */
  watcherCount(): number {
    return this.fanout.size;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.fanout.closeAll();
    this.statements.clear();
    this.db.close();
  }

  // --- internals -------------------------------------------------------------------------------

  /** Runs one write as one IMMEDIATE transaction, then publishes its event only after commit. */
  private write(what: string, body: () => StoreEvent): StoreEvent {
    const event = this.guard(what, () => this.db.transaction(body).immediate());
    this.revision = event.kv.modRevision;
    this.fanout.publish(deepFreeze(event));
    return event;
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

function deepFreeze<T extends StoreEvent>(ev: T): T {
  // Events are shared by every watcher; freezing keeps one handler from altering another's view.
  Object.freeze(ev.kv);
  if (ev.prev) Object.freeze(ev.prev);
  return Object.freeze(ev);
}

function openDatabase(opts: SqliteBackendOptions): Database.Database {
  const file = opts.file;
  const inMemory = file === ':memory:' || file === '';
  if (!inMemory) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (err) {
    throw storageFailure(`cannot open SQLite store ${file}: ${errorMessage(err)}`, err);
  }
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
    // Must precede the switch to WAL so SQLite keeps the WAL index in process memory (no -shm).
    if (opts.exclusive ?? true) db.pragma('locking_mode = EXCLUSIVE');
    const mode = db.pragma('journal_mode = WAL', { simple: true }) as string;
    if (!inMemory && mode.toLowerCase() !== 'wal') {
      throw new Error(`journal_mode is ${mode}, expected wal`);
    }
    // FULL: every commit fsyncs the WAL before returning, so an acknowledged write survives power loss.
    db.pragma('synchronous = FULL');
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

export interface CompactorOptions {
  /** how often to compact (default 5 minutes, as kube-apiserver does) */
  intervalMs?: number;
  /** always keep at least this many recent revisions (default 1000) */
  keepRevisions?: number;
  logger?: StorageLogger;
}

/**
 * Compacts `backend` periodically; returns a function that stops it.
 *
 * Each tick compacts up to the revision seen at the previous tick, but never within the last
 * `keepRevisions`. So history is kept for at least one interval (a client-go reflector that lost
 * its watch can resume from its last resourceVersion for ~5 minutes instead of relisting) and,
 * on a busy cluster, at least `keepRevisions` writes back; everything older is bounded away.
 */
export function startCompactor(backend: Backend, opts: CompactorOptions = {}): () => void {
  const intervalMs = opts.intervalMs ?? 5 * 60_000;
  const keepRevisions = opts.keepRevisions ?? 1000;
  let revisionAtPreviousTick: number | undefined;
  const tick = (): void => {
    try {
      const current = backend.currentRevision();
      if (revisionAtPreviousTick !== undefined) {
        const target = Math.min(revisionAtPreviousTick, current - keepRevisions);
        if (target > backend.compactedRevision()) backend.compact(target);
      }
      revisionAtPreviousTick = current;
    } catch (err) {
      opts.logger?.warn({ err }, 'storage compaction failed');
    }
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref(); // compaction alone must not keep the process alive
  return () => clearInterval(timer);
}
