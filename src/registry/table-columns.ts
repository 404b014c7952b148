/**
 * What a kind's `kubectl get` columns are made of: the column and row-condition shapes of a
 * meta.k8s.io Table, the provider a kind's strategy carries in its `table` field, and the cell
 * helpers the kinds share (ages as kubectl prints them, pod-template wide columns, CRD
 * additionalPrinterColumns). Rendering a Table for a request is the server's job (src/server/tables.ts);
 * this module only knows how one object becomes one row.
 */
import { labelSelectorFromObject, labelSelectorToString } from '../api/selectors.js';
import type { KubeObject, LabelSelector } from '../api/types.js';

export interface TableColumnDefinition {
  name: string;
  /** OpenAPI type: string, integer, number, boolean, date */
  type: string;
  /** OpenAPI format; 'name' marks the column kubectl treats as the object's name */
  format: string;
  description: string;
  /** 0 = always shown; >0 = only with `-o wide` */
  priority: number;
}

export interface TableRowCondition {
  type: 'Completed';
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
}

/** Context handed to cell functions: `now` makes ages deterministic in tests. */
export interface CellContext {
  now: Date;
}

/** Columns plus how to fill them for one object. `cells` must return one value per column. */
export interface ColumnProvider {
  columns: TableColumnDefinition[];
  cells(object: KubeObject, context: CellContext): unknown[];
  conditions?(object: KubeObject): TableRowCondition[] | undefined;
}

// ---------- durations ----------

/**
 * Kubernetes' HumanDuration: about two significant figures, e.g. 45s, 3m20s, 12m, 5h, 7h10m,
 * 30h, 2d3h, 12d, 2y30d, 9y. Negative durations under 2s round to 0s; anything earlier is <invalid>.
 */
