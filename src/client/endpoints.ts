/**
 * Owns which control-plane replica an HTTP client talks to when it is given several: the ordered
 * server list, the one in use, when to leave it and for which, and the periodic health check of the
 * one in use. It knows nothing about HTTP requests; HttpClient reports failures to it, supplies the
 * health check, and closes what it has open against a server that was left (`onMove`).
 *
 * Policy: stay on the current server while it answers; leave it, for the next one in list order
 * (wrapping around), when a connection to it fails or times out, or when its `/readyz` does not
 * answer 200 within the check timeout. Ordinary 5xx answers do not count: a replica that answers is
 * up, and a 500 from one request is that request's failure; a replica that cannot serve (its store
 * is unreachable) says so on /readyz. There is no preferred server to return to: every replica
 * serves the whole API, so moving back would only cost the watches another reconnect.
 */

export interface ServerEndpointsOptions {
  /** the replicas' base URLs in order of preference, e.g. https://10.0.0.1:6443; at least one */
  servers: readonly string[];
  /** how often the current server's health is checked; 0 = never (default 2 s) */
  checkIntervalMs?: number;
  /** a health check not answered within this long fails (default 3 s) */
  checkTimeoutMs?: number;
  log?: { warn(obj: unknown, msg?: string): void };
}

/** Why a client moved, and from where to where. */
export interface EndpointMove {
  from: URL;
  to: URL;
  reason: string;
}

/**
 * With the defaults a hung server is left at most checkInterval + checkTimeout (5 s) after it stops
 * answering, and a dead one as soon as a request or watch finds its port closed: within the 10 s
 * an agent has to move in.
 */
export const DEFAULT_CHECK_INTERVAL_MS = 2_000;
export const DEFAULT_CHECK_TIMEOUT_MS = 3_000;

/** Parses a comma-separated `--server` value (or a list) into distinct base URLs; throws naming the bad entry. */
export function parseServerList(value: string | readonly string[]): string[] {
  const entries = (typeof value === 'string' ? value.split(',') : [...value]).map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) throw new Error('no server URL given');
  const out: string[] = [];
  for (const entry of entries) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new Error(`server "${entry}" is not a URL (e.g. https://10.0.0.1:6443)`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`server "${entry}" must be an http:// or https:// URL`);
    if (url.pathname !== '/' || url.search || url.hash) throw new Error(`server "${entry}" must be a base URL without a path`);
    const base = url.origin;
    if (!out.includes(base)) out.push(base);
  }
  return out;
}

export class ServerEndpoints {
  private readonly servers: URL[];
  private index = 0;
  private readonly listeners = new Set<(move: EndpointMove) => void>();
  private checkTimer: NodeJS.Timeout | undefined;
  private checking = false;
  readonly checkIntervalMs: number;
  readonly checkTimeoutMs: number;

  constructor(private readonly opts: ServerEndpointsOptions) {
    this.servers = parseServerList(opts.servers).map((s) => new URL(s));
    this.checkIntervalMs = opts.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS;
    this.checkTimeoutMs = opts.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  }

  /** The server requests go to now. */
  current(): URL {
    return this.servers[this.index]!;
  }

  all(): readonly URL[] {
    return this.servers;
  }

  get size(): number {
    return this.servers.length;
  }

  /** Called after every move, synchronously, before any request goes to the new server. */
  onMove(listener: (move: EndpointMove) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * `server` failed (connection refused or reset, timed out, unhealthy). If it is still the current
   * one, moves to the next and returns true; a failure reported late, for a server already left,
   * changes nothing. With one server there is nowhere to go.
   */
  markFailed(server: URL, reason: string): boolean {
    if (this.servers.length < 2 || server.origin !== this.current().origin) return false;
    const from = this.current();
    this.index = (this.index + 1) % this.servers.length;
    const move = { from, to: this.current(), reason };
    this.opts.log?.warn({ from: from.origin, to: move.to.origin, reason }, 'control-plane server failed; moving to the next one');
    for (const l of this.listeners) l(move);
    return true;
  }

  /**
   * Checks the current server every checkIntervalMs with `check` (resolves true when healthy; it
   * must give up by checkTimeoutMs itself) and moves on a failure. Only with more than one server:
   * with one there is nothing to choose. The timer does not keep the process alive.
   */
  startChecking(check: (server: URL, timeoutMs: number) => Promise<boolean>): void {
    if (this.servers.length < 2 || this.checkIntervalMs <= 0 || this.checkTimer) return;
    const tick = async (): Promise<void> => {
      if (this.checking) return;
      this.checking = true;
      const server = this.current();
      let healthy: boolean;
      let why = 'health check failed';
      try {
        healthy = await check(server, this.checkTimeoutMs);
      } catch (e) {
        healthy = false;
        why = `health check failed: ${(e as Error).message}`;
      } finally {
        this.checking = false;
      }
      if (!healthy) this.markFailed(server, why);
    };
    this.checkTimer = setInterval(() => void tick(), this.checkIntervalMs);
    this.checkTimer.unref();
  }

  stopChecking(): void {
    if (this.checkTimer) clearInterval(this.checkTimer);
    this.checkTimer = undefined;
  }
}
