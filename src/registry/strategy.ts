/**
 * Owns the contract between the generic registry and a kind: KindStrategy (defaults, validation, the
 * status split, generation, deletion hooks, subresource merges, conversion, protobuf tables, table
 * columns, virtual kinds) and the store hooks through which a kind keeps keys beside its objects. The
 * kinds implement it in kinds/.
 */
import type { FieldError } from '../api/errors.js';
import type { KubeList, KubeObject } from '../api/types.js';
import type { MessageTable } from '../api/protobuf/schema.js';
import type { UserInfo } from '../api/user-info.js';
import type { ColumnProvider } from './table-columns.js';
import type { ResourceInfo } from '../api/identities.js';

/**
 * Per-kind behaviour the generic registry consults: defaults, validation, which fields field
 * selectors may use, and how spec and status are split between the main resource and `/status`.
 */
export interface KindStrategy<T extends KubeObject = KubeObject> {
  info: ResourceInfo;
  /** fill defaults in place (runs on create and update, after decoding) */
  applyDefaults?(obj: T): void;
  validate(obj: T): FieldError[];
  /**
   * Replaces `validate` on updates, so it must check the whole object as well as the transition;
   * `subresource` says which path wrote it (a CSR's certificate may be set only through `status`).
   */
  validateUpdate?(obj: T, old: T, subresource?: string): FieldError[];
  /**
   * Fill server-owned fields of a new object from who creates it (a CSR records its requester),
   * before admission; throwing refuses the create.
   */
  prepareForCreate?(obj: T, ctx: { user: UserInfo | undefined }): void;
  /**
   * The object an update through one of the kind's subresources stores, built from the client's
   * object and the stored one (a CSR's `approval` changes only its conditions). Undefined: the
   * registry's own rule (`status` replaces the status; anything else keeps it).
   */
  mergeSubresourceUpdate?(subresource: string, input: T, old: T, ctx: { now: number }): T | undefined;
  /** field-selector values for this object; metadata.name and metadata.namespace are always supported */
  selectableFields?(obj: T): Record<string, string>;
  /**
   * True when the kind has a status subresource: writes to the main resource keep the stored
   * status, writes to /status keep everything but status (and metadata labels/annotations).
   */
  hasStatus: boolean;
  /**
   * True when the kind counts changes to its desired state in metadata.generation (1 on create,
   * +1 per spec change), as workloads, CRDs, custom resources and webhook configurations do
   * upstream. Pods, ConfigMaps, Namespaces and the like have none.
   */
  generation?: boolean;
  /** initial status set on create (e.g. a Pod starts Pending) */
  initialStatus?(obj: T): unknown;
  /**
   * Something other than metadata.finalizers that holds a deleted object until cleared (a
   * Namespace's spec.finalizers, emptied by the namespace controller once its content is gone).
   */
  deletionBlocked?(obj: T): boolean;
  /** adjust an object being marked for deletion (e.g. a Namespace's phase becomes Terminating) */
  onMarkedForDeletion?(obj: T): void;
  /**
   * Paths of fields the kind does not declare (for fieldValidation), when the kind has its own
   * rule (a CRD's custom resources: what pruning would drop). Without it the kind's published
   * OpenAPI schema decides (src/api/unknown-fields.ts), as for every built-in.
   */
  unknownFields?(obj: T): string[];
  /** where the scale subresource reads and writes (CRDs); built-in kinds use spec/status.replicas */
  scalePaths?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string; labelSelectorIsMap?: boolean };
  /**
   * The kind's OpenAPI v3 schema at a served version, for kinds the generated API data does not
   * describe (a CRD's openAPIV3Schema). Built-in kinds leave it out: their schema comes from the
   * generated data by group/version/kind (src/api/api-definitions.ts).
   */
  openAPISchema?(version: string): Record<string, unknown> | undefined;
  /**
   * The kind's protobuf messages, for clients that send it as protobuf (client-go's typed clients,
   * e.g. `kubectl create pdb`): the tables `npm run gen` makes from the protobuf facts
   * (src/api/generated/protobuf-messages.json, read through protobufMessagesOf in
   * src/api/protobuf/messages.ts). The message named after the kind is the top-level one.
   */
  protobuf?: MessageTable;
  /** the grace period a delete without options uses; undefined → removed at once */
  defaultDeleteGraceSeconds?(obj: T): number | undefined;
  /**
   * The kind's `kubectl get` columns (server-side printing). Without it a Table shows Name and
   * Age, as Kubernetes does for kinds without a printer and CRDs without printer columns.
   */
  table?: ColumnProvider;
  /**
   * Adjust an update before defaults and validation, knowing the stored object (a Service keeps
   * its allocated ClusterIP and NodePorts when the client leaves them out).
   */
  prepareForUpdate?(obj: T, old: T): void;
  /**
   * Keys the kind keeps in the store beside its objects (a Service's ClusterIP and NodePorts, one
   * key each), written inside the registry's create, update and delete of the object.
   */
  storeHooks?: StoreHooks<T>;
  /**
   * Makes the kind virtual: nothing is stored, the only verb is `create`, and a create answers
   * what this returns (access reviews, TokenReview). The request layer decodes the body, fills
   * metadata.namespace from the path and runs `validate` (422) first (src/requests/virtual-create.ts).
   */
  virtualCreate?(obj: T, ctx: VirtualCreateContext): Promise<KubeObject>;
  /**
   * For kinds whose served versions differ in shape (an autoscaling/v1 HorizontalPodAutoscaler has
   * one CPU target where v2 has a metrics list): how an object at a served version becomes the
   * stored one and back. Without it the served versions differ only in apiVersion.
   */
  conversion?: VersionConversion<T>;
  /**
   * Makes the kind read-only and computed: get and list answer what this returns instead of reading
   * the store (the Metrics API's NodeMetrics and PodMetrics); the kind's verbs say which are served.
   */
  virtualRead?: VirtualReader;
}

