/**
 * Owns a pod's volumes on the node: sets them up before its containers are created, keeps API-backed ones
 * (configMap, secret, downwardAPI, projected) in step with their sources, turns each container's
 * volumeMounts into bind mounts (subPaths resolved safely and pinned), and removes everything with the pod —
 * except hostPath data, which belongs to the node.
 *
 * Layout is in paths.ts. Memory-backed emptyDirs and secret/projected volumes are tmpfs mounts on the host
 * directory (mount(8), as root) rather than Docker tmpfs mounts, because every container of the pod must see
 * the same files.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { parseQuantity, value } from '../../src/api/quantity.js';
import type { Container, Pod, VolumeMount } from '../../src/api/types.js';
import { ContainerConfigError } from '../container/config-error.js';
import type { ConfigObjectReader } from '../container/config-reader.js';
import type { PodRuntimeFacts } from '../container/downward-api.js';
import { expandVars } from '../container/expand-vars.js';
import type { BindMount, MountPropagation } from '../runtime/container-options.js';
import type { VolumeRuntime } from '../runtime/volumes.js';
import { writeAtomically, type Payload } from './atomic-writer.js';
import { ensureClaimVolume } from './claim-volumes.js';
import type { ClaimSource } from './local-path.js';
import { prepareHostPath } from './host-path.js';
import { bindMountFd, isMountPoint, mountTmpfs, removeTreeOnOneDevice, unmount, unmountAllUnder } from './mounts.js';
import type { PodPaths } from './paths.js';
import { payloadFor, type ProjectedKind, type TokenSource } from './projection.js';
import { openSubPath, UnsafeSubPathError } from './safe-path.js';

/** A volume ready to be mounted. */
export interface PreparedVolume {
  name: string;
  /** the host directory (or file, for some hostPaths) containers mount */
  hostPath: string;
  kind: VolumeKind;
  /** API-backed volumes are always mounted read-only, whatever the volumeMount says */
  forceReadOnly: boolean;
  /** a runtime named volume (a claim of an earlier Berth): it lives inside the runtime's root */
  runtimeVolume?: boolean;
}

export type VolumeKind = 'emptyDir' | 'hostPath' | 'persistentVolumeClaim' | ProjectedKind;

const API_KINDS: readonly ProjectedKind[] = ['configMap', 'secret', 'downwardAPI', 'projected'];
const KINDS: readonly VolumeKind[] = ['emptyDir', 'hostPath', 'persistentVolumeClaim', ...API_KINDS];

export interface VolumeManagerOptions {
  paths: PodPaths;
  objects: ConfigObjectReader;
  log: Logger;
  /** tokens for projected serviceAccountToken sources (none: such volumes cannot be set up) */
  tokens?: TokenSource | undefined;
  /**
   * persistentVolumeClaim volumes: where the claim's data is (local-path.ts's resolveClaimSource:
   * throws when the claim is missing or unbound), and for claims of an earlier Berth the runtime's
   * named volumes (none: those cannot be set up), the cluster's id and this node's name
   */
  claims?: { volumes: VolumeRuntime | undefined; resolve(namespace: string, name: string): Promise<ClaimSource & { claimUid: string }>; clusterId(): Promise<string>; nodeName: string };
}

function volumeKind(v: Record<string, unknown>): VolumeKind {
  const kinds = KINDS.filter((k) => v[k] !== undefined && v[k] !== null);
  if (kinds.length === 1) return kinds[0]!;
  const known = Object.keys(v).filter((k) => k !== 'name');
  throw new Error(kinds.length ? 'more than one volume source' : `volume type ${known.join(', ') || '(none)'} is not supported`);
}

function payloadHash(payload: Payload, fsGroup: number | undefined): string {
  const h = createHash('sha256');
  h.update(String(fsGroup ?? ''));
  for (const [p, f] of [...payload].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    h.update(`\0${p}\0${f.mode}\0${f.data.length}\0`);
    h.update(f.data);
  }
  return h.digest('hex');
}

/** VolumeMount fields the shared type does not spell out. */
type FullVolumeMount = VolumeMount & { mountPropagation?: string; subPathExpr?: string };

function propagationOf(m: FullVolumeMount): MountPropagation | undefined {
  switch (m.mountPropagation) {
    case 'HostToContainer':
      return 'rslave';
    case 'Bidirectional':
      return 'rshared';
    default:
      return undefined;
  }
}

function fsGroupOf(pod: Pod): number | undefined {
  const g = (pod.spec.securityContext as { fsGroup?: unknown } | undefined)?.fsGroup;
  return typeof g === 'number' && Number.isInteger(g) && g >= 0 ? g : undefined;
}

