/**
 * Everything a container needs from outside its image, assembled at creation time: the environment (env.ts),
 * volumes and their mounts (volumes/), the pod's /etc/hosts and resolv.conf (pod-files.ts) and its
 * securityContext (security-context.ts). The pod worker calls three things:
 *
 *   syncPod(pod, kick)      every sync: sets volumes up / brings them up to date; never throws
 *   forContainer(…)         before creating a container; throws ContainerConfigError (a waiting reason)
 *   cleanup(uid)            after the pod's containers are removed: unmounts and deletes the pod directory
 *
 * It also follows the ConfigMaps and Secrets pods use: a change rewrites the affected volumes at once (atomic
 * swap) and re-kicks pods whose containers were waiting for it. Environment variables are never updated.
 */
import fs from 'node:fs';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Container, Pod } from '../src/api/types.js';
import type { Client } from '../src/client/client.js';
import { ContainerConfigError } from './config-error.js';
import type { PodRuntimeFacts } from './downward-api.js';
import { resolveEnv } from './env.js';
import { PodFiles } from './pod-files.js';
import type { BindMount, ContainerOptions } from './runtime/container-options.js';
import { withDefaultTag, type ContainerRuntime } from './runtime/runtime.js';
import { containerSecurity } from './security-context.js';
import { ConfigObjects } from './volumes/config-objects.js';
import { claimUid, clusterId } from './volumes/claim-volumes.js';
import { PodPaths } from './volumes/paths.js';
import { referencedObjects } from './volumes/projection.js';
import { VolumeManager, type PreparedVolume } from './volumes/volume-manager.js';

export interface PodConfigOptions {
  client: Client;
  runtime: ContainerRuntime;
  /** the agent's data directory; pod state goes to `<dataDir>/pods/<uid>` */
  dataDir: string;
  hostIP: string;
  /** the Docker network pod IPs are read from */
  podNetwork: string;
  /** this node (owner of the claim volumes it makes) */
  nodeName: string;
  /** Docker engine holding persistentVolumeClaim volumes (default /var/run/docker.sock) */
  dockerSocket?: string;
  log: Logger;
  /** delay before re-watching ConfigMaps/Secrets after a dropped stream */
  retryMs: number;
  /** tests: the node's files */
  nodeHostsFile?: string;
  nodeResolvConf?: string;
}

/** What the pod worker adds to a container's runtime spec. */
export interface ContainerConfig {
  /** `NAME=value` */
  env: string[];
  /** for `$(VAR)` expansion of command and args */
  vars: Map<string, string>;
  options: ContainerOptions;
}

interface PodState {
  pod: Pod;
  kick: (() => void) | undefined;
  refs: Set<string>;
  volumes: Map<string, PreparedVolume> | undefined;
  volumeError: ContainerConfigError | undefined;
  /** a container of this pod is waiting for configuration (kick the worker when a referenced object changes) */
  waiting: boolean;
  /** serializes volume work of this pod */
  chain: Promise<unknown>;
}

