/**
 * ServiceAccount admission, as kube-apiserver's plugin of that name. On pod creation it
 * - sets `spec.serviceAccountName` to `default` when empty,
 * - refuses a pod whose ServiceAccount does not exist,
 * - copies the ServiceAccount's imagePullSecrets when the pod names none,
 * - unless automounting is off (the pod's `automountServiceAccountToken` wins over the ServiceAccount's),
 *   adds the `kube-api-access-<suffix>` projected volume (a bound token, the cluster CA from the
 *   `kube-root-ca.crt` ConfigMap, the namespace) and mounts it read-only at
 *   /var/run/secrets/kubernetes.io/serviceaccount in every init container and container that has nothing
 *   mounted there already.
 * Mirror pods are left alone, as upstream. The agent fills the volume (agent/volumes/projection.ts).
 */
import { ApiError, errors } from '../../api/errors.js';
import { mirrorDeprecatedServiceAccount } from '../../api/pod-spec-aliases.js';
import type { Container, Pod } from '../../api/types.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';

export const DEFAULT_SERVICE_ACCOUNT_NAME = 'default';
/** The volume name prefix; the rest is a random suffix, as upstream generates it. */
export const SERVICE_ACCOUNT_VOLUME_PREFIX = 'kube-api-access-';
export const DEFAULT_API_TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The ConfigMap every namespace holds with the cluster CA (src/controllers/serviceaccount/root-ca-publisher.ts). */
export const ROOT_CA_CONFIGMAP_NAME = 'kube-root-ca.crt';
/**
 * The token lifetime the volume asks for: upstream's "warn-only" bound-token expiration, an hour plus 7 s so
 * the API server can tell these automounted tokens from others.
 */
export const AUTOMOUNTED_TOKEN_EXPIRATION_SECONDS = 3607;
/** 0644, the projected volume default upstream writes out explicitly. */
const PROJECTED_DEFAULT_MODE = 420;
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
/** Upstream retries the default account this often: the controller may not have created it yet in a new namespace. */
const DEFAULT_ACCOUNT_ATTEMPTS = 10;

/** What the plugin reads of a ServiceAccount. */
export interface ServiceAccountLike {
  metadata: { name?: string; namespace?: string };
  automountServiceAccountToken?: boolean;
  imagePullSecrets?: Array<{ name?: string }>;
}

export interface ServiceAccountAdmissionOptions {
  /** the ServiceAccount, or undefined when it does not exist; other failures throw */
  getServiceAccount(namespace: string, name: string): Promise<ServiceAccountLike | undefined>;
  /** the random part of the volume name (tests fix it) */
  volumeSuffix?: () => string;
  /** between lookups of a missing `default` account (upstream: 100–200 ms) */
  retryDelayMs?: () => number;
}

/** The projected volume source upstream's TokenVolumeSource builds, field for field. */
export function tokenVolumeSource(): Record<string, unknown> {
  return {
    defaultMode: PROJECTED_DEFAULT_MODE,
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: AUTOMOUNTED_TOKEN_EXPIRATION_SECONDS } },
      { configMap: { name: ROOT_CA_CONFIGMAP_NAME, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
    ],
  };
}

/** Five characters of the alphabet generateName uses (no vowels, no look-alike digits). */
export function randomVolumeSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < 5; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
}

/**
 * The plugin in its two halves, as upstream runs it: the mutating half (defaults, volume) and the
 * validating half, which checks again after mutating webhooks had their turn.
 */
export function serviceAccountAdmission(opts: ServiceAccountAdmissionOptions): AdmissionPlugin[] {
  const lookup = (attrs: AdmissionAttributes, pod: Pod, name: string) => findServiceAccount(opts, attrs, pod, name);
  const mutating: AdmissionPlugin = {
    name: 'ServiceAccount',
    kind: 'mutating',
    completeMessages: true,
    async admit(attrs) {
      const pod = podOf(attrs);
      if (!pod || isMirrorPod(pod)) return;
      const spec = pod.spec;
      if (!spec.serviceAccountName) spec.serviceAccountName = DEFAULT_SERVICE_ACCOUNT_NAME;
      mirrorDeprecatedServiceAccount(spec);
      const accountName = spec.serviceAccountName as string;
      const account = await lookup(attrs, pod, accountName);
      if (shouldAutomount(account, pod)) mountServiceAccountToken(pod, opts.volumeSuffix ?? randomVolumeSuffix);
      const pullSecrets = spec.imagePullSecrets as Array<{ name?: string }> | undefined;
      if (!pullSecrets?.length && account.imagePullSecrets?.length) spec.imagePullSecrets = account.imagePullSecrets.map((s) => ({ name: s.name }));
    },
  };
  const validating: AdmissionPlugin = {
    name: 'ServiceAccount',
    kind: 'validating',
    completeMessages: true,
    async admit(attrs) {
      const pod = podOf(attrs);
      if (!pod || isMirrorPod(pod)) return;
      const accountName = pod.spec.serviceAccountName;
      if (typeof accountName !== 'string' || !accountName) {
        throw forbidden(attrs, pod, `no service account specified for pod ${attrs.object.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`);
      }
      // As upstream: the many pods using `default` are not looked up twice.
      if (accountName === DEFAULT_SERVICE_ACCOUNT_NAME) return;
      await lookup(attrs, pod, accountName);
    },
  };
  return [mutating, validating];
}