/** A memory-backed emptyDir's size: its sizeLimit, else the pod's memory limit when every container has one. */
function memoryVolumeSize(pod: Pod, sizeLimit: unknown): number | undefined {
  if (typeof sizeLimit === 'string' || typeof sizeLimit === 'number') return Number(value(parseQuantity(sizeLimit)));
  const containers = pod.spec.containers;
  if (!containers.length || containers.some((c) => c.resources?.limits?.memory === undefined)) return undefined;
  return containers.reduce((sum, c) => sum + Number(value(parseQuantity(c.resources!.limits!.memory!))), 0);
}

export class VolumeManager {
  /** uid → volume name → hash of the payload last written (saves rereading unchanged volumes) */
  private readonly written = new Map<string, Map<string, string>>();
  /**
   * uid → volume name → host path of its claim volume. A pod keeps the volume it started with (as in
   * Kubernetes, a claim remade under it does not swap its mount), and resyncs skip the API and Docker.
   */
  private readonly claimMounts = new Map<string, Map<string, { hostPath: string; runtimeVolume: boolean }>>();
  /** secret volumes fall back to disk once tmpfs turned out unavailable (not root) */
  private tmpfsUnavailable = false;

  constructor(private readonly opts: VolumeManagerOptions) {}

  /**
   * Sets up (or brings up to date) every volume of the pod. Idempotent and cheap when nothing changed.
   * Throws ContainerConfigError (reason ContainerCreating, message naming the volume) for the first
   * volume that cannot be set up; the others are still done.
   */
  async setUp(pod: Pod, facts: PodRuntimeFacts): Promise<Map<string, PreparedVolume>> {
    const uid = pod.metadata.uid ?? '';
    const prepared = new Map<string, PreparedVolume>();
    let firstError: ContainerConfigError | undefined;
    for (const v of pod.spec.volumes ?? []) {
      try {
        prepared.set(v.name, await this.setUpOne(pod, uid, v, facts));
      } catch (err) {
        firstError ??= new ContainerConfigError(`MountVolume.SetUp failed for volume "${v.name}" : ${(err as Error).message}`, 'ContainerCreating');
      }
    }
    if (firstError) throw firstError;
    return prepared;
  }

  private async setUpOne(pod: Pod, uid: string, v: Record<string, unknown> & { name: string }, facts: PodRuntimeFacts): Promise<PreparedVolume> {
    const kind = volumeKind(v);
    const source = (v[kind] ?? {}) as Record<string, unknown>;
    if (kind === 'hostPath') return { name: v.name, kind, hostPath: prepareHostPath(source), forceReadOnly: false };
    if (kind === 'persistentVolumeClaim') {
      // A claim is its PersistentVolume's path on this host (local-path.ts), or, made by an earlier
      // Berth, a runtime named volume that outlives the pod (claim-volumes.ts).
      const claimName = typeof source.claimName === 'string' ? source.claimName : '';
      if (!claimName) throw new Error('persistentVolumeClaim.claimName is required');
      const forceReadOnly = source.readOnly === true;
      const mounted = this.claimMounts.get(uid)?.get(v.name);
      if (mounted) return { name: v.name, kind, ...mounted, forceReadOnly };
      const claims = this.opts.claims;
      if (!claims) throw new Error('this node cannot mount persistentVolumeClaims');
      const namespace = pod.metadata.namespace ?? 'default';
      const data = await claims.resolve(namespace, claimName);
      let hostPath: string;
      const runtimeVolume = !('hostPath' in data);
      if ('hostPath' in data) hostPath = data.hostPath;
      else {
        if (!claims.volumes) throw new Error('the container runtime of this node has no named volumes for persistentVolumeClaims');
        const clusterId = await claims.clusterId();
        hostPath = await ensureClaimVolume({ volumes: claims.volumes, namespace, claimName, claimUid: data.claimUid, clusterId, nodeName: claims.nodeName });
      }
      let mounts = this.claimMounts.get(uid);
      if (!mounts) this.claimMounts.set(uid, (mounts = new Map()));
      mounts.set(v.name, { hostPath, runtimeVolume });
      return { name: v.name, kind, hostPath, forceReadOnly, runtimeVolume };
    }

    const dir = this.opts.paths.volumeDir(uid, v.name);
    const fresh = !fs.existsSync(dir);
    fs.mkdirSync(dir, { recursive: true });
    const fsGroup = fsGroupOf(pod);
    if (kind === 'emptyDir') {
      const medium = source.medium ?? '';
      let mountedNow = false;
      if (medium === 'Memory') {
        mountedNow = !isMountPoint(dir);
        await mountTmpfs(dir, { sizeBytes: memoryVolumeSize(pod, source.sizeLimit), mode: 0o777 });
      } else if (medium !== '') {
        throw new Error(`emptyDir medium ${JSON.stringify(medium)} is not supported`);
      }
      if (fresh || mountedNow) {
        // World-writable like the kubelet's, so containers running as any user can share it.
        fs.chmodSync(dir, fsGroup === undefined ? 0o777 : 0o2777);
        if (fsGroup !== undefined) fs.chownSync(dir, fs.statSync(dir).uid, fsGroup);
      }
      return { name: v.name, kind, hostPath: dir, forceReadOnly: false };
    }

    // API-backed: secrets (and projected, which usually carry them) live in memory only.
    if ((kind === 'secret' || kind === 'projected') && !this.tmpfsUnavailable) {
      try {
        await mountTmpfs(dir, { mode: 0o755 });
      } catch (err) {
        this.tmpfsUnavailable = true;
        this.opts.log.warn({ err: (err as Error).message }, 'cannot mount tmpfs (not root?); secret volumes are kept on disk');
      }
    }
    if (fsGroup !== undefined) {
      fs.chownSync(dir, fs.statSync(dir).uid, fsGroup);
      fs.chmodSync(dir, 0o2755);
    }
    const payload = await payloadFor(kind as ProjectedKind, source, { pod, facts, objects: this.opts.objects, tokens: this.opts.tokens });
    const hash = payloadHash(payload, fsGroup);
    let written = this.written.get(uid);
    if (!written) this.written.set(uid, (written = new Map()));
    if (written.get(v.name) !== hash || !fs.existsSync(path.join(dir, '..data'))) {
      if (writeAtomically(dir, payload, { fsGroup })) this.opts.log.debug({ uid, volume: v.name }, 'volume content updated');
      written.set(v.name, hash);
    }
    return { name: v.name, kind, hostPath: dir, forceReadOnly: true };
  }

