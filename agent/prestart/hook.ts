/**
 * The prestart hook contract (in the manner of Nomad's task runner hooks): everything a container needs
 * from outside its image is added by a list of hooks, run in order just before the container is created.
 * Each hook answers a PrestartRequest with a PrestartResult (environment, mounts, security settings);
 * runner.ts merges the answers into the ContainerConfig the pod worker hands to the runtime. Hooks that
 * keep state per pod also take part in the pod's lifetime: a pod-level step every sync, cleanup once the
 * pod's containers are gone, and removal of what pods that vanished while the agent was down left behind.
 * A leaf module: types and one helper only.
 */
import type { Container, Pod } from '../../src/api/types.js';
import type { BindMount, ContainerOptions, ContainerSecurityOptions } from '../runtime/container-options.js';

/** One container about to be created. */
export interface PrestartRequest {
  pod: Pod;
  container: Container;
  /** the pod's IP (the node's for a hostNetwork pod); undefined while the sandbox has none */
  podIP: string | undefined;
  /** the instance about to be created: part of its runtime name, so unique per instance */
  restartCount: number;
  /** the variables the hooks before this one defined, for `$(VAR)` expansion (subPathExpr) */
  vars: ReadonlyMap<string, string>;
}

/** A container's environment: `NAME=value` in definition order, and the same as a map for `$(VAR)` expansion. */
export interface ContainerEnv {
  env: string[];
  vars: Map<string, string>;
}

/** What one hook adds to the container. */
export interface PrestartResult {
  /** replaces the environment set so far */
  env?: ContainerEnv;
  /** appended to the mounts set so far */
  mounts?: BindMount[];
  /** merged over the security settings set so far */
  security?: ContainerSecurityOptions;
}

/** What the pod worker adds to a container's runtime spec: the merged results of every hook. */
export interface ContainerConfig extends ContainerEnv {
  options: ContainerOptions;
}

export interface PrestartHook {
  /** names the hook in logs */
  readonly name: string;
  /**
   * Throws ContainerConfigError (a waiting reason) when the container cannot be configured yet; any other
   * error is reported as CreateContainerConfigError too.
   */
  prestart(request: PrestartRequest): Promise<PrestartResult>;
  /**
   * Every sync of the pod, before its containers are created (volumes are set up here). Never throws.
   * `retry` asks for another sync of the pod, which happens only if one of its containers is waiting for
   * configuration: a hook calls it when something it follows (a ConfigMap, a Secret) has changed.
   */
  syncPod?(pod: Pod, retry: () => void): Promise<void>;
  /** After the pod's containers are removed: drops what the hook keeps for the pod. May throw. */
  cleanup?(uid: string): Promise<void>;
  /** Removes what pods other than `keep` (gone while the agent was down) left behind. May throw. */
  removeOrphans?(keep: ReadonlySet<string>): Promise<void>;
  /** The agent is stopping: stop following anything. */
  stop?(): void;
}

/** Whether one of the container's volumeMounts is at `target` (the container's own mount then wins). */
export function mountsAt(container: Container, target: string): boolean {
  return (container.volumeMounts ?? []).some((m) => m.mountPath.replace(/\/+$/, '') === target);
}
