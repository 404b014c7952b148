/**
 * This node's allocatable cpu, memory and ephemeral storage, as the downward API reports them for a
 * container without limits (env resourceFieldRef and downwardAPI volume files alike). Read once, when
 * first asked: they do not change while the agent runs.
 */
import fs from 'node:fs';
import os from 'node:os';

export function readNodeAllocatable(dataDir: string): Record<string, string> {
  const cpus = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const out: Record<string, string> = { cpu: String(cpus), memory: String(os.totalmem()) };
  try {
    const st = fs.statfsSync(dataDir);
    out['ephemeral-storage'] = String(st.blocks * st.bsize);
  } catch {
    // data dir not created yet: leave ephemeral-storage unknown
  }
  return out;
}

/** A reader of the node's allocatable resources that reads them on first use and keeps them. */
export function nodeAllocatable(dataDir: string): () => Record<string, string> {
  let read: Record<string, string> | undefined;
  return () => (read ??= readNodeAllocatable(dataDir));
}
