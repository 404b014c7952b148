/**
 * The Docker implementation of NetworkRuntime: bridge networks over the engine's API, with the bridge
 * device named like the network, inter-container traffic allowed and Docker's masquerading off. Like
 * docker.ts it is the only place that knows Docker's network JSON and driver options.
 */
import type Dockerode from 'dockerode';
import { loadDockerode } from './load-dockerode.js';
import type { BridgeNetworkSpec, NetworkInfo, NetworkRuntime } from './networks.js';

function statusOf(err: unknown): number | undefined {
  return (err as { statusCode?: number })?.statusCode;
}

export class DockerNetworkRuntime implements NetworkRuntime {
  constructor(private readonly docker: Dockerode) {}

  async listNetworks(): Promise<NetworkInfo[]> {
    const list = await this.docker.listNetworks();
    return list.map((n) => ({
      id: n.Id,
      name: n.Name,
      subnets: (n.IPAM?.Config ?? []).map((c) => c.Subnet).filter((s): s is string => !!s),
      labels: { ...(n.Labels ?? {}) },
    }));
  }

  async attachedContainers(idOrName: string): Promise<number | undefined> {
    try {
      const info = await this.docker.getNetwork(idOrName).inspect();
      return Object.keys((info as Dockerode.NetworkInspectInfo).Containers ?? {}).length;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async createBridgeNetwork(spec: BridgeNetworkSpec): Promise<void> {
    await this.docker.createNetwork({
      Name: spec.name,
      Driver: 'bridge',
      CheckDuplicate: true,
      IPAM: { Driver: 'default', Config: [{ Subnet: spec.subnet, Gateway: spec.gateway }] },
      Options: {
        'com.docker.network.bridge.name': spec.name,
        'com.docker.network.bridge.enable_ip_masquerade': 'false',
        'com.docker.network.bridge.enable_icc': 'true',
      },
      Labels: spec.labels,
    });
  }

  async removeNetwork(idOrName: string): Promise<void> {
    try {
      await this.docker.getNetwork(idOrName).remove();
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }
}

/** The networks of the Docker engine at `socketPath`, for code that has no DockerRuntime (uninstall, test teardown). */
export function dockerNetworkRuntime(socketPath = '/var/run/docker.sock'): DockerNetworkRuntime {
  return new DockerNetworkRuntime(new (loadDockerode())({ socketPath }));
}
