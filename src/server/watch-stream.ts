/**
 * Owns serving `?watch=true` over HTTP: the newline-delimited event stream, initial events written
 * with backpressure, BOOKMARKs (periodic, and the one ending the initial events), timeoutSeconds, the
 * 410 ERROR event for a compacted revision, and cutting off clients that fall too far behind. Which
 * events exist is the registry's watch; authorization and budgets are app.ts's.
 */
import type { ServerResponse } from 'node:http';
import { ApiError, errors } from '../api/errors.js';
import type { KubeObject, WatchEvent } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import { readConsistency } from '../registry/list-options.js';
import type { ResourceTarget } from '../requests/request-path.js';
import { nextSliceTurn, RESPONSE_SLICE_BYTES } from './large-responses.js';

export interface WatchStreamOptions {
  registry: Registry;
  target: ResourceTarget;
  query: Record<string, string | undefined>;
  /** turns each event's object into what the client asked for (e.g. a one-row Table) */
  render?: (obj: KubeObject) => unknown;
  /** every open stream registers here so the server can end them on shutdown */
  open: Set<() => void>;
  /** apiVersion of BOOKMARK objects (the version the client asked for) */
  apiVersion: string;
  /** how often a watch with allowWatchBookmarks=true gets a BOOKMARK (Kubernetes: about a minute) */
  bookmarkIntervalMs?: number;
  /** called once, when the initial events (if any) have been written out or the watch could not start */
  onInitialEventsWritten?: () => void;
}

export const DEFAULT_BOOKMARK_INTERVAL_MS = 60_000;

/** Marks the BOOKMARK that ends the initial events of a sendInitialEvents=true watch. */
export const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';

/** A client that reads slower than events arrive is cut off past this many buffered bytes. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** Many watchers get the same event object: serialize it once per event type. */
const linesOnce = new WeakMap<object, Map<string, string>>();
function serialized(ev: WatchEvent<unknown>): string {
  if (!ev.object || typeof ev.object !== 'object') return JSON.stringify(ev) + '\n';
  let byType = linesOnce.get(ev.object);
  if (!byType) linesOnce.set(ev.object, (byType = new Map()));
  let line = byType.get(ev.type);
  if (line === undefined) byType.set(ev.type, (line = JSON.stringify(ev) + '\n'));
  return line;
}

const ADDED_PREFIX = Buffer.from('{"type":"ADDED","object":');
const EVENT_END = Buffer.from('}\n');

/**
 * Writes serialized objects as ADDED events (the bytes `serialized` would make), a slice at a time,
 * each slice only once the socket has taken the last one and the slice scheduler gives it a turn:
 * a watch of 10,000 objects holds a slice of them in flight, not all of them. Stops early once the
 * stream has ended.
 */
async function writeAddedEvents(res: ServerResponse, objects: Buffer[], ended: () => boolean): Promise<void> {
  let parts: Buffer[] = [];
  let size = 0;
  const flush = async (): Promise<boolean> => {
    await nextSliceTurn();
    if (ended()) return false;
    const writable = res.write(Buffer.concat(parts, size));
    parts = [];
    size = 0;
    if (!writable) await drained(res);
    return !ended();
  };
  for (const object of objects) {
    parts.push(ADDED_PREFIX, object, EVENT_END);
    size += ADDED_PREFIX.length + object.length + EVENT_END.length;
    if (size >= RESPONSE_SLICE_BYTES && !(await flush())) return;
  }
  if (size > 0) await flush();
}

/** Resolves when `res` can take more, or has closed. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Serve `?watch=true` as newline-delimited `{type, object}` JSON on a chunked response.
 * Events come from the registry's in-memory fan-out. A revision that was compacted away
 * ends the stream with one ERROR event carrying a 410 Status, as kube-apiserver does, so
 * clients know to relist. Invalid parameters are refused before the stream starts.
 * With allowWatchBookmarks=true the client also gets periodic BOOKMARKs carrying the revision
 * the watch has reached, and with sendInitialEvents=true one that marks the end of the initial
 * ADDED events.
 */
export async function serveWatch(res: ServerResponse, opts: WatchStreamOptions): Promise<void> {
  const { registry, target, query } = opts;
  let consistency: ReturnType<typeof readConsistency>;
  try {
    consistency = readConsistency(query, { watch: true });
  } catch (e) {
    // Refused parameters get a plain error response, not a stream.
    const err = e instanceof ApiError ? e : errors.internal(String(e));
    res.writeHead(err.code, { 'content-type': 'application/json' });
    res.end(err.toStatusJson());
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache' });
  res.flushHeaders();
  let watcher: { close(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let bookmarks: NodeJS.Timeout | undefined;
  let ended = false;
  let initialWritten = false;
  const initialEventsWritten = () => {
    if (initialWritten) return;
    initialWritten = true;
    opts.onInitialEventsWritten?.();
  };

  const end = () => {
    if (ended) return;
    ended = true;
    watcher?.close();
    if (timer) clearTimeout(timer);
    if (bookmarks) clearInterval(bookmarks);
    opts.open.delete(end);
    res.end();
    initialEventsWritten();
  };
  opts.open.add(end);
  res.on('close', end);

  const send = (ev: WatchEvent<unknown>) => {
    if (ended) return;
    res.write(serialized(ev));
    if (res.writableLength > MAX_BUFFERED_BYTES) end();
  };
  const sendError = (e: ApiError) => {
    send({ type: 'ERROR', object: e.toStatus() });
    end();
  };

  // Node timers hold at most 2^31-1 ms; a longer timeout is as good as none.
  if (consistency.timeoutSeconds !== undefined && consistency.timeoutSeconds < 2_147_483) timer = setTimeout(end, consistency.timeoutSeconds * 1000);

  const bookmark = (revision: number, annotations?: Record<string, string>) => {
    send({ type: 'BOOKMARK', object: { kind: target.info.kind, apiVersion: opts.apiVersion, metadata: { resourceVersion: String(revision), ...(annotations ? { annotations } : {}) } } });
  };
  try {
    watcher = await registry.watch(target.info, target.namespace, {
      labelSelector: query.labelSelector,
      fieldSelector: query.fieldSelector,
      resourceVersion: consistency.resourceVersion,
      sendInitialEvents: consistency.sendInitialEvents,
      // Events shown as stored go out as the shared serialized objects, with backpressure.
      ...(opts.render || target.name !== undefined ? {} : { sendInitialObjects: (objects: Buffer[]) => writeAddedEvents(res, objects, () => ended) }),
      onEvent: (ev) => {
        if (target.name !== undefined && ev.object.metadata.name !== target.name) return;
        send({ type: ev.type, object: opts.render ? opts.render(ev.object) : ev.object });
      },
      onInitialEventsEnd: (revision) => {
        if (consistency.allowWatchBookmarks) bookmark(revision, { [INITIAL_EVENTS_END_ANNOTATION]: 'true' });
      },
      onError: sendError,
    });
    if (ended) watcher.close();
    else if (consistency.allowWatchBookmarks) {
      // Store events reach watchers in a microtask after their commit, so when a timer fires every
      // committed event has been delivered and the current revision is safe to resume from.
      bookmarks = setInterval(() => bookmark(registry.currentRevision()), opts.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS);
    }
  } catch (e) {
    sendError(e instanceof ApiError ? e : errors.internal(String(e)));
  } finally {
    initialEventsWritten();
  }
}
