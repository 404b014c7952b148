/**
 * Owns Berth's sidecar injection (a mutating plugin, pod CREATE only): which pods opt in (namespace
 * label or pod annotation), where the template lives (the kube-system/sidecar-injector ConfigMap) and
 * merging it into a pod exactly once. Not a Kubernetes built-in: it plays the part an injection
 * webhook such as Istio's plays upstream, without a webhook server to run.
 */
import type { Logger } from 'pino';
import YAML from 'yaml';
import { errors } from '../../api/errors.js';
import type { Container, KubeObject, Pod } from '../../api/types.js';
import type { Registry } from '../../registry/registry.js';
import type { AdmissionPlugin } from '../chain.js';

/** Where the injection config lives: a ConfigMap, as Istio keeps its injector template. */
export const INJECTOR_NAMESPACE = 'kube-system';
export const INJECTOR_CONFIGMAP = 'sidecar-injector';
export const INJECTOR_CONFIG_KEY = 'config';
/** Namespaces opt in with this label set to `enabled` (like `istio-injection=enabled`). */
export const NAMESPACE_LABEL = 'berth.dev/sidecar-injection';
/** A pod opts in (`"true"`, even outside an enabled namespace) or out (`"false"`). */
export const POD_INJECT_ANNOTATION = 'sidecar.berth.dev/inject';
/** Written on every injected pod: what was added, from which config revision. Its presence means "done". */
export const POD_STATUS_ANNOTATION = 'sidecar.berth.dev/status';

export interface InjectorTemplate {
  containers?: Container[];
  initContainers?: Container[];
  volumes?: Array<Record<string, unknown> & { name: string }>;
}

export interface InjectorOptions {
  registry: Registry;
  log: Logger;
}

/**
 * Sidecar injection at pod creation, as the seeds' Istio/Envoy example does with an Initializer:
 * the containers, init containers and volumes in the `sidecar-injector` ConfigMap are merged into
 * the pod by name — a name the user already used is left as the user wrote it, so nothing is
 * dropped or duplicated — and the pod is marked, so injection happens exactly once. Only CREATE is
 * touched: re-applying the user's manifest later (an UPDATE) neither repeats nor removes it, and
 * a changed config only affects pods created after the change.
 */
export function sidecarInjector(opts: InjectorOptions): AdmissionPlugin {
  let cache: { rv: string; template: InjectorTemplate } | undefined;

  const loadTemplate = async (): Promise<{ rv: string; template: InjectorTemplate } | undefined> => {
    const cm = opts.registry.lookup('', 'configmaps');
    if (!cm) return undefined;
    let obj: KubeObject & { data?: Record<string, string> };
    try {
      obj = await opts.registry.get(cm.info, INJECTOR_NAMESPACE, INJECTOR_CONFIGMAP);
    } catch {
      return undefined;
    }
    const rv = obj.metadata.resourceVersion ?? '';
    if (cache?.rv === rv) return cache;
    const text = obj.data?.[INJECTOR_CONFIG_KEY];
    if (!text) return undefined;
    let parsed: unknown;
    try {
      parsed = YAML.parse(text, { maxAliasCount: 0 });
    } catch (e) {
      opts.log.warn({ err: (e as Error).message }, 'sidecar injector config is not valid YAML; not injecting');
      return undefined;
    }
    const template = ((parsed as { template?: InjectorTemplate })?.template ?? {}) as InjectorTemplate;
    cache = { rv, template };
    return cache;
  };

  const namespaceEnabled = async (namespace: string): Promise<boolean> => {
    const ns = opts.registry.lookup('', 'namespaces');
    if (!ns) return false;
    try {
      return (await opts.registry.get(ns.info, undefined, namespace)).metadata.labels?.[NAMESPACE_LABEL] === 'enabled';
    } catch {
      return false;
    }
  };

  return {
    name: 'SidecarInjector',
    kind: 'mutating',
    async admit(attrs) {
      if (attrs.operation !== 'CREATE' || attrs.info.kind !== 'Pod' || attrs.info.group !== '' || attrs.subresource) return;
      const pod = attrs.object as Pod;
      const annotations = pod.metadata.annotations ?? {};
      if (annotations[POD_STATUS_ANNOTATION]) return; // already injected once
      const wish = annotations[POD_INJECT_ANNOTATION];
      if (wish === 'false') return;
      if (wish !== 'true' && !(await namespaceEnabled(pod.metadata.namespace ?? 'default'))) return;
      const config = await loadTemplate();
      if (!config) return;
      const added = inject(pod, config.template);
      if (!added.containers.length && !added.initContainers.length && !added.volumes.length) return;
      pod.metadata.annotations = { ...annotations, [POD_STATUS_ANNOTATION]: JSON.stringify({ configVersion: config.rv, ...added }) };
    },
  };
}

/** Merge the template into the pod by name; what the user wrote wins. Returns the names added. */
export function inject(pod: Pod, template: InjectorTemplate): { containers: string[]; initContainers: string[]; volumes: string[] } {
  const spec = pod.spec;
  if (!Array.isArray(spec.containers)) throw errors.badRequest('spec.containers must be a list');
  const mergeByName = <T extends { name: string }>(mine: T[] | undefined, theirs: T[] | undefined): { list: T[]; added: string[] } => {
    const list = [...(mine ?? [])];
    const added: string[] = [];
    for (const item of theirs ?? []) {
      if (!item || typeof item.name !== 'string' || list.some((x) => x.name === item.name)) continue;
      list.push(structuredClone(item));
      added.push(item.name);
    }
    return { list, added };
  };
  const containers = mergeByName(spec.containers, template.containers);
  const inits = mergeByName(spec.initContainers, template.initContainers);
  const volumes = mergeByName(spec.volumes, template.volumes);
  spec.containers = containers.list;
  if (inits.list.length) spec.initContainers = inits.list;
  if (volumes.list.length) spec.volumes = volumes.list;
  return { containers: containers.added, initContainers: inits.added, volumes: volumes.added };
}
