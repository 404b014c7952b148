/**
 * The file sets of API-backed volumes — configMap, secret, downwardAPI and projected — computed from the
 * objects they name, with `items` (key → path), `defaultMode`/`mode` and `optional` as Kubernetes defines
 * them; a projected serviceAccountToken source is a token bound to the pod (service-account-tokens.ts
 * caches and refreshes it). Pure apart from reading the objects and tokens; atomic-writer.ts puts the
 * result on disk.
 */
import type { ConfigMap, Pod, Secret } from '../../src/api/types.js';
import { objectKey, type ConfigObjectReader } from '../container/config-reader.js';
import { fieldRefValue, resourceFieldValue, type FieldRef, type PodRuntimeFacts, type ResourceFieldRef } from '../container/downward-api.js';
import type { Payload } from './atomic-writer.js';
import type { TokenSpec } from './service-account-tokens.js';

/** Kubernetes' default file mode for these volumes (0644). */
export const DEFAULT_FILE_MODE = 0o644;

export interface KeyToPath {
  key?: string;
  path?: string;
  mode?: number;
}

/** Where serviceAccountToken sources get their tokens (ServiceAccountTokens). */
export interface TokenSource {
  token(spec: TokenSpec): Promise<string>;
}

export interface ProjectionContext {
  pod: Pod;
  facts: PodRuntimeFacts;
  objects: ConfigObjectReader;
  /** absent: serviceAccountToken sources cannot be projected */
  tokens?: TokenSource | undefined;
}

interface TokenProjection {
  audience?: string;
  expirationSeconds?: number;
  path?: string;
}

/** The lifetime a serviceAccountToken source asks for when it names none (the API's default). */
export const DEFAULT_PROJECTED_TOKEN_EXPIRATION_SECONDS = 3600;

interface ObjectSource {
  name?: string;
  items?: KeyToPath[];
  optional?: boolean;
}

interface DownwardItem {
  path?: string;
  fieldRef?: FieldRef;
  resourceFieldRef?: ResourceFieldRef;
  mode?: number;
}

function modeOf(mode: unknown, fallback: number): number {
  return typeof mode === 'number' && Number.isInteger(mode) && mode >= 0 && mode <= 0o777 ? mode : fallback;
}

/** Files from a key → bytes map, all keys or only `items`. */
function keyedPayload(
  kind: 'configmap' | 'secret',
  entries: Map<string, Buffer>,
  src: ObjectSource,
  defaultMode: number,
  into: Payload,
): void {
  if (!src.items?.length) {
    for (const [k, data] of entries) into.set(k, { data, mode: defaultMode });
    return;
  }
  for (const item of src.items) {
    const data = entries.get(item.key ?? '');
    if (data === undefined) {
      if (src.optional) continue;
      throw new Error(kind === 'configmap' ? `configmap references non-existent config key: ${item.key ?? ''}` : `references non-existent secret key: ${item.key ?? ''}`);
    }
    into.set(item.path ?? '', { data, mode: modeOf(item.mode, defaultMode) });
  }
}

function configMapEntries(cm: ConfigMap): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) m.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) m.set(k, Buffer.from(v, 'base64'));
  return m;
}

function secretEntries(s: Secret): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(s.data ?? {})) m.set(k, Buffer.from(v, 'base64'));
  return m;
}

async function addConfigMap(ctx: ProjectionContext, src: ObjectSource, defaultMode: number, into: Payload): Promise<void> {
  const name = src.name ?? '';
  const cm = await ctx.objects.configMap(ctx.pod.metadata.namespace ?? 'default', name);
  if (!cm) {
    if (src.optional) return;
    throw new Error(`configmap "${name}" not found`);
  }
  keyedPayload('configmap', configMapEntries(cm), src, defaultMode, into);
}

async function addSecret(ctx: ProjectionContext, src: ObjectSource, defaultMode: number, into: Payload): Promise<void> {
  const name = src.name ?? '';
  const s = await ctx.objects.secret(ctx.pod.metadata.namespace ?? 'default', name);
  if (!s) {
    if (src.optional) return;
    throw new Error(`secret "${name}" not found`);
  }
  keyedPayload('secret', secretEntries(s), src, defaultMode, into);
}

function addDownward(ctx: ProjectionContext, items: DownwardItem[] | undefined, defaultMode: number, into: Payload): void {
  for (const item of items ?? []) {
    let text: string;
    if (item.fieldRef) text = fieldRefValue(item.fieldRef, ctx.pod, ctx.facts);
    else if (item.resourceFieldRef) {
      if (!item.resourceFieldRef.containerName) throw new Error(`resourceFieldRef for ${item.path ?? ''} needs a containerName`);
      text = resourceFieldValue(item.resourceFieldRef, ctx.pod, undefined, ctx.facts);
    } else continue;
    into.set(item.path ?? '', { data: Buffer.from(text, 'utf8'), mode: modeOf(item.mode, defaultMode) });
  }
}

