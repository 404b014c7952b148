/**
 * Kubernetes' protobuf request bodies (`application/vnd.kubernetes.protobuf`), as client-go's typed
 * clients send them: kubectl create configmap|secret|namespace|deployment|job|cronjob|pdb, kubectl
 * drain's Eviction. The body is the 4-byte magic `k8s\0` followed by a runtime.Unknown envelope
 * naming apiVersion and kind and carrying the object's own protobuf bytes. Only kinds with a schema
 * here can be decoded; others get a 415 asking for JSON.
 */
import { ApiError, errors } from '../errors.js';
import { setOwn, type JsonObject } from '../patch/json-value.js';
import { ProtobufDecodeError, decodeMessage } from './decode.js';
import { ANY_VERSION_KINDS, BUILTIN_KINDS, BUILTIN_MESSAGES, RUNTIME_TYPE_META_FIELDS, UNKNOWN_FIELDS } from './messages.js';
import { compileSchema, type CompiledSchema, type MessageTable } from './schema.js';
import { WIRE_TYPE, WireFormatError, readFields, type WireField } from './wire.js';

/** The media type of Kubernetes' protobuf encoding. */
export const KUBERNETES_PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** First bytes of every Kubernetes protobuf body: "k8s" and a NUL. */
export const KUBERNETES_PROTOBUF_MAGIC: readonly number[] = [0x6b, 0x38, 0x73, 0x00];

/** The built-in messages (messages.ts), compiled once; a broken table fails here at startup. */
export const PROTOBUF_SCHEMA: CompiledSchema = compileSchema([BUILTIN_MESSAGES]);

/**
 * A kind whose protobuf messages its own module passes (generated, see protobufMessagesOf in
 * messages.ts): `messages[kind]` is the top-level message, and may refer to the built-in messages
 * (ObjectMeta, LabelSelector, IntOrString, PodTemplateSpec, …).
 */
export interface ProtobufKind {
  apiVersion: string;
  kind: string;
  messages: MessageTable;
}

/** Schemas with kinds' own messages added, compiled once per set of kinds. */
const schemasWithKinds = new Map<string, CompiledSchema>();

function schemaFor(kinds: readonly ProtobufKind[]): CompiledSchema {
  if (kinds.length === 0) return PROTOBUF_SCHEMA;
  const key = kinds.map((k) => `${k.apiVersion}/${k.kind}`).sort().join(',');
  let schema = schemasWithKinds.get(key);
  if (!schema) {
    schema = compileSchema([BUILTIN_MESSAGES, ...kinds.map((k) => k.messages)]);
    schemasWithKinds.set(key, schema);
  }
  return schema;
}

/** The (apiVersion, kind) pairs decodeKubeProtobuf understands, for messages and tests. */
export function supportedProtobufKinds(): string[] {
  const pairs = Object.entries(BUILTIN_KINDS).flatMap(([version, kinds]) => Object.keys(kinds).map((kind) => `${version}/${kind}`));
  return [...pairs, ...Object.keys(ANY_VERSION_KINDS).map((kind) => `*/${kind}`)];
}

/**
 * Decodes one Kubernetes protobuf body into the JSON object the same request would carry as
 * application/json: apiVersion and kind first, then the object's fields, with unset and zero
 * fields omitted as Go's JSON encoding omits them (the registry applies defaults afterwards).
 * Throws 400 for malformed bytes and 415 for a kind (or inner encoding) without a schema here.
 */
export function decodeKubeProtobuf(buf: Uint8Array, kinds: readonly ProtobufKind[] = []): JsonObject {
  if (buf.length < KUBERNETES_PROTOBUF_MAGIC.length || KUBERNETES_PROTOBUF_MAGIC.some((byte, i) => buf[i] !== byte)) {
    throw errors.badRequest('error decoding protobuf body: missing the "k8s\\x00" prefix');
  }
  try {
    const envelope = readEnvelope(buf.subarray(KUBERNETES_PROTOBUF_MAGIC.length));
    const { apiVersion, kind } = envelope;
    if (!kind) throw errors.badRequest("error decoding protobuf body: Object 'Kind' is missing");
    if (!apiVersion) throw errors.badRequest("error decoding protobuf body: Object 'apiVersion' is missing");
    if (envelope.contentEncoding !== '') {
      throw errors.unsupportedMediaType(`protobuf bodies with content encoding "${envelope.contentEncoding}" are not supported; send application/json`);
    }
    if (envelope.contentType !== '' && envelope.contentType !== KUBERNETES_PROTOBUF_MEDIA_TYPE) {
      throw errors.unsupportedMediaType(`protobuf envelopes holding "${envelope.contentType}" are not supported; send application/json`);
    }
    const declared = kinds.find((k) => k.apiVersion === apiVersion && k.kind === kind);
    const message = declared ? kind : (BUILTIN_KINDS[apiVersion]?.[kind] ?? ANY_VERSION_KINDS[kind]);
    if (!message) {
      throw errors.unsupportedMediaType(
        `this server cannot decode ${apiVersion}, Kind=${kind} from ${KUBERNETES_PROTOBUF_MEDIA_TYPE}; send it as application/json`,
      );
    }
    const object = decodeMessage(schemaFor(declared ? [declared] : []), message, envelope.raw);
    const out: JsonObject = { apiVersion, kind };
    for (const [key, value] of Object.entries(object)) setOwn(out, key, value);
    return out;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (e instanceof ProtobufDecodeError || e instanceof WireFormatError) {
      throw errors.badRequest(`error decoding protobuf body: ${e.message}`);
    }
    throw e;
  }
}

interface Envelope {
  apiVersion: string;
  kind: string;
  raw: Uint8Array;
  contentEncoding: string;
  contentType: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads runtime.Unknown by hand: its raw field must stay bytes, not become base64 text. */
function readEnvelope(bytes: Uint8Array): Envelope {
  const envelope: Envelope = { apiVersion: '', kind: '', raw: new Uint8Array(0), contentEncoding: '', contentType: '' };
  for (const field of readFields(bytes)) {
    switch (field.number) {
      case UNKNOWN_FIELDS.typeMeta:
        for (const meta of readFields(bytesOf(field, 'typeMeta'))) {
          if (meta.number === RUNTIME_TYPE_META_FIELDS.apiVersion) envelope.apiVersion = text(meta, 'typeMeta.apiVersion');
          else if (meta.number === RUNTIME_TYPE_META_FIELDS.kind) envelope.kind = text(meta, 'typeMeta.kind');
        }
        break;
      case UNKNOWN_FIELDS.raw:
        envelope.raw = bytesOf(field, 'raw');
        break;
      case UNKNOWN_FIELDS.contentEncoding:
        envelope.contentEncoding = text(field, 'contentEncoding');
        break;
      case UNKNOWN_FIELDS.contentType:
        envelope.contentType = text(field, 'contentType');
        break;
    }
  }
  return envelope;
}

function bytesOf(field: WireField, name: string): Uint8Array {
  if (field.wireType !== WIRE_TYPE.lengthDelimited) throw new ProtobufDecodeError(`envelope field ${name} has wire type ${field.wireType}`);
  return field.bytes;
}

function text(field: WireField, name: string): string {
  try {
    return utf8.decode(bytesOf(field, name));
  } catch (e) {
    if (e instanceof ProtobufDecodeError) throw e;
    throw new ProtobufDecodeError(`envelope field ${name} is not valid UTF-8`);
  }
}
