/**
 * The pod controller's reconcile: a pod annotated `networking.berth.dev/network: <name>` gets its
 * infra container connected to that Network's Docker network — every app container of the pod
 * shares the infra container's network namespace, so all of them see the new interface — and the
 * address is recorded on the pod as `networking.berth.dev/attached-ip`. Removing or changing the
 * annotation detaches the pod again. Actual state is read from Docker every time, so a restarted
 * operator, a re-created pod sandbox or a re-created network all converge the same way.
 */
import type { Logger } from 'pino';
import type { Pod } from '../../src/api/types.js';
import type { Client } from '../../src/client/client.js';
import type { EventRecorder } from '../../src/client/events.js';
import { isNotFound, type ReconcileResult } from '../../src/controllers/runtime/index.js';
import type { DockerNetworks } from './docker-networks.js';
import type { KeyedLock } from './keyed-lock.js';
import { ATTACHED_IP_ANNOTATION, NETWORK_ANNOTATION, PODS, dockerNetworkName, type Network } from './types.js';

/** How soon to look again for the infra container of a running pod that has none (the agent is replacing it). */
export const INFRA_RETRY_MS = 3000;

export interface PodAttachmentDeps {
  client: Client;
  pods: { get(key: string): Pod | undefined };
  networks: { get(key: string): Network | undefined };
  docker: DockerNetworks;
  events: EventRecorder;
  locks: KeyedLock;
  log: Logger;
  /** only pods bound to this node have their containers here; undefined: every pod, by what Docker holds */
  nodeName?: string;
}

/** What the pod's attached-ip annotation should say after this pass; `keep` leaves it alone. */
type Outcome = { ip: string } | { ip: undefined } | 'keep';

export class PodAttachmentReconciler {
  constructor(private readonly deps: PodAttachmentDeps) {}

  /** The controller's entry point: `key` is `namespace/name`. */
  async reconcile(key: string): Promise<ReconcileResult> {
    const pod = this.deps.pods.get(key);
    // A deleted pod's containers go, and Docker drops their endpoints with them: nothing to undo.
    if (!pod || pod.metadata.deletionTimestamp) return;
    if (this.deps.nodeName && pod.spec.nodeName !== this.deps.nodeName) return;
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return;
    const wanted = pod.metadata.annotations?.[NETWORK_ANNOTATION] || undefined;
    if (wanted && pod.spec.hostNetwork) {
      await this.deps.events.record({ about: pod, type: 'Warning', reason: 'NetworkAttachFailed', message: `pod uses the host's network; it cannot be attached to Network ${wanted}` });
      return;
    }

    const infra = await this.deps.docker.runningInfraContainer(pod.metadata.uid ?? '');
    if (!infra) {
      // Not started yet (its status update will queue it again), or a running pod whose sandbox is being replaced.
      return phase === 'Running' && this.deps.nodeName ? { requeueAfterMs: INFRA_RETRY_MS } : undefined;
    }

    await this.detachUnwanted(pod, infra, wanted);
    const outcome = wanted ? await this.attach(pod, infra, wanted) : { ip: undefined };
    if (outcome !== 'keep') await this.recordIp(pod, outcome.ip);
  }

  /** Disconnects the pod from networks of this operator other than the one it asks for. */
  private async detachUnwanted(pod: Pod, infra: string, wanted: string | undefined): Promise<void> {
    const attachments = (await this.deps.docker.attachmentsOf(infra)) ?? {};
    const keep = wanted ? dockerNetworkName(wanted) : undefined;
    for (const [dockerName, att] of Object.entries(attachments)) {
      if (dockerName === keep || !dockerName.startsWith(dockerNetworkName(''))) continue;
      const ours = (await this.deps.docker.findByName(dockerName)).some((n) => n.id === att.networkId && this.deps.docker.isOurs(n));
      if (!ours) continue;
      await this.deps.locks.run(dockerName, () => this.deps.docker.disconnect(att.networkId, infra));
      this.deps.log.info({ pod: `${pod.metadata.namespace}/${pod.metadata.name}`, network: dockerName }, 'detached pod');
      await this.deps.events.record({ about: pod, type: 'Normal', reason: 'NetworkDetached', message: `Detached from Docker network ${dockerName}` });
    }
  }

  private async attach(pod: Pod, infra: string, wanted: string): Promise<Outcome> {
    const net = this.deps.networks.get(wanted);
    if (!net || net.metadata.deletionTimestamp) {
      // The Network's creation queues this pod again; until then the pod simply is not attached.
      await this.deps.events.record({ about: pod, type: 'Warning', reason: 'NetworkNotFound', message: `Network ${wanted} does not exist` });
      return { ip: undefined };
    }
    const s = net.status;
    // Attach only to what the Network controller has reported for the current spec; its next status
    // write queues this pod again, so waiting costs nothing.
    if (s?.phase !== 'Ready' || s.observedGeneration !== net.metadata.generation || !s.dockerNetworkId) return 'keep';
    const dockerName = dockerNetworkName(wanted);
    const networkId = s.dockerNetworkId;
    const result = await this.deps.locks.run(dockerName, async () => {
      // Re-check under the lock: the network may have been replaced since the cache said Ready.
      const current = (await this.deps.docker.findByName(dockerName)).find((n) => n.id === networkId);
      if (!current) return 'keep' as const;
      const before = (await this.deps.docker.attachmentsOf(infra))?.[dockerName];
      if (before?.networkId === networkId && before.ip) return { ip: before.ip, connected: false };
      await this.deps.docker.connect(networkId, infra);
      const after = (await this.deps.docker.attachmentsOf(infra))?.[dockerName];
      return { ip: after?.ip || undefined, connected: true };
    });
    if (result === 'keep') return 'keep';
    if (result.connected) {
      this.deps.log.info({ pod: `${pod.metadata.namespace}/${pod.metadata.name}`, network: wanted, ip: result.ip }, 'attached pod');
      await this.deps.events.record({ about: pod, type: 'Normal', reason: 'NetworkAttached', message: `Attached to Network ${wanted} as ${result.ip ?? '?'}` });
    }
    return { ip: result.ip };
  }

  /** Merge-patches the attached-ip annotation (null removes it) when it differs from the truth. */
  private async recordIp(pod: Pod, ip: string | undefined): Promise<void> {
    if ((pod.metadata.annotations?.[ATTACHED_IP_ANNOTATION] ?? undefined) === ip) return;
    try {
      await this.deps.client.patch(PODS, {
        namespace: pod.metadata.namespace,
        name: pod.metadata.name ?? '',
        type: 'merge',
        patch: { metadata: { annotations: { [ATTACHED_IP_ANNOTATION]: ip ?? null } } },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
