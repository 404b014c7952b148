/**
 * Owns the generic resource store: API semantics over a storage Backend for every kind — server-owned
 * metadata (uid, generation, resourceVersion, timestamps), defaulting and validation through each
 * kind's strategy, admission at the right moments, graceful deletion and finalizers, selectors,
 * paging and consistent reads, watches, and the serialized copies lists and watches share. Kind
 * specifics are the strategies' (strategy.ts, kinds/); authentication and authorization happen before
 * a request gets here (src/server/, src/requests/).
 */
import { randomUUID } from 'node:crypto';
import { errors, ApiError, type FieldError } from '../api/errors.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, assertFieldsSupported } from '../api/selectors.js';
import { objectFields, type KubeList, type KubeObject, type WatchEvent } from '../api/types.js';
import type { UserInfo } from '../api/user-info.js';
import { StorageError, type Backend, type KeyValue, type StoreEvent } from '../storage/backend.js';
import { finalizersForPropagation } from './deletion-propagation.js';
import { baseSelectableFields, type HookStore, type KindStrategy, type StoreHookTransaction } from './strategy.js';
import type { AdmissionAttributes } from './admission-attributes.js';
import { builtinPatchSchema } from '../api/patch.js';
import { recordUpdate } from './field-manager.js';
import { parseResourceVersion, tooLargeResourceVersion, type ResourceVersionMatch } from './list-options.js';
import { canonicalizeQuantities } from '../api/quantity-fields.js';
import { omitEmptyFields } from '../api/omit-empty.js';
import { DEFAULT_SERIALIZED_ITEMS_CACHE, SerializedObjectCache } from './serialized-objects.js';
import { LatestLists } from './latest-lists.js';
import { DEFAULT_LIST_CACHE, ListCache, type ListCacheOptions, type ListSnapshot } from './list-cache.js';
import { apiVersionOf, type ResourceInfo } from '../api/identities.js';

export interface Clock {
  now(): number;
}

export interface RegistryOptions {
  backend: Backend;
  clock?: Clock;
  /** bounds of the list cache (list-cache.ts), or false to read every list from the store */
  listCache?: ListCacheOptions | false;
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /** unset: the latest state; "0": any state; else the state at (Exact) or not older than (NotOlderThan) it */
  resourceVersion?: string;
  /** how resourceVersion applies; unset means NotOlderThan, or Exact when paging (limit) as Kubernetes does */
  resourceVersionMatch?: ResourceVersionMatch;
}

export interface GetOptions {
  /** unset or "0": the latest state; else it must not be newer than what is stored */
  resourceVersion?: string;
}

export interface WriteOptions {
  dryRun?: boolean;
  subresource?: string;
  /** who asked, for admission */
  user?: UserInfo;
  /** record this write's changed fields as owned by this manager (managedFields, operation Update) */
  fieldManager?: string;
  /** admission's warnings for the client are appended here */
  warnings?: string[];
}

export interface DeleteOptions {
  dryRun?: boolean;
  user?: UserInfo;
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: string;
}

export interface WatchOptions {
  labelSelector?: string;
  fieldSelector?: string;
  /** unset or '0': start at the current state; else after that revision */
  resourceVersion?: string;
  /**
   * true: begin with the current state as ADDED events (a resourceVersion is then a lower bound);
   * false: only changes; unset: initial ADDED events exactly when resourceVersion is unset or "0".
   */
  sendInitialEvents?: boolean;
  onEvent: (ev: WatchEvent) => void;
  /**
   * Takes the initial events as serialized objects (listSerialized's items) instead of one
   * `onEvent` call each, and resolves once it has written them out: a caller writing to a slow
   * client waits for it, holding only the snapshot. The watch follows changes from the snapshot's
   * revision after that.
   */
  sendInitialObjects?: (objects: Buffer[]) => Promise<void>;
  /** with sendInitialEvents=true: called after the initial events, with the revision they show */
  onInitialEventsEnd?: (revision: number) => void;
  /**
   * The store ended the watch after it started (a networked store that could not resume it); 410
   * Gone when the revision to resume from was compacted, as kube-apiserver ends a watch. Called at
   * most once, and no event follows.
   */
  onError?: (err: ApiError) => void;
}

/**
 * A list whose items are already JSON: each item the bytes JSON.stringify would give the object
 * `list` returns, shared by every list and watch that sends the same revision of it.
 */
export interface SerializedList {
  apiVersion: string;
  kind: string;
  metadata: KubeList['metadata'];
  items: Buffer[];
}

/** A running watch. */
export interface RegistryWatcher {
  /** stop delivering events; idempotent */
  close(): void;
}

/**
 * Admission as the registry sees it: `mutate` runs before the kind's validation, `validate` after
 * it (and alone on DELETE). src/admission/chain.ts implements it.
 */
export interface Admission {
  mutate(attrs: AdmissionAttributes): Promise<void>;
  validate(attrs: AdmissionAttributes): Promise<void>;
}

/** Keys read from the store at a time while listing (see collect). */
const READ_PAGE_SIZE = 1000;

/**
 * The generic resource store: turns API semantics (uid, generation, resourceVersion, graceful
 * deletion, finalizers, selectors, paging, watch) into backend calls. Kind specifics come from
 * strategies; nothing here knows about Pods or Nodes.
 */