  /**
   * The bind mounts for one container's volumeMounts. A subPath is opened inside its volume without
   * following links out of it and pinned by a bind mount under the pod directory; an unsafe one throws
   * ContainerConfigError (CreateContainerConfigError).
   */
  async mountsFor(p: { pod: Pod; container: Container; volumes: Map<string, PreparedVolume>; vars: ReadonlyMap<string, string> }): Promise<BindMount[]> {
    const uid = p.pod.metadata.uid ?? '';
    const mounts: BindMount[] = [];
    const list = p.container.volumeMounts ?? [];
    for (let i = 0; i < list.length; i++) {
      const m = list[i]! as FullVolumeMount;
      const vol = p.volumes.get(m.name);
      if (!vol) throw new ContainerConfigError(`cannot find volume "${m.name}" to mount into container "${p.container.name}"`);
      const subPathExpr = typeof m.subPathExpr === 'string' ? m.subPathExpr : '';
      const subPath = subPathExpr ? expandVars(subPathExpr, p.vars) : (m.subPath ?? '');
      let source = vol.hostPath;
      if (subPath) {
        try {
          source = await this.pinSubPath({ uid, volume: vol, container: p.container.name, index: i, subPath });
        } catch (err) {
          const why = err instanceof UnsafeSubPathError ? err.message : `${(err as Error).message}`;
          throw new ContainerConfigError(`failed to prepare subPath for volumeMount "${m.name}" of container "${p.container.name}": ${why}`);
        }
      }
      const mount: BindMount = { source, target: m.mountPath, readOnly: vol.forceReadOnly || m.readOnly === true };
      const propagation = propagationOf(m);
      if (propagation) mount.propagation = propagation;
      // Docker refuses private binds from inside its own root (where named volumes live).
      else if (vol.runtimeVolume) mount.propagation = 'rslave';
      mounts.push(mount);
    }
    return mounts;
  }

  private async pinSubPath(p: { uid: string; volume: PreparedVolume; container: string; index: number; subPath: string }): Promise<string> {
    const opened = openSubPath(p.volume.hostPath, p.subPath);
    try {
      const target = this.opts.paths.subPathMount(p.uid, { volume: p.volume.name, container: p.container, index: p.index });
      await unmount(target); // a restarted container gets a freshly resolved path
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.rmSync(target, { recursive: true, force: true });
      if (opened.isDirectory) fs.mkdirSync(target);
      else fs.writeFileSync(target, '');
      await bindMountFd(opened.fd, target);
      return target;
    } finally {
      opened.close();
    }
  }

  /** Removes the pod's volume state: unmounts, then deletes the pod directory (never crossing into a mount). */
  async tearDown(uid: string): Promise<void> {
    this.written.delete(uid);
    this.claimMounts.delete(uid);
    const dir = this.opts.paths.podDir(uid);
    if (!fs.existsSync(dir)) return;
    await unmountAllUnder(dir);
    const refused = removeTreeOnOneDevice(dir);
    if (refused.length) throw new Error(`pod directory ${dir} still has mounts: ${refused.join(', ')}`);
  }
}
