/**
 * Owns the translation of a Pod's spec into runtime specs (InfraSpec/AppSpec): names, labels, spec hashes,
 * command/args, and resource limits, with what the prestart hooks resolved (environment, mounts, security)
 * put in. Pure functions; the pod worker decides when to call them.
 */
import { createHash } from 'node:crypto';
import { milliValue, parseQuantity, value } from '../../src/api/quantity.js';
import type { Container, Pod } from '../../src/api/types.js';
import {
  dockerContainerName,
  INFRA_CONTAINER_NAME,
  LABEL_POD_IP,
  labelsFor,
  type ContainerType,
} from '../node/labels.js';
import { expandVars } from '../container/expand-vars.js';
import type { ContainerConfig } from '../prestart/hook.js';
import type { AppSpec, InfraSpec } from '../runtime/runtime.js';
import { sandboxOptions } from '../container/identity.js';

/** Kubernetes' default terminationGracePeriodSeconds. */
export const DEFAULT_GRACE_SECONDS = 30;

/** The pod fields every container label set needs. */
export interface PodRef {
  uid: string;
  name: string;
  namespace: string;
}

export function podRef(pod: Pod): PodRef {
  return { uid: pod.metadata.uid ?? '', name: pod.metadata.name ?? '', namespace: pod.metadata.namespace ?? 'default' };
}

/** JSON with object keys sorted, so equal specs hash equally whatever order their fields arrived in. */
export function stableStringify(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableStringify(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function shortHash(v: unknown): string {
  return createHash('sha256').update(stableStringify(v)).digest('hex').slice(0, 16);
}

/** Hash of one container's spec: a different hash means the running container must be replaced. */
export function containerHash(c: Container): string {
  return shortHash(c);
}

/** The pod's hostname: spec.hostname or the pod name, cut to 63 characters without a trailing '-' or '.'. */
export function podHostname(pod: Pod): string {
  const name = pod.spec.hostname || pod.metadata.name || 'pod';
  return name.slice(0, 63).replace(/[-.]+$/, '') || 'pod';
}

/** Hash of what the infra container is built from; a change means a new sandbox (and new app containers). */
export function infraHash(pod: Pod, network: string): string {
  return shortHash({ hostname: podHostname(pod), network, shareProcessNamespace: pod.spec.shareProcessNamespace === true });
}

export function graceSecondsOf(pod: Pod): number {
  return pod.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
}

function labels(pod: Pod, ref: PodRef, nodeName: string, containerName: string, type: ContainerType, hash: string, restartCount: number) {
  return labelsFor({
    podUid: ref.uid,
    podName: ref.name,
    podNamespace: ref.namespace,
    containerName,
    type,
    hash,
    restartCount,
    nodeName,
    terminationGraceSeconds: graceSecondsOf(pod),
  });
}

/**
 * The infra container of a pod. With `sandboxIP` (an address from the agent's pool) the container carries
 * the address in a label, and either gets no runtime network because the agent wires it itself, or, with
 * `runtimeAttached`, joins `network` at that address. Without it, it joins `network` at an address of the
 * runtime's choosing (no pool: the runtime's own bridge).
 */
export function infraSpec(p: { pod: Pod; nodeName: string; network: string; attempt: number; sandboxIP?: string | undefined; runtimeAttached?: boolean }): InfraSpec {
  const ref = podRef(p.pod);
  const spec: InfraSpec = {
    name: dockerContainerName({ containerName: INFRA_CONTAINER_NAME, podName: ref.name, podNamespace: ref.namespace, podUid: ref.uid, attempt: p.attempt }),
    labels: labels(p.pod, ref, p.nodeName, INFRA_CONTAINER_NAME, 'infra', infraHash(p.pod, p.network), p.attempt),
    hostname: podHostname(p.pod),
    network: p.sandboxIP === undefined || p.runtimeAttached ? p.network : 'none',
  };
  if (p.sandboxIP !== undefined) spec.labels[LABEL_POD_IP] = p.sandboxIP;
  if (p.sandboxIP !== undefined && p.runtimeAttached) spec.address = p.sandboxIP;
  const sandbox = sandboxOptions(p.pod); // hostNetwork/hostPID/hostIPC, sysctls
  if (sandbox) spec.sandbox = sandbox;
  return spec;
}

/**
 * The literal `value` entries of a container's env, `$(VAR)`-expanded: what a container gets when it is
 * built without prestart hooks (tests that drive a runtime directly). The agent always runs the hooks,
 * whose env hook resolves valueFrom and envFrom too.
 */
export function literalEnv(c: Container): { env: string[]; vars: Map<string, string> } {
  const vars = new Map<string, string>();
  for (const e of c.env ?? []) {
    if (e.valueFrom !== undefined) continue;
    vars.set(e.name, expandVars(e.value ?? '', vars));
  }
  return { env: [...vars].map(([k, v]) => `${k}=${v}`), vars };
}

/** Docker resource settings, as the kubelet derives them from requests/limits. Throws on an unparsable quantity. */
export function containerResources(c: Container): Pick<AppSpec, 'memoryBytes' | 'nanoCpus' | 'cpuShares'> {
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  const out: Pick<AppSpec, 'memoryBytes' | 'nanoCpus' | 'cpuShares'> = {};
  if (limits.memory !== undefined) {
    const bytes = value(parseQuantity(limits.memory));
    if (bytes > 0n) out.memoryBytes = Number(bytes);
  }
  if (limits.cpu !== undefined) {
    const milli = milliValue(parseQuantity(limits.cpu));
    if (milli > 0n) out.nanoCpus = Number(milli * 1_000_000n);
  }
  // An unset cpu request defaults to the limit (as API defaulting does); none at all gets the minimum.
  const requestCpu = requests.cpu ?? limits.cpu;
  const milliRequest = requestCpu === undefined ? 0n : milliValue(parseQuantity(requestCpu));
  const shares = (milliRequest * 1024n) / 1000n;
  out.cpuShares = Number(shares < 2n ? 2n : shares);
  return out;
}

export function appSpec(p: { pod: Pod; container: Container; nodeName: string; infraId: string; restartCount: number; type?: ContainerType; config?: ContainerConfig | undefined }): AppSpec {
  const ref = podRef(p.pod);
  const c = p.container;
  const { env, vars } = p.config ?? literalEnv(c);
  const spec: AppSpec = {
    name: dockerContainerName({ containerName: c.name, podName: ref.name, podNamespace: ref.namespace, podUid: ref.uid, attempt: p.restartCount }),
    labels: labels(p.pod, ref, p.nodeName, c.name, p.type ?? 'app', containerHash(c), p.restartCount),
    image: c.image,
    infraId: p.infraId,
    env,
    ...containerResources(c),
  };
  if (p.pod.spec.shareProcessNamespace === true) spec.sharePid = true;
  if (c.command) spec.entrypoint = c.command.map((s) => expandVars(s, vars));
  if (c.args) spec.cmd = c.args.map((s) => expandVars(s, vars));
  if (c.workingDir) spec.workingDir = c.workingDir;
  if (p.config) spec.options = p.config.options;
  return spec;
}