export class Registry {
  private readonly backend: Backend;
  private readonly clock: Clock;
  private readonly strategies = new Map<string, KindStrategy>();
  private admission: Admission | undefined;
  private readonly serialized = new SerializedObjectCache();
  /** list and watch items of every size, by key and revision (see listSerialized) */
  private readonly serializedItems = new SerializedObjectCache(DEFAULT_SERIALIZED_ITEMS_CACHE);
  /** whole collections read for resourceVersion=0, while they are current (see listSerialized) */
  private readonly latestLists = new LatestLists<SerializedList>();
  /** in-memory copies of listed collections, for lists of the latest state (list-cache.ts) */
  private readonly listCache: ListCache | undefined;

  constructor(opts: RegistryOptions) {
    this.backend = opts.backend;
    this.clock = opts.clock ?? { now: () => Date.now() };
    if (opts.listCache !== false) this.listCache = new ListCache(this.backend, opts.listCache ?? DEFAULT_LIST_CACHE, () => this.clock.now());
  }

  register(strategy: KindStrategy): void {
    this.strategies.set(resourceId(strategy.info), strategy);
  }

  setAdmission(admission: Admission): void {
    this.admission = admission;
  }

  /** Remove a kind (a deleted CRD); its stored objects must already be gone. */
  unregister(group: string, plural: string): void {
    const strategy = this.strategies.get(`${group}/${plural}`);
    if (strategy) this.listCache?.drop(prefixOf(strategy.info, undefined));
    this.strategies.delete(`${group}/${plural}`);
  }

  /** One entry per served group/version/resource (a multi-version CRD appears once per version). */
  resources(): ResourceInfo[] {
    return [...this.strategies.values()].flatMap((s) => (s.info.servedVersions ?? [s.info.version]).map((version) => (version === s.info.version ? s.info : { ...s.info, version })));
  }

  /** find by group + plural (version is not part of storage identity) */
  lookup(group: string, plural: string): KindStrategy | undefined {
    return this.strategies.get(`${group}/${plural}`);
  }

  /**
   * The newest revision the store's event stream has reached (Backend.observedRevision): every
   * change at or below it has been queued for every open watch. A watch bookmark sent from a timer
   * (after those queues drained) may carry it. Synchronous: it is cached, not asked of the store.
   */
  currentRevision(): number {
    return this.backend.observedRevision();
  }

  // ---------- reads ----------

  async get(info: ResourceInfo, namespace: string | undefined, name: string, opts: GetOptions = {}): Promise<KubeObject> {
    const computed = this.strategies.get(resourceId(info))?.virtualRead;
    if (computed) return computed.get(namespace, name);
    if (opts.resourceVersion && opts.resourceVersion !== '0') await this.assertNotFuture(parseResourceVersion(opts.resourceVersion));
    const kv = await this.read(() => this.backend.get(keyOf(info, namespace, name)));
    if (!kv) throw errors.notFound({ resource: info.plural, group: info.group, name });
    return decode(info, kv);
  }

  /**
   * `get`'s answer as JSON bytes, what a GET without any transformation sends. A large object is
   * serialized once per revision and shared by every reader until it changes (serialized-objects.ts).
   */
  async getSerialized(info: ResourceInfo, namespace: string | undefined, name: string): Promise<Buffer> {
    const computed = this.strategies.get(resourceId(info))?.virtualRead;
    if (computed) return Buffer.from(JSON.stringify(await computed.get(namespace, name)));
    const key = keyOf(info, namespace, name);
    // Only a key already held is worth the index lookup; small objects go straight to the read.
    const revision = this.serialized.holds(key) ? await this.read(() => this.backend.modRevisionOf(key)) : undefined;
    const held = revision === undefined ? undefined : this.serialized.get(key, revision);
    if (held) return held;
    const kv = await this.read(() => this.backend.get(key));
    if (!kv) throw errors.notFound({ resource: info.plural, group: info.group, name });
    const bytes = Buffer.from(JSON.stringify(decode(info, kv)));
    if (this.serialized.keeps(kv.value.length)) this.serialized.set(key, kv.modRevision, bytes);
    else this.serialized.drop(key);
    return bytes;
  }

