/**
 * Server-side printing: meta.k8s.io/v1 Table bodies for `kubectl get`.
 *
 * kubectl 1.32 asks for tables with
 *   Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json
 * and prints the cells exactly as sent. This module only negotiates and renders Tables: the columns
 * and cells are the kind's own, from the `table` field of its strategy (src/registry/kinds/*, CRDs
 * from their additionalPrinterColumns), looked up through the registry; a kind without one gets
 * Name and Age. The server always emits every column (including priority-1 "wide" ones); kubectl
 * drops priority > 0 columns unless `-o wide`.
 */
import type { KubeObject } from '../api/types.js';
import type { KindStrategy } from '../registry/strategy.js';
import { DEFAULT_COLUMN_PROVIDER, type CellContext, type ColumnProvider, type TableColumnDefinition, type TableRowCondition } from '../registry/table-columns.js';
import type { ResourceInfo } from '../api/identities.js';

/** Accept media-type parameters that select a Table response. */
export const TABLE_GROUP = 'meta.k8s.io';
/** Content-Type of a Table response (the apiserver answers plain JSON; the body's apiVersion/kind say Table). */
export const TABLE_CONTENT_TYPE = 'application/json';

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: 'meta.k8s.io/v1';
  metadata: KubeObject['metadata'];
}

export interface TableRow {
  cells: unknown[];
  conditions?: TableRowCondition[];
  object?: KubeObject | PartialObjectMetadata;
}

export interface Table {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1' | 'meta.k8s.io/v1beta1';
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

// ---------- Accept negotiation ----------

/**
 * Which Table version the client asked for, or undefined for a plain object/list response.
 * Accept is scanned in order; the first range that is either a Table request or plain JSON wins,
 * so `application/json;as=Table;...,application/json` gets a Table and `application/json` does not.
 */
export function wantsTable(accept: string | undefined): 'v1' | 'v1beta1' | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    const [rawType, ...rawParams] = part.split(';');
    const type = (rawType ?? '').trim().toLowerCase();
    if (type !== 'application/json' && type !== '*/*' && type !== 'application/*') continue;
    const params: Record<string, string> = {};
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim();
    }
    if (params['q'] === '0') continue;
    if (params['as'] === undefined) return undefined;
    if (params['as'] === 'Table' && params['g'] === TABLE_GROUP && (params['v'] === 'v1' || params['v'] === 'v1beta1')) {
      return params['v'];
    }
  }
  return undefined;
}

// ---------- columns ----------

/** Where kinds are found: the registry, or anything that looks kinds up the same way. */
export interface KindLookup {
  lookup(group: string, plural: string): KindStrategy | undefined;
}

/** The columns for a resource: its strategy's `table`, else Name/Age. */
export function columnProviderFor(kinds: KindLookup, info: Pick<ResourceInfo, 'group' | 'plural'>): ColumnProvider {
  return kinds.lookup(info.group, info.plural)?.table ?? DEFAULT_COLUMN_PROVIDER;
}

// ---------- building tables ----------

export interface ToTableOptions {
  /** the kind's columns (columnProviderFor); Name/Age when absent */
  columns?: ColumnProvider;
  objects: KubeObject[];
  /** What to embed per row; the apiserver's default (when the query has no includeObject) is Metadata. */
  includeObject: IncludeObject;
  now: Date;
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
  /** From wantsTable(); v1beta1 has the same shape and only changes the stamped apiVersion. */
  tableVersion?: 'v1' | 'v1beta1';
}

function rowObject(obj: KubeObject, includeObject: IncludeObject): TableRow['object'] {
  if (includeObject === 'None') return undefined;
  if (includeObject === 'Object') return obj;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}

/** Build the Table for a list (or a single object: pass one element). */
/** Build the Table for a list (or a single object: pass one element). */
export function toTable(options: ToTableOptions): Table {
  const provider = options.columns ?? DEFAULT_COLUMN_PROVIDER;
  const context: CellContext = { now: options.now };
  const rows: TableRow[] = options.objects.map((obj) => {
    const row: TableRow = { cells: provider.cells(obj, context) };
    const conditions = provider.conditions?.(obj);
    if (conditions && conditions.length > 0) row.conditions = conditions;
    const embedded = rowObject(obj, options.includeObject);
    if (embedded) row.object = embedded;
    return row;
  });
  const metadata: Table['metadata'] = {};
  if (options.resourceVersion !== undefined) metadata.resourceVersion = options.resourceVersion;
  if (options.continue) metadata.continue = options.continue;
  if (options.remainingItemCount !== undefined) metadata.remainingItemCount = options.remainingItemCount;
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${options.tableVersion ?? 'v1'}`,
    metadata,
    columnDefinitions: provider.columns.map((c) => ({ ...c })),
    rows,
  };
}
