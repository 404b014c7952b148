/**
 * Pod Security Admission (the built-in `PodSecurity` plugin of kube-apiserver): each namespace's
 * `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels pick a Pod Security Standard
 * (privileged, baseline, restricted) per mode; namespaces without labels get the cluster defaults.
 *
 * - Pods: `enforce` refuses creates and significant updates (403, every failed check named),
 *   `warn` answers with `Warning` headers, `audit` logs. Subresources that cannot change the pod's
 *   spec (status, binding, exec, …) and updates that change no image are not evaluated.
 * - Workload resources with a pod template (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
 *   CronJob, ReplicationController, PodTemplate): `warn` and `audit` only — enforcement happens when
 *   their controllers create the pods.
 * - Namespaces: invalid labels are refused on create and on an update that changes them; making
 *   enforce stricter warns about existing pods that would violate it.
 * - Exempt namespaces are never evaluated.
 * The checks themselves live in pod-security-policy.ts.
 */
import type { Logger } from 'pino';
import { ApiError, errors } from '../../api/errors.js';
import type { KubeObject } from '../../api/types.js';
import type { Registry } from '../../registry/registry.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';
import {
  AUDIT_VIOLATIONS_KEY,
  compareLevels,
  equivalentLevelVersion,
  evaluatePod,
  fullyPrivileged,
  LABELS,
  LATEST,
  levelVersionString,
  policyToEvaluate,
  type ContainerLike,
  type Level,
  type LevelVersion,
  type Policy,
  type PodMetaLike,
  type PodSpecLike,
} from './pod-security-policy.js';

export interface PodSecurityDefaults {
  enforce: Level;
  audit: Level;
  warn: Level;
}

/** What a namespace without labels gets: baseline, so host-takeover pods need an explicit opt-in. */
export const DEFAULT_POD_SECURITY_LEVELS: PodSecurityDefaults = { enforce: 'baseline', audit: 'baseline', warn: 'baseline' };
/** The system's own namespace runs node-level workloads, as in clusters set up by kubeadm. */
export const DEFAULT_EXEMPT_NAMESPACES = ['kube-system'];
/** As kube-apiserver: at most this many existing pods are checked when a namespace's enforce level tightens. */
const MAX_PODS_TO_CHECK = 3000;

export interface PodSecurityOptions {
  registry: Registry;
  log: Logger;
  /** levels (version `latest`) for namespaces that do not label a mode */
  defaults?: PodSecurityDefaults;
  /** namespaces whose pods are not evaluated at all */
  exemptNamespaces?: string[];
}

/** `pods`, `deployments.apps`, … → where the pod template sits in the object */
const TEMPLATE_PATHS: Record<string, (o: Record<string, any>) => unknown> = {
  '/replicationcontrollers': (o) => o.spec?.template,
  '/podtemplates': (o) => o.template,
  'apps/replicasets': (o) => o.spec?.template,
  'apps/deployments': (o) => o.spec?.template,
  'apps/statefulsets': (o) => o.spec?.template,
  'apps/daemonsets': (o) => o.spec?.template,
  'batch/jobs': (o) => o.spec?.template,
  'batch/cronjobs': (o) => o.spec?.jobTemplate?.spec?.template,
};

/** Pod subresources that cannot change what the checks look at. */
const IGNORED_POD_SUBRESOURCES = new Set(['exec', 'attach', 'binding', 'eviction', 'log', 'portforward', 'proxy', 'status']);

