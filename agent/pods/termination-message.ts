/**
 * Owns termination messages (terminationMessagePath / terminationMessagePolicy). Like the kubelet, the
 * agent bind-mounts a per-container host file from its data dir at terminationMessagePath (default
 * /dev/termination-log). Copying the file out of the stopped container instead would not work for the
 * default path: /dev is a tmpfs that is gone once the container stops. The file is read when the
 * container has ended (at most 4096 bytes); with FallbackToLogsOnError an empty file and a failed exit
 * take the last 80 lines / 2048 bytes of the container's log instead.
 *
 * Layout: <dataDir>/pods/<pod uid>/containers/<container name>/<restart count>-termination-log — one file
 * per container instance (the restart count is part of the Docker name, so it is unique per instance).
 * This requires the agent's data dir to be on the Docker host, which it is: the agent drives the local
 * daemon.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Container } from '../../src/api/types.js';

export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
export const FALLBACK_LOG_LINES = 80;
export const FALLBACK_LOG_BYTES = 2048;
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';

const SAFE_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function safe(segment: string): boolean {
  return SAFE_SEGMENT.test(segment) && segment !== '..';
}

export function podContainersDir(dataDir: string, podUid: string): string | undefined {
  return safe(podUid) ? path.join(dataDir, 'pods', podUid, 'containers') : undefined;
}

/** The host file of one container instance; undefined when the names cannot form a safe path. */
export function terminationLogPath(p: { dataDir: string; podUid: string; containerName: string; restartCount: number }): string | undefined {
  const dir = podContainersDir(p.dataDir, p.podUid);
  if (!dir || !safe(p.containerName)) return undefined;
  return path.join(dir, p.containerName, `${p.restartCount}-termination-log`);
}

/** Where the container wants its message file; undefined when it opted out with an empty path. */
export function messagePathInContainer(c: Container): string | undefined {
  const p = c.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
  return typeof p === 'string' && p.startsWith('/') ? p : undefined;
}

/** Creates the empty file, writable by any user the container runs as. */
export async function prepareTerminationLog(file: string): Promise<void> {
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  await fs.promises.writeFile(file, '');
  await fs.promises.chmod(file, 0o666);
}

/**
 * The message of an ended container instance: the file's content, else (FallbackToLogsOnError and a
 * non-zero exit) the log tail, else ''.
 */
export async function readTerminationMessage(p: {
  file: string | undefined;
  policy: Container['terminationMessagePolicy'];
  exitCode: number;
  readLogs: () => Promise<string>;
}): Promise<string> {
  let message = '';
  if (p.file) {
    try {
      const fh = await fs.promises.open(p.file, 'r');
      try {
        const buf = Buffer.alloc(MAX_TERMINATION_MESSAGE_BYTES);
        const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
        message = buf.subarray(0, bytesRead).toString('utf8');
      } finally {
        await fh.close();
      }
    } catch {
      message = ''; // never created (container made by an older agent) or already cleaned up
    }
  }
  if (!message && p.policy === 'FallbackToLogsOnError' && p.exitCode !== 0) {
    try {
      message = await p.readLogs();
    } catch {
      message = '';
    }
  }
  return message;
}

export async function removeTerminationLog(file: string | undefined): Promise<void> {
  if (file) await fs.promises.rm(file, { force: true });
}

/** Drops every message file of the pod, and the pod dir itself if nothing else (volumes) is left in it. */
export async function removePodTerminationLogs(dataDir: string, podUid: string): Promise<void> {
  const dir = podContainersDir(dataDir, podUid);
  if (!dir) return;
  await fs.promises.rm(dir, { recursive: true, force: true });
  await fs.promises.rmdir(path.dirname(dir)).catch(() => undefined);
}
