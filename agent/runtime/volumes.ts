/**
 * The named-volume contract of a container runtime: volumes that live in the runtime, outlive any
 * container and carry labels (persistentVolumeClaim volumes, see agent/volumes/claim-volumes.ts). It owns
 * only the vocabulary; docker-volumes.ts implements it over the Docker engine and fake-volumes.ts in
 * memory for unit tests.
 */

/** A named volume as the runtime reports it. */
export interface NamedVolume {
  name: string;
  /** where the volume's data is on the host (bind-mounted into containers like any pod volume) */
  mountpoint: string;
  labels: Record<string, string>;
}

/** How a removal went: a volume some container still uses is kept, and the caller decides what that means. */
export type VolumeRemoval = 'removed' | 'absent' | 'in-use';

export interface VolumeRuntime {
  /** undefined when there is no such volume */
  inspectVolume(name: string): Promise<NamedVolume | undefined>;
  /** Creates the volume (an existing one of that name is returned as it is). */
  createVolume(p: { name: string; labels: Record<string, string> }): Promise<NamedVolume>;
  removeVolume(name: string): Promise<VolumeRemoval>;
  /** Volumes whose labels match every `key=value` filter (`key` alone: the label exists). */
  listVolumes(filter: { labels: string[] }): Promise<NamedVolume[]>;
}

/** `label=` filter semantics shared by the runtimes: `key` must exist, `key=value` must match. */
export function labelsMatch(labels: Record<string, string>, filters: readonly string[]): boolean {
  return filters.every((f) => {
    const eq = f.indexOf('=');
    return eq < 0 ? f in labels : labels[f.slice(0, eq)] === f.slice(eq + 1);
  });
}
