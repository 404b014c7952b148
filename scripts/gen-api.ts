/**
 * `npm run gen`: turns the Kubernetes API facts (the published OpenAPI v2 document with its
 * descriptions removed, ../shared/data/kubernetes-api/openapi-v2-facts.json) into the committed
 * schema data Berth serves from: src/api/generated/openapi-definitions.json.
 *
 * The output holds, for every kind in SERVED_KINDS below, the name of its definition (and of its
 * list's), and every definition reachable from them in OpenAPI v3 form (`#/components/schemas/`
 * references, a reference beside other keywords wrapped in `allOf` as the apiserver publishes it).
 * The OpenAPI documents, unknown-field checking and strategic-merge metadata all read it
 * (src/api/api-definitions.ts). A checkout builds without ../shared because the output is committed.
 *
 * Usage: npm run gen [-- --facts <openapi-v2-facts.json>] [-- --out <dir>]
 *   (the facts path may also come from BERTH_API_FACTS)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One kind Berth serves, as the generator looks it up in the facts. */
export interface ServedKindEntry {
  group: string;
  version: string;
  kind: string;
  /** false for kinds that have no list (subresource bodies such as Scale and Eviction) */
  list?: boolean;
  /**
   * A version the facts no longer publish, served with the shape of another version of the same
   * group (batch/v1beta1 CronJob has the batch/v1 shape; API 1.36 dropped v1beta1).
   */
  shapeOf?: string;
}

/**
 * Every group/version/kind Berth serves with a built-in schema. A new built-in kind adds one line
 * here and runs `npm run gen`.
 */
