/**
 * The generated API data (src/api/generated/openapi-definitions.json, made by scripts/gen-api.ts
 * from the Kubernetes API facts): which definition describes each built-in kind, and every
 * definition they reach, in OpenAPI v3 form. The OpenAPI documents, unknown-field checking and
 * strategic-merge metadata all read the built-in kinds' shapes here.
 *
 * The file is read and parsed once, on the first call that needs it, not at import: an idle
 * control plane that nobody asks for a schema does not carry it.
 */
import { readFileSync } from 'node:fs';

export type Schema = { readonly [key: string]: unknown };

/** One built-in kind's entry in the generated data. */
export interface BuiltinKind {
  group: string;
  version: string;
  kind: string;
  /** component name of the kind's schema, e.g. io.k8s.api.core.v1.Pod */
  definition: string;
  listKind?: string;
  listDefinition?: string;
}

interface GeneratedApiFile {
  kinds: BuiltinKind[];
  definitions: Record<string, Schema>;
}

/** The parsed file, indexed. */
export interface BuiltinApi {
  /** by `group/version/kind` */
  kinds: ReadonlyMap<string, BuiltinKind>;
  /** named schemas, referenced as `#/components/schemas/<name>` */
  definitions: ReadonlyMap<string, Schema>;
}

const GENERATED_FILE = new URL('./generated/openapi-definitions.json', import.meta.url);

let loaded: BuiltinApi | undefined;

function gvkKey(group: string, version: string, kind: string): string {
  return `${group}/${version}/${kind}`;
}

/** The generated data, parsed on first use. */
export function builtinApi(): BuiltinApi {
  if (!loaded) {
    const file = JSON.parse(readFileSync(GENERATED_FILE, 'utf8')) as GeneratedApiFile;
    loaded = {
      kinds: new Map(file.kinds.map((k) => [gvkKey(k.group, k.version, k.kind), k])),
      definitions: new Map(Object.entries(file.definitions)),
    };
  }
  return loaded;
}

/** Whether the generated data has been read yet (for tests of the lazy load). */
export function builtinApiLoaded(): boolean {
  return loaded !== undefined;
}

/** The built-in kind served as group/version/kind, or undefined (a CRD's kind, or an unknown one). */
export function builtinKind(group: string, version: string, kind: string): BuiltinKind | undefined {
  return builtinApi().kinds.get(gvkKey(group, version, kind));
}

/**
 * The schema a built-in kind's objects are checked against (fieldValidation's unknown fields), with
 * the named definitions its references resolve in. Undefined for kinds without generated data.
 */
export function builtinKindSchema(group: string, version: string, kind: string): { schema: Schema; definitions: ReadonlyMap<string, Schema> } | undefined {
  const entry = builtinKind(group, version, kind);
  if (!entry) return undefined;
  const { definitions } = builtinApi();
  const schema = definitions.get(entry.definition);
  return schema && { schema, definitions };
}
