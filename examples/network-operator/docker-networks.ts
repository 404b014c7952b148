/**
 * The operator's "actual state": Docker networks and the containers attached to them, read and
 * changed through the Docker Engine API (dockerode). Networks it makes carry labels naming the
 * Network object and the cluster, so after a restart it recognises its own networks and never
 * touches anyone else's.
 */
import type Dockerode from 'dockerode';
import { LABEL_CONTAINER_TYPE, LABEL_POD_UID } from '../../agent/node/labels.js';
import {
  DOCKER_LABEL_CLUSTER,
  DOCKER_LABEL_MANAGED_BY,
  DOCKER_LABEL_NETWORK,
  DOCKER_LABEL_UID,
  MANAGED_BY,
} from './types.js';

/** What the operator needs to know about one Docker network. */
export interface DockerNetworkView {
  id: string;
  name: string;
  subnet?: string;
  gateway?: string;
  labels: Record<string, string>;
}

export interface CreateNetworkParams {
  /** Docker network name (`berth-net-<name>`) */
  dockerName: string;
  /** the Network object's name and uid, recorded as labels */
  networkName: string;
  networkUid: string;
  subnet: string;
  gateway: string;
}

/** A container's address on one Docker network. */
export interface Attachment {
  networkId: string;
  ip: string;
}

export function dockerStatusOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown })?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function dockerMessageOf(err: unknown): string {
  const json = (err as { json?: { message?: unknown } })?.json;
  if (typeof json?.message === 'string') return json.message;
  return err instanceof Error ? err.message : String(err);
}

function view(n: Dockerode.NetworkInspectInfo): DockerNetworkView {
  const ipam = n.IPAM?.Config?.[0];
  return { id: n.Id, name: n.Name, subnet: ipam?.Subnet, gateway: ipam?.Gateway, labels: n.Labels ?? {} };
}

export class DockerNetworks {
  private readonly docker: Dockerode;
  private readonly clusterId: string;

  constructor(opts: { docker: Dockerode; clusterId: string }) {
    this.docker = opts.docker;
    this.clusterId = opts.clusterId;
  }

  /** Whether this operator (for this cluster) made the network. */
  isOurs(n: DockerNetworkView): boolean {
    return n.labels[DOCKER_LABEL_MANAGED_BY] === MANAGED_BY && n.labels[DOCKER_LABEL_CLUSTER] === this.clusterId;
  }

  /**
   * Every network called exactly `dockerName`. Docker's name filter matches substrings, and Docker
   * can hold two networks of one name (a create raced another), so this returns a list.
   */
  async findByName(dockerName: string): Promise<DockerNetworkView[]> {
    const all = await this.docker.listNetworks({ filters: { name: [dockerName] } });
    return all.filter((n) => n.Name === dockerName).map(view);
  }

  /** Network names (the objects' names) of every network this operator made for this cluster. */
  async managedNetworkNames(): Promise<string[]> {
    const all = await this.docker.listNetworks({
      filters: { label: [`${DOCKER_LABEL_MANAGED_BY}=${MANAGED_BY}`, `${DOCKER_LABEL_CLUSTER}=${this.clusterId}`] },
    });
    return [...new Set(all.map((n) => n.Labels?.[DOCKER_LABEL_NETWORK]).filter((s): s is string => !!s))];
  }

  async create(p: CreateNetworkParams): Promise<string> {
    const created = await this.docker.createNetwork({
      Name: p.dockerName,
      Driver: 'bridge',
      // Refuse a second network of the same name instead of making a twin.
      CheckDuplicate: true,
      IPAM: { Driver: 'default', Config: [{ Subnet: p.subnet, Gateway: p.gateway }] },
      Labels: {
        [DOCKER_LABEL_MANAGED_BY]: MANAGED_BY,
        [DOCKER_LABEL_CLUSTER]: this.clusterId,
        [DOCKER_LABEL_NETWORK]: p.networkName,
        [DOCKER_LABEL_UID]: p.networkUid,
      },
    });
    return created.id;
  }

  /** Ids of the containers attached to a network (empty when the network is gone). */
  async attachedContainers(networkId: string): Promise<string[]> {
    try {
      const info = (await this.docker.getNetwork(networkId).inspect()) as Dockerode.NetworkInspectInfo;
      return Object.keys(info.Containers ?? {});
    } catch (err) {
      if (dockerStatusOf(err) === 404) return [];
      throw err;
    }
  }

  /**
   * Disconnects every attached container, then removes the network (Docker refuses to remove a
   * network with endpoints). Returns the containers that were attached. A network already gone is fine.
   */
  async removeWithAttachments(networkId: string): Promise<string[]> {
    const attached = await this.attachedContainers(networkId);
    for (const id of attached) await this.disconnect(networkId, id);
    try {
      await this.docker.getNetwork(networkId).remove();
    } catch (err) {
      if (dockerStatusOf(err) !== 404) throw err;
    }
    return attached;
  }

  /** Attaches a container; attaching one that is already attached is a no-op. */
  async connect(networkId: string, containerId: string): Promise<void> {
    try {
      await this.docker.getNetwork(networkId).connect({ Container: containerId });
    } catch (err) {
      if (/already exists in network|already attached/i.test(dockerMessageOf(err))) return;
      throw err;
    }
  }

  /** Detaches a container; one that is not attached (or gone) is a no-op. */
  async disconnect(networkId: string, containerId: string): Promise<void> {
    try {
      await this.docker.getNetwork(networkId).disconnect({ Container: containerId, Force: true });
    } catch (err) {
      if (dockerStatusOf(err) === 404 || /is not connected/i.test(dockerMessageOf(err))) return;
      throw err;
    }
  }

  /**
   * The running infra (pause) container of a pod: it owns the pod's network namespace, so attaching
   * it gives every app container of the pod the new interface. The newest wins if the agent is
   * mid-way through replacing it.
   */
  async runningInfraContainer(podUid: string): Promise<string | undefined> {
    const found = await this.docker.listContainers({
      filters: { label: [`${LABEL_POD_UID}=${podUid}`, `${LABEL_CONTAINER_TYPE}=infra`], status: ['running'] },
    });
    found.sort((a, b) => b.Created - a.Created);
    return found[0]?.Id;
  }

  /** A container's addresses by Docker network name; undefined when the container is gone. */
  async attachmentsOf(containerId: string): Promise<Record<string, Attachment> | undefined> {
    let info: Dockerode.ContainerInspectInfo;
    try {
      info = await this.docker.getContainer(containerId).inspect();
    } catch (err) {
      if (dockerStatusOf(err) === 404) return undefined;
      throw err;
    }
    const out: Record<string, Attachment> = {};
    for (const [name, ep] of Object.entries(info.NetworkSettings?.Networks ?? {})) {
      out[name] = { networkId: ep?.NetworkID ?? '', ip: ep?.IPAddress ?? '' };
    }
    return out;
  }
}
