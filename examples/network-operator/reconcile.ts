/**
 * The Network controller's reconcile: make the Docker network match the Network object, report
 * what happened in its status, and hold a finalizer so the Docker network is removed before the
 * object disappears. It reads desired state from the informer's cache and actual state from
 * Docker each time, so it can run again at any moment — after a crash, a resync, a dropped watch —
 * and do only what is still missing.
 */
import type { Logger } from 'pino';
import type { Client } from '../../src/client/client.js';
import type { EventRecorder } from '../../src/client/events.js';
import { isNotFound, type ReconcileResult } from '../../src/controllers/runtime/index.js';
import { dockerMessageOf, dockerStatusOf, type DockerNetworks, type DockerNetworkView } from './docker-networks.js';
import { validateNetworkSpec, type ValidatedSpec } from './ipv4.js';
import type { KeyedLock } from './keyed-lock.js';
import { CLEANUP_FINALIZER, DOCKER_LABEL_NETWORK, NETWORKS, dockerNetworkName, type Network, type NetworkStatus } from './types.js';

/** How long to wait before trying again after Docker refused a network (e.g. its subnet overlaps another). */
export const REFUSED_RETRY_MS = 30_000;

export interface NetworkReconcilerDeps {
  client: Client;
  /** the informer cache of Network objects */
  networks: { get(key: string): Network | undefined };
  docker: DockerNetworks;
  events: EventRecorder;
  /** shared with the pod controller: one writer per Docker network at a time */
  locks: KeyedLock;
  log: Logger;
}

/** Docker said no to a create for a reason retrying soon will not fix (overlap, name taken). */
class DockerRefused extends Error {}

export class NetworkReconciler {
  /**
   * Failures already announced with an event, by Network name. The status says the same once its
   * write is back in the cache; this covers the moment before, so one failure makes one event.
   */
  private readonly announced = new Map<string, string>();

  constructor(private readonly deps: NetworkReconcilerDeps) {}

  /** The controller's entry point: `key` is the Network's name (Networks are cluster-scoped). */
  async reconcile(key: string): Promise<ReconcileResult> {
    const net = this.deps.networks.get(key);
    if (!net) {
      this.announced.delete(key);
      return this.removeOrphans(key);
    }
    if (net.metadata.deletionTimestamp) return this.finalize(net);
    if (!net.metadata.finalizers?.includes(CLEANUP_FINALIZER)) {
      // One write per pass: the change comes back through the watch and queues the key again, so the
      // next pass decides from a cache that already holds what we just wrote.
      await this.addFinalizer(net);
      return;
    }

    const spec = validateNetworkSpec(net.spec);
    if ('error' in spec) return this.reportInvalid(net, spec.error);

    const dockerName = dockerNetworkName(key);
    let dockerNetworkId: string;
    try {
      dockerNetworkId = await this.deps.locks.run(dockerName, () => this.ensureDockerNetwork(net, spec));
    } catch (err) {
      if (!(err instanceof DockerRefused)) {
        await this.writeStatus(net, { ...net.status, phase: 'Pending', message: `Docker: ${dockerMessageOf(err)}; retrying` });
        throw err;
      }
      await this.announceFailure(net, 'DockerRefused', err.message);
      await this.writeStatus(net, { phase: 'Failed', message: err.message, observedGeneration: net.metadata.generation });
      // The obstacle (another network holding the subnet or the name) may go away without this object changing.
      return { requeueAfterMs: REFUSED_RETRY_MS };
    }
    this.announced.delete(key);
    await this.writeStatus(net, {
      phase: 'Ready',
      dockerNetworkName: dockerName,
      dockerNetworkId,
      subnet: spec.subnet.text,
      gateway: spec.gateway,
      message: '',
      observedGeneration: net.metadata.generation,
    });
  }

  /**
   * Creates the Docker network, or replaces it when its subnet or gateway differ from the spec:
   * Docker cannot edit a network's IPAM, so the old one is emptied and removed, the new one made,
   * and the containers that were on the old one are attached to the new one.
   */
  private async ensureDockerNetwork(net: Network, spec: ValidatedSpec): Promise<string> {
    const name = net.metadata.name ?? '';
    const dockerName = dockerNetworkName(name);
    const found = await this.deps.docker.findByName(dockerName);
    if (found.some((n) => !this.owns(name, n))) {
      throw new DockerRefused(`a Docker network named ${dockerName} already exists and was not made by this operator for this cluster`);
    }
    const keep = found.find((n) => n.subnet === spec.subnet.text && n.gateway === spec.gateway);
    const stale = found.filter((n) => n !== keep);
    const moved: string[] = [];
    for (const n of stale) {
      this.deps.log.info({ network: name, dockerNetwork: n.id, had: n.subnet, want: spec.subnet.text }, 'removing Docker network that no longer matches the spec');
      moved.push(...(await this.deps.docker.removeWithAttachments(n.id)));
    }
    if (keep) return keep.id;

    let id: string;
    try {
      id = await this.deps.docker.create({ dockerName, networkName: name, networkUid: net.metadata.uid ?? '', subnet: spec.subnet.text, gateway: spec.gateway });
    } catch (err) {
      const status = dockerStatusOf(err);
      if (status !== undefined && status >= 400 && status < 500) throw new DockerRefused(`Docker refused to create ${dockerName}: ${dockerMessageOf(err)}`);
      throw err;
    }
    for (const container of moved) {
      // A container that went away meanwhile is fine; Berth pods are re-attached by the pod controller anyway.
      await this.deps.docker.connect(id, container).catch((e: unknown) => this.deps.log.warn({ container, err: dockerMessageOf(e) }, 'could not reattach container'));
    }
    const verb = stale.length ? 'Recreated' : 'Created';
    this.deps.log.info({ network: name, dockerNetwork: id, subnet: spec.subnet.text, reattached: moved.length }, `${verb.toLowerCase()} Docker network`);
    await this.deps.events.record({
      about: net,
      type: 'Normal',
      reason: verb,
      message: `${verb} Docker network ${dockerName} (${spec.subnet.text}, gateway ${spec.gateway})${moved.length ? `; reattached ${moved.length} container(s)` : ''}`,
    });
    return id;
  }