/** This node's allocatable resources: what a container without limits may use (downward API). */
function nodeAllocatable(dataDir: string): Record<string, string> {
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

function mountsPath(c: Container, target: string): boolean {
  return (c.volumeMounts ?? []).some((m) => m.mountPath.replace(/\/+$/, '') === target);
}

export class PodConfigManager {
  private readonly paths: PodPaths;
  private readonly objects: ConfigObjects;
  private readonly volumes: VolumeManager;
  private readonly files: PodFiles;
  private readonly pods = new Map<string, PodState>();
  private readonly log: Logger;
  private allocatable: Record<string, string> | undefined;
  private readonly unsubscribe: () => void;
  /** the cluster id, read once (it changes only with a new control-plane store, and the agent with it) */
  private clusterId: Promise<string> | undefined;

  constructor(private readonly opts: PodConfigOptions) {
    this.log = opts.log.child({ component: 'pod-config' });
    this.paths = new PodPaths(opts.dataDir);
    this.objects = new ConfigObjects({ client: opts.client, log: this.log, retryMs: opts.retryMs });
    this.volumes = new VolumeManager({
      paths: this.paths,
      objects: this.objects,
      log: this.log,
      dockerSocket: opts.dockerSocket,
      claims: { uidOf: (namespace, name) => claimUid(opts.client, namespace, name), clusterId: () => this.cachedClusterId(), nodeName: opts.nodeName },
    });
    this.files = new PodFiles({ paths: this.paths, nodeHostsFile: opts.nodeHostsFile, nodeResolvConf: opts.nodeResolvConf });
    this.unsubscribe = this.objects.onChange((key) => this.objectChanged(key));
  }

  /** The cluster id, read once; a failed read is not kept, so the next claim volume asks again. */
  private cachedClusterId(): Promise<string> {
    this.clusterId ??= clusterId(this.opts.client).catch((err: unknown) => {
      this.clusterId = undefined;
      throw err;
    });
    return this.clusterId;
  }

  /** Sets the pod's volumes up (or up to date). Never throws: a failure is reported by forContainer. */
  async syncPod(pod: Pod, kick?: () => void): Promise<void> {
    const state = this.stateOf(pod);
    if (kick) state.kick = kick;
    if (!pod.spec.volumes?.length && state.volumes) return;
    await this.setUpVolumes(state).catch(() => undefined);
  }

  /** Everything `container` needs beyond its image; throws ContainerConfigError when something is missing. */
  async forContainer(p: { pod: Pod; container: Container; infraId: string }): Promise<ContainerConfig> {
    const state = this.stateOf(p.pod);
    try {
      const config = await this.build(state, p);
      state.waiting = false;
      return config;
    } catch (err) {
      state.waiting = true;
      if (err instanceof ContainerConfigError) throw err;
      // Anything else (the API unreachable, a failed mount) is still a configuration problem to retry.
      throw new ContainerConfigError((err as Error).message);
    }
  }

  /** Unmounts and removes the pod's volumes and files (hostPath data stays); stops watching for it. */
  async cleanup(uid: string): Promise<void> {
    const state = this.pods.get(uid);
    this.pods.delete(uid);
    await state?.chain.catch(() => undefined);
    this.objects.release(uid);
    await this.volumes.tearDown(uid);
  }

  /**
   * Removes the directories of pods that are neither in `keep` nor known here (deleted while the agent was
   * down, their containers already gone). hostPath data is never under these directories.
   */
  async removeOrphans(keep: Set<string>): Promise<void> {
    let uids: string[];
    try {
      uids = fs.readdirSync(this.paths.podsRoot());
    } catch {
      return; // no pod has had files yet
    }
    for (const uid of uids) {
      // Checked at removal time: a pod that started since `keep` was computed has registered here first.
      if (keep.has(uid) || this.pods.has(uid)) continue;
      try {
        await this.volumes.tearDown(uid);
        this.log.info({ uid }, 'removed the files of a pod that no longer exists');
      } catch (err) {
        this.log.warn({ uid, err: (err as Error).message }, 'cannot remove the files of a gone pod');
      }
    }
  }

  stop(): void {
    this.unsubscribe();
    this.objects.stop();
  }

  private stateOf(pod: Pod): PodState {
    const uid = pod.metadata.uid ?? '';
    let state = this.pods.get(uid);
    if (!state) {
      state = { pod, kick: undefined, refs: new Set(), volumes: undefined, volumeError: undefined, waiting: false, chain: Promise.resolve() };
      this.pods.set(uid, state);
    }
    state.pod = pod;
    state.refs = referencedObjects(pod);
    if (state.refs.size) this.objects.use(uid, state.refs);
    return state;
  }

  private facts(podIP?: string): PodRuntimeFacts {
    this.allocatable ??= nodeAllocatable(this.opts.dataDir);
    return { podIP, hostIP: this.opts.hostIP, allocatable: this.allocatable };
  }

  /** Runs the volume set-up for the pod's latest spec, one at a time per pod. */
  private setUpVolumes(state: PodState): Promise<Map<string, PreparedVolume>> {
    const work = state.chain.then(async () => {
      if (this.pods.get(state.pod.metadata.uid ?? '') !== state) throw new ContainerConfigError('pod is being removed', 'ContainerCreating');
      try {
        state.volumes = await this.volumes.setUp(state.pod, this.facts());
        state.volumeError = undefined;
        return state.volumes;
      } catch (err) {
        state.volumeError = err instanceof ContainerConfigError ? err : new ContainerConfigError((err as Error).message, 'ContainerCreating');
        throw state.volumeError;
      }
    });
    state.chain = work.catch(() => undefined);
    return work;
  }

  private async build(state: PodState, p: { pod: Pod; container: Container; infraId: string }): Promise<ContainerConfig> {
    const { pod, container } = p;
    const volumes = await this.setUpVolumes(state);
    const podIP = pod.spec.hostNetwork === true ? this.opts.hostIP : (await this.opts.runtime.inspect(p.infraId))?.ips[this.opts.podNetwork];
    const facts = this.facts(podIP);
    const { env, vars, skippedKeys } = await resolveEnv({ pod, container, objects: this.objects, facts });
    if (skippedKeys.length) this.log.warn({ pod: pod.metadata.name, container: container.name, keys: skippedKeys }, 'envFrom keys skipped: not valid variable names');

    const mounts: BindMount[] = await this.volumes.mountsFor({ pod, container, volumes, vars });
    const files = this.files.write({ pod, podIP });
    if (!mountsPath(container, '/etc/hosts')) mounts.push({ source: files.hosts, target: '/etc/hosts', readOnly: false });
    if (!mountsPath(container, '/etc/resolv.conf')) mounts.push({ source: files.resolvConf, target: '/etc/resolv.conf', readOnly: false });

    const security = await containerSecurity({
      pod,
      container,
      imageUser: async () => (await this.opts.runtime.inspectImage(withDefaultTag(container.image)))?.user,
    });
    return { env, vars, options: { mounts, ...security } };
  }

  private objectChanged(key: string): void {
    for (const state of this.pods.values()) {
      if (!state.refs.has(key)) continue;
      // Volumes follow the object; a container waiting for it gets another try now.
      if (state.pod.spec.volumes?.length) void this.setUpVolumes(state).catch(() => undefined);
      if (state.waiting || state.volumeError) state.kick?.();
    }
  }
}
