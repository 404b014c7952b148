/**
 * GET /containerLogs/{namespace}/{pod}/{container}: a container's output as text/plain, with the kubelet's
 * query parameters (follow, tailLines, sinceSeconds, sinceTime, timestamps, previous, limitBytes) plus the
 * control plane's podUID / containerID hints. A follow stream lasts until the container stops or either side
 * goes away; the runtime's log stream is destroyed with the response, so no reader outlives its client.
 */
import type http from 'node:http';
import type { Logger } from 'pino';
import { errors } from '../../src/api/errors.js';
import { readPodLogOptions } from '../../src/api/query-parameters.js';
import type { ContainerRuntime, LogStreamOptions } from '../runtime/runtime.js';
import { findContainer } from './container-lookup.js';

export interface ContainerTarget {
  namespace: string;
  pod: string;
  container: string;
}

export interface ContainerLogsContext {
  runtime: ContainerRuntime;
  nodeName: string;
  log: Logger;
}

/** What the query asks for, validated. */
export interface LogQuery extends LogStreamOptions {
  previous: boolean;
  limitBytes?: number;
  podUID?: string;
  containerID?: string;
}

/**
 * Parses the kubelet's log query by the API server's rules (src/api/query-parameters.ts): 400 for
 * values that do not decode, 422 for values out of range.
 */
export function parseLogQuery(q: URLSearchParams, now: number = Date.now(), podName = ''): LogQuery {
  const opts = readPodLogOptions(q, podName);
  const out: LogQuery = { follow: opts.follow, timestamps: opts.timestamps, previous: opts.previous };
  if (opts.tailLines !== undefined) out.tailLines = opts.tailLines;
  if (opts.sinceSeconds !== undefined) out.sinceMs = now - opts.sinceSeconds * 1000;
  if (opts.sinceTime !== undefined) out.sinceMs = opts.sinceTime;
  if (opts.limitBytes !== undefined) out.limitBytes = opts.limitBytes;
  const podUID = q.get('podUID');
  if (podUID) out.podUID = podUID;
  const containerID = q.get('containerID');
  if (containerID) out.containerID = containerID;
  return out;
}

/** Serves one log request; errors before the first byte are thrown (the caller answers with a Status). */
export async function serveContainerLogs(ctx: ContainerLogsContext, target: ContainerTarget, query: URLSearchParams, res: http.ServerResponse): Promise<void> {
  const q = parseLogQuery(query, Date.now(), target.pod);
  const streams = ctx.runtime.streams;
  if (!streams) throw errors.unavailable('this node\'s container runtime cannot stream logs');
  const lookup: Parameters<typeof findContainer>[1] = { nodeName: ctx.nodeName, ...target, previous: q.previous };
  if (q.podUID) lookup.podUID = q.podUID;
  if (q.containerID) lookup.containerID = q.containerID;
  const container = await findContainer(ctx.runtime, lookup);
  const opts: LogStreamOptions = { follow: q.follow, timestamps: q.timestamps };
  if (q.tailLines !== undefined) opts.tailLines = q.tailLines;
  if (q.sinceMs !== undefined) opts.sinceMs = q.sinceMs;
  const stream = (await streams.logs(container.id, opts)) as NodeJS.ReadableStream & { destroy(): void };
  // The caller may have left while Docker was being asked: then 'close' below has already fired.
  if (res.destroyed || res.socket?.destroyed) return void stream.destroy();
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
  // kubectl shows nothing until it has the headers; a quiet follow stream must not hold them back.
  res.flushHeaders();
  let remaining = q.limitBytes ?? Infinity;
  const stop = () => stream.destroy();
  res.on('close', stop);
  stream.on('data', (chunk: Buffer) => {
    const part = chunk.length > remaining ? chunk.subarray(0, remaining) : chunk;
    remaining -= part.length;
    if (!res.write(part)) {
      stream.pause();
      res.once('drain', () => stream.resume());
    }
    if (remaining <= 0) {
      res.end();
      stop();
    }
  });
  stream.on('end', () => res.end());
  stream.on('error', (err: Error) => {
    ctx.log.debug({ err: err.message, container: target.container }, 'log stream broke');
    res.destroy();
  });
}
