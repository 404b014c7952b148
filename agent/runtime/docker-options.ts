/**
 * Translates the runtime-neutral ContainerOptions/SandboxOptions into Docker create options. Kept apart from
 * docker.ts so the base create path stays small; like docker.ts it is the only place that knows these
 * Docker field names.
 */
import type Dockerode from 'dockerode';
import type { BindMount, ContainerOptions, SandboxOptions } from './container-options.js';

/** Adds mounts, user and privilege settings to an app/init container's create options (in place). */
export function applyContainerOptions(create: Dockerode.ContainerCreateOptions, o: ContainerOptions | undefined): Dockerode.ContainerCreateOptions {
  if (!o) return create;
  const host = (create.HostConfig ??= {});
  if (o.mounts.length) {
    // Explicit Mounts (not Binds strings): paths may contain ':' and a missing source is an error, not a new dir.
    host.Mounts = o.mounts.map(dockerBindMount);
  }
  if (o.user !== undefined) create.User = o.user;
  if (o.groupAdd?.length) host.GroupAdd = o.groupAdd;
  if (o.privileged) host.Privileged = true;
  if (o.readOnlyRootfs) host.ReadonlyRootfs = true;
  if (o.capAdd?.length) host.CapAdd = o.capAdd;
  if (o.capDrop?.length) host.CapDrop = o.capDrop;
  if (o.noNewPrivileges) host.SecurityOpt = [...(host.SecurityOpt ?? []), 'no-new-privileges'];
  if (o.hostPid) host.PidMode = 'host';
  // A host-IPC sandbox is not shareable, so its containers join the host's IPC namespace directly.
  if (o.hostIpc) host.IpcMode = 'host';
  return create;
}

/**
 * A bind mount asks for a propagation only when the pod's volumeMount chose one (as cri-dockerd does
 * for the kubelet): Docker refuses an explicit private propagation for a source inside its own
 * data root (a log shipper's /var/lib/docker/containers), and left to itself makes those rslave
 * and everything else rprivate.
 */
export function dockerBindMount(m: BindMount): DockerBindMount {
  const mount: DockerBindMount = { Type: 'bind', Source: m.source, Target: m.target, ReadOnly: m.readOnly };
  if (m.propagation) mount.BindOptions = { Propagation: m.propagation };
  return mount;
}

type DockerBindMount = NonNullable<NonNullable<Dockerode.ContainerCreateOptions['HostConfig']>['Mounts']>[number];

/** Adds host namespaces and sysctls to the infra container's create options (in place). */
export function applySandboxOptions(create: Dockerode.ContainerCreateOptions, o: SandboxOptions | undefined): Dockerode.ContainerCreateOptions {
  if (!o) return create;
  const host = (create.HostConfig ??= {});
  if (o.hostNetwork) {
    host.NetworkMode = 'host';
    // The pod takes the node's hostname; Docker refuses a hostname of its own in the host's UTS namespace.
    delete create.Hostname;
  }
  if (o.hostPid) host.PidMode = 'host';
  if (o.hostIpc) host.IpcMode = 'host';
  if (o.sysctls && Object.keys(o.sysctls).length) host.Sysctls = { ...o.sysctls };
  return create;
}
