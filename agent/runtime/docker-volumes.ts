/**
 * The Docker implementation of VolumeRuntime: Docker named volumes (local driver) over the engine's API.
 * Like docker.ts it is the only place that knows Docker's volume JSON and status codes.
 */
import type Dockerode from 'dockerode';
import { labelsMatch, type NamedVolume, type VolumeRemoval, type VolumeRuntime } from './volumes.js';

interface DockerVolume {
  Name: string;
  Mountpoint: string;
  Labels?: Record<string, string> | null;
}

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number })?.statusCode;
}

function named(v: DockerVolume): NamedVolume {
  return { name: v.Name, mountpoint: v.Mountpoint, labels: { ...(v.Labels ?? {}) } };
}

export class DockerVolumeRuntime implements VolumeRuntime {
  constructor(private readonly docker: Dockerode) {}

  async inspectVolume(name: string): Promise<NamedVolume | undefined> {
    try {
      return named((await this.docker.getVolume(name).inspect()) as DockerVolume);
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async createVolume(p: { name: string; labels: Record<string, string> }): Promise<NamedVolume> {
    // Docker answers a create of an existing name with that volume, so this is idempotent.
    await this.docker.createVolume({ Name: p.name, Labels: p.labels });
    const v = await this.inspectVolume(p.name);
    if (!v) throw new Error(`volume ${p.name} vanished right after it was created`);
    return v;
  }

  async removeVolume(name: string): Promise<VolumeRemoval> {
    try {
      await this.docker.getVolume(name).remove();
      return 'removed';
    } catch (err) {
      if (statusOf(err) === 404) return 'absent';
      if (statusOf(err) === 409) return 'in-use';
      throw err;
    }
  }

  async listVolumes(filter: { labels: string[] }): Promise<NamedVolume[]> {
    const list = (await this.docker.listVolumes({ filters: JSON.stringify({ label: filter.labels }) })) as { Volumes?: DockerVolume[] | null };
    // The engine filters already; the check keeps the contract exact whatever the engine version does.
    return (list.Volumes ?? []).map(named).filter((v) => labelsMatch(v.labels, filter.labels));
  }
}
