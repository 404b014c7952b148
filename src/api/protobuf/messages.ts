/**
 * Kubernetes' protobuf field tables, as scripts/gen-protobuf.ts generates them from the protobuf
 * facts (every generated.proto's field numbers) into src/api/generated/protobuf-messages.json:
 * the messages decoded for any request (BUILTIN_MESSAGES), each module kind's own messages
 * (protobufMessagesOf), and the field numbers the codec reads without a table (the runtime.Unknown
 * envelope; Time, Duration, Quantity, IntOrString and FieldsV1, whose JSON form is not their shape).
 * Nothing here is typed by hand: a kind missing from the file fails at startup, naming the generator.
 */
import { readFileSync } from 'node:fs';
import type { FieldDecl, MessageTable } from './schema.js';

interface GeneratedProtobufFile {
  builtinKinds: Record<string, Record<string, string>>;
  anyVersionKinds: Record<string, string>;
  builtin: string[];
  kinds: Record<string, Record<string, string[]>>;
  wire: Record<string, Record<string, number>>;
  messages: Record<string, { name: string; fields: Record<string, FieldDecl> }>;
}

const GENERATED_FILE = new URL('../generated/protobuf-messages.json', import.meta.url);

const generated = JSON.parse(readFileSync(GENERATED_FILE, 'utf8')) as GeneratedProtobufFile;

/** The table holding `fullNames`, each under the name the generated references use for it. */
function tableOf(fullNames: readonly string[]): MessageTable {
  const table: Record<string, Readonly<Record<string, FieldDecl>>> = {};
  for (const full of fullNames) {
    const message = generated.messages[full];
    if (!message) throw new Error(`${GENERATED_FILE.pathname} lists ${full} without its fields; run npm run gen`);
    table[message.name] = message.fields;
  }
  return table;
}

/** The messages decoded for any request: the built-in kinds' and everything they reach (meta included). */
export const BUILTIN_MESSAGES: MessageTable = tableOf(generated.builtin);

/** apiVersion → kind → top-level message in BUILTIN_MESSAGES, for the objects clients send as protobuf. */
export const BUILTIN_KINDS: Readonly<Record<string, Readonly<Record<string, string>>>> = generated.builtinKinds;

/** Kinds every group version registers (DeleteOptions), so any apiVersion may carry them. */
export const ANY_VERSION_KINDS: Readonly<Record<string, string>> = generated.anyVersionKinds;

/**
 * A module kind's own protobuf messages (its top-level message is named after the kind; the rest
 * refer to BUILTIN_MESSAGES for ObjectMeta, LabelSelector, PodTemplateSpec, …). Throws when the
 * generated file does not have the kind: add it to MODULE_PROTOBUF_KINDS in scripts/gen-protobuf.ts.
 */
export function protobufMessagesOf(apiVersion: string, kind: string): MessageTable {
  const own = generated.kinds[apiVersion]?.[kind];
  if (!own) throw new Error(`no generated protobuf messages for ${apiVersion} ${kind}: add it to MODULE_PROTOBUF_KINDS in scripts/gen-protobuf.ts and run npm run gen`);
  return tableOf(own);
}

/** The generated numbers of `names` in message `full`; throws at startup if one is missing. */
function numbersOf<K extends string>(full: string, names: Readonly<Record<K, string>>): Readonly<Record<K, number>> {
  const fields = generated.wire[full] ?? {};
  const out = {} as Record<K, number>;
  for (const [key, name] of Object.entries(names) as Array<[K, string]>) {
    const number = fields[name];
    if (number === undefined) throw new Error(`${GENERATED_FILE.pathname} has no field ${name} of ${full}; run npm run gen`);
    out[key] = number;
  }
  return out;
}

const RUNTIME = 'k8s.io.apimachinery.pkg.runtime';
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';

/** runtime.Unknown, the envelope around every protobuf-encoded object. */
export const UNKNOWN_FIELDS = numbersOf(`${RUNTIME}.Unknown`, { typeMeta: 'typeMeta', raw: 'raw', contentEncoding: 'contentEncoding', contentType: 'contentType' });

/** runtime.TypeMeta inside the envelope (its apiVersion is field 1, unlike meta/v1 TypeMeta's). */
export const RUNTIME_TYPE_META_FIELDS = numbersOf(`${RUNTIME}.TypeMeta`, { apiVersion: 'apiVersion', kind: 'kind' });

/** Field numbers inside the special messages decode.ts converts by hand. */
export const SPECIAL_FIELDS = {
  /** meta/v1 Time and MicroTime (google.protobuf.Timestamp layout) */
  time: numbersOf(`${META}.Time`, { seconds: 'seconds', nanos: 'nanos' }),
  /** meta/v1 Duration: nanoseconds */
  duration: numbersOf(`${META}.Duration`, { duration: 'duration' }),
  /** resource.Quantity: its canonical string */
  quantity: numbersOf('k8s.io.apimachinery.pkg.api.resource.Quantity', { string: 'string' }),
  /** intstr.IntOrString: type 0 = int, 1 = string */
  intOrString: numbersOf('k8s.io.apimachinery.pkg.util.intstr.IntOrString', { type: 'type', intVal: 'intVal', strVal: 'strVal' }),
  /** meta/v1 FieldsV1: raw JSON */
  fieldsV1: numbersOf(`${META}.FieldsV1`, { raw: 'Raw' }),
} as const;
