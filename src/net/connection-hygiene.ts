/**
 * Owns the connection-level defences of every listener Berth opens (the API server and each agent's
 * endpoint): how long a connection may take to finish its TLS handshake and send its first request's
 * headers, how long it may sit idle between requests, how many connections may be open at once, and how
 * many ordinary requests one client may have in flight.
 *
 * Why each is needed: Node keeps a connection that never sends a byte open forever (its headersTimeout
 * only starts at the first byte), and a TLS socket that never completes its handshake for two minutes, so
 * any unauthenticated client could pin memory and file descriptors. The defaults are kube-apiserver's:
 * a 32 s read-header timeout, a 90 s idle timeout, and max-in-flight limits of 400 reads and 200
 * mutations (answered 429 with Retry-After). Long-running requests (watches, follow logs, exec/attach
 * upgrades) are not counted, and once a request is under way no timeout here ends it: a watch stays open
 * as long as its client wants.
 *
 * This module knows only node:http/node:net; the API server and the agent each wire it to their listener.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import { releaseFreedMemory } from './release-memory.js';

/** Every limit below is off when set to 0, as kube-apiserver's max-in-flight flags are. */
export interface ConnectionLimits {
  /** from accepting a connection (after its TLS handshake) or finishing a response, until the next request's headers are complete */
  readHeaderTimeoutMs: number;
  /** how long a kept-alive connection may wait for its next request */
  idleTimeoutMs: number;
  /** how long a TLS handshake may take (default: the read-header timeout, as Go's net/http takes it) */
  tlsHandshakeTimeoutMs: number;
  /** open connections beyond this are closed at once (after a logged warning) */
  maxConnections: number;
  /** ordinary reads (get, list) one client may have in flight */
  maxReadsInFlight: number;
  /** mutations (create, update, patch, delete) one client may have in flight */
  maxMutationsInFlight: number;
}

export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  readHeaderTimeoutMs: 32_000,
  idleTimeoutMs: 90_000,
  tlsHandshakeTimeoutMs: 32_000,
  maxConnections: 4096,
  maxReadsInFlight: 400,
  maxMutationsInFlight: 200,
});

/** Seconds a refused client is told to wait (kube-apiserver sends 1). */
export const RETRY_AFTER_SECONDS = 1;
/** At most one "refused a connection" warning per this period, so a flood does not flood the log too. */
const REFUSAL_LOG_PERIOD_MS = 10_000;
/** After this many connections closed since the last time, freed native memory is handed back to the OS… */
const CLOSES_BEFORE_RELEASE = 256;
/** …once closing has been quiet for this long, so a steady churn does not trim on every close. */
const RELEASE_QUIET_MS = 1_000;

/** Resolves partial limits against the defaults. */
export function resolveConnectionLimits(partial: Partial<ConnectionLimits> = {}): ConnectionLimits {
  const resolved = { ...DEFAULT_CONNECTION_LIMITS };
  for (const [key, value] of Object.entries(partial) as Array<[keyof ConnectionLimits, number | undefined]>) {
    if (value !== undefined) resolved[key] = value;
  }
  // Go's server bounds the handshake by its read(-header) timeout; kube-apiserver sets no other.
  if (partial.tlsHandshakeTimeoutMs === undefined) resolved.tlsHandshakeTimeoutMs = resolved.readHeaderTimeoutMs;
  return resolved;
}

/** Options to pass to http(s).createServer: Node applies these itself once a request has started. */
export function serverTimeoutOptions(limits: ConnectionLimits): http.ServerOptions & tls.TlsOptions {
  return {
    headersTimeout: limits.readHeaderTimeoutMs,
    // Node requires requestTimeout ≥ headersTimeout; bodies are at most a few MiB, so 5 min (Node's default) is ample.
    requestTimeout: Math.max(300_000, limits.readHeaderTimeoutMs),
    // Node checks its header/request timeouts on this period; a short timeout needs a short period to mean anything.
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(limits.readHeaderTimeoutMs / 4))),
    handshakeTimeout: limits.tlsHandshakeTimeoutMs,
  };
}

export interface ConnectionGuard {
  /** connections open right now */
  readonly open: number;
  /** connections closed because they sent no request in time, since start */
  readonly closedSilent: number;
  /** connections refused because too many were open, since start */
  readonly refused: number;
}