export const SERVED_KINDS: readonly ServedKindEntry[] = [
  { group: '', version: 'v1', kind: 'Pod' },
  { group: '', version: 'v1', kind: 'Node' },
  { group: '', version: 'v1', kind: 'Namespace' },
  { group: '', version: 'v1', kind: 'Event' },
  { group: '', version: 'v1', kind: 'ConfigMap' },
  { group: '', version: 'v1', kind: 'Secret' },
  { group: '', version: 'v1', kind: 'PersistentVolumeClaim' },
  { group: '', version: 'v1', kind: 'Service' },
  { group: '', version: 'v1', kind: 'Endpoints' },
  { group: '', version: 'v1', kind: 'ServiceAccount' },
  { group: '', version: 'v1', kind: 'ReplicationController' },
  { group: '', version: 'v1', kind: 'PodTemplate' },
  { group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice' },
  { group: 'apps', version: 'v1', kind: 'Deployment' },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet' },
  { group: 'apps', version: 'v1', kind: 'DaemonSet' },
  { group: 'apps', version: 'v1', kind: 'StatefulSet' },
  { group: 'apps', version: 'v1', kind: 'ControllerRevision' },
  { group: 'batch', version: 'v1', kind: 'Job' },
  { group: 'batch', version: 'v1', kind: 'CronJob' },
  { group: 'batch', version: 'v1beta1', kind: 'CronJob', shapeOf: 'v1' },
  { group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler' },
  { group: 'autoscaling', version: 'v1', kind: 'HorizontalPodAutoscaler' },
  { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease' },
  { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'MutatingWebhookConfiguration' },
  { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingWebhookConfiguration' },
  { group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition' },
  { group: 'policy', version: 'v1', kind: 'PodDisruptionBudget' },
  { group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy' },
  { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding' },
  { group: 'apiregistration.k8s.io', version: 'v1', kind: 'APIService' },
  // Bodies of subresources: /scale, /eviction and serviceaccounts/token.
  { group: 'autoscaling', version: 'v1', kind: 'Scale', list: false },
  { group: 'policy', version: 'v1', kind: 'Eviction', list: false },
  { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', list: false },
];

/** Shared types the documents' operations refer to, whatever kinds are served. */
export const SUPPORTING_DEFINITIONS: readonly string[] = [
  'io.k8s.apimachinery.pkg.apis.meta.v1.Status',
  'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions',
  'io.k8s.apimachinery.pkg.apis.meta.v1.Patch',
  'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent',
];

/**
 * Fields the facts lost: removing descriptions also removed properties that are named
 * `description` (JSON Schema's own keyword in a CRD schema, a printer column's text). Kubernetes
 * has them, so manifests carry them.
 */
const LOST_PROPERTIES: Record<string, Record<string, Schema>> = {
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps': { description: { type: 'string' } },
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.ExternalDocumentation': { description: { type: 'string' } },
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition': { description: { type: 'string' } },
};

/**
 * The OpenAPI v3 form of types whose JSON takes more than one type. v2 can only say `string`
 * (kubectl's v2 validator lets any scalar through a string); v3 says what is accepted, and the
 * v2 document is converted back from it (src/server/openapi-v2.ts).
 */
const V3_FORMS: Record<string, Schema> = {
  'io.k8s.apimachinery.pkg.api.resource.Quantity': { oneOf: [{ type: 'string' }, { type: 'number' }] },
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
};

type Schema = { [key: string]: unknown };

interface Facts {
  source?: string;
  definitions: Record<string, Schema>;
}

/** One served kind in the output. */
export interface GeneratedKind {
  group: string;
  version: string;
  kind: string;
  definition: string;
  listKind?: string;
  listDefinition?: string;
}

/** The whole generated file. */
export interface GeneratedApiData {
  _generated: string;
  source: string;
  kinds: GeneratedKind[];
  definitions: Record<string, Schema>;
}

const V2_REF = '#/definitions/';
const V3_REF = '#/components/schemas/';
const FACTS_DEFAULT = '../shared/data/kubernetes-api/openapi-v2-facts.json';
export const GENERATED_FILE = 'src/api/generated/openapi-definitions.json';

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function gvkMatches(schema: Schema, group: string, version: string, kind: string): boolean {
  const gvks = schema['x-kubernetes-group-version-kind'];
  return Array.isArray(gvks) && gvks.some((g) => isObject(g) && g['group'] === group && g['version'] === version && g['kind'] === kind);
}

/** The definition tagged with this group/version/kind (by its extension, not by guessing its name). */
function definitionOf(facts: Facts, group: string, version: string, kind: string): string {
  const found = Object.entries(facts.definitions).filter(([, schema]) => gvkMatches(schema, group, version, kind));
  if (found.length !== 1) throw new Error(`the facts have ${found.length} definitions for ${group || 'core'}/${version} ${kind}; expected one`);
  return found[0]![0];
}

/**
 * A facts schema in v3 form: references renamed; a property or item that is a reference gets it
 * inside `allOf`, so that siblings such as `x-kubernetes-patch-strategy` stay legal; the
 * group-version-kind tags are dropped (the server tags the kinds it serves).
 */
function toV3(schema: unknown, position: 'definition' | 'nested'): unknown {
  if (Array.isArray(schema)) return schema.map((s) => toV3(s, 'nested'));
  if (!isObject(schema)) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'x-kubernetes-group-version-kind') continue;
    if (key === '$ref' && typeof value === 'string') continue;
    if (key === 'properties' && isObject(value)) {
      const properties: Schema = {};
      for (const name of Object.keys(value).sort()) properties[name] = toV3(value[name], 'nested');
      out[key] = properties;
    } else {
      out[key] = toV3(value, 'nested');
    }
  }
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const v3 = { $ref: V3_REF + ref.slice(V2_REF.length) };
    if (position === 'nested') return { allOf: [v3], ...out };
    return { ...v3, ...out };
  }
  return out;
}

function collectRefs(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) collectRefs(v, into);
  } else if (isObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string') into.add(v.startsWith(V2_REF) ? v.slice(V2_REF.length) : v);
      else collectRefs(v, into);
    }
  }
}

/** The generated data for `kinds`, from the facts. Pure, so a test can compare it with the committed file. */
export function generateApiData(facts: Facts, factsName: string, kinds: readonly ServedKindEntry[] = SERVED_KINDS): GeneratedApiData {
  const generatedKinds: GeneratedKind[] = [];
  const roots: string[] = [...SUPPORTING_DEFINITIONS];
  for (const entry of kinds) {
    const shapeVersion = entry.shapeOf ?? entry.version;
    const definition = definitionOf(facts, entry.group, shapeVersion, entry.kind);
    const out: GeneratedKind = { group: entry.group, version: entry.version, kind: entry.kind, definition };
    roots.push(definition);
    if (entry.list !== false) {
      const listKind = `${entry.kind}List`;
      out.listKind = listKind;
      out.listDefinition = definitionOf(facts, entry.group, shapeVersion, listKind);
      roots.push(out.listDefinition);
    }
    generatedKinds.push(out);
  }

  const reachable = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (reachable.has(name)) continue;
    const schema = facts.definitions[name];
    if (!schema) throw new Error(`the facts have no definition ${name}`);
    reachable.add(name);
    const refs = new Set<string>();
    collectRefs(schema, refs);
    queue.push(...refs);
  }

  const definitions: Record<string, Schema> = {};
  for (const name of [...reachable].sort()) {
    let schema = toV3(facts.definitions[name], 'definition') as Schema;
    if (V3_FORMS[name]) schema = { ...V3_FORMS[name] };
    const lost = LOST_PROPERTIES[name];
    if (lost && isObject(schema['properties'])) {
      const properties: Schema = { ...schema['properties'], ...lost };
      schema = { ...schema, properties: Object.fromEntries(Object.keys(properties).sort().map((k) => [k, properties[k]])) };
    }
    definitions[name] = schema;
  }
  return {
    _generated:
      `Generated by scripts/gen-api.ts from ${factsName} (${facts.source ?? 'Kubernetes OpenAPI v2'}, API 1.36): ` +
      'do not edit; add a kind to SERVED_KINDS there and run `npm run gen`.',
    source: factsName,
    kinds: generatedKinds,
    definitions,
  };
}

/** The file's text: stable key order and a final newline, so a regeneration without changes is byte-identical. */
export function renderApiData(data: GeneratedApiData): string {
  return `${JSON.stringify(data, null, 1)}\n`;
}

/** The facts file as a relative name for the output's note (it names the path the default uses). */
export const FACTS_NAME = 'shared/data/kubernetes-api/openapi-v2-facts.json';

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function main(): void {
  // dist/scripts/gen-api.js → the repository root
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const factsPath = path.resolve(root, argument('--facts') ?? process.env['BERTH_API_FACTS'] ?? FACTS_DEFAULT);
  const outDir = path.resolve(root, argument('--out') ?? path.dirname(GENERATED_FILE));
  if (!existsSync(factsPath)) {
    process.stderr.write(`gen-api: no API facts at ${factsPath}; pass --facts <openapi-v2-facts.json> or set BERTH_API_FACTS\n`);
    process.exit(1);
  }
  const facts = JSON.parse(readFileSync(factsPath, 'utf8')) as Facts;
  const data = generateApiData(facts, FACTS_NAME);
  mkdirSync(outDir, { recursive: true });
  const target = path.join(outDir, path.basename(GENERATED_FILE));
  writeFileSync(target, renderApiData(data));
  process.stdout.write(`${target}: ${data.kinds.length} kinds, ${Object.keys(data.definitions).length} definitions\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