  async list(info: ResourceInfo, namespace: string | undefined, opts: ListOptions = {}): Promise<KubeList> {
    const strategy = this.strategyOf(info);
    if (strategy.virtualRead) return strategy.virtualRead.list(namespace, { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
    const { metadata, items } = await this.collect(info, strategy, namespace, opts, (kv, decoded) => decoded ?? decode(info, kv));
    return { apiVersion: apiVersionOf(info), kind: info.listKind, metadata, items };
  }

  /**
   * `list`'s answer with every item already serialized. Each (key, revision) is serialized once and
   * the bytes are shared by every list and watch sending it until the cache drops them, so a
   * hundred readers of the same collection share one copy of it instead of each building its own.
   * Without a selector an item whose bytes are held is not even parsed. A whole collection at
   * resourceVersion=0 is read once for every reader while the store stays at the same revision
   * (latest-lists.ts); the answer is then shared and must not be changed.
   */
  async listSerialized(info: ResourceInfo, namespace: string | undefined, opts: ListOptions = {}): Promise<SerializedList> {
    const strategy = this.strategyOf(info);
    if (strategy.virtualRead) {
      const computed = await this.list(info, namespace, opts);
      return { apiVersion: computed.apiVersion ?? apiVersionOf(info), kind: computed.kind ?? info.listKind, metadata: computed.metadata, items: computed.items.map((item) => Buffer.from(JSON.stringify(item))) };
    }
    // An object stored without apiVersion is shown with the requested one: it is part of the key.
    const apiVersion = apiVersionOf(info);
    const wholeAnyState = opts.resourceVersion === '0' && !opts.limit && !opts.continue && !opts.labelSelector && !opts.fieldSelector;
    if (wholeAnyState) {
      return this.latestLists.get(`${apiVersion} ${prefixOf(info, namespace)}`, this.backend.observedRevision(), () => this.readSerialized(info, strategy, namespace, opts));
    }
    return this.readSerialized(info, strategy, namespace, opts);
  }

  private async readSerialized(info: ResourceInfo, strategy: KindStrategy, namespace: string | undefined, opts: ListOptions): Promise<SerializedList> {
    const apiVersion = apiVersionOf(info);
    const { metadata, items } = await this.collect(info, strategy, namespace, opts, (kv, decoded) => {
      const key = `${apiVersion} ${kv.key}`;
      const held = this.serializedItems.get(key, kv.modRevision);
      if (held) return held;
      const bytes = Buffer.from(JSON.stringify(decoded ?? decode(info, kv)));
      this.serializedItems.set(key, kv.modRevision, bytes);
      return bytes;
    });
    return { apiVersion, kind: info.listKind, metadata, items };
  }

  /** Objects stored under a collection now (a namespace's, or all namespaces' with none), without reading them. */
  async count(info: ResourceInfo, namespace: string | undefined): Promise<number> {
    const strategy = this.strategyOf(info);
    // Computed kinds store nothing; what they answer is made per request.
    if (strategy.virtualRead) return 0;
    return this.read(() => this.backend.count(prefixOf(info, namespace)));
  }

  /**
   * The list walk shared by list and listSerialized: reads pages at one revision, filters by the
   * selectors (parsing an item only when a selector needs it) and hands each kept item to `item`
   * with its parsed object, if one was made.
   */
  private async collect<T>(info: ResourceInfo, strategy: KindStrategy, namespace: string | undefined, opts: ListOptions, item: (kv: KeyValue, decoded: KubeObject | undefined) => T): Promise<{ metadata: KubeList['metadata']; items: T[] }> {
    const labelSel = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined;
    const fieldSel = opts.fieldSelector ? parseFieldSelector(opts.fieldSelector) : undefined;
    if (fieldSel) assertFieldsSupported(fieldSel, this.supportedFields(strategy), info.kind);

    const prefix = prefixOf(info, namespace);
    const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
    // 0 reads the latest state: unset, "0" and NotOlderThan are all served from it (Berth's store
    // is never behind); only Exact (explicit, or implied by paging) reads history.
    let revision = 0;
    let startAfter: string | undefined;
    let continuing: { start: string } | undefined;
    /** the lowest revision the latest-state read may be at: "" asks for the store's current one */
    let atLeast: number | 'current' = 'current';
    if (opts.continue) {
      const token = decodeContinue(opts.continue, prefix);
      // A negative revision is the token an expired continue hands back: go on at the latest state.
      revision = Math.max(token.rv, 0);
      startAfter = token.start;
      continuing = { start: token.start };
    } else if (opts.resourceVersion === '0') {
      atLeast = 0;
    } else if (opts.resourceVersion) {
      const requested = parseResourceVersion(opts.resourceVersion);
      await this.assertNotFuture(requested);
      const exact = opts.resourceVersionMatch === 'Exact' || (opts.resourceVersionMatch === undefined && limit > 0);
      if (exact) revision = requested;
      atLeast = requested;
    }
    // The latest state (not a continue, not an exact revision) comes from the list cache when it
    // can answer; its continue token then reads the rest from the store at the snapshot's revision.
    const cached =
      revision === 0 && !continuing && this.listCache
        ? await this.listCache.snapshot(prefixOf(info, undefined), prefix, async () => (atLeast === 'current' ? this.read(() => this.backend.currentRevision()) : atLeast))
        : undefined;
    let cachedOffset = 0;
    const items: T[] = [];
    let more = false;
    let remaining = 0;
    let readAt = cached?.revision ?? revision;
    let lastRead: string | undefined;
    // Filtering happens after the read, so keep reading pages until the limit is filled. The store
    // is read READ_PAGE_SIZE keys at a time, all at the first page's revision, with a turn of the
    // event loop in between: a collection of 10,000 objects read at once would keep every other
    // request waiting for the whole read (≈ 100 ms on SQLite). A cached snapshot is walked the same way.
    for (let first = true; ; first = false) {
      if (!first) await new Promise<void>((resolve) => setImmediate(resolve));
      const want = Math.min(limit ? limit - items.length : Infinity, READ_PAGE_SIZE);
      const page = cached
        ? pageOfSnapshot(cached, cachedOffset, want)
        : await this.readPage(prefix, { revision: readAt, limit: want, startAfter, continuing, withoutRemaining: !limit });
      cachedOffset += page.items.length;
      readAt = page.revision;
      for (const kv of page.items) {
        lastRead = kv.key;
        let obj: KubeObject | undefined;
        if (labelSel || fieldSel) {
          obj = decode(info, kv);
          if (labelSel && !matchesLabels(labelSel, obj.metadata.labels)) continue;
          if (fieldSel && !matchesFields(fieldSel, this.fieldsOf(strategy, obj))) continue;
        }
        items.push(item(kv, obj));
      }
      more = page.more;
      remaining = page.remaining;
      const last = page.items[page.items.length - 1];
      if (!more || (limit && items.length >= limit) || !last) break;
      startAfter = last.key;
    }
    const metadata: KubeList['metadata'] = { resourceVersion: String(readAt) };
    if (more && limit && lastRead) {
      metadata.continue = encodeContinue({ rv: readAt, start: lastRead });
      if (!labelSel && !fieldSel) metadata.remainingItemCount = remaining;
    }
    return { metadata, items };
  }

  private async readPage(prefix: string, opts: { revision: number; limit: number; startAfter: string | undefined; continuing: { start: string } | undefined; withoutRemaining: boolean }) {
    try {
      return await this.backend.list(prefix, { revision: opts.revision || undefined, limit: opts.limit || undefined, startAfter: opts.startAfter, withoutRemaining: opts.withoutRemaining });
    } catch (e) {
      if (e instanceof StorageError && e.code === 'Compacted') {
        if (!opts.continuing) throw errors.gone('The resourceVersion for the provided list is too old.');
        // As kube-apiserver: the Status carries a token that goes on from the same key at the latest state.
        const expired = errors.gone(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
        );
        expired.listMeta = { continue: encodeContinue({ rv: -1, start: opts.continuing.start }) };
        throw expired;
      }
      throw mapStorageError(e, { resource: prefix });
    }
  }

  /**
   * A resourceVersion the store has not reached yet cannot be served (504, as kube-apiserver after
   * its wait). The observed revision settles the common case without a round trip; only a
   * revision past it (which another writer of a shared store may have reached) asks the store.
   */
  private async assertNotFuture(requested: number): Promise<void> {
    if (requested <= this.backend.observedRevision()) return;
    const current = await this.read(() => this.backend.currentRevision());
    if (requested > current) throw tooLargeResourceVersion(requested, current);
  }

  /** A read's StorageError as the API error it means (a closed store, a value that cannot be decrypted: 500). */
  private async read<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (e) {
      throw mapStorageError(e, { resource: 'storage' });
    }
  }

  // ---------- writes ----------

  async create(info: ResourceInfo, namespace: string | undefined, input: KubeObject, opts: WriteOptions = {}): Promise<KubeObject> {
    const strategy = this.strategyOf(info);
    // Type metadata first, as Kubernetes serializes it, whatever order the client sent.
    const obj: KubeObject = { apiVersion: apiVersionOf(info), kind: info.kind, ...structuredClone(input) };
    obj.apiVersion = apiVersionOf(info);
    obj.kind = info.kind;
    obj.metadata ??= {};
    if (info.namespaced) {
      if (obj.metadata.namespace && namespace && obj.metadata.namespace !== namespace) {
        throw errors.badRequest(`the namespace of the provided object does not match the namespace sent on the request`);
      }
      obj.metadata.namespace = namespace ?? obj.metadata.namespace ?? 'default';
      await this.assertNamespaceWritable(obj.metadata.namespace);
    } else {
      delete obj.metadata.namespace;
    }
    if (!obj.metadata.name && obj.metadata.generateName) {
      obj.metadata.name = obj.metadata.generateName + randomSuffix();
    }
    // Server-owned metadata: whatever the client sent is replaced.
    obj.metadata.uid = randomUUID();
    obj.metadata.creationTimestamp = isoSeconds(this.clock.now());
    // Only kinds that track spec changes have a generation; the others keep what the client sent, as upstream.
    if (strategy.generation) obj.metadata.generation = 1;
    delete obj.metadata.resourceVersion;
    delete obj.metadata.deletionTimestamp;
    delete obj.metadata.deletionGracePeriodSeconds;
    strategy.prepareForCreate?.(obj, { user: opts.user });
    strategy.applyDefaults?.(obj);
    canonicalizeQuantities(info.group, info.kind, obj);
    if (strategy.hasStatus) {
      const initial = strategy.initialStatus?.(obj);
      if (initial === undefined) delete objectFields(obj).status;
      else objectFields(obj).status = initial;
    }
    const attrs: AdmissionAttributes = { operation: 'CREATE', info, object: obj, dryRun: !!opts.dryRun, user: opts.user, warnings: opts.warnings };
    await this.admission?.mutate(attrs);
    // What admission added gets the kind's defaults too (Kubernetes re-defaults after mutating webhooks).
    strategy.applyDefaults?.(obj);
    canonicalizeQuantities(info.group, info.kind, obj);
    this.validate(strategy, obj, strategy.validate(obj));
    // What the kind keeps beside the object (allocations) is reserved before validating admission
    // sees the object, as upstream's BeginCreate, and given back if the write does not happen.
    const held = await strategy.storeHooks?.beforeCreate(obj, { store: this.hookStore, dryRun: !!opts.dryRun });
    return this.finishHooked(held, async () => {
      await this.admission?.validate(attrs);
      omitEmptyFields(info.group, info.kind, obj);
      if (opts.fieldManager) {
        obj.metadata.managedFields = recordUpdate({ old: undefined, next: obj, manager: opts.fieldManager, schema: builtinPatchSchema(info.kind), apiVersion: apiVersionOf(info), now: isoSeconds(this.clock.now()) });
        if (!obj.metadata.managedFields.length) delete obj.metadata.managedFields;
      }
      const key = keyOf(info, obj.metadata.namespace, obj.metadata.name ?? '');
      if (opts.dryRun) {
        if (await this.read(() => this.backend.get(key))) throw errors.alreadyExists({ resource: info.plural, group: info.group, name: obj.metadata.name });
        return obj;
      }
      try {
        return decode(info, await this.backend.create(key, encode(obj)));
      } catch (e) {
        throw mapStorageError(e, { resource: info.plural, group: info.group, name: obj.metadata.name });
      }
    });
  }

  /** Runs a write after a store hook's reservation: kept when the write succeeds, given back when it throws. */
  private async finishHooked<R>(held: StoreHookTransaction | undefined, write: () => Promise<R>): Promise<R> {
    let result: R;
    try {
      result = await write();
    } catch (e) {
      await held?.revert();
      throw e;
    }
    await held?.commit();
    return result;
  }

  /** The store as kinds' hooks use it: single-key atomic operations (src/registry/strategy.ts). */
  private readonly hookStore: HookStore = {
    get: async (key) => (await this.backend.get(key))?.value,
    createIfAbsent: async (key, value) => {
      try {
        await this.backend.create(key, value);
        return true;
      } catch (e) {
        if (e instanceof StorageError && e.code === 'AlreadyExists') return false;
        throw e;
      }
    },
    deleteIfValue: async (key, value) => {
      const kv = await this.backend.get(key);
      if (!kv || kv.value !== value) return;
      try {
        await this.backend.delete(key, kv.modRevision);
      } catch (e) {
        // Someone changed or removed it meanwhile: it is no longer ours to free.
        if (!(e instanceof StorageError && (e.code === 'Conflict' || e.code === 'NotFound'))) throw e;
      }
    },
    list: async (prefix) => {
      const out: Array<{ key: string; value: string }> = [];
      let startAfter: string | undefined;
      for (;;) {
        const page = await this.backend.list(prefix, { limit: 1000, startAfter });
        for (const kv of page.items) out.push({ key: kv.key, value: kv.value });
        const last = page.items[page.items.length - 1];
        if (!page.more || !last) return out;
        startAfter = last.key;
      }
    },
  };

  /**
   * Brings a kind's hook-kept keys in line with its stored objects (StoreHooks.repair): call at
   * start, before requests are served.
   */
  async repairStoreHooks(info: ResourceInfo): Promise<void> {
    const strategy = this.strategyOf(info);
    if (!strategy.storeHooks?.repair) return;
    const objects = (await this.list(info, undefined)).items;
    await strategy.storeHooks.repair(objects, { store: this.hookStore, dryRun: false });
  }

  /**
   * PUT. With a resourceVersion in the body the write is conditional (stale → 409); without one it
   * applies to whatever is current, as Kubernetes allows for the kinds Berth serves.
   */
  async update(info: ResourceInfo, namespace: string | undefined, name: string, input: KubeObject, opts: WriteOptions = {}): Promise<KubeObject> {
    const strategy = this.strategyOf(info);
    if (input.metadata?.name && input.metadata.name !== name) {
      throw errors.badRequest(`the name of the object (${input.metadata.name}) does not match the name on the URL (${name})`);
    }
    if (info.namespaced && input.metadata?.namespace && input.metadata.namespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const key = keyOf(info, namespace, name);
    const current = await this.read(() => this.backend.get(key));
    if (!current) throw errors.notFound({ resource: info.plural, group: info.group, name });
    const old = decode(info, current);
    const expected = input.metadata?.resourceVersion ? parseRevision(input.metadata.resourceVersion) : current.modRevision;
    if (expected !== current.modRevision) throw errors.conflict({ resource: info.plural, group: info.group, name });

    const obj = this.mergeForUpdate(strategy, structuredClone(input), old, opts.subresource);
    const attrs: AdmissionAttributes = { operation: 'UPDATE', info, object: obj, oldObject: old, subresource: opts.subresource, dryRun: !!opts.dryRun, user: opts.user, warnings: opts.warnings };
    await this.admission?.mutate(attrs);
    strategy.prepareForUpdate?.(obj, old);
    strategy.applyDefaults?.(obj);
    canonicalizeQuantities(info.group, info.kind, obj);
    const fieldErrors = strategy.validateUpdate ? strategy.validateUpdate(obj, old, opts.subresource) : strategy.validate(obj);
    this.validate(strategy, obj, fieldErrors);
    const hookContext = { store: this.hookStore, dryRun: !!opts.dryRun };
    const held = await strategy.storeHooks?.beforeUpdate(obj, old, hookContext);
    let removed = false;
    const result = await this.finishHooked(held, async () => {
      await this.admission?.validate(attrs);
      // Pruned first, as Go's omitempty drops them before kube-apiserver compares field sets: writing
      // an empty map the object does not have changes nothing, and so is not a new revision.
      omitEmptyFields(info.group, info.kind, obj);
      if (opts.fieldManager && opts.subresource !== 'status') {
        obj.metadata.managedFields = recordUpdate({ old, next: obj, manager: opts.fieldManager, schema: builtinPatchSchema(info.kind), apiVersion: apiVersionOf(info), now: isoSeconds(this.clock.now()) });
        if (!obj.metadata.managedFields.length) delete obj.metadata.managedFields;
      }
      // kube-apiserver answers a dry run with the revision the object is at, which `kubectl diff` compares.
      if (opts.dryRun) return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(current.modRevision) } };

      // A terminating object whose last finalizer was just removed is gone now.
      if (obj.metadata.deletionTimestamp && !(obj.metadata.finalizers?.length) && !strategy.deletionBlocked?.(obj) && !this.waitsForGrace(strategy, obj)) {
        try {
          // The answer carries the deletion's revision, the one watchers see on DELETED.
          const gone = decode(info, await this.backend.delete(key, current.modRevision));
          removed = true;
          return gone;
        } catch (e) {
          throw mapStorageError(e, { resource: info.plural, group: info.group, name });
        }
      }
      if (sameStored(obj, old)) return old; // a no-op write is not a new revision
      try {
        return decode(info, await this.backend.update(key, encode(obj), current.modRevision));
      } catch (e) {
        throw mapStorageError(e, { resource: info.plural, group: info.group, name });
      }
    });
    if (removed) await strategy.storeHooks?.afterDelete(obj, hookContext);
    return result;
  }