/** Pod creations only (upstream also handles ephemeral containers, which Berth does not serve). */
function podOf(attrs: AdmissionAttributes): Pod | undefined {
  if (attrs.operation !== 'CREATE' || attrs.subresource || attrs.info.group !== '' || attrs.info.plural !== 'pods') return undefined;
  const pod = attrs.object as Pod;
  return pod?.spec ? pod : undefined;
}

function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined;
}

/** The ServiceAccount, or 403 `error looking up service account NS/NAME: …` as upstream answers. */
async function findServiceAccount(opts: ServiceAccountAdmissionOptions, attrs: AdmissionAttributes, pod: Pod, name: string): Promise<ServiceAccountLike> {
  const namespace = attrs.object.metadata.namespace ?? '';
  const attempts = name === DEFAULT_SERVICE_ACCOUNT_NAME ? DEFAULT_ACCOUNT_ATTEMPTS : 1;
  const delay = opts.retryDelayMs ?? (() => 100 + Math.floor(Math.random() * 100));
  let why: string;
  for (let i = 0; ; i++) {
    try {
      const account = await opts.getServiceAccount(namespace, name);
      if (account) return account;
      why = `serviceaccount "${name}" not found`;
    } catch (e) {
      why = e instanceof ApiError || e instanceof Error ? e.message : String(e);
      break;
    }
    if (i + 1 >= attempts) break;
    await new Promise((r) => setTimeout(r, delay()));
  }
  throw forbidden(attrs, pod, `error looking up service account ${namespace}/${name}: ${why}`);
}

/** `pods "NAME" is forbidden: …`, the pod named by its generateName while it has no name yet. */
function forbidden(attrs: AdmissionAttributes, pod: Pod, message: string): ApiError {
  const name = pod.metadata.name || pod.metadata.generateName || 'Unknown';
  return errors.forbidden(`${attrs.info.plural} "${name}" is forbidden: ${message}`);
}

/** The pod's choice wins, then the ServiceAccount's; mounting is the default. */
export function shouldAutomount(account: ServiceAccountLike, pod: Pod): boolean {
  const podChoice = pod.spec.automountServiceAccountToken;
  if (typeof podChoice === 'boolean') return podChoice;
  if (typeof account.automountServiceAccountToken === 'boolean') return account.automountServiceAccountToken;
  return true;
}

/**
 * Mounts the token volume in every init container and container without a mount at the path, and adds the
 * volume when one of them needs it. A volume already named `kube-api-access-…` is reused, as upstream.
 */
function mountServiceAccountToken(pod: Pod, suffix: () => string): void {
  const spec = pod.spec;
  const existing = (spec.volumes ?? []).find((v) => typeof v.name === 'string' && v.name.startsWith(SERVICE_ACCOUNT_VOLUME_PREFIX));
  const volumeName = existing?.name ?? SERVICE_ACCOUNT_VOLUME_PREFIX + suffix();
  let needsVolume = false;
  const mountInto = (containers: Container[] | undefined) => {
    for (const c of containers ?? []) {
      if ((c.volumeMounts ?? []).some((m) => m.mountPath === DEFAULT_API_TOKEN_MOUNT_PATH)) continue;
      c.volumeMounts = [...(c.volumeMounts ?? []), { name: volumeName, readOnly: true, mountPath: DEFAULT_API_TOKEN_MOUNT_PATH }];
      needsVolume = true;
    }
  };
  mountInto(spec.initContainers);
  mountInto(spec.containers);
  if (!existing && needsVolume) spec.volumes = [...(spec.volumes ?? []), { name: volumeName, projected: tokenVolumeSource() }];
}
