import type { ServerResponse } from 'node:http';
import { ApiError, errors } from '../api/errors.js';
import type { KubeObject, WatchEvent } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import type { ResourceTarget } from './request-path.js';

export interface WatchStreamOptions {
  registry: Registry;
  target: ResourceTarget;
  query: Record<string, string | undefined>;
  /** turns each event's object into what the client asked for (e.g. a one-row Table) */
  render?: (obj: KubeObject) => unknown;
  /** every open stream registers here so the server can end them on shutdown */
  open: Set<() => void>;
}

/** A client that reads slower than events arrive is cut off past this many buffered bytes. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/**
 * Serve `?watch=true` as newline-delimited `{type, object}` JSON on a chunked response.
 * Events come from the registry's in-memory fan-out. A revision that was compacted away
 * ends the stream with one ERROR event carrying a 410 Status, as kube-apiserver does, so
 * clients know to relist.
 */
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

export function serveWatch(res: ServerResponse, opts: WatchStreamOptions): void {
  const { registry, target, query } = opts;
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache' });
  res.flushHeaders();
  let watcher: { close(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;

  const end = () => {
    if (ended) return;
    ended = true;
    watcher?.close();
    if (timer) clearTimeout(timer);
    opts.open.delete(end);
    res.end();
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

  const timeoutSeconds = query.timeoutSeconds ? Number(query.timeoutSeconds) : 0;
  if (timeoutSeconds > 0) timer = setTimeout(end, timeoutSeconds * 1000);

  try {
    watcher = registry.watch(target.info, target.namespace, {
      labelSelector: query.labelSelector,
      fieldSelector: query.fieldSelector,
      resourceVersion: query.resourceVersion,
      onEvent: (ev) => {
        if (target.name !== undefined && ev.object.metadata.name !== target.name) return;
        send({ type: ev.type, object: opts.render ? opts.render(ev.object) : ev.object });
      },
    });
    if (ended) watcher.close();
  } catch (e) {
    sendError(e instanceof ApiError ? e : errors.internal(String(e)));
  }
}