/** Where a computed kind's objects come from; NotFound errors name the kind. */
export interface VirtualReader {
  get(namespace: string | undefined, name: string): Promise<KubeObject>;
  list(namespace: string | undefined, selectors: { labelSelector?: string; fieldSelector?: string }): Promise<KubeList>;
}

/** Converts a kind between its stored version and the other versions it serves. */
export interface VersionConversion<T extends KubeObject = KubeObject> {
  /** the object as `version` shows it (the stored version comes back unchanged) */
  fromStored(obj: T, version: string): KubeObject;
  /** an object written at `version`, as stored */
  toStored(obj: KubeObject, version: string): T;
  /** protobuf messages of the versions other than the stored one, which `protobuf` describes */
  protobuf?: Record<string, MessageTable>;
}

/** What a virtual kind's create knows of its request. */
export interface VirtualCreateContext {
  /** the namespace in the path, for namespaced kinds */
  namespace?: string;
  /** the caller; absent for in-process calls that carry no user */
  user?: UserInfo;
  dryRun: boolean;
}

/**
 * The store as a kind's hooks see it. Each call is atomic on its own: `createIfAbsent` is the
 * store's create (fails when the key is live), so two writers racing for a key cannot both get it.
 */
export interface HookStore {
  get(key: string): Promise<string | undefined>;
  /** false when the key is already live */
  createIfAbsent(key: string, value: string): Promise<boolean>;
  /** removes the key when it still holds `value` (a key someone else took since is left alone) */
  deleteIfValue(key: string, value: string): Promise<void>;
  list(prefix: string): Promise<Array<{ key: string; value: string }>>;
}

export interface StoreHookContext {
  store: HookStore;
  /** a dry run checks and fills in what the write would, and keeps nothing */
  dryRun: boolean;
}

/** What a hook reserved for one write: kept when the write succeeds, given back when it fails. */
export interface StoreHookTransaction {
  commit(): Promise<void>;
  revert(): Promise<void>;
}

/**
 * A kind's work in the store around its objects' writes, run by the registry: after validation
 * and before the object's write (which may fill fields, e.g. an allocated ClusterIP), and after
 * the object's removal. Throwing refuses the write (an ApiError reaches the client as is).
 */
export interface StoreHooks<T extends KubeObject = KubeObject> {
  beforeCreate(obj: T, ctx: StoreHookContext): Promise<StoreHookTransaction>;
  beforeUpdate(obj: T, old: T, ctx: StoreHookContext): Promise<StoreHookTransaction>;
  afterDelete(old: T, ctx: StoreHookContext): Promise<void>;
  /**
   * Bring the kind's keys in line with its stored objects (keys whose object is gone are freed;
   * values an object holds without a key are recorded): run at start, before requests are served,
   * for what a crash between the two writes left behind.
   */
  repair?(objects: T[], ctx: StoreHookContext): Promise<void>;
}

export function baseSelectableFields(obj: KubeObject): Record<string, string> {
  const f: Record<string, string> = { 'metadata.name': obj.metadata.name ?? '' };
  if (obj.metadata.namespace !== undefined) f['metadata.namespace'] = obj.metadata.namespace;
  return f;
}
