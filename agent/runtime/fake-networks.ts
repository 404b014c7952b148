/**
 * An in-memory NetworkRuntime for unit tests: networks with subnets, labels and a count of attached
 * containers (set by the test), and a record of what was created and removed.
 */
import type { BridgeNetworkSpec, NetworkInfo, NetworkRuntime } from './networks.js';

export interface FakeNetwork extends NetworkInfo {
  /** containers attached (removal of a network with any throws, as Docker refuses it) */
  attached: number;
  /** set for networks made by createBridgeNetwork */
  bridge?: BridgeNetworkSpec;
}

export class FakeNetworkRuntime implements NetworkRuntime {
  readonly networks = new Map<string, FakeNetwork>();
  readonly calls: Array<{ op: 'create' | 'remove'; name: string }> = [];
  private seq = 0;

  constructor(initial: Array<Omit<FakeNetwork, 'id'> & { id?: string }> = []) {
    for (const n of initial) this.add(n);
  }

  /** Adds a network as if something else had made it. */
  add(n: Omit<FakeNetwork, 'id'> & { id?: string }): FakeNetwork {
    const net: FakeNetwork = { ...n, id: n.id ?? `net-${++this.seq}` };
    this.networks.set(net.id, net);
    return net;
  }

  byName(name: string): FakeNetwork | undefined {
    return [...this.networks.values()].find((n) => n.name === name);
  }

  private find(idOrName: string): FakeNetwork | undefined {
    return this.networks.get(idOrName) ?? this.byName(idOrName);
  }

  async listNetworks(): Promise<NetworkInfo[]> {
    return [...this.networks.values()].map((n) => ({ id: n.id, name: n.name, subnets: [...n.subnets], labels: { ...n.labels } }));
  }

  async attachedContainers(idOrName: string): Promise<number | undefined> {
    return this.find(idOrName)?.attached;
  }

  async createBridgeNetwork(spec: BridgeNetworkSpec): Promise<void> {
    if (this.byName(spec.name)) throw new Error(`network with name ${spec.name} already exists`);
    this.calls.push({ op: 'create', name: spec.name });
    this.add({ name: spec.name, subnets: [spec.subnet], labels: { ...spec.labels }, attached: 0, bridge: spec });
  }

  async removeNetwork(idOrName: string): Promise<void> {
    const n = this.find(idOrName);
    if (!n) return;
    if (n.attached > 0) throw new Error(`network ${n.name} has active endpoints`);
    this.calls.push({ op: 'remove', name: n.name });
    this.networks.delete(n.id);
  }
}
