/**
 * Runtime-neutral pod and container settings beyond the basics of InfraSpec/AppSpec: bind mounts (volumes,
 * the pod's /etc/hosts and resolv.conf), identity and privileges (securityContext), and the host namespaces a
 * pod may share. Built by the prestart hooks (agent/prestart/); translated for Docker by agent/runtime/docker-options.ts.
 */

/** Mount propagation, as Kubernetes' mountPropagation names map onto Linux's (None: no option, the runtime's default). */
export type MountPropagation = 'rslave' | 'rshared';

/** One host path bound into the container. */
export interface BindMount {
  /** absolute host path (a directory or a file) */
  source: string;
  /** absolute path inside the container */
  target: string;
  readOnly: boolean;
  propagation?: MountPropagation;
}

/** Per-container settings (app and init containers alike). */
export interface ContainerOptions {
  mounts: BindMount[];
  /** `uid`, `uid:gid`, or a user name from the image */
  user?: string;
  /** supplementary groups (numeric ids) */
  groupAdd?: string[];
  privileged?: boolean;
  readOnlyRootfs?: boolean;
  /** capability names as Kubernetes spells them (`NET_ADMIN`, `ALL`) */
  capAdd?: string[];
  capDrop?: string[];
  /** allowPrivilegeEscalation: false → the no_new_privs flag */
  noNewPrivileges?: boolean;
  /** hostPID / hostIPC: the container uses the host's namespace instead of the infra container's */
  hostPid?: boolean;
  hostIpc?: boolean;
}

/** A container's identity and privileges: everything but its mounts. */
export type ContainerSecurityOptions = Omit<ContainerOptions, 'mounts'>;

/** Settings of the infra (sandbox) container, shared by the whole pod. */
export interface SandboxOptions {
  hostNetwork?: boolean;
  hostPid?: boolean;
  hostIpc?: boolean;
  /** namespaced sysctls from the pod's securityContext */
  sysctls?: Record<string, string>;
}
