/**
 * A container's identity and privileges from the pod- and container-level securityContext (the container's
 * fields win): runAsUser/runAsGroup, supplementalGroups + fsGroup as extra groups, runAsNonRoot (checked
 * against the image's user before the container is created), privileged, readOnlyRootFilesystem,
 * capabilities and allowPrivilegeEscalation — plus the host namespaces the pod asks for.
 */
import type { Container, Pod } from '../../src/api/types.js';
import { ContainerConfigError } from './config-error.js';
import type { ContainerSecurityOptions, SandboxOptions } from '../runtime/container-options.js';

interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
  supplementalGroups?: number[];
  sysctls?: Array<{ name?: string; value?: string }>;
}

interface ContainerSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  privileged?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
}

function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** `name_namespace(uid)`, how the kubelet names a pod in messages. */
function describePod(pod: Pod): string {
  return `${pod.metadata.name ?? ''}_${pod.metadata.namespace ?? 'default'}(${pod.metadata.uid ?? ''})`;
}

/** The user part of an image's configured user: a numeric uid, a name, or root when empty. */
export function imageUserOf(user: string | undefined): { uid?: number; name?: string } {
  const u = (user ?? '').split(':')[0] ?? '';
  if (u === '') return { uid: 0 };
  return /^\d+$/.test(u) ? { uid: Number(u) } : { name: u };
}

/**
 * Settings for one container. `imageUser` is asked only when the answer matters (runAsNonRoot without a
 * runAsUser, or runAsGroup without one); throws ContainerConfigError when runAsNonRoot cannot hold.
 */
export async function containerSecurity(p: { pod: Pod; container: Container; imageUser: () => Promise<string | undefined> }): Promise<ContainerSecurityOptions> {
  const podSc = (p.pod.spec.securityContext ?? {}) as PodSecurityContext;
  const sc = (p.container.securityContext ?? {}) as ContainerSecurityContext;
  const runAsUser = isId(sc.runAsUser) ? sc.runAsUser : isId(podSc.runAsUser) ? podSc.runAsUser : undefined;
  const runAsGroup = isId(sc.runAsGroup) ? sc.runAsGroup : isId(podSc.runAsGroup) ? podSc.runAsGroup : undefined;
  const runAsNonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot;
  const out: ContainerSecurityOptions = {};

  if (runAsNonRoot === true) {
    if (runAsUser !== undefined) {
      if (runAsUser === 0) throw new ContainerConfigError(`container's runAsUser breaks non-root policy (pod: "${describePod(p.pod)}", container: ${p.container.name})`);
    } else {
      const image = imageUserOf(await p.imageUser());
      if (image.name !== undefined) {
        throw new ContainerConfigError(
          `container has runAsNonRoot and image has non-numeric user (${image.name}), cannot verify user is non-root (pod: "${describePod(p.pod)}", container: ${p.container.name})`,
        );
      }
      if (image.uid === 0) throw new ContainerConfigError(`container has runAsNonRoot and image will run as root (pod: "${describePod(p.pod)}", container: ${p.container.name})`);
    }
  }
  if (runAsUser !== undefined) out.user = runAsGroup !== undefined ? `${runAsUser}:${runAsGroup}` : String(runAsUser);
  else if (runAsGroup !== undefined) {
    // A group without a user: the image's user, in that group.
    const image = (await p.imageUser())?.split(':')[0] || '0';
    out.user = `${image}:${runAsGroup}`;
  }

  const groups = [...(podSc.supplementalGroups ?? []).filter(isId), ...(isId(podSc.fsGroup) ? [podSc.fsGroup] : [])];
  if (groups.length) out.groupAdd = [...new Set(groups)].map(String);
  if (sc.privileged === true) out.privileged = true;
  if (sc.readOnlyRootFilesystem === true) out.readOnlyRootfs = true;
  const add = (sc.capabilities?.add ?? []).filter((c): c is string => typeof c === 'string' && c !== '');
  const drop = (sc.capabilities?.drop ?? []).filter((c): c is string => typeof c === 'string' && c !== '');
  if (add.length) out.capAdd = add;
  if (drop.length) out.capDrop = drop;
  if (sc.allowPrivilegeEscalation === false) out.noNewPrivileges = true;
  if (p.pod.spec.hostPID === true) out.hostPid = true;
  if (p.pod.spec.hostIPC === true) out.hostIpc = true;
  return out;
}

/** The infra container's share of the pod: host namespaces and namespaced sysctls. */
export function sandboxOptions(pod: Pod): SandboxOptions | undefined {
  const out: SandboxOptions = {};
  if (pod.spec.hostNetwork === true) out.hostNetwork = true;
  if (pod.spec.hostPID === true) out.hostPid = true;
  if (pod.spec.hostIPC === true) out.hostIpc = true;
  const sysctls = ((pod.spec.securityContext ?? {}) as PodSecurityContext).sysctls ?? [];
  const named = sysctls.filter((s) => typeof s.name === 'string' && s.name !== '');
  if (named.length) out.sysctls = Object.fromEntries(named.map((s) => [s.name!, s.value ?? '']));
  return Object.keys(out).length ? out : undefined;
}