export interface GuardOptions {
  limits: ConnectionLimits;
  /** where refusals are reported */
  warn: (fields: Record<string, unknown>, message: string) => void;
  now?: () => number;
}

/**
 * Adds what Node does not do by itself: closing connections that never start a request, and the cap on
 * open connections. Call once per server, before it listens.
 */
export function guardConnections(server: http.Server, opts: GuardOptions): ConnectionGuard {
  const { limits } = opts;
  const now = opts.now ?? Date.now;
  const stats = { open: 0, closedSilent: 0, refused: 0 };
  let lastRefusalLog = -Infinity;
  const isTls = server instanceof tls.Server;
  server.keepAliveTimeout = limits.idleTimeoutMs;

  // Counted on the raw TCP socket, so connections still in their TLS handshake count too.
  server.on('connection', (socket: Socket) => {
    if (limits.maxConnections > 0 && stats.open >= limits.maxConnections) {
      stats.refused++;
      if (now() - lastRefusalLog >= REFUSAL_LOG_PERIOD_MS) {
        lastRefusalLog = now();
        opts.warn({ open: stats.open, maxConnections: limits.maxConnections, refusedSoFar: stats.refused }, 'refusing new connections: too many open');
      }
      socket.destroy();
      return;
    }
    stats.open++;
    socket.once('close', () => {
      stats.open--;
      noteClosed();
    });
    if (!isTls) awaitFirstRequest(socket);
  });
  if (isTls) server.on('secureConnection', (socket: Socket) => awaitFirstRequest(socket));

  // Thousands of closed TLS connections leave their memory inside the allocator; give it back once they are gone.
  let closedSinceRelease = 0;
  let releaseTimer: NodeJS.Timeout | undefined;
  function noteClosed(): void {
    if (++closedSinceRelease < CLOSES_BEFORE_RELEASE) return;
    if (releaseTimer) releaseTimer.refresh();
    else {
      releaseTimer = setTimeout(() => {
        releaseTimer = undefined;
        closedSinceRelease = 0;
        releaseFreedMemory();
      }, RELEASE_QUIET_MS);
      releaseTimer.unref();
    }
  }

  // A socket that has begun a request is left to Node's own timeouts: from its first byte headersTimeout
  // bounds the headers, and between requests keepAliveTimeout bounds the idle time.
  function awaitFirstRequest(socket: Socket): void {
    if (limits.readHeaderTimeoutMs <= 0) return;
    const timer = setTimeout(() => {
      if (socket.destroyed) return;
      stats.closedSilent++;
      socket.destroy();
    }, limits.readHeaderTimeoutMs);
    timer.unref();
    socket.once('data', () => clearTimeout(timer));
    socket.once('close', () => clearTimeout(timer));
  }

  return {
    get open() {
      return stats.open;
    },
    get closedSilent() {
      return stats.closedSilent;
    },
    get refused() {
      return stats.refused;
    },
  };
}

/**
 * Per-client limits on requests in flight, in the spirit of kube-apiserver's max-in-flight filter (which
 * counts per server; counting per client keeps one runaway client from starving the others). The caller
 * decides what is long-running and never asks for those.
 */
export class InflightLimiter {
  private readonly reads = new Map<string, number>();
  private readonly mutations = new Map<string, number>();

  constructor(private readonly limits: Pick<ConnectionLimits, 'maxReadsInFlight' | 'maxMutationsInFlight'>) {}

  /** Takes a slot for `client`; returns its release function, or undefined when the client is at its limit. */
  tryAcquire(client: string, mutating: boolean): (() => void) | undefined {
    const counts = mutating ? this.mutations : this.reads;
    const max = mutating ? this.limits.maxMutationsInFlight : this.limits.maxReadsInFlight;
    if (max <= 0) return () => {};
    const current = counts.get(client) ?? 0;
    if (current >= max) return undefined;
    counts.set(client, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (counts.get(client) ?? 1) - 1;
      if (left <= 0) counts.delete(client);
      else counts.set(client, left);
    };
  }

  /** Requests in flight for `client` (for tests and metrics). */
  inFlight(client: string): { reads: number; mutations: number } {
    return { reads: this.reads.get(client) ?? 0, mutations: this.mutations.get(client) ?? 0 };
  }
}

/** True for the HTTP methods that change state. */
export function isMutatingMethod(method: string | undefined): boolean {
  return method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE';
}
