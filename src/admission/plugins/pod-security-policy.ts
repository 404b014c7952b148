/**
 * The Pod Security Standards as data and pure functions: the three levels, the namespace labels
 * that select them (with Kubernetes' parsing and fallbacks), and every baseline and restricted
 * check with the check IDs, reasons and detail wording of k8s.io/pod-security-admission.
 *
 * "latest" is the policy as of the Kubernetes minor Berth serves (v1.32), which is what
 * kube-apiserver 1.32 evaluates for "latest". An explicit `-version` label is parsed and shown in
 * messages, but evaluated with the same (latest) checks; the README lists this difference.
 * The plugin that applies this to requests is pod-security.ts.
 */
import type { FieldError } from '../../api/errors.js';

export type Level = 'privileged' | 'baseline' | 'restricted';
export const LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];

/** `latest` or `v1.N`, as written in the label */
export type Version = string;
export const LATEST: Version = 'latest';

export interface LevelVersion {
  level: Level;
  version: Version;
}

export interface Policy {
  enforce: LevelVersion;
  audit: LevelVersion;
  warn: LevelVersion;
}

const LABEL_PREFIX = 'pod-security.kubernetes.io/';
export const LABELS = {
  enforce: `${LABEL_PREFIX}enforce`,
  enforceVersion: `${LABEL_PREFIX}enforce-version`,
  audit: `${LABEL_PREFIX}audit`,
  auditVersion: `${LABEL_PREFIX}audit-version`,
  warn: `${LABEL_PREFIX}warn`,
  warnVersion: `${LABEL_PREFIX}warn-version`,
} as const;
/** the key Kubernetes puts audit-mode findings under (in the audit event's annotations) */
export const AUDIT_VIOLATIONS_KEY = `${LABEL_PREFIX}audit-violations`;

export function levelVersionString(lv: LevelVersion): string {
  return `${lv.level}:${lv.version}`;
}

export function isLevel(s: string): s is Level {
  return (LEVELS as readonly string[]).includes(s);
}

/** -1 when a is less strict than b, 0 when equal, 1 when stricter. */
export function compareLevels(a: Level, b: Level): number {
  return Math.sign(LEVELS.indexOf(a) - LEVELS.indexOf(b));
}

const VERSION_PATTERN = /^v1\.([0-9]|[1-9][0-9]*)$/;

/**
 * The namespace's labels resolved against the cluster defaults. Always returns a usable policy:
 * a bad enforce level becomes `restricted` (fail closed), bad audit/warn levels `privileged` (fail
 * open), a bad version `latest` — and every bad value is also reported as a field error.
 * When enforce is labelled stricter than warn and warn is not labelled, warn follows enforce.
 */