  /** The object is being deleted: remove the Docker network first, then let the object go. */
  private async finalize(net: Network): Promise<ReconcileResult> {
    if (!net.metadata.finalizers?.includes(CLEANUP_FINALIZER)) return; // ours already released; others are not our business
    const name = net.metadata.name ?? '';
    const removed = await this.removeDockerNetworks(name);
    if (removed) {
      await this.deps.events.record({ about: net, type: 'Normal', reason: 'Deleted', message: `Removed Docker network ${dockerNetworkName(name)}` });
    }
    await this.patchFinalizers(net, (net.metadata.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER));
  }

  /** No object of this name (deleted while we were not looking, or never had our finalizer): drop its network. */
  private async removeOrphans(name: string): Promise<ReconcileResult> {
    if (await this.removeDockerNetworks(name)) this.deps.log.info({ network: name }, 'removed Docker network of a Network that no longer exists');
  }

  private async removeDockerNetworks(name: string): Promise<boolean> {
    const dockerName = dockerNetworkName(name);
    return this.deps.locks.run(dockerName, async () => {
      let removed = false;
      for (const n of await this.deps.docker.findByName(dockerName)) {
        if (!this.owns(name, n)) continue;
        await this.deps.docker.removeWithAttachments(n.id);
        removed = true;
      }
      return removed;
    });
  }

  private owns(name: string, n: DockerNetworkView): boolean {
    return this.deps.docker.isOurs(n) && n.labels[DOCKER_LABEL_NETWORK] === name;
  }

  private async addFinalizer(net: Network): Promise<Network> {
    return this.patchFinalizers(net, [...(net.metadata.finalizers ?? []), CLEANUP_FINALIZER]);
  }

  /**
   * JSON patch guarded by a `test` of the resourceVersion: if anyone changed the object since the
   * cache saw it, the patch fails, the key is retried, and the next attempt starts from fresh data
   * — so another writer's finalizer is never dropped.
   */
  private async patchFinalizers(net: Network, finalizers: string[]): Promise<Network> {
    return this.deps.client.patch<Network>(NETWORKS, {
      name: net.metadata.name ?? '',
      type: 'json',
      patch: [
        { op: 'test', path: '/metadata/resourceVersion', value: net.metadata.resourceVersion },
        { op: 'add', path: '/metadata/finalizers', value: finalizers },
      ],
    });
  }

  /**
   * A spec no Docker network can have. Reported once per generation (status Failed + a Warning
   * event) and not retried: only a new spec can fix it, and changing the spec queues the key again.
   * An existing Docker network is left as it was rather than torn down over a typo.
   */
  private async reportInvalid(net: Network, message: string): Promise<ReconcileResult> {
    await this.announceFailure(net, 'InvalidSpec', message);
    await this.writeStatus(net, { ...net.status, phase: 'Failed', message, observedGeneration: net.metadata.generation });
  }

  /** A Warning event for a failure of this generation, unless it was already announced. */
  private async announceFailure(net: Network, reason: string, message: string): Promise<void> {
    const name = net.metadata.name ?? '';
    const signature = `${net.metadata.uid}|${net.metadata.generation}|${message}`;
    const s = net.status;
    const inStatus = s?.phase === 'Failed' && s.message === message && s.observedGeneration === net.metadata.generation;
    if (inStatus || this.announced.get(name) === signature) return;
    this.announced.set(name, signature);
    await this.deps.events.record({ about: net, type: 'Warning', reason, message });
  }

  /**
   * Writes `status` through the status subresource when it differs from what is stored. Skipping
   * identical writes matters: every write comes back as a watch event and another reconcile.
   */
  private async writeStatus(net: Network, status: NetworkStatus): Promise<void> {
    const current: Record<string, unknown> = { ...net.status };
    const wanted: Record<string, unknown> = { ...status };
    const patch: Record<string, unknown> = {};
    for (const k of new Set([...Object.keys(current), ...Object.keys(wanted)])) {
      const v = wanted[k] ?? null; // merge patch: null removes a field
      if ((current[k] ?? null) !== v) patch[k] = v;
    }
    if (Object.keys(patch).length === 0) return;
    try {
      await this.deps.client.patch(NETWORKS, { name: net.metadata.name ?? '', type: 'merge', subresource: 'status', patch: { status: patch } });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
