/**
 * Runs the node's prestart hooks (hook.ts) for the pod workers: per container, each hook in list order,
 * merging their results into one ContainerConfig; per pod, each hook's pod-level step every sync and its
 * cleanup at the end. It also owns the retry rule: a container that could not be configured marks its
 * pod as waiting, and when a hook reports that something the pod uses changed, a waiting pod is synced
 * again at once instead of after its retry delay.
 */
import type { Logger } from 'pino';
import type { Pod } from '../../src/api/types.js';
import { ContainerConfigError } from '../container/config-error.js';
import type { ContainerConfig, PrestartHook, PrestartRequest } from './hook.js';

export interface PrestartRunnerOptions {
  /** run in this order for every container; cleanup runs in reverse */
  hooks: readonly PrestartHook[];
  log: Logger;
  /** after every hook stopped: releases what the hooks share */
  onStop?: () => void;
}

/** The request the worker makes: the runner fills in the variables as the hooks define them. */
export type ContainerRequest = Omit<PrestartRequest, 'vars'>;

interface PodState {
  /** asks the pod's worker for a sync */
  kick: (() => void) | undefined;
  /** containers of the pod whose last configuration failed */
  waiting: Set<string>;
}

export class PrestartRunner {
  readonly hooks: readonly PrestartHook[];
  private readonly pods = new Map<string, PodState>();
  private readonly log: Logger;

  constructor(private readonly opts: PrestartRunnerOptions) {
    this.hooks = opts.hooks;
    this.log = opts.log;
  }

  /** The pod-level step of every hook, in order; `kick` syncs the pod again. Never throws. */
  async syncPod(pod: Pod, kick: () => void): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    this.stateOf(uid).kick = kick;
    for (const hook of this.hooks) {
      if (!hook.syncPod) continue;
      await hook.syncPod(pod, () => this.retry(uid)).catch((err: unknown) => this.log.warn({ hook: hook.name, uid, err: (err as Error).message }, 'prestart hook failed its pod step'));
    }
  }

  /** Everything the container needs beyond its image; throws ContainerConfigError when something is missing. */
  async forContainer(request: ContainerRequest): Promise<ContainerConfig> {
    const state = this.stateOf(request.pod.metadata.uid ?? '');
    const config: ContainerConfig = { env: [], vars: new Map(), options: { mounts: [] } };
    try {
      for (const hook of this.hooks) {
        const result = await hook.prestart({ ...request, vars: config.vars });
        if (result.env) {
          config.env = result.env.env;
          config.vars = result.env.vars;
        }
        if (result.mounts) config.options.mounts.push(...result.mounts);
        if (result.security) config.options = { ...config.options, ...result.security, mounts: config.options.mounts };
      }
    } catch (err) {
      state.waiting.add(request.container.name);
      if (err instanceof ContainerConfigError) throw err;
      // Anything else (the API unreachable, a failed mount) is still a configuration problem to retry.
      throw new ContainerConfigError((err as Error).message);
    }
    state.waiting.delete(request.container.name);
    return config;
  }

  /** Every hook's cleanup, in reverse order, after the pod's containers are removed. Never throws. */
  async cleanup(uid: string): Promise<void> {
    this.pods.delete(uid);
    for (const hook of [...this.hooks].reverse()) {
      if (!hook.cleanup) continue;
      await hook.cleanup(uid).catch((err: unknown) => this.log.warn({ hook: hook.name, uid, err: (err as Error).message }, 'prestart hook cannot clean up after the pod'));
    }
  }

  /** What pods other than `keep` left behind, removed by every hook that keeps something. Never throws. */
  async removeOrphans(keep: ReadonlySet<string>): Promise<void> {
    for (const hook of this.hooks) {
      if (!hook.removeOrphans) continue;
      await hook.removeOrphans(keep).catch((err: unknown) => this.log.warn({ hook: hook.name, err: (err as Error).message }, 'prestart hook cannot remove what gone pods left'));
    }
  }

  stop(): void {
    for (const hook of [...this.hooks].reverse()) hook.stop?.();
    this.opts.onStop?.();
  }

  /** Syncs the pod again if a container of it is waiting; the wait is over either way until the next failure. */
  private retry(uid: string): void {
    const state = this.pods.get(uid);
    if (!state?.waiting.size) return;
    state.waiting.clear();
    state.kick?.();
  }

  private stateOf(uid: string): PodState {
    let state = this.pods.get(uid);
    if (!state) this.pods.set(uid, (state = { kick: undefined, waiting: new Set() }));
    return state;
  }
}
