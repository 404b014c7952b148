/**
 * The agent's view of ConfigMaps and Secrets: one list+watch (Informer) per kind and namespace, started the
 * first time a pod of that namespace needs one and stopped when no pod on the node uses the namespace any
 * more. Reads come from the cache (after its first list), so starting a container costs no API round trip,
 * and every change is reported to listeners — which is how volumes follow updates and how a container
 * waiting for a missing key gets retried the moment it appears.
 *
 * Secrets pass through here as API objects and are never logged.
 */
import type { Logger } from 'pino';
import type { Client } from '../../src/client/client.js';
import { Informer } from '../../src/client/informer.js';
import type { ConfigMap, Secret } from '../../src/registry/kinds/config.js';
import type { ConfigObjectReader } from '../env.js';

export type ConfigKind = 'configmaps' | 'secrets';

/** `<kind>/<namespace>/<name>`, the key listeners and references use. */
export function objectKey(kind: ConfigKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export interface ConfigObjectsOptions {
  client: Client;
  log: Logger;
  /** delay before re-watching after a dropped stream */
  retryMs: number;
}

interface Watched {
  informer: Informer<ConfigMap | Secret>;
  ready: Promise<void>;
}

export class ConfigObjects implements ConfigObjectReader {
  private readonly informers = new Map<string, Watched>();
  /** namespace → pod uids using it */
  private readonly users = new Map<string, Set<string>>();
  private readonly listeners = new Set<(key: string) => void>();
  private stopped = false;

  constructor(private readonly opts: ConfigObjectsOptions) {}

  configMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    return this.read('configmaps', namespace, name) as Promise<ConfigMap | undefined>;
  }

  secret(namespace: string, name: string): Promise<Secret | undefined> {
    return this.read('secrets', namespace, name) as Promise<Secret | undefined>;
  }

  /** Called with the object key after every add, update or delete seen. Returns an unsubscribe function. */
  onChange(listener: (key: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Pod `uid` reads objects of `namespace`: keep watching it. */
  use(uid: string, namespace: string): void {
    let set = this.users.get(namespace);
    if (!set) this.users.set(namespace, (set = new Set()));
    set.add(uid);
  }

  /** Pod `uid` is gone: stop watching namespaces nobody uses any more. */
  release(uid: string): void {
    for (const [ns, set] of this.users) {
      if (!set.delete(uid) || set.size) continue;
      this.users.delete(ns);
      for (const kind of ['configmaps', 'secrets'] as const) {
        const key = `${kind}/${ns}`;
        this.informers.get(key)?.informer.stop();
        this.informers.delete(key);
      }
    }
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.informers.values()) w.informer.stop();
    this.informers.clear();
  }

  private async read(kind: ConfigKind, namespace: string, name: string): Promise<ConfigMap | Secret | undefined> {
    const w = this.watch(kind, namespace);
    await w.ready;
    return w.informer.get(`${namespace}/${name}`);
  }

  private watch(kind: ConfigKind, namespace: string): Watched {
    const key = `${kind}/${namespace}`;
    const existing = this.informers.get(key);
    if (existing) return existing;
    if (this.stopped) throw new Error('agent is stopping');
    const informer = new Informer<ConfigMap | Secret>({
      client: this.opts.client,
      resource: { plural: kind },
      namespace,
      retryDelayMs: this.opts.retryMs,
      log: this.opts.log,
    });
    const notify = (obj: ConfigMap | Secret) => {
      const k = objectKey(kind, obj.metadata.namespace ?? namespace, obj.metadata.name ?? '');
      for (const l of this.listeners) l(k);
    };
    informer.addHandlers({ onAdd: notify, onUpdate: notify, onDelete: notify });
    const watched: Watched = {
      informer,
      ready: informer.start().catch((err: unknown) => {
        // Forget the failed informer so the next read tries again.
        if (this.informers.get(key) === watched) this.informers.delete(key);
        informer.stop();
        throw new Error(`cannot list ${kind} in namespace ${namespace}: ${(err as Error).message}`);
      }),
    };
    this.informers.set(key, watched);
    return watched;
  }
}
