/**
 * An in-memory VolumeRuntime for unit tests. Volumes get a mountpoint under `root`; with `createDirs`
 * the directory is made on disk, so code that bind-mounts or writes into it finds a real directory.
 * `inUse` marks volumes a container holds (removal answers 'in-use'), and `calls` records what was asked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { labelsMatch, type NamedVolume, type VolumeRemoval, type VolumeRuntime } from './volumes.js';

export interface FakeVolumeRuntimeOptions {
  /** parent of the mountpoints (default /var/lib/docker/volumes, never touched unless createDirs) */
  root?: string;
  createDirs?: boolean;
  volumes?: NamedVolume[];
}

export class FakeVolumeRuntime implements VolumeRuntime {
  readonly volumes = new Map<string, NamedVolume>();
  /** names of volumes a container still uses */
  readonly inUse = new Set<string>();
  readonly calls: Array<{ op: 'inspect' | 'create' | 'remove' | 'list'; name?: string }> = [];
  private readonly root: string;

  constructor(private readonly opts: FakeVolumeRuntimeOptions = {}) {
    this.root = opts.root ?? '/var/lib/docker/volumes';
    for (const v of opts.volumes ?? []) this.volumes.set(v.name, v);
  }

  async inspectVolume(name: string): Promise<NamedVolume | undefined> {
    this.calls.push({ op: 'inspect', name });
    const v = this.volumes.get(name);
    return v && { ...v, labels: { ...v.labels } };
  }

  async createVolume(p: { name: string; labels: Record<string, string> }): Promise<NamedVolume> {
    this.calls.push({ op: 'create', name: p.name });
    let v = this.volumes.get(p.name);
    if (!v) {
      v = { name: p.name, mountpoint: path.join(this.root, p.name, '_data'), labels: { ...p.labels } };
      if (this.opts.createDirs) fs.mkdirSync(v.mountpoint, { recursive: true });
      this.volumes.set(p.name, v);
    }
    return { ...v, labels: { ...v.labels } };
  }

  async removeVolume(name: string): Promise<VolumeRemoval> {
    this.calls.push({ op: 'remove', name });
    const v = this.volumes.get(name);
    if (!v) return 'absent';
    if (this.inUse.has(name)) return 'in-use';
    this.volumes.delete(name);
    if (this.opts.createDirs) fs.rmSync(path.dirname(v.mountpoint), { recursive: true, force: true });
    return 'removed';
  }

  async listVolumes(filter: { labels: string[] }): Promise<NamedVolume[]> {
    this.calls.push({ op: 'list' });
    return [...this.volumes.values()].filter((v) => labelsMatch(v.labels, filter.labels)).map((v) => ({ ...v, labels: { ...v.labels } }));
  }
}
