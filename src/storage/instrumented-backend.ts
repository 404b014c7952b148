/**
 * A Backend that times every operation that reaches the store, for kube-apiserver's
 * `etcd_request_duration_seconds{operation,type}`: `operation` is the Backend method, `type` the
 * resource the key belongs to (`pods`, `deployments.apps`), taken from the key's
 * `/registry/<group>/<plural>/…` shape so the label set stays as small as the set of resources.
 * Watches are not timed, as kube-apiserver's store does not time them: establishing one is not a
 * request latency, and a series per watched resource would make every scrape about a third larger.
 */
import type { Backend, KeyValue, ListOptions, ListResult, Watcher, WatchOptions } from './backend.js';

export type StorageObserver = (operation: string, type: string, seconds: number) => void;

export interface InstrumentedBackendOptions {
  inner: Backend;
  observe: StorageObserver;
}

/** `pods` for /registry/core/pods/…, `deployments.apps` for /registry/apps/deployments/…; '' for other keys. */
export function storageTypeOfKey(key: string): string {
  if (!key.startsWith('/registry/')) return '';
  const end1 = key.indexOf('/', 10);
  if (end1 < 0) return '';
  const group = key.slice(10, end1);
  const end2 = key.indexOf('/', end1 + 1);
  const plural = key.slice(end1 + 1, end2 < 0 ? undefined : end2);
  if (!plural) return '';
  return group === 'core' ? plural : `${plural}.${group}`;
}

export class InstrumentedBackend implements Backend {
  private readonly inner: Backend;
  private readonly observe: StorageObserver;

  constructor(opts: InstrumentedBackendOptions) {
    this.inner = opts.inner;
    this.observe = opts.observe;
  }

  private timed<T>(operation: string, key: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const record = () => this.observe(operation, storageTypeOfKey(key), (performance.now() - started) / 1000);
    return run().finally(record);
  }

  currentRevision(): Promise<number> {
    return this.timed('currentRevision', '', () => this.inner.currentRevision());
  }

  observedRevision(): number {
    return this.inner.observedRevision();
  }

  waitObserved(revision: number, timeoutMs: number): Promise<boolean> {
    return this.inner.waitObserved(revision, timeoutMs);
  }

  get(key: string): Promise<KeyValue | undefined> {
    return this.timed('get', key, () => this.inner.get(key));
  }

  modRevisionOf(key: string): Promise<number | undefined> {
    return this.timed('modRevisionOf', key, () => this.inner.modRevisionOf(key));
  }

  list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    return this.timed('list', prefix, () => this.inner.list(prefix, opts));
  }

  count(prefix: string): Promise<number> {
    return this.timed('count', prefix, () => this.inner.count(prefix));
  }

  create(key: string, value: string): Promise<KeyValue> {
    return this.timed('create', key, () => this.inner.create(key, value));
  }

  update(key: string, value: string, expectedRevision: number): Promise<KeyValue> {
    return this.timed('update', key, () => this.inner.update(key, value, expectedRevision));
  }

  delete(key: string, expectedRevision?: number): Promise<KeyValue> {
    return this.timed('delete', key, () => this.inner.delete(key, expectedRevision));
  }

  watch(prefix: string, opts: WatchOptions): Promise<Watcher> {
    return this.inner.watch(prefix, opts);
  }

  compact(revision: number): Promise<void> {
    return this.timed('compact', '', () => this.inner.compact(revision));
  }

  close(): void {
    this.inner.close();
  }
}
