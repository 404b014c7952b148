/**
 * A Backend that transforms values between the registry and the store, keyed by storage key — where
 * kube-apiserver applies encryption at rest. Values under keys with a transformer are written in
 * their stored (encrypted) form and read back in plain form, including in watch events, conflict
 * reports and deleted values; keys without one pass through untouched. Revisions, keys and the rest
 * of the Backend contract are the inner store's.
 */
import {
  StorageError,
  type Backend,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type StoreEvent,
  type Watcher,
  type WatchOptions,
} from './backend.js';
import type { ValueTransformer } from './encryption.js';

export interface TransformingBackendOptions {
  inner: Backend;
  /** the transformer for a key, or undefined to store its value as is; called often, so keep it cheap */
  transformerFor: (key: string) => ValueTransformer | undefined;
}

export class TransformingBackend implements Backend {
  private readonly inner: Backend;
  private readonly transformerFor: (key: string) => ValueTransformer | undefined;

  constructor(opts: TransformingBackendOptions) {
    this.inner = opts.inner;
    this.transformerFor = opts.transformerFor;
  }

  currentRevision(): Promise<number> {
    return this.inner.currentRevision();
  }

  observedRevision(): number {
    return this.inner.observedRevision();
  }

  waitObserved(revision: number, timeoutMs: number): Promise<boolean> {
    return this.inner.waitObserved(revision, timeoutMs);
  }

  /** A revision needs no opening: it comes from the inner store's index. */
  modRevisionOf(key: string): Promise<number | undefined> {
    return this.inner.modRevisionOf(key);
  }

  get(key: string): Promise<KeyValue | undefined> {
    // Keys without a transformer (everything but Secrets and credentials) go straight through: no extra promise.
    if (!this.transformerFor(key)) return this.inner.get(key);
    return this.inner.get(key).then((kv) => kv && this.reveal(kv));
  }

  async list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    const result = await this.inner.list(prefix, opts);
    return { ...result, items: result.items.map((kv) => this.reveal(kv)) };
  }

  count(prefix: string): Promise<number> {
    return this.inner.count(prefix);
  }

  create(key: string, value: string): Promise<KeyValue> {
    if (!this.transformerFor(key)) return this.inner.create(key, value);
    return this.writeConcealed(key, value, (stored) => this.inner.create(key, stored));
  }

  update(key: string, value: string, expectedRevision: number): Promise<KeyValue> {
    if (!this.transformerFor(key)) return this.inner.update(key, value, expectedRevision);
    return this.writeConcealed(key, value, (stored) => this.inner.update(key, stored, expectedRevision));
  }

  delete(key: string, expectedRevision?: number): Promise<KeyValue> {
    if (!this.transformerFor(key)) return this.inner.delete(key, expectedRevision);
    return this.passErrors(this.inner.delete(key, expectedRevision)).then((kv) => this.reveal(kv));
  }

  async watch(prefix: string, opts: WatchOptions): Promise<Watcher> {
    const onError = opts.onError;
    if (!onError) return this.inner.watch(prefix, { fromRevision: opts.fromRevision, onEvent: (ev) => opts.onEvent(this.revealEvent(ev)) });
    // A watcher that can be told ends at the first event it cannot be given (a value that cannot be
    // decrypted), as the store ends a watch: skipping it would leave that watcher's view wrong.
    let ended = false;
    let watcher: Watcher | undefined;
    const end = (err: StorageError) => {
      if (ended) return;
      ended = true;
      watcher?.close();
      onError(err);
    };
    const onEvent = (ev: StoreEvent) => {
      if (ended) return;
      let plain: StoreEvent;
      try {
        plain = this.revealEvent(ev);
      } catch (err) {
        end(err instanceof StorageError ? err : transformFailure(`cannot read ${ev.kv.key}`, err));
        return;
      }
      opts.onEvent(plain);
    };
    watcher = await this.inner.watch(prefix, { fromRevision: opts.fromRevision, onEvent, onError: end });
    if (ended) watcher.close();
    return watcher;
  }

  compact(revision: number): Promise<void> {
    return this.inner.compact(revision);
  }

  close(): void {
    this.inner.close();
  }

  /** the store underneath (for storage metrics and tests that inspect stored forms) */
  get innerBackend(): Backend {
    return this.inner;
  }

  /** Writes the stored form of `value`; resolves to the plain value at the write's revisions. */
  private async writeConcealed(key: string, value: string, write: (stored: string) => Promise<KeyValue>): Promise<KeyValue> {
    const kv = await this.passErrors(write(this.conceal(key, value)));
    return { ...kv, value };
  }

  private conceal(key: string, value: string): string {
    const t = this.transformerFor(key);
    if (!t) return value;
    try {
      return t.toStorage(value, key);
    } catch (err) {
      throw transformFailure(`cannot encrypt the value of ${key}`, err);
    }
  }

  private reveal(kv: KeyValue): KeyValue {
    const t = this.transformerFor(kv.key);
    // A tombstone-derived value can be empty; there is nothing to open.
    if (!t || kv.value === '') return kv;
    try {
      return { ...kv, value: t.fromStorage(kv.value, kv.key) };
    } catch (err) {
      throw transformFailure(`cannot read ${kv.key}`, err);
    }
  }

  private revealEvent(ev: StoreEvent): StoreEvent {
    if (!this.transformerFor(ev.kv.key)) return ev;
    // Events are shared and frozen by the inner fan-out; each watcher gets its own plain copy.
    const out: StoreEvent = { type: ev.type, kv: this.reveal(ev.kv) };
    if (ev.prev) out.prev = this.reveal(ev.prev);
    return out;
  }

  /** Errors that carry the current value (AlreadyExists, Conflict) must not hand out its stored form. */
  private async passErrors<T>(pending: Promise<T>): Promise<T> {
    try {
      return await pending;
    } catch (err) {
      if (err instanceof StorageError && err.current) {
        let current: KeyValue | undefined;
        try {
          current = this.reveal(err.current);
        } catch {
          current = undefined;
        }
        const e = new StorageError(err.code, err.message, current ? { current } : {});
        e.cause = err.cause;
        throw e;
      }
      throw err;
    }
  }
}

function transformFailure(message: string, cause: unknown): StorageError {
  const e = new StorageError('Failed', `${message}: ${cause instanceof Error ? cause.message : String(cause)}`);
  e.cause = cause;
  return e;
}