  /**
   * Read-modify-write with retries on conflict: `mutate` gets a fresh copy each attempt. Used by
   * PATCH and by in-process writers that must not lose concurrent updates.
   */
  async modify(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
    mutate: (current: KubeObject) => KubeObject | Promise<KubeObject>,
    opts: WriteOptions = {},
  ): Promise<KubeObject> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.get(info, namespace, name);
      const next = await mutate(structuredClone(current));
      next.metadata ??= {};
      next.metadata.resourceVersion = current.metadata.resourceVersion;
      try {
        return await this.update(info, namespace, name, next, opts);
      } catch (e) {
        if (attempt < 5 && e instanceof ApiError && e.reason === 'Conflict' && !(e.message.includes('precondition'))) continue;
        throw e;
      }
    }
  }

  async delete(info: ResourceInfo, namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<{ object: KubeObject; removed: boolean }> {
    const strategy = this.strategyOf(info);
    const key = keyOf(info, namespace, name);
    const current = await this.read(() => this.backend.get(key));
    if (!current) throw errors.notFound({ resource: info.plural, group: info.group, name });
    const obj = decode(info, current);
    if (opts.preconditions?.uid && opts.preconditions.uid !== obj.metadata.uid) {
      throw errors.conflict({ resource: info.plural, group: info.group, name }, `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${obj.metadata.uid}`);
    }
    if (opts.preconditions?.resourceVersion && parseRevision(opts.preconditions.resourceVersion) !== current.modRevision) {
      throw errors.conflict({ resource: info.plural, group: info.group, name }, `Precondition failed: ResourceVersion in precondition: ${opts.preconditions.resourceVersion}, ResourceVersion in object meta: ${current.modRevision}`);
    }
    // Propagation policy → GC finalizers (orphan / foregroundDeletion); see deletion-propagation.ts.
    const gcFinalizers = finalizersForPropagation(obj.metadata.finalizers, opts.propagationPolicy);
    await this.admission?.validate({ operation: 'DELETE', info, object: obj, dryRun: !!opts.dryRun, user: opts.user });

    const grace = opts.gracePeriodSeconds ?? strategy.defaultDeleteGraceSeconds?.(obj);
    const hasFinalizers = !!(gcFinalizers ?? obj.metadata.finalizers)?.length || !!strategy.deletionBlocked?.(obj);
    const graceful = grace !== undefined && grace > 0;
    if (!hasFinalizers && !graceful) {
      if (opts.dryRun) return { object: obj, removed: true };
      let gone: KubeObject;
      try {
        // The answer carries the deletion's revision, the one watchers see on DELETED.
        gone = decode(info, await this.backend.delete(key, current.modRevision));
      } catch (e) {
        throw mapStorageError(e, { resource: info.plural, group: info.group, name });
      }
      await strategy.storeHooks?.afterDelete(obj, { store: this.hookStore, dryRun: false });
      return { object: gone, removed: true };
    }
    // Graceful deletion: mark, and let the owner of the object (agent, finalizer holder) finish it.
    const next = structuredClone(obj);
    if (gcFinalizers?.length) next.metadata.finalizers = gcFinalizers;
    else if (gcFinalizers) delete next.metadata.finalizers;
    const now = this.clock.now();
    // Marking an object for deletion is a change of its desired state (upstream bumps generation too).
    if (!next.metadata.deletionTimestamp && (next.metadata.generation ?? 0) > 0) next.metadata.generation = next.metadata.generation! + 1;
    if (graceful) {
      const deadline = now + grace * 1000;
      const existing = next.metadata.deletionTimestamp ? Date.parse(next.metadata.deletionTimestamp) : Infinity;
      // A second delete may only shorten the grace period.
      if (deadline < existing) {
        next.metadata.deletionTimestamp = isoSeconds(deadline);
        next.metadata.deletionGracePeriodSeconds = grace;
      }
    } else if (!next.metadata.deletionTimestamp) {
      next.metadata.deletionTimestamp = isoSeconds(now);
      next.metadata.deletionGracePeriodSeconds = 0;
    } else if ((next.metadata.deletionGracePeriodSeconds ?? 0) > 0 && !hasFinalizers) {
      next.metadata.deletionGracePeriodSeconds = 0;
    }
    strategy.onMarkedForDeletion?.(next);
    if (opts.dryRun || sameStored(next, obj)) return { object: obj, removed: false };
    try {
      return { object: decode(info, await this.backend.update(key, encode(next), current.modRevision)), removed: false };
    } catch (e) {
      throw mapStorageError(e, { resource: info.plural, group: info.group, name });
    }
  }

  // ---------- watch ----------

  /**
   * Resolves once the store has accepted the watch; with initial events, those have been delivered
   * by then. Later events arrive asynchronously, in revision order.
   */
  async watch(info: ResourceInfo, namespace: string | undefined, opts: WatchOptions): Promise<RegistryWatcher> {
    const strategy = this.strategyOf(info);
    const labelSel = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined;
    const fieldSel = opts.fieldSelector ? parseFieldSelector(opts.fieldSelector) : undefined;
    if (fieldSel) assertFieldsSupported(fieldSel, this.supportedFields(strategy), info.kind);
    // Event objects are shared by every watcher (decodeShared), and so are their fields: one node's
    // watch of its pods by spec.nodeName, times every node, otherwise computed them once per watcher.
    const matches = (o: KubeObject) =>
      (!labelSel || matchesLabels(labelSel, o.metadata.labels)) && (!fieldSel || matchesFields(fieldSel, this.sharedFieldsOf(strategy, o)));

    const prefix = prefixOf(info, namespace);
    const anyVersion = !opts.resourceVersion || opts.resourceVersion === '0';
    const requested = anyVersion ? 0 : parseResourceVersion(opts.resourceVersion!);
    const initialEvents = opts.sendInitialEvents ?? anyVersion;
    let from: number;
    if (initialEvents) {
      // The current state as ADDED events, then every change after the revision it was read at.
      // With sendInitialEvents a resourceVersion is only a lower bound on that state.
      if (requested) await this.assertNotFuture(requested);
      const selectors = { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
      if (opts.sendInitialObjects) {
        // resourceVersion=0 accepts any state, so the snapshot other readers share will do.
        const snapshot = await this.listSerialized(info, namespace, { ...selectors, resourceVersion: opts.resourceVersion === '0' ? '0' : undefined });
        from = parseRevision(snapshot.metadata.resourceVersion ?? '0');
        await opts.sendInitialObjects(snapshot.items);
      } else {
        const snapshot = await this.list(info, namespace, selectors);
        for (const item of snapshot.items) opts.onEvent({ type: 'ADDED', object: item });
        from = parseRevision(snapshot.metadata.resourceVersion ?? '0');
      }
      if (opts.sendInitialEvents) opts.onInitialEventsEnd?.(from);
    } else {
      // "Now" is where the store's event stream is: every later change reaches this watch.
      from = anyVersion ? this.backend.observedRevision() : requested;
    }
    const onStoreEvent = (ev: StoreEvent) => {
      const obj = decodeShared(info, ev.kv);
      const prev = ev.prev ? decodeShared(info, ev.prev) : undefined;
      const now = ev.type !== 'delete' && matches(obj);
      const before = prev !== undefined && matches(prev);
      if (ev.type === 'delete') {
        if (matches(obj)) opts.onEvent({ type: 'DELETED', object: obj });
      } else if (ev.type === 'create' || !prev) {
        if (now) opts.onEvent({ type: 'ADDED', object: obj });
      } else if (now && before) {
        opts.onEvent({ type: 'MODIFIED', object: obj });
      } else if (now) {
        opts.onEvent({ type: 'ADDED', object: obj });
      } else if (before) {
        // It stopped matching the selector: to this watcher it is gone.
        opts.onEvent({ type: 'DELETED', object: obj });
      }
    };
    const tooOld = (e: StorageError) => errors.gone(`too old resource version: ${from}${e.compactedRevision === undefined ? '' : ` (${e.compactedRevision})`}`);
    const onError = opts.onError;
    try {
      return await this.backend.watch(prefix, {
        fromRevision: from,
        onEvent: onStoreEvent,
        ...(onError ? { onError: (e: StorageError) => onError(e.code === 'Compacted' ? tooOld(e) : mapStorageError(e, { resource: info.plural, group: info.group })) } : {}),
      });
    } catch (e) {
      if (e instanceof StorageError && e.code === 'Compacted') throw tooOld(e);
      throw mapStorageError(e, { resource: info.plural, group: info.group });
    }
  }

  // ---------- helpers ----------

  private strategyOf(info: ResourceInfo): KindStrategy {
    const s = this.strategies.get(resourceId(info));
    if (!s) throw errors.notFound({ resource: info.plural, group: info.group });
    return s;
  }

  private supportedFields(strategy: KindStrategy): string[] {
    const sample = { metadata: { name: '', namespace: '' }, spec: {}, status: {} };
    return Object.keys({ ...baseSelectableFields(sample), ...(strategy.selectableFields?.(sample as never) ?? {}) });
  }

  private fieldsOf(strategy: KindStrategy, obj: KubeObject): Record<string, string> {
    return { ...baseSelectableFields(obj), ...(strategy.selectableFields?.(obj) ?? {}) };
  }

  /** fieldsOf for an object that is never changed (a watch event's, or the first list's of a watch), computed once. */
  private sharedFieldsOf(strategy: KindStrategy, obj: KubeObject): Record<string, string> {
    let fields = fieldsOnce.get(obj);
    if (!fields) {
      fields = this.fieldsOf(strategy, obj);
      fieldsOnce.set(obj, fields);
    }
    return fields;
  }

  private validate(strategy: KindStrategy, obj: KubeObject, fieldErrors: FieldError[]): void {
    if (fieldErrors.length) {
      throw errors.invalid({ resource: strategy.info.plural, group: strategy.info.group, kind: strategy.info.kind, name: obj.metadata.name }, fieldErrors);
    }
  }

  private waitsForGrace(strategy: KindStrategy, obj: KubeObject): boolean {
    return (obj.metadata.deletionGracePeriodSeconds ?? 0) > 0 && strategy.defaultDeleteGraceSeconds !== undefined;
  }

  private async assertNamespaceWritable(namespace: string): Promise<void> {
    const kv = await this.read(() => this.backend.get(`/registry/core/namespaces/${namespace}`));
    if (!kv) throw errors.notFound({ resource: 'namespaces', name: namespace });
    const ns = JSON.parse(kv.value) as KubeObject;
    if (ns.metadata.deletionTimestamp) {
      throw errors.forbidden(`unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  /**
   * Start from the client's object but keep what the client may not change through this path:
   * identity metadata always; status on the main resource; everything but status on /status.
   */
  private mergeForUpdate(strategy: KindStrategy, input: KubeObject, old: KubeObject, subresource?: string): KubeObject {
    let obj: KubeObject;
    const own = subresource ? strategy.mergeSubresourceUpdate?.(subresource, input, structuredClone(old), { now: this.clock.now() }) : undefined;
    if (own) {
      obj = own;
    } else if (subresource === 'status') {
      obj = structuredClone(old);
      objectFields(obj).status = objectFields(input).status;
    } else {
      obj = input;
      obj.metadata ??= {};
      if (strategy.hasStatus) {
        const oldStatus = objectFields(old).status;
        if (oldStatus === undefined) delete objectFields(obj).status;
        else objectFields(obj).status = structuredClone(oldStatus);
      }
    }
    obj.apiVersion = old.apiVersion;
    obj.kind = old.kind;
    const m = obj.metadata;
    m.name = old.metadata.name;
    if (old.metadata.namespace !== undefined) m.namespace = old.metadata.namespace;
    m.uid = old.metadata.uid;
    m.creationTimestamp = old.metadata.creationTimestamp;
    delete m.resourceVersion;
    // Omitting managedFields keeps them; a client resets them only by sending a list.
    if (!Array.isArray(m.managedFields) && old.metadata.managedFields) m.managedFields = structuredClone(old.metadata.managedFields);
    // deletionTimestamp is set only through DELETE, never by a write.
    if (old.metadata.deletionTimestamp) {
      m.deletionTimestamp = old.metadata.deletionTimestamp;
      m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
    } else {
      delete m.deletionTimestamp;
      delete m.deletionGracePeriodSeconds;
    }
    strategy.applyDefaults?.(obj);
    canonicalizeQuantities(strategy.info.group, strategy.info.kind, obj);
    // A client cannot set generation; kinds that track spec changes count them in it.
    if (strategy.generation) {
      const specChanged = JSON.stringify(stripForGeneration(obj)) !== JSON.stringify(stripForGeneration(old));
      m.generation = (old.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    } else if (old.metadata.generation !== undefined) {
      m.generation = old.metadata.generation;
    } else {
      delete m.generation;
    }
    return obj;
  }
}

// ---------- keys and encoding ----------

function resourceId(info: Pick<ResourceInfo, 'group' | 'plural'>): string {
  return `${info.group}/${info.plural}`;
}

export function prefixOf(info: ResourceInfo, namespace: string | undefined): string {
  const base = `/registry/${info.group || 'core'}/${info.plural}/`;
  return info.namespaced && namespace ? `${base}${namespace}/` : base;
}

export function keyOf(info: ResourceInfo, namespace: string | undefined, name: string): string {
  return info.namespaced ? `/registry/${info.group || 'core'}/${info.plural}/${namespace ?? 'default'}/${name}` : `/registry/${info.group || 'core'}/${info.plural}/${name}`;
}

function encode(obj: KubeObject): string {
  const copy = { ...obj, metadata: { ...obj.metadata } };
  delete copy.metadata.resourceVersion;
  return JSON.stringify(copy);
}

function decode(info: ResourceInfo, kv: KeyValue): KubeObject {
  const obj = JSON.parse(kv.value) as KubeObject;
  obj.metadata.resourceVersion = String(kv.modRevision);
  obj.apiVersion ??= apiVersionOf(info);
  return obj;
}

/**
 * One live event reaches every watcher as the same KeyValue: decode it once for all of them.
 * Watch consumers treat event objects as read-only (LocalClient clones before handing them out).
 */
const decodedOnce = new WeakMap<KeyValue, KubeObject>();
/** the selectable fields of a shared event object, computed for the first watcher with a field selector */
const fieldsOnce = new WeakMap<KubeObject, Record<string, string>>();
function decodeShared(info: ResourceInfo, kv: KeyValue): KubeObject {
  let obj = decodedOnce.get(kv);
  if (!obj) {
    obj = decode(info, kv);
    decodedOnce.set(kv, obj);
  }
  return obj;
}

function sameStored(a: KubeObject, b: KubeObject): boolean {
  return encode(a) === encode(b);
}

/** generation counts changes to anything but metadata and status */
function stripForGeneration(obj: KubeObject): unknown {
  const { metadata: _m, status: _s, ...rest } = objectFields(obj);
  return rest;
}

function parseRevision(rv: string): number {
  const n = Number(rv);
  if (!Number.isSafeInteger(n) || n < 0) throw errors.badRequest(`invalid resourceVersion "${rv}"`);
  return n;
}

/** One page of a cached snapshot, shaped as the store's page. */
function pageOfSnapshot(snapshot: ListSnapshot, offset: number, limit: number): { items: KeyValue[]; revision: number; more: boolean; remaining: number } {
  const items = snapshot.items.slice(offset, Number.isFinite(limit) ? offset + limit : undefined);
  const remaining = snapshot.items.length - offset - items.length;
  return { items, revision: snapshot.revision, more: remaining > 0, remaining };
}

function encodeContinue(token: { rv: number; start: string }): string {
  return Buffer.from(JSON.stringify({ v: 1, ...token })).toString('base64url');
}

function decodeContinue(s: string, prefix: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as { v: number; rv: number; start: string };
    if (t.v !== 1 || !Number.isSafeInteger(t.rv) || typeof t.start !== 'string' || !t.start.startsWith(prefix)) throw new Error('bad');
    return { rv: t.rv, start: t.start };
  } catch {
    throw errors.badRequest('continue key is not valid');
  }
}

function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function randomSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

function mapStorageError(e: unknown, t: { resource: string; group?: string; name?: string }): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof StorageError) {
    switch (e.code) {
      case 'AlreadyExists':
        return errors.alreadyExists(t);
      case 'NotFound':
        return errors.notFound(t);
      case 'Conflict':
        return errors.conflict(t);
      case 'TooLarge':
        return new ApiError('RequestEntityTooLarge', `${t.resource} "${t.name ?? ''}": the object is too large to store (limit 1.5 MiB)`);
      case 'Compacted':
        return errors.gone(e.message);
      default:
        return errors.internal(`storage failure: ${e.message}`);
    }
  }
  return errors.internal(e instanceof Error ? e.message : String(e));
}

export { isoSeconds };
