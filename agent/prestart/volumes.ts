/**
 * The volumes prestart hook: a pod's volumes (agent/volumes/) are set up in the pod-level step of every
 * sync — and brought up to date there — then each container gets bind mounts for its volumeMounts. It
 * follows the ConfigMaps and Secrets the volumes project: a change rewrites the affected volumes at once
 * (atomic swap) and retries a pod waiting for it. Volumes projecting ServiceAccount tokens are rewritten
 * every `tokenCheckMs`, which swaps in a fresh token once the cached one needs a refresh (the token cache
 * decides; an unchanged payload writes nothing). Cleanup unmounts and removes the pod's directory; the
 * directories of pods that went away while the agent was down are removed as orphans. hostPath data and
 * claim volumes are never removed with a pod.
 */
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Pod } from '../../src/api/types.js';
import type { Clock, TimerHandle } from '../clock.js';
import { ContainerConfigError } from '../container/config-error.js';
import type { PodRuntimeFacts } from '../container/downward-api.js';
import type { ConfigObjects } from '../volumes/config-objects.js';
import type { PodPaths } from '../volumes/paths.js';
import { projectsServiceAccountToken, volumeObjectRefs } from '../volumes/projection.js';
import type { ServiceAccountTokens } from '../volumes/service-account-tokens.js';
import { VolumeManager, type PreparedVolume, type VolumeManagerOptions } from '../volumes/volume-manager.js';
import type { PrestartHook, PrestartRequest, PrestartResult } from './hook.js';

export interface VolumesHookOptions {
  paths: PodPaths;
  objects: ConfigObjects;
  allocatable: () => Record<string, string>;
  /** persistentVolumeClaim volumes (see VolumeManagerOptions) */
  claims: VolumeManagerOptions['claims'];
  log: Logger;
  /** projected ServiceAccount tokens, and how often volumes holding them are brought up to date */
  tokens?: { cache: ServiceAccountTokens; checkIntervalMs: number; clock: Clock };
}

interface PodState {
  pod: Pod;
  retry: () => void;
  refs: Set<string>;
  volumes: Map<string, PreparedVolume> | undefined;
  /** serializes the volume work of this pod */
  chain: Promise<unknown>;
}

export class VolumesHook implements PrestartHook {
  readonly name = 'volumes';
  private readonly volumes: VolumeManager;
  private readonly pods = new Map<string, PodState>();
  private readonly unsubscribe: () => void;
  private tokenTimer: TimerHandle | undefined;
  private stopped = false;

  constructor(private readonly opts: VolumesHookOptions) {
    this.volumes = new VolumeManager({ paths: opts.paths, objects: opts.objects, log: opts.log, claims: opts.claims, tokens: opts.tokens?.cache });
    this.unsubscribe = opts.objects.onChange((key) => this.objectChanged(key));
    if (opts.tokens) this.scheduleTokenCheck(opts.tokens);
  }

  /** Sets the pod's volumes up (or up to date). A failure is reported when a container asks for its mounts. */
  async syncPod(pod: Pod, retry: () => void): Promise<void> {
    const state = this.stateOf(pod, retry);
    if (!pod.spec.volumes?.length && state.volumes) return;
    await this.setUpVolumes(state).catch(() => undefined);
  }

  async prestart(req: PrestartRequest): Promise<PrestartResult> {
    const state = this.stateOf(req.pod);
    const volumes = await this.setUpVolumes(state);
    return { mounts: await this.volumes.mountsFor({ pod: req.pod, container: req.container, volumes, vars: req.vars }) };
  }

  /** Unmounts and removes the pod's volumes and directory (hostPath data stays); stops following its objects. */
  async cleanup(uid: string): Promise<void> {
    const state = this.pods.get(uid);
    this.pods.delete(uid);
    await state?.chain.catch(() => undefined);
    this.opts.objects.release(userOf(uid));
    this.opts.tokens?.cache.forgetPod(uid);
    await this.volumes.tearDown(uid);
  }

  /**
   * Removes the directories of pods that are neither in `keep` nor known here (deleted while the agent was
   * down, their containers already gone). hostPath data is never under these directories.
   */
  async removeOrphans(keep: ReadonlySet<string>): Promise<void> {
    let uids: string[];
    try {
      uids = fs.readdirSync(this.opts.paths.podsRoot());
    } catch {
      return; // no pod has had files yet
    }
    for (const uid of uids) {
      // Checked at removal time: a pod that started since `keep` was computed has registered here first.
      if (keep.has(uid) || this.pods.has(uid)) continue;
      try {
        await this.volumes.tearDown(uid);
        this.opts.log.info({ uid }, 'removed the files of a pod that no longer exists');
      } catch (err) {
        this.opts.log.warn({ uid, err: (err as Error).message }, 'cannot remove the files of a gone pod');
      }
    }
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.tokenTimer !== undefined) this.opts.tokens?.clock.clearTimeout(this.tokenTimer);
  }

  /** Brings every volume set that projects a token up to date; resolves when all are done (tests call it directly). */
  async refreshTokens(): Promise<void> {
    const due = [...this.pods.values()].filter((state) => state.volumes && projectsServiceAccountToken(state.pod));
    // A failure leaves the current files; the pod's next sync reports it.
    await Promise.all(due.map((state) => this.setUpVolumes(state).catch(() => undefined)));
  }

  private scheduleTokenCheck(tokens: NonNullable<VolumesHookOptions['tokens']>): void {
    this.tokenTimer = tokens.clock.setTimeout(() => {
      void this.refreshTokens().finally(() => {
        if (!this.stopped) this.scheduleTokenCheck(tokens);
      });
    }, tokens.checkIntervalMs);
  }

  private stateOf(pod: Pod, retry?: () => void): PodState {
    const uid = pod.metadata.uid ?? '';
    let state = this.pods.get(uid);
    if (!state) {
      state = { pod, retry: () => undefined, refs: new Set(), volumes: undefined, chain: Promise.resolve() };
      this.pods.set(uid, state);
    }
    state.pod = pod;
    if (retry) state.retry = retry;
    state.refs = volumeObjectRefs(pod);
    if (state.refs.size) this.opts.objects.use(userOf(uid), state.refs);
    return state;
  }

  private facts(): PodRuntimeFacts {
    // Volume files carry no pod IP (the downward API offers none to volumes), only node resources.
    return { allocatable: this.opts.allocatable() };
  }

  /** Runs the volume set-up for the pod's latest spec, one at a time per pod. */
  private setUpVolumes(state: PodState): Promise<Map<string, PreparedVolume>> {
    const work = state.chain.then(async () => {
      if (this.pods.get(state.pod.metadata.uid ?? '') !== state) throw new ContainerConfigError('pod is being removed', 'ContainerCreating');
      try {
        state.volumes = await this.volumes.setUp(state.pod, this.facts());
        return state.volumes;
      } catch (err) {
        throw err instanceof ContainerConfigError ? err : new ContainerConfigError((err as Error).message, 'ContainerCreating');
      }
    });
    state.chain = work.catch(() => undefined);
    return work;
  }

  private objectChanged(key: string): void {
    for (const state of this.pods.values()) {
      if (!state.refs.has(key)) continue;
      // Volumes follow the object; a container waiting for it gets another try once they are rewritten.
      void this.setUpVolumes(state)
        .catch(() => undefined)
        .then(() => state.retry());
    }
  }
}

/** The hook's name for the pod among the users of the shared object watches. */
function userOf(uid: string): string {
  return `volumes/${uid}`;
}
