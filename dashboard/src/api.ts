/**
 * The dashboard's only way to the cluster: API requests with the user's bearer token, and live
 * collections kept by list-then-watch (relisting when the server answers 410 Gone). Everything the
 * page shows passes through here, so RBAC decides what each person sees.
 */

const TOKEN_KEY = 'berth-dashboard-token';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; ownerReferences?: Array<{ kind: string; name: string }>; managedFields?: unknown };
  // Each view reads the fields it knows; the API's objects are open-ended.
  [field: string]: any;
}

export class ApiError extends Error {
  constructor(readonly code: number, message: string, readonly reason?: string) {
    super(message);
  }
}

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  save: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Called on any 401, so the page can return to the login form. */
let onUnauthorized: (err: ApiError) => void = () => undefined;
export function setUnauthorizedHandler(fn: (err: ApiError) => void): void {
  onUnauthorized = fn;
}

async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  let message = text || res.statusText;
  let reason: string | undefined;
  try {
    const status = JSON.parse(text) as { message?: string; reason?: string };
    message = status.message ?? message;
    reason = status.reason;
  } catch {
    /* not a Status: keep the text */
  }
  return new ApiError(res.status, `${res.status} ${reason ?? ''}: ${message}`.replace(' :', ':'), reason);
}

export interface RequestOptions {
  method?: string;
  body?: string;
  contentType?: string;
  signal?: AbortSignal;
  token?: string;
}

/** Network errors before any answer (a dropped connection, the host's network changing) are retried. */
const NETWORK_RETRIES = 3;

async function fetchRetryingNetworkErrors(path: string, init: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fetch(path, init);
    } catch (err) {
      if (init.signal?.aborted || attempt >= NETWORK_RETRIES) throw err;
      await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
    }
  }
}

/** A request with the session's token; non-2xx answers become ApiError with the Status message. */
export async function request(path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = opts.token ?? session.token();
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.contentType) headers['content-type'] = opts.contentType;
  const res = await fetchRetryingNetworkErrors(path, { method: opts.method ?? 'GET', headers, body: opts.body, signal: opts.signal, cache: 'no-store' });
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && !opts.token) onUnauthorized(err);
    throw err;
  }
  return res;
}

export async function getJson<T = KubeObject>(path: string, opts: RequestOptions = {}): Promise<T> {
  return (await request(path, opts)).json() as Promise<T>;
}

/** Reads a streamed body line by line until it ends or the signal aborts. */
export async function readLines(res: Response, onLine: (line: string) => void): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let pending = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += value;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      onLine(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
  }
  if (pending) onLine(pending);
}

export function keyOf(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

export interface LiveCollection {
  items(): KubeObject[];
  /** the last error (e.g. 403 Forbidden), shown by views instead of rows */
  error(): ApiError | undefined;
  stop(): void;
}

/**
 * List `path`, then watch from the list's resourceVersion, calling `onChange` after each change.
 * A 410 Gone (too old a resourceVersion) or a dropped stream relists; a 403 stops and is reported.
 */
export function liveCollection(path: string, onChange: () => void): LiveCollection {
  const objects = new Map<string, KubeObject>();
  const abort = new AbortController();
  let lastError: ApiError | undefined;
  const sep = path.includes('?') ? '&' : '?';

  const run = async () => {
    while (!abort.signal.aborted) {
      try {
        const list = await getJson<{ metadata: { resourceVersion: string }; items: KubeObject[] }>(path, { signal: abort.signal });
        objects.clear();
        for (const item of list.items) objects.set(keyOf(item), item);
        lastError = undefined;
        onChange();
        let resourceVersion = list.metadata.resourceVersion;
        let gone = false;
        while (!abort.signal.aborted && !gone) {
          const res = await request(`${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}`, { signal: abort.signal });
          await readLines(res, (line) => {
            if (!line.trim()) return;
            const ev = JSON.parse(line) as { type: string; object: KubeObject & { code?: number } };
            if (ev.type === 'ERROR') {
              gone = true; // 410 Gone, or any other watch error: start again from a fresh list
              return;
            }
            resourceVersion = ev.object.metadata?.resourceVersion ?? resourceVersion;
            if (ev.type === 'BOOKMARK') return;
            if (ev.type === 'DELETED') objects.delete(keyOf(ev.object));
            else objects.set(keyOf(ev.object), ev.object);
            onChange();
          });
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        if (err instanceof ApiError) {
          lastError = err;
          onChange();
          if (err.code === 401 || err.code === 403 || err.code === 404) return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  void run();
  return {
    items: () => [...objects.values()],
    error: () => lastError,
    stop: () => abort.abort(),
  };
}