export function humanDuration(milliseconds: number): string {
  const totalSeconds = Math.trunc(milliseconds / 1000);
  if (totalSeconds < -1) return '<invalid>';
  if (totalSeconds < 0) return '0s';
  if (totalSeconds < 60 * 2) return `${totalSeconds}s`;
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 10) {
    const s = totalSeconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(totalSeconds / 3600);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24);
    const dy = days % 365;
    const years = Math.floor(days / 365);
    return dy === 0 ? `${years}y` : `${years}y${dy}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** Age column text for an RFC 3339 timestamp; `<unknown>` when absent or unparsable (as kubectl prints). */
export function ageSince(timestamp: string | undefined | null, now: Date): string {
  if (!timestamp) return '<unknown>';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now.getTime() - t);
}

// ---------- shared columns ----------

/** The Name column every printer starts with; format 'name' is how kubectl finds the object's name. */
export const NAME_COLUMN: TableColumnDefinition = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace. Cannot be updated.',
  priority: 0,
};
export const AGE_COLUMN: TableColumnDefinition = {
  name: 'Age',
  type: 'string',
  format: '',
  description: 'CreationTimestamp is the time the object was created, in UTC.',
  priority: 0,
};

/** A column definition; priority 1 marks a `-o wide` column. */
export function column(name: string, description: string, priority = 0, type = 'string'): TableColumnDefinition {
  return { name, type, format: '', description, priority };
}

/** Name + Age: what kubectl shows for kinds with no dedicated printer (and CRDs without printer columns). */
export const DEFAULT_COLUMN_PROVIDER: ColumnProvider = {
  columns: [NAME_COLUMN, AGE_COLUMN],
  cells: (obj, { now }) => [obj.metadata.name ?? '', ageSince(obj.metadata.creationTimestamp, now)],
};

/** The parts of a workload the pod-template wide columns read. */
export interface PodTemplateOwner {
  metadata: KubeObject['metadata'];
  spec?: {
    selector?: LabelSelector;
    template?: { spec?: { containers?: Array<{ name?: string; image?: string }> } };
  };
}

/** CONTAINERS, IMAGES, SELECTOR (wide) for anything with a selector and a pod template. */
export function podTemplateWideCells(obj: PodTemplateOwner): string[] {
  const containers = obj.spec?.template?.spec?.containers ?? [];
  let selector = '<none>';
  try {
    if (obj.spec?.selector) selector = labelSelectorToString(labelSelectorFromObject(obj.spec.selector)) || '<none>';
  } catch {
    selector = '<invalid>';
  }
  return [containers.map((c) => c.name ?? '').join(','), containers.map((c) => c.image ?? '').join(','), selector];
}

/** The Containers and Images wide columns that go with podTemplateWideCells (a Selector column follows). */
export const POD_TEMPLATE_WIDE_COLUMNS: readonly TableColumnDefinition[] = [
  column('Containers', 'Names of each container in the template.', 1),
  column('Images', 'Images referenced by each container in the template.', 1),
];

// ---------- CRD additionalPrinterColumns ----------

/** One CRD additionalPrinterColumns entry (apiextensions.k8s.io/v1). */
export interface PrinterColumnSpec {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

type PathStep = { field: string } | { index: number } | { filter: { field: string[]; value: string } } | { wildcard: true };

/**
 * Parse the JSONPath subset CRD printer columns use in practice: `.a.b`, `.a[0]`, `.a[*].b`,
 * `.a[?(@.type=="Ready")].status`. Anything else yields undefined (the cell prints empty).
 */
function parseSimpleJsonPath(path: string): PathStep[] | undefined {
  const steps: PathStep[] = [];
  let rest = path.trim().replace(/^\{(.*)\}$/, '$1').replace(/^\$/, '');
  while (rest.length > 0) {
    let m: RegExpExecArray | null;
    if ((m = /^\.([A-Za-z0-9_\-]+)/.exec(rest))) {
      steps.push({ field: m[1] ?? '' });
    } else if ((m = /^\[(\d+)\]/.exec(rest))) {
      steps.push({ index: Number(m[1]) });
    } else if ((m = /^\[\*\]/.exec(rest))) {
      steps.push({ wildcard: true });
    } else if ((m = /^\[\?\(@((?:\.[A-Za-z0-9_\-]+)+)\s*==\s*(?:"([^"]*)"|'([^']*)')\)\]/.exec(rest))) {
      steps.push({ filter: { field: (m[1] ?? '').split('.').filter(Boolean), value: m[2] ?? m[3] ?? '' } });
    } else if ((m = /^\['([^']+)'\]/.exec(rest))) {
      steps.push({ field: m[1] ?? '' });
    } else {
      return undefined;
    }
    rest = rest.slice(m[0].length);
  }
  return steps;
}

function evaluate(steps: PathStep[], root: unknown): unknown[] {
  let current: unknown[] = [root];
  for (const step of steps) {
    const next: unknown[] = [];
    for (const value of current) {
      if ('field' in step) {
        if (value && typeof value === 'object' && !Array.isArray(value)) {
          const v = (value as Record<string, unknown>)[step.field];
          if (v !== undefined) next.push(v);
        }
      } else if ('index' in step) {
        if (Array.isArray(value) && step.index < value.length) next.push(value[step.index]);
      } else if ('wildcard' in step) {
        if (Array.isArray(value)) next.push(...value);
      } else if (Array.isArray(value)) {
        for (const item of value) {
          let probe: unknown = item;
          for (const f of step.filter.field) {
            probe = probe && typeof probe === 'object' ? (probe as Record<string, unknown>)[f] : undefined;
          }
          if (probe !== undefined && String(probe) === step.filter.value) next.push(item);
        }
      }
    }
    current = next;
  }
  return current;
}

/**
 * A ColumnProvider from CRD additionalPrinterColumns. As the apiserver does, Name is always the
 * first column, `date` columns print as an age, and missing values print as empty cells.
 */
export function printerColumnsProvider(specs: PrinterColumnSpec[]): ColumnProvider {
  const compiled = specs.map((s) => ({ spec: s, steps: parseSimpleJsonPath(s.jsonPath) }));
  return {
    columns: [
      NAME_COLUMN,
      ...specs.map((s) => ({
        name: s.name,
        type: s.type,
        format: s.format ?? '',
        description: s.description ?? '',
        priority: s.priority ?? 0,
      })),
    ],
    cells: (obj, { now }) => [
      obj.metadata.name ?? '',
      ...compiled.map(({ spec, steps }) => {
        if (!steps) return null;
        const values = evaluate(steps, obj);
        if (values.length === 0) return null;
        const first = values[0];
        if (spec.type === 'date') return typeof first === 'string' ? ageSince(first, now) : null;
        if (values.length > 1) return values.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(',');
        if (first !== null && typeof first === 'object') return JSON.stringify(first);
        return first;
      }),
    ],
  };
}