/**
 * A token for the pod's ServiceAccount, bound to the pod, for the source's audience (none: the API's own)
 * and lifetime. Its mode is the volume's defaultMode, or 0600 with an fsGroup (which adds group read), as
 * the kubelet writes it.
 */
async function addServiceAccountToken(ctx: ProjectionContext, src: TokenProjection, defaultMode: number, into: Payload): Promise<void> {
  if (!ctx.tokens) throw new Error('serviceAccountToken projections need a connection to the API');
  const pod = ctx.pod;
  const spec = pod.spec as { serviceAccountName?: unknown; securityContext?: { fsGroup?: unknown } };
  const token = await ctx.tokens.token({
    namespace: pod.metadata.namespace ?? 'default',
    serviceAccountName: typeof spec.serviceAccountName === 'string' && spec.serviceAccountName ? spec.serviceAccountName : 'default',
    audiences: src.audience ? [src.audience] : [],
    expirationSeconds: typeof src.expirationSeconds === 'number' ? src.expirationSeconds : DEFAULT_PROJECTED_TOKEN_EXPIRATION_SECONDS,
    pod: { name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' },
  });
  const mode = typeof spec.securityContext?.fsGroup === 'number' ? 0o600 : defaultMode;
  into.set(src.path ?? '', { data: Buffer.from(token, 'utf8'), mode });
}

/** Whether any of the pod's volumes projects a ServiceAccount token (such volumes are rewritten as tokens age). */
export function projectsServiceAccountToken(pod: Pod): boolean {
  return (pod.spec.volumes ?? []).some((v) => ((v.projected as { sources?: Array<Record<string, unknown>> } | undefined)?.sources ?? []).some((s) => !!s?.serviceAccountToken));
}

/** The volume kinds whose content this module computes. */
export type ProjectedKind = 'configMap' | 'secret' | 'downwardAPI' | 'projected';

/** The file set of one API-backed volume. Throws (with the kubelet's wording) when a required object or key is missing. */
export async function payloadFor(kind: ProjectedKind, source: Record<string, unknown>, ctx: ProjectionContext): Promise<Payload> {
  const payload: Payload = new Map();
  const defaultMode = modeOf(source.defaultMode, DEFAULT_FILE_MODE);
  switch (kind) {
    case 'configMap':
      await addConfigMap(ctx, source as ObjectSource, defaultMode, payload);
      break;
    case 'secret':
      await addSecret(ctx, { ...(source as ObjectSource), name: source.secretName as string | undefined }, defaultMode, payload);
      break;
    case 'downwardAPI':
      addDownward(ctx, source.items as DownwardItem[] | undefined, defaultMode, payload);
      break;
    case 'projected':
      for (const s of (source.sources ?? []) as Array<Record<string, unknown>>) {
        if (s.configMap) await addConfigMap(ctx, s.configMap as ObjectSource, defaultMode, payload);
        else if (s.secret) await addSecret(ctx, s.secret as ObjectSource, defaultMode, payload);
        else if (s.downwardAPI) addDownward(ctx, (s.downwardAPI as { items?: DownwardItem[] }).items, defaultMode, payload);
        else if (s.serviceAccountToken) await addServiceAccountToken(ctx, s.serviceAccountToken as TokenProjection, defaultMode, payload);
        else if (s.clusterTrustBundle) throw new Error('clusterTrustBundle projections are not supported');
      }
      break;
  }
  return payload;
}

/** The keys (objectKey) of the ConfigMaps and Secrets the pod's volumes read. */
export function volumeObjectRefs(pod: Pod): Set<string> {
  const ns = pod.metadata.namespace ?? 'default';
  const refs = new Set<string>();
  const cm = (name: unknown) => typeof name === 'string' && name && refs.add(objectKey('configmaps', ns, name));
  const secret = (name: unknown) => typeof name === 'string' && name && refs.add(objectKey('secrets', ns, name));
  for (const v of pod.spec.volumes ?? []) {
    if (v.configMap) cm((v.configMap as ObjectSource).name);
    if (v.secret) secret((v.secret as { secretName?: string }).secretName);
    for (const s of ((v.projected as { sources?: Array<Record<string, unknown>> } | undefined)?.sources ?? [])) {
      if (s.configMap) cm((s.configMap as ObjectSource).name);
      if (s.secret) secret((s.secret as ObjectSource).name);
    }
  }
  return refs;
}
