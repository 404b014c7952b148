/**
 * A container's environment, resolved as the kubelet does at container creation: `envFrom` sources first
 * (ConfigMaps/Secrets, with prefix), then `env` entries in order — literal values with `$(VAR)` expansion
 * against what is defined so far, or `valueFrom` (configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef).
 * A missing object or key that is not optional throws ContainerConfigError naming it. Values are read once:
 * a later change to a ConfigMap or Secret does not reach a running container. Service variables, when
 * given, are what `$(VAR)` falls back to, and are added after the container's own variables unless one
 * of those has the same name (the kubelet's order).
 */
import type { ConfigMap, Container, Pod, Secret } from '../../src/api/types.js';
import { ContainerConfigError } from './config-error.js';
import { objectKey, type ConfigObjectReader } from './config-reader.js';
import { fieldRefValue, resourceFieldValue, type FieldRef, type PodRuntimeFacts, type ResourceFieldRef } from './downward-api.js';
import { expandVars } from './expand-vars.js';

export interface ResolvedEnv {
  /** `NAME=value`, in definition order */
  env: string[];
  /** the same, for `$(VAR)` expansion of command and args */
  vars: Map<string, string>;
  /** envFrom keys skipped because they are not valid variable names (the kubelet reports them as an event) */
  skippedKeys: string[];
}

interface KeySelector {
  name?: string;
  key?: string;
  optional?: boolean;
}

interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
  secretRef?: { name?: string; optional?: boolean };
}

// Kubernetes' IsEnvVarName: a C identifier, extended with '-' and '.' in later versions.
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function decodeSecretValue(b64: string): string {
  return Buffer.from(b64, 'base64').toString('utf8');
}

/** The keys (objectKey) of the ConfigMaps and Secrets the env and envFrom of the pod's containers read. */
export function envObjectRefs(pod: Pod): Set<string> {
  const ns = pod.metadata.namespace ?? 'default';
  const refs = new Set<string>();
  const cm = (name: unknown) => typeof name === 'string' && name && refs.add(objectKey('configmaps', ns, name));
  const secret = (name: unknown) => typeof name === 'string' && name && refs.add(objectKey('secrets', ns, name));
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const from of (c.envFrom ?? []) as EnvFromSource[]) {
      cm(from.configMapRef?.name);
      secret(from.secretRef?.name);
    }
    for (const e of c.env ?? []) {
      cm((e.valueFrom?.configMapKeyRef as KeySelector | undefined)?.name);
      secret((e.valueFrom?.secretKeyRef as KeySelector | undefined)?.name);
    }
  }
  return refs;
}

/** Resolves one container's environment; see the module comment for the order and rules. */
export async function resolveEnv(p: {
  pod: Pod;
  container: Container;
  objects: ConfigObjectReader;
  facts: PodRuntimeFacts;
  serviceEnv?: ReadonlyMap<string, string>;
}): Promise<ResolvedEnv> {
  const { pod, container } = p;
  const namespace = pod.metadata.namespace ?? 'default';
  const vars = new Map<string, string>();
  const skippedKeys: string[] = [];
  // One read per object per container, as the kubelet does, so all variables see the same version.
  const configMaps = new Map<string, Promise<ConfigMap | undefined>>();
  const secrets = new Map<string, Promise<Secret | undefined>>();
  const configMap = (name: string) => {
    let got = configMaps.get(name);
    if (!got) configMaps.set(name, (got = p.objects.configMap(namespace, name)));
    return got;
  };
  const secret = (name: string) => {
    let got = secrets.get(name);
    if (!got) secrets.set(name, (got = p.objects.secret(namespace, name)));
    return got;
  };

  for (const from of (container.envFrom ?? []) as EnvFromSource[]) {
    const prefix = from.prefix ?? '';
    let entries: Array<[string, string]>;
    if (from.configMapRef) {
      const name = from.configMapRef.name ?? '';
      const cm = await configMap(name);
      if (!cm) {
        if (from.configMapRef.optional) continue;
        throw new ContainerConfigError(`configmap "${name}" not found`);
      }
      entries = Object.entries(cm.data ?? {});
    } else if (from.secretRef) {
      const name = from.secretRef.name ?? '';
      const s = await secret(name);
      if (!s) {
        if (from.secretRef.optional) continue;
        throw new ContainerConfigError(`secret "${name}" not found`);
      }
      entries = Object.entries(s.data ?? {}).map(([k, v]) => [k, decodeSecretValue(v)]);
    } else {
      continue;
    }
    for (const [k, v] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const name = prefix + k;
      if (!ENV_NAME.test(name)) skippedKeys.push(name);
      else vars.set(name, v);
    }
  }

  for (const e of container.env ?? []) {
    let v: string | undefined = '';
    if (e.value) {
      v = expandVars(e.value, p.serviceEnv?.size ? new Map([...p.serviceEnv, ...vars]) : vars);
    } else if (e.valueFrom) {
      v = await valueFrom({ ...p, namespace, valueFrom: e.valueFrom, configMap, secret });
      if (v === undefined) continue; // optional and absent: the variable is not set at all
    }
    vars.set(e.name, v);
  }
  for (const [k, v] of p.serviceEnv ?? []) if (!vars.has(k)) vars.set(k, v);
  return { env: [...vars].map(([k, v]) => `${k}=${v}`), vars, skippedKeys };
}

async function valueFrom(p: {
  pod: Pod;
  container: Container;
  facts: PodRuntimeFacts;
  namespace: string;
  valueFrom: Record<string, unknown>;
  configMap: (name: string) => Promise<ConfigMap | undefined>;
  secret: (name: string) => Promise<Secret | undefined>;
}): Promise<string | undefined> {
  const vf = p.valueFrom;
  if (vf.fieldRef) return fieldRefValue(vf.fieldRef as FieldRef, p.pod, p.facts);
  if (vf.resourceFieldRef) return resourceFieldValue(vf.resourceFieldRef as ResourceFieldRef, p.pod, p.container, p.facts);
  if (vf.configMapKeyRef) {
    const ref = vf.configMapKeyRef as KeySelector;
    const name = ref.name ?? '';
    const key = ref.key ?? '';
    const cm = await p.configMap(name);
    if (!cm) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`configmap "${name}" not found`);
    }
    const v = cm.data?.[key];
    if (v === undefined) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`couldn't find key ${key} in ConfigMap ${p.namespace}/${name}`);
    }
    return v;
  }
  if (vf.secretKeyRef) {
    const ref = vf.secretKeyRef as KeySelector;
    const name = ref.name ?? '';
    const key = ref.key ?? '';
    const s = await p.secret(name);
    if (!s) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`secret "${name}" not found`);
    }
    const v = s.data?.[key];
    if (v === undefined) {
      if (ref.optional) return undefined;
      throw new ContainerConfigError(`couldn't find key ${key} in Secret ${p.namespace}/${name}`);
    }
    return decodeSecretValue(v);
  }
  return '';
}
