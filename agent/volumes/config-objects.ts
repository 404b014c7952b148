/**
 * The agent's view of ConfigMaps and Secrets: one list+watch (Informer) per object a pod on the node
 * references, narrowed to that object by a `metadata.name` field selector (as the kubelet's watching
 * object manager does), started the first time it is read and stopped when no pod on the node uses it
 * any more. A node's credential may read only the objects its pods reference, one by one, so there is
 * no per-namespace list. Reads come from the cache (after its first list), so starting a container
 * costs no API round trip once the object is watched, and every change is reported to listeners — which
 * is how volumes follow updates and how a container waiting for a missing key gets retried the moment
 * it appears.
 *
 * Secrets pass through here as API objects and are never logged.
 */
import type { Logger } from 'pino';
import type { Client } from '../../src/client/client.js';
import { Informer } from '../../src/client/informer.js';
import { objectKey, type ConfigKind, type ConfigObjectReader } from '../container/config-reader.js';
import type { ConfigMap, Secret } from '../../src/api/types.js';

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
  /** object key → its informer */
  private readonly informers = new Map<string, Watched>();
  /** object key → pod uids referencing it */
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

  /** Pod `uid` reads these objects (keys as objectKey makes them): keep watching them. */
  use(uid: string, keys: Iterable<string>): void {
    for (const key of keys) {
      let set = this.users.get(key);
      if (!set) this.users.set(key, (set = new Set()));
      set.add(uid);
    }
  }

  /** Pod `uid` is gone: stop watching objects nobody uses any more. */
  release(uid: string): void {
    for (const [key, set] of this.users) {
      if (set.delete(uid) && !set.size) this.users.delete(key);
    }
    // Also ends watches started by a read no pod registered for.
    for (const [key, w] of this.informers) {
      if (this.users.has(key)) continue;
      w.informer.stop();
      this.informers.delete(key);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.informers.values()) w.informer.stop();
    this.informers.clear();
  }

  private async read(kind: ConfigKind, namespace: string, name: string): Promise<ConfigMap | Secret | undefined> {
    const w = this.watch(kind, namespace, name);
    await w.ready;
    return w.informer.get(`${namespace}/${name}`);
  }

  private watch(kind: ConfigKind, namespace: string, name: string): Watched {
    const key = objectKey(kind, namespace, name);
    const existing = this.informers.get(key);
    if (existing) return existing;
    if (this.stopped) throw new Error('agent is stopping');
    const informer = new Informer<ConfigMap | Secret>({
      client: this.opts.client,
      resource: { plural: kind },
      namespace,
      fieldSelector: `metadata.name=${name}`,
      retryDelayMs: this.opts.retryMs,
      log: this.opts.log,
    });
    const notify = () => {
      for (const l of this.listeners) l(key);
    };
    informer.addHandlers({ onAdd: notify, onUpdate: notify, onDelete: notify });
    const watched: Watched = {
      informer,
      ready: informer.start().catch((err: unknown) => {
        // Forget the failed informer so the next read tries again.
        if (this.informers.get(key) === watched) this.informers.delete(key);
        informer.stop();
        throw new Error(`cannot read ${kind} ${namespace}/${name}: ${(err as Error).message}`);
      }),
    };
    this.informers.set(key, watched);
    return watched;
  }
}