export function podSecurityAdmission(opts: PodSecurityOptions): AdmissionPlugin {
  const levels = opts.defaults ?? DEFAULT_POD_SECURITY_LEVELS;
  const defaults: Policy = {
    enforce: { level: levels.enforce, version: LATEST },
    audit: { level: levels.audit, version: LATEST },
    warn: { level: levels.warn, version: LATEST },
  };
  const exempt = new Set(opts.exemptNamespaces ?? DEFAULT_EXEMPT_NAMESPACES);
  const { registry, log } = opts;

  const namespaceLabels = async (name: string): Promise<Record<string, string> | undefined> => {
    const info = registry.lookup('', 'namespaces')!.info;
    return (await registry.get(info, undefined, name)).metadata.labels ?? {};
  };

  const evaluate = (attrs: AdmissionAttributes, policy: Policy, meta: PodMetaLike, spec: PodSpecLike, enforce: boolean): void => {
    const results = new Map<string, ReturnType<typeof evaluatePod>>();
    const resultFor = (lv: LevelVersion) => {
      const key = levelVersionString(lv);
      let r = results.get(key);
      if (!r) results.set(key, (r = evaluatePod(lv.level, meta, spec)));
      return r;
    };
    let refusal: ApiError | undefined;
    if (enforce) {
      const r = resultFor(policy.enforce);
      if (!r.allowed) {
        const name = attrs.object.metadata.name ?? '';
        const target = name ? `pods "${name}"` : 'pods';
        refusal = new ApiError('Forbidden', `${target} is forbidden: violates PodSecurity "${levelVersionString(policy.enforce)}": ${r.details}`, { name, kind: 'pods' });
      }
    }
    const audit = resultFor(policy.audit);
    if (!audit.allowed) {
      log.info(
        { namespace: attrs.object.metadata.namespace, resource: attrs.info.plural, name: attrs.object.metadata.name, [AUDIT_VIOLATIONS_KEY]: `would violate PodSecurity "${levelVersionString(policy.audit)}": ${audit.details}` },
        'PodSecurity audit',
      );
    }
    if (refusal) throw refusal;
    // A request that is refused gets the error, not warnings as well.
    const warn = resultFor(policy.warn);
    if (!warn.allowed) attrs.warnings?.push(`would violate PodSecurity "${levelVersionString(policy.warn)}": ${warn.details}`);
  };

  const validatePod = async (attrs: AdmissionAttributes): Promise<void> => {
    if (attrs.subresource && IGNORED_POD_SUBRESOURCES.has(attrs.subresource)) return;
    const namespace = attrs.object.metadata.namespace ?? 'default';
    if (exempt.has(namespace)) return;
    let labels: Record<string, string> | undefined;
    try {
      labels = await namespaceLabels(namespace);
    } catch {
      throw errors.internal(`failed to lookup namespace "${namespace}"`);
    }
    const { policy, errors: labelErrors } = policyToEvaluate(labels, defaults);
    if (!labelErrors.length && fullyPrivileged(policy)) return;
    const pod = attrs.object as KubeObject & { spec?: PodSpecLike };
    if (attrs.operation === 'UPDATE' && attrs.oldObject && !significantPodUpdate(pod.spec ?? {}, (attrs.oldObject as KubeObject & { spec?: PodSpecLike }).spec ?? {})) return;
    evaluate(attrs, policy, pod.metadata as PodMetaLike, pod.spec ?? {}, true);
  };

  const validateWorkload = async (attrs: AdmissionAttributes, templateOf: (o: Record<string, any>) => unknown): Promise<void> => {
    if (attrs.subresource) return;
    const namespace = attrs.object.metadata.namespace ?? 'default';
    if (exempt.has(namespace)) return;
    let labels: Record<string, string> | undefined;
    try {
      labels = await namespaceLabels(namespace);
    } catch {
      return; // as Kubernetes: a lookup failure never blocks a workload, which is only warned about
    }
    const { policy, errors: labelErrors } = policyToEvaluate(labels, defaults);
    if (!labelErrors.length && policy.warn.level === 'privileged' && policy.audit.level === 'privileged') return;
    const template = templateOf(attrs.object as Record<string, any>) as { metadata?: PodMetaLike; spec?: PodSpecLike } | undefined | null;
    if (!template || typeof template !== 'object') return;
    evaluate(attrs, policy, template.metadata ?? {}, template.spec ?? {}, false);
  };

  const validateNamespace = async (attrs: AdmissionAttributes): Promise<void> => {
    if (attrs.subresource) return;
    const ns = attrs.object;
    const name = ns.metadata.name ?? '';
    const { policy, errors: newErrors } = policyToEvaluate(ns.metadata.labels, defaults);
    const invalid = () => errors.invalid({ resource: 'namespaces', kind: 'Namespace', name }, newErrors);
    if (attrs.operation === 'CREATE') {
      if (newErrors.length) throw invalid();
      if (exempt.has(name)) warnExempt(attrs, name, policy, ns.metadata.labels ?? {});
      return;
    }
    const { policy: oldPolicy, errors: oldErrors } = policyToEvaluate(attrs.oldObject?.metadata.labels, defaults);
    // Labels that were already invalid do not block unrelated updates of the namespace.
    if (newErrors.length && (!oldErrors.length || JSON.stringify(newErrors) !== JSON.stringify(oldErrors))) throw invalid();
    const before = oldPolicy.enforce;
    const after = policy.enforce;
    if (after.level === before.level && after.version === before.version) return;
    if (after.level === 'privileged') return;
    if (after.version === before.version && compareLevels(after.level, before.level) < 1) return;
    if (exempt.has(name)) {
      warnExempt(attrs, name, policy, ns.metadata.labels ?? {});
      return;
    }
    attrs.warnings?.push(...(await existingPodWarnings(name, after)));
  };

  /** As kube-apiserver: labels on an exempt namespace are accepted but said to have no effect. */
  const warnExempt = (attrs: AdmissionAttributes, name: string, policy: Policy, labels: Record<string, string>): void => {
    if (fullyPrivileged(policy) || (equivalentLevelVersion(policy.enforce, defaults.enforce) && equivalentLevelVersion(policy.audit, defaults.audit) && equivalentLevelVersion(policy.warn, defaults.warn))) return;
    const parts: string[] = [];
    const mode = (m: 'enforce' | 'audit' | 'warn', levelLabel: string, versionLabel: string) => {
      if (policy[m].level !== 'privileged' && (labels[levelLabel] !== undefined || labels[versionLabel] !== undefined)) parts.push(`${m}=${levelVersionString(policy[m])}`);
    };
    mode('enforce', LABELS.enforce, LABELS.enforceVersion);
    mode('audit', LABELS.audit, LABELS.auditVersion);
    mode('warn', LABELS.warn, LABELS.warnVersion);
    attrs.warnings?.push(`namespace "${name}" is exempt from Pod Security, and the policy (${parts.join(', ')}) will be ignored`);
  };

  /** One warning per distinct violation, naming the first pod (by name) and how many others share it. */
  const existingPodWarnings = async (namespace: string, enforce: LevelVersion): Promise<string[]> => {
    const podsInfo = registry.lookup('', 'pods')!.info;
    const pods = (await registry.list(podsInfo, namespace)).items as Array<KubeObject & { spec?: PodSpecLike }>;
    // One pod per controller first, so a large ReplicaSet does not crowd out the other violations.
    const seen = new Set<string>();
    const first: typeof pods = [];
    const rest: typeof pods = [];
    for (const pod of pods) {
      const controller = pod.metadata.ownerReferences?.find((r) => r.controller)?.uid;
      if (!controller) first.push(pod);
      else if (seen.has(controller)) rest.push(pod);
      else {
        seen.add(controller);
        first.push(pod);
      }
    }
    const ordered = [...first, ...rest];
    const checked = ordered.slice(0, MAX_PODS_TO_CHECK);
    const byReason = new Map<string, { podName: string; count: number }>();
    for (const pod of checked) {
      const r = evaluatePod(enforce.level, pod.metadata as PodMetaLike, pod.spec ?? {});
      if (r.allowed) continue;
      const podName = pod.metadata.name ?? '';
      const entry = byReason.get(r.reasons);
      if (!entry) byReason.set(r.reasons, { podName, count: 1 });
      else {
        entry.count++;
        if (podName < entry.podName) entry.podName = podName;
      }
    }
    const warnings: string[] = [];
    if (checked.length < ordered.length) warnings.push(`new PodSecurity enforce level only checked against the first ${checked.length} of ${ordered.length} existing pods`);
    if (byReason.size) warnings.push(`existing pods in namespace "${namespace}" violate the new PodSecurity enforce level "${levelVersionString(enforce)}"`);
    const podWarnings = [...byReason].map(([reason, { podName, count }]) =>
      count === 1 ? `${podName}: ${reason}` : count === 2 ? `${podName} (and 1 other pod): ${reason}` : `${podName} (and ${count - 1} other pods): ${reason}`,
    );
    return [...warnings, ...podWarnings.sort()];
  };

  return {
    name: 'PodSecurity',
    kind: 'validating',
    completeMessages: true,
    async admit(attrs) {
      if (attrs.operation !== 'CREATE' && attrs.operation !== 'UPDATE') return;
      const { group, plural } = attrs.info;
      if (group === '' && plural === 'namespaces') return validateNamespace(attrs);
      if (group === '' && plural === 'pods') return validatePod(attrs);
      const templateOf = TEMPLATE_PATHS[`${group}/${plural}`];
      if (templateOf) return validateWorkload(attrs, templateOf);
    },
  };
}

/**
 * As Kubernetes: the only pod updates worth evaluating are those that add or remove containers,
 * change an image, or add or change an ephemeral container — every other spec field is immutable
 * on a running pod, so status, label and annotation updates are never refused.
 */
export function significantPodUpdate(spec: PodSpecLike, old: PodSpecLike): boolean {
  const containers = spec.containers ?? [];
  const oldContainers = old.containers ?? [];
  const inits = spec.initContainers ?? [];
  const oldInits = old.initContainers ?? [];
  if (containers.length !== oldContainers.length || inits.length !== oldInits.length) return true;
  const image = (c: ContainerLike | undefined) => c?.image;
  if (containers.some((c, i) => image(c) !== image(oldContainers[i]))) return true;
  if (inits.some((c, i) => image(c) !== image(oldInits[i]))) return true;
  for (const c of spec.ephemeralContainers ?? []) {
    const before = (old.ephemeralContainers ?? []).find((o) => o?.name === c?.name);
    if (!before || image(c) !== image(before)) return true;
  }
  return false;
}
