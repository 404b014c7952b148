/**
 * The env prestart hook: resolves a container's environment (agent/container/environment.ts: envFrom, then env with
 * valueFrom and `$(VAR)` expansion) from the ConfigMaps and Secrets it names and the pod's downward API
 * facts. The objects it names are watched while the pod lives, so a container waiting for a missing one
 * is retried as soon as it appears. A value is read once, at creation: a running container never sees a
 * later change. Service variables (agent/services/service-env.ts) come from the agent's Services cache;
 * until its first list is in, a container that would need them waits (CreateContainerConfigError, as the
 * kubelet refuses to build them from a cache never filled) and is retried when the list lands.
 */
import type { Logger } from 'pino';
import type { Pod, Service } from '../../src/api/types.js';
import { ContainerConfigError } from '../container/config-error.js';
import { envObjectRefs, resolveEnv } from '../container/environment.js';
import { serviceEnvironment } from '../services/service-env.js';
import type { ConfigObjects } from '../volumes/config-objects.js';
import type { PrestartHook, PrestartRequest, PrestartResult } from './hook.js';

export interface EnvHookOptions {
  objects: ConfigObjects;
  hostIP: string;
  allocatable: () => Record<string, string>;
  log: Logger;
  /** the Services the service variables are made from; none given: no service variables */
  services?: ServiceSource;
}

/** What the hook reads Services from (agent/services/services-cache.ts). */
export interface ServiceSource {
  synced(): boolean;
  list(): Service[];
  onSynced(listener: () => void): () => void;
}

interface PodRefs {
  refs: Set<string>;
  retry: () => void;
}

export class EnvHook implements PrestartHook {
  readonly name = 'env';
  /** pod uid → the objects its containers' environment reads */
  private readonly pods = new Map<string, PodRefs>();
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly opts: EnvHookOptions) {
    this.unsubscribe.push(
      opts.objects.onChange((key) => {
        for (const pod of this.pods.values()) if (pod.refs.has(key)) pod.retry();
      }),
    );
    if (opts.services) {
      this.unsubscribe.push(
        opts.services.onSynced(() => {
          for (const pod of this.pods.values()) pod.retry();
        }),
      );
    }
  }

  async syncPod(pod: Pod, retry: () => void): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    const refs = envObjectRefs(pod);
    this.pods.set(uid, { refs, retry });
    if (refs.size) this.opts.objects.use(userOf(uid), refs);
  }

  async prestart(req: PrestartRequest): Promise<PrestartResult> {
    const { pod, container } = req;
    const facts = { podIP: req.podIP, hostIP: this.opts.hostIP, allocatable: this.opts.allocatable() };
    const { env, vars, skippedKeys } = await resolveEnv({ pod, container, objects: this.opts.objects, facts, serviceEnv: this.serviceEnv(pod) });
    if (skippedKeys.length) this.opts.log.warn({ pod: pod.metadata.name, container: container.name, keys: skippedKeys }, 'envFrom keys skipped: not valid variable names');
    return { env: { env, vars } };
  }

  private serviceEnv(pod: Pod): Map<string, string> | undefined {
    const services = this.opts.services;
    if (!services) return undefined;
    if (!services.synced()) throw new ContainerConfigError('services have not yet been read at least once, cannot construct envvars');
    return serviceEnvironment(services.list(), pod.metadata.namespace ?? 'default', pod.spec.enableServiceLinks !== false);
  }

  async cleanup(uid: string): Promise<void> {
    this.pods.delete(uid);
    this.opts.objects.release(userOf(uid));
  }

  stop(): void {
    for (const u of this.unsubscribe) u();
  }
}

/** The hook's name for the pod among the users of the shared object watches. */
function userOf(uid: string): string {
  return `env/${uid}`;
}
