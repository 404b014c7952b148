/**
 * The `eviction` subresource of pods (POST pods/{name}/eviction with a policy/v1 Eviction, or the older
 * policy/v1beta1 one): a delete that a PodDisruptionBudget may refuse (429), as eviction-budget.ts
 * decides. What `kubectl drain` uses. The Eviction's deleteOptions (grace period, preconditions, dry
 * run) apply to the delete.
 */
import { assertObject, decodeBody, mediaTypeOf } from '../api/body.js';
import { errors } from '../api/errors.js';
import type { DeleteOptions, Registry } from '../registry/registry.js';
import { evictPod } from './eviction-budget.js';
import type { ApiRequest, HandlerResult } from './request.js';

interface EvictionBody {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  deleteOptions?: { gracePeriodSeconds?: unknown; preconditions?: unknown; dryRun?: unknown; propagationPolicy?: unknown };
}

export async function handleEvictionRequest(registry: Registry, req: ApiRequest): Promise<HandlerResult> {
  const { info, namespace, name } = req.target;
  if (req.method !== 'POST') throw errors.methodNotAllowed(`${req.method} is not supported on pods/eviction`);
  if (name === undefined) throw errors.notFound({ resource: 'pods/eviction', name: '' });
  if (!req.body || req.body.length === 0) throw errors.badRequest('the request body is empty');
  let eviction: EvictionBody;
  if (mediaTypeOf(req.contentType) === PROTOBUF) {
    // kubectl drain talks through client-go's typed clientset, which sends built-in kinds as protobuf.
    eviction = decodeEvictionProtobuf(req.body);
  } else {
    const doc = decodeBody(req.body, req.contentType);
    assertObject(doc);
    eviction = doc as EvictionBody;
  }
  if (eviction.kind !== undefined && eviction.kind !== 'Eviction') throw errors.badRequest(`the kind of the provided object (${String(eviction.kind)}) is not Eviction`);
  if (eviction.metadata?.name !== undefined && eviction.metadata.name !== name) {
    throw errors.badRequest(`name in URL does not match name in Eviction object`);
  }
  const opts: DeleteOptions = { dryRun: req.query.dryRun === 'All', user: req.user };
  const d = eviction.deleteOptions;
  if (d && typeof d === 'object') {
    if (typeof d.gracePeriodSeconds === 'number') opts.gracePeriodSeconds = d.gracePeriodSeconds;
    if (d.preconditions && typeof d.preconditions === 'object') opts.preconditions = d.preconditions as DeleteOptions['preconditions'];
    if (Array.isArray(d.dryRun) && d.dryRun.includes('All')) opts.dryRun = true;
    if (typeof d.propagationPolicy === 'string') opts.propagationPolicy = d.propagationPolicy;
  }
  // Throws NotFound for a missing pod, as the apiserver does.
  return evictPod({ registry, podInfo: info, namespace, name, deleteOptions: opts });
}

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** Kubernetes' protobuf envelope starts with these four bytes, then a runtime.Unknown message. */
const K8S_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type ProtoField = { no: number; varint?: bigint; bytes?: Buffer };

/** The fields of one protobuf message (wire types varint and length-delimited; fixed ones skipped). */
function protoFields(buf: Buffer): ProtoField[] {
  const out: ProtoField[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= buf.length) throw errors.badRequest('truncated protobuf body');
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    switch (key & 7) {
      case 0:
        out.push({ no, varint: varint() });
        break;
      case 2: {
        const len = Number(varint());
        if (i + len > buf.length) throw errors.badRequest('truncated protobuf body');
        out.push({ no, bytes: buf.subarray(i, i + len) });
        i += len;
        break;
      }
      case 1:
        i += 8;
        break;
      case 5:
        i += 4;
        break;
      default:
        throw errors.badRequest('unsupported protobuf wire type');
    }
  }
  return out;
}

const str = (f: ProtoField[], no: number) => f.find((x) => x.no === no)?.bytes?.toString('utf8');
const msg = (f: ProtoField[], no: number) => {
  const b = f.find((x) => x.no === no)?.bytes;
  return b ? protoFields(b) : undefined;
};

/**
 * A policy/v1 Eviction in Kubernetes' protobuf encoding: envelope (magic + runtime.Unknown{typeMeta=1,
 * raw=2}), then Eviction{metadata=1 ObjectMeta{name=1, namespace=3}, deleteOptions=2 DeleteOptions{
 * gracePeriodSeconds=1, preconditions=2{uid=1, resourceVersion=2}, propagationPolicy=4, dryRun=5}}.
 */
export function decodeEvictionProtobuf(body: Buffer): EvictionBody {
  if (body.length < 4 || !body.subarray(0, 4).equals(K8S_MAGIC)) throw errors.badRequest('protobuf body without the k8s envelope');
  const unknown = protoFields(body.subarray(4));
  const typeMeta = msg(unknown, 1) ?? [];
  const raw = unknown.find((x) => x.no === 2)?.bytes ?? Buffer.alloc(0);
  const ev = protoFields(raw);
  const meta = msg(ev, 1) ?? [];
  const out: EvictionBody = { apiVersion: str(typeMeta, 1), kind: str(typeMeta, 2), metadata: { name: str(meta, 1), namespace: str(meta, 3) } };
  const del = msg(ev, 2);
  if (del) {
    const d: NonNullable<EvictionBody['deleteOptions']> = {};
    const grace = del.find((x) => x.no === 1)?.varint;
    if (grace !== undefined) d.gracePeriodSeconds = Number(BigInt.asIntN(64, grace));
    const pre = msg(del, 2);
    if (pre) d.preconditions = { ...(str(pre, 1) ? { uid: str(pre, 1) } : {}), ...(str(pre, 2) ? { resourceVersion: str(pre, 2) } : {}) };
    const policy = str(del, 4);
    if (policy) d.propagationPolicy = policy;
    const dry = del.filter((x) => x.no === 5).map((x) => x.bytes?.toString('utf8'));
    if (dry.length) d.dryRun = dry;
    out.deleteOptions = d;
  }
  return out;
}