export function policyToEvaluate(labels: Record<string, string> | undefined, defaults: Policy): { policy: Policy; errors: FieldError[] } {
  const policy: Policy = { enforce: { ...defaults.enforce }, audit: { ...defaults.audit }, warn: { ...defaults.warn } };
  const errors: FieldError[] = [];
  if (!labels) return { policy, errors };
  const invalid = (label: string, value: string, why: string) =>
    errors.push({ field: `metadata.labels[${label}]`, type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${why}` });
  const level = (label: string, failTo: Level): Level | undefined => {
    const v = labels[label];
    if (v === undefined) return undefined;
    if (isLevel(v)) return v;
    invalid(label, v, `must be one of ${LEVELS.join(', ')}`);
    return failTo;
  };
  const version = (label: string): Version | undefined => {
    const v = labels[label];
    if (v === undefined) return undefined;
    if (v === LATEST || VERSION_PATTERN.test(v)) return v;
    invalid(label, v, 'must be "latest" or "v1.x"');
    return LATEST;
  };
  const enforceLevelLabelValid = labels[LABELS.enforce] !== undefined && isLevel(labels[LABELS.enforce]!);
  policy.enforce.level = level(LABELS.enforce, 'restricted') ?? policy.enforce.level;
  policy.enforce.version = version(LABELS.enforceVersion) ?? policy.enforce.version;
  policy.audit.level = level(LABELS.audit, 'privileged') ?? policy.audit.level;
  policy.audit.version = version(LABELS.auditVersion) ?? policy.audit.version;
  const hasWarnLevel = labels[LABELS.warn] !== undefined;
  const hasWarnVersion = labels[LABELS.warnVersion] !== undefined;
  policy.warn.level = level(LABELS.warn, 'privileged') ?? policy.warn.level;
  policy.warn.version = version(LABELS.warnVersion) ?? policy.warn.version;
  if (!hasWarnLevel && enforceLevelLabelValid && compareLevels(policy.enforce.level, policy.warn.level) > 0) {
    policy.warn.level = policy.enforce.level;
    if (!hasWarnVersion) policy.warn.version = policy.enforce.version;
  }
  return { policy, errors };
}

export function fullyPrivileged(p: Policy): boolean {
  return p.enforce.level === 'privileged' && p.audit.level === 'privileged' && p.warn.level === 'privileged';
}

export function equivalentLevelVersion(a: LevelVersion, b: LevelVersion): boolean {
  return (a.level === 'privileged' && b.level === 'privileged') || (a.level === b.level && a.version === b.version);
}

// ---------- the checks ----------

/* The shapes the checks read. Pod specs arrive as decoded JSON (pods and workload templates
 * alike), so every field is optional and read defensively. */
interface SecurityContextLike {
  privileged?: boolean | null;
  allowPrivilegeEscalation?: boolean | null;
  capabilities?: { add?: string[] | null; drop?: string[] | null } | null;
  procMount?: string | null;
  seLinuxOptions?: { type?: string; user?: string; role?: string; level?: string } | null;
  seccompProfile?: { type?: string } | null;
  appArmorProfile?: { type?: string } | null;
  windowsOptions?: { hostProcess?: boolean | null } | null;
  runAsNonRoot?: boolean | null;
  runAsUser?: number | null;
  sysctls?: Array<{ name?: string }> | null;
}
export interface ContainerLike {
  name?: string;
  image?: string;
  ports?: Array<{ hostPort?: number | null }> | null;
  securityContext?: SecurityContextLike | null;
}
export interface PodSpecLike {
  hostNetwork?: boolean | null;
  hostPID?: boolean | null;
  hostIPC?: boolean | null;
  os?: { name?: string } | null;
  securityContext?: SecurityContextLike | null;
  volumes?: Array<Record<string, unknown> & { name?: string }> | null;
  initContainers?: ContainerLike[] | null;
  containers?: ContainerLike[] | null;
  ephemeralContainers?: ContainerLike[] | null;
}
export interface PodMetaLike {
  annotations?: Record<string, string> | null;
}

export interface CheckResult {
  allowed: boolean;
  forbiddenReason?: string;
  forbiddenDetail?: string;
}

export interface Check {
  id: string;
  level: 'baseline' | 'restricted';
  /** baseline checks this restricted check replaces (it is a stricter form of the same rule) */
  overrides?: string[];
  run(meta: PodMetaLike, spec: PodSpecLike): CheckResult;
}

const ALLOWED: CheckResult = { allowed: true };
const forbidden = (forbiddenReason: string, forbiddenDetail = ''): CheckResult => ({ allowed: false, forbiddenReason, forbiddenDetail });

const joinQuote = (items: string[]): string => (items.length ? `"${items.join('", "')}"` : '');
const pluralize = (singular: string, plural: string, count: number): string => (count === 1 ? singular : plural);
/** a sorted, de-duplicated list, as Go's sets.String.List() */
const sortedSet = (items: Iterable<string>): string[] => [...new Set(items)].sort();
const containersPhrase = (names: string[]): string => `${pluralize('container', 'containers', names.length)} ${joinQuote(names)}`;

/** init containers, then containers, then ephemeral containers: the order names appear in details */
function visitContainers(spec: PodSpecLike, visit: (c: ContainerLike, name: string) => void): void {
  for (const list of [spec.initContainers, spec.containers, spec.ephemeralContainers]) {
    if (!Array.isArray(list)) continue;
    for (const c of list) if (c && typeof c === 'object') visit(c, String(c.name ?? ''));
  }
}

const isWindows = (spec: PodSpecLike): boolean => spec.os?.name === 'windows';
const present = (v: unknown): boolean => v !== undefined && v !== null;

const BASELINE_CAPABILITIES = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
]);
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';
/** inline volume sources restricted pods may use */
const RESTRICTED_VOLUME_SOURCES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret'];
/** the other sources, in the order Kubernetes names the first one a volume uses */
const OTHER_VOLUME_SOURCES = ['hostPath', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'nfs', 'iscsi', 'glusterfs', 'rbd', 'flexVolume', 'cinder', 'cephfs', 'flocker', 'fc', 'azureFile', 'vsphereVolume', 'quobyte', 'azureDisk', 'photonPersistentDisk', 'portworxVolume', 'scaleIO', 'storageos'];

const validSeccomp = (t: string | undefined): boolean => t === 'RuntimeDefault' || t === 'Localhost';

/** setters phrase shared by pod-and-container checks: `pod and containers "a", "b"` */
function settersPhrase(pod: boolean, containers: string[]): string[] {
  const setters: string[] = [];
  if (pod) setters.push('pod');
  if (containers.length) setters.push(containersPhrase(containers));
  return setters;
}

export const CHECKS: readonly Check[] = [
  {
    id: 'appArmorProfile',
    level: 'baseline',
    run(meta, spec) {
      const allowedType = (t: string | undefined) => t === 'RuntimeDefault' || t === 'Localhost';
      const badValues: string[] = [];
      let podBad = false;
      const podProfile = spec.securityContext?.appArmorProfile;
      if (podProfile && !allowedType(podProfile.type)) {
        podBad = true;
        badValues.push(String(podProfile.type ?? ''));
      }
      const badContainers: string[] = [];
      visitContainers(spec, (c, name) => {
        const p = c.securityContext?.appArmorProfile;
        if (p && !allowedType(p.type)) {
          badContainers.push(name);
          badValues.push(String(p.type ?? ''));
        }
      });
      const setters = settersPhrase(podBad, badContainers);
      const badList = sortedSet(badValues);
      const annotations = Object.entries(meta.annotations ?? {})
        .filter(([k, v]) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && !(v === '' || v === 'runtime/default' || String(v).startsWith('localhost/')))
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .sort();
      if (annotations.length) {
        badList.push(...annotations);
        setters.push(pluralize('annotation', 'annotations', annotations.length));
      }
      if (!setters.length) return ALLOWED;
      return forbidden(
        pluralize('forbidden AppArmor profile', 'forbidden AppArmor profiles', badList.length),
        `${setters.join(' and ')} must not set AppArmor profile type to ${joinQuote(badList)}`,
      );
    },
  },
  {
    id: 'capabilities_baseline',
    level: 'baseline',
    run(_meta, spec) {
      const bad: string[] = [];
      const caps: string[] = [];
      visitContainers(spec, (c, name) => {
        const added = (c.securityContext?.capabilities?.add ?? []).map(String).filter((x) => !BASELINE_CAPABILITIES.has(x));
        if (added.length) {
          bad.push(name);
          caps.push(...added);
        }
      });
      if (!bad.length) return ALLOWED;
      return forbidden('non-default capabilities', `${containersPhrase(bad)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`);
    },
  },
  {
    id: 'hostNamespaces',
    level: 'baseline',
    run(_meta, spec) {
      const shared: string[] = [];
      if (spec.hostNetwork) shared.push('hostNetwork=true');
      if (spec.hostPID) shared.push('hostPID=true');
      if (spec.hostIPC) shared.push('hostIPC=true');
      return shared.length ? forbidden('host namespaces', shared.join(', ')) : ALLOWED;
    },
  },
  {
    id: 'hostPathVolumes',
    level: 'baseline',
    run(_meta, spec) {
      const names = (spec.volumes ?? []).filter((v) => v && present(v.hostPath)).map((v) => String(v.name ?? ''));
      return names.length ? forbidden('hostPath volumes', `${pluralize('volume', 'volumes', names.length)} ${joinQuote(names)}`) : ALLOWED;
    },
  },
  {
    id: 'hostPorts',
    level: 'baseline',
    run(_meta, spec) {
      const bad: string[] = [];
      const ports: string[] = [];
      visitContainers(spec, (c, name) => {
        const used = (c.ports ?? []).filter((p) => p && p.hostPort !== undefined && p.hostPort !== null && p.hostPort !== 0).map((p) => String(p.hostPort));
        if (used.length) {
          bad.push(name);
          ports.push(...used);
        }
      });
      if (!bad.length) return ALLOWED;
      const list = sortedSet(ports);
      return forbidden('hostPort', `${containersPhrase(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('hostPort', 'hostPorts', list.length)} ${list.join(', ')}`);
    },
  },
  {
    id: 'privileged',
    level: 'baseline',
    run(_meta, spec) {
      const bad: string[] = [];
      visitContainers(spec, (c, name) => {
        if (c.securityContext?.privileged === true) bad.push(name);
      });
      return bad.length ? forbidden('privileged', `${containersPhrase(bad)} must not set securityContext.privileged=true`) : ALLOWED;
    },
  },
  {
    id: 'procMount',
    level: 'baseline',
    run(_meta, spec) {
      const bad: string[] = [];
      const types: string[] = [];
      visitContainers(spec, (c, name) => {
        const pm = c.securityContext?.procMount;
        if (pm !== undefined && pm !== null && pm !== 'Default') {
          bad.push(name);
          types.push(String(pm));
        }
      });
      return bad.length ? forbidden('procMount', `${containersPhrase(bad)} must not set securityContext.procMount to ${joinQuote(sortedSet(types))}`) : ALLOWED;
    },
  },
  {
    id: 'seLinuxOptions',
    level: 'baseline',
    run(_meta, spec) {
      const badTypes: string[] = [];
      let setUser = false;
      let setRole = false;
      const valid = (o: NonNullable<SecurityContextLike['seLinuxOptions']>): boolean => {
        let ok = true;
        const type = String(o.type ?? '');
        if (!SELINUX_TYPES.has(type)) {
          ok = false;
          badTypes.push(type);
        }
        if (o.user) {
          ok = false;
          setUser = true;
        }
        if (o.role) {
          ok = false;
          setRole = true;
        }
        return ok;
      };
      const podOpts = spec.securityContext?.seLinuxOptions;
      const podBad = !!podOpts && !valid(podOpts);
      const bad: string[] = [];
      visitContainers(spec, (c, name) => {
        const o = c.securityContext?.seLinuxOptions;
        if (o && !valid(o)) bad.push(name);
      });
      const setters = settersPhrase(podBad, bad);
      if (!setters.length) return ALLOWED;
      const data: string[] = [];
      const types = sortedSet(badTypes);
      if (types.length) data.push(`${pluralize('type', 'types', types.length)} ${joinQuote(types)}`);
      if (setUser) data.push('user may not be set');
      if (setRole) data.push('role may not be set');
      return forbidden('seLinuxOptions', `${setters.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}`);
    },
  },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    run(_meta, spec) {
      const badValues: string[] = [];
      const podProfile = spec.securityContext?.seccompProfile;
      const podBad = !!podProfile && !validSeccomp(podProfile.type);
      if (podBad) badValues.push(String(podProfile!.type ?? ''));
      const bad: string[] = [];
      visitContainers(spec, (c, name) => {
        const p = c.securityContext?.seccompProfile;
        if (p && !validSeccomp(p.type)) {
          bad.push(name);
          badValues.push(String(p.type ?? ''));
        }
      });
      const setters = settersPhrase(podBad, bad);
      if (!setters.length) return ALLOWED;
      return forbidden('seccompProfile', `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedSet(badValues))}`);
    },
  },
  {
    id: 'sysctls',
    level: 'baseline',
    run(_meta, spec) {
      const bad = (spec.securityContext?.sysctls ?? []).map((s) => String(s?.name ?? '')).filter((n) => !SAFE_SYSCTLS.has(n));
      return bad.length ? forbidden('forbidden sysctls', bad.join(', ')) : ALLOWED;
    },
  },
  {
    id: 'windowsHostProcess',
    level: 'baseline',
    run(_meta, spec) {
      const bad: string[] = [];
      visitContainers(spec, (c, name) => {
        if (c.securityContext?.windowsOptions?.hostProcess === true) bad.push(name);
      });
      const setters = settersPhrase(spec.securityContext?.windowsOptions?.hostProcess === true, bad);
      return setters.length ? forbidden('hostProcess', `${setters.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true`) : ALLOWED;
    },
  },
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    run(_meta, spec) {
      if (isWindows(spec)) return ALLOWED;
      const bad: string[] = [];
      visitContainers(spec, (c, name) => {
        if (c.securityContext?.allowPrivilegeEscalation !== false) bad.push(name);
      });
      return bad.length ? forbidden('allowPrivilegeEscalation != false', `${containersPhrase(bad)} must set securityContext.allowPrivilegeEscalation=false`) : ALLOWED;
    },
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    overrides: ['capabilities_baseline'],
    run(_meta, spec) {
      if (isWindows(spec)) return ALLOWED;
      const missingDropAll: string[] = [];
      const adding: string[] = [];
      const caps: string[] = [];
      visitContainers(spec, (c, name) => {
        const capabilities = c.securityContext?.capabilities;
        if (!capabilities) {
          missingDropAll.push(name);
          return;
        }
        if (!(capabilities.drop ?? []).includes('ALL')) missingDropAll.push(name);
        const added = (capabilities.add ?? []).map(String).filter((x) => x !== 'NET_BIND_SERVICE');
        if (added.length) {
          adding.push(name);
          caps.push(...added);
        }
      });
      const details: string[] = [];
      if (missingDropAll.length) details.push(`${containersPhrase(missingDropAll)} must set securityContext.capabilities.drop=["ALL"]`);
      if (adding.length) details.push(`${containersPhrase(adding)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`);
      return details.length ? forbidden('unrestricted capabilities', details.join('; ')) : ALLOWED;
    },
  },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    overrides: ['hostPathVolumes'],
    run(_meta, spec) {
      const bad: string[] = [];
      const types: string[] = [];
      for (const v of spec.volumes ?? []) {
        if (!v || RESTRICTED_VOLUME_SOURCES.some((k) => present(v[k]))) continue;
        bad.push(String(v.name ?? ''));
        types.push(OTHER_VOLUME_SOURCES.find((k) => present(v[k])) ?? 'unknown');
      }
      if (!bad.length) return ALLOWED;
      const list = sortedSet(types);
      return forbidden(
        'restricted volume types',
        `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('restricted volume type', 'restricted volume types', list.length)} ${joinQuote(list)}`,
      );
    },
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    run(_meta, spec) {
      const podValue = spec.securityContext?.runAsNonRoot;
      const podBad = podValue === false;
      const podNonRoot = podValue === true;
      const explicitlyBad: string[] = [];
      const implicitlyBad: string[] = [];
      visitContainers(spec, (c, name) => {
        const v = c.securityContext?.runAsNonRoot;
        if (v !== undefined && v !== null) {
          if (!v) explicitlyBad.push(name);
        } else if (!podNonRoot) implicitlyBad.push(name);
      });
      const setters = settersPhrase(podBad, explicitlyBad);
      if (setters.length) return forbidden('runAsNonRoot != true', `${setters.join(' and ')} must not set securityContext.runAsNonRoot=false`);
      if (implicitlyBad.length) return forbidden('runAsNonRoot != true', `pod or ${containersPhrase(implicitlyBad)} must set securityContext.runAsNonRoot=true`);
      return ALLOWED;
    },
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    run(_meta, spec) {
      const bad: string[] = [];
      visitContainers(spec, (c, name) => {
        if (c.securityContext?.runAsUser === 0) bad.push(name);
      });
      const setters = settersPhrase(spec.securityContext?.runAsUser === 0, bad);
      return setters.length ? forbidden('runAsUser=0', `${setters.join(' and ')} must not set runAsUser=0`) : ALLOWED;
    },
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    overrides: ['seccompProfile_baseline'],
    run(_meta, spec) {
      if (isWindows(spec)) return ALLOWED;
      const badValues: string[] = [];
      const podProfile = spec.securityContext?.seccompProfile;
      const podBad = !!podProfile && !validSeccomp(podProfile.type);
      const podSet = !!podProfile && !podBad;
      if (podBad) badValues.push(String(podProfile!.type ?? ''));
      const explicitlyBad: string[] = [];
      const implicitlyBad: string[] = [];
      visitContainers(spec, (c, name) => {
        const p = c.securityContext?.seccompProfile;
        if (p) {
          if (!validSeccomp(p.type)) {
            explicitlyBad.push(name);
            badValues.push(String(p.type ?? ''));
          }
        } else if (!podSet) implicitlyBad.push(name);
      });
      const setters = settersPhrase(podBad, explicitlyBad);
      if (setters.length) return forbidden('seccompProfile', `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedSet(badValues))}`);
      if (implicitlyBad.length) return forbidden('seccompProfile', `pod or ${containersPhrase(implicitlyBad)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`);
      return ALLOWED;
    },
  },
];

/** Baseline IDs sorted, then restricted IDs sorted: the order Kubernetes runs (and reports) checks in. */
function ordered(checks: readonly Check[]): Check[] {
  const byId = (a: Check, b: Check) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return [...checks.filter((c) => c.level === 'baseline').sort(byId), ...checks.filter((c) => c.level === 'restricted').sort(byId)];
}

const BASELINE_CHECKS = ordered(CHECKS.filter((c) => c.level === 'baseline'));
const RESTRICTED_CHECKS = (() => {
  const overridden = new Set(CHECKS.flatMap((c) => (c.level === 'restricted' ? c.overrides ?? [] : [])));
  return ordered(CHECKS.filter((c) => !overridden.has(c.id)));
})();

/** The checks a level runs, in reporting order (privileged runs none). */
export function checksFor(level: Level): readonly Check[] {
  return level === 'privileged' ? [] : level === 'baseline' ? BASELINE_CHECKS : RESTRICTED_CHECKS;
}

export interface AggregateResult {
  allowed: boolean;
  /** `host namespaces, privileged`: what existing-pod warnings print */
  reasons: string;
  /** `host namespaces (hostNetwork=true), privileged (container "c" must not ...)`: what errors print */
  details: string;
}

/** Run a level's checks on one pod (or pod template) and join the failures as Kubernetes does. */
export function evaluatePod(level: Level, meta: PodMetaLike, spec: PodSpecLike): AggregateResult {
  const failures = checksFor(level)
    .map((c) => c.run(meta ?? {}, spec ?? {}))
    .filter((r) => !r.allowed);
  return {
    allowed: failures.length === 0,
    reasons: failures.map((f) => f.forbiddenReason || 'unknown forbidden reason').join(', '),
    details: failures.map((f) => (f.forbiddenReason || 'unknown forbidden reason') + (f.forbiddenDetail ? ` (${f.forbiddenDetail})` : '')).join(', '),
  };
}
