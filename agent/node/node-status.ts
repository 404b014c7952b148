/**
 * Owns this node's Node object: registration (create, or update an existing one) with capacity, system
 * info, addresses and labels, and the heartbeat that keeps its conditions (Ready above all) fresh every
 * heartbeatMs with a merge patch of status.conditions and status.addresses (lists, so each is sent
 * whole every time; addresses are re-asserted as the kubelet does on every status sync).
 */
import { readFile, statfs } from 'node:fs/promises';
import { LOCAL_PATH_DIR_ANNOTATION } from '../../src/api/storage.js';
import os from 'node:os';
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import type { Node, NodeCondition, NodeStatus, NodeSystemInfo } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import { kubeTime, type Clock, type TimerHandle } from '../clock.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import type { RuntimeHealth } from './runtime-health.js';
import type { EventRecorder } from '../../src/client/events.js';

export const KUBELET_VERSION = 'v1.32.0-berth';
export const MAX_PODS = 110;
/** the kubelet's --node-status-max-images default */
export const MAX_NODE_IMAGES = 50;
/** the kubelet's cap on names per image in status.images */
export const MAX_NAMES_PER_IMAGE = 5;

export interface NodeStatusOptions {
  client: Client;
  runtime: ContainerRuntime;
  nodeName: string;
  nodeIP: string;
  hostname: string;
  /** filesystem whose size is reported as ephemeral-storage */
  dataDir: string;
  heartbeatMs: number;
  clock: Clock;
  log: Logger;
  /** the agent endpoint's port (logs, exec), advertised as status.daemonEndpoints.kubeletEndpoint.Port */
  daemonPort?: number | undefined;
  /** whether the runtime is up; without it every heartbeat asks the runtime itself */
  health?: RuntimeHealth;
  /** NodeReady / NodeNotReady events, as the kubelet records them on a Ready change */
  recorder?: EventRecorder;
  /**
   * Called once when the server has refused the node's credential (401) on consecutive heartbeats:
   * it was revoked, or replaced by a join under this name elsewhere. One 401 alone is not enough: a
   * replica may answer before it has seen a credential issued through another.
   */
  onCredentialRejected?: (message: string) => void;
  /**
   * Why the node's pod network is not up (undefined: it is): NetworkUnavailable=True and Ready=False,
   * so nothing is scheduled to a node whose pods would have no network. Without it the condition is
   * not reported (a runtime network the agent did not make).
   */
  networkProblem?: () => string | undefined;
  /** the node's local-path volume directory, published in the `storage.berth.dev/local-path-dir` annotation for the provisioner */
  localPathDir?: string | undefined;
  /** why the node is short of disk (undefined: it is not): DiskPressure=True (agent/images/gc.ts) */
  diskPressure?: () => string | undefined;
}

/** Consecutive heartbeats refused with 401 before the credential counts as rejected. */
export const REJECTED_HEARTBEATS = 2;

/** Kubernetes spells architectures as Go does. */
export function kubeArch(nodeArch: string = process.arch): string {
  const map: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };
  return map[nodeArch] ?? nodeArch;
}

async function readTrimmed(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, 'utf8')).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** PRETTY_NAME from os-release, as the kubelet reports osImage. */
async function osImage(): Promise<string> {
  for (const file of ['/etc/os-release', '/usr/lib/os-release']) {
    const text = await readTrimmed(file);
    const m = text?.match(/^PRETTY_NAME=(?:"([^"]*)"|(.*))$/m);
    if (m) return m[1] ?? m[2] ?? '';
  }
  // No os-release: ask systeminformation (loaded only here: it costs ≈12 MB RSS once imported).
  try {
    const si = (await import('systeminformation')).default;
    const info = await si.osInfo();
    return [info.distro, info.release].filter(Boolean).join(' ') || 'Linux';
  } catch {
    return 'Linux';
  }
}

/**
 * The node's system info and capacity. Read from the same sources the kubelet uses (uname, os-release,
 * machine-id, DMI, boot_id, statfs) — cheap file reads, so the agent stays within its memory budget.
 */
export async function collectSystemInfo(opts: { dataDir: string; runtimeVersion: string }): Promise<Pick<NodeStatus, 'capacity' | 'allocatable' | 'nodeInfo'>> {
  const machineID = (await readTrimmed('/etc/machine-id')) ?? (await readTrimmed('/var/lib/dbus/machine-id')) ?? '';
  const nodeInfo: NodeSystemInfo = {
    machineID,
    systemUUID: (await readTrimmed('/sys/class/dmi/id/product_uuid')) ?? (await readTrimmed('/sys/devices/virtual/dmi/id/product_uuid')) ?? machineID,
    bootID: (await readTrimmed('/proc/sys/kernel/random/boot_id')) ?? '',
    kernelVersion: os.release(),
    osImage: await osImage(),
    containerRuntimeVersion: opts.runtimeVersion,
    kubeletVersion: KUBELET_VERSION,
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: kubeArch(),
  };
  const capacity: Record<string, string> = {
    cpu: String(typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length),
    memory: `${Math.floor(os.totalmem() / 1024)}Ki`,
    pods: String(MAX_PODS),
  };
  try {
    const fs = await statfs(opts.dataDir);
    capacity['ephemeral-storage'] = `${Math.floor((fs.blocks * fs.bsize) / 1024)}Ki`;
  } catch {
    // optional
  }
  return { capacity, allocatable: { ...capacity }, nodeInfo };
}

export class NodeStatusReporter {
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly log: Logger;
  /** lastTransitionTime per condition type, kept across heartbeats */
  private readonly transitions = new Map<string, { status: string; at: string }>();
  private beating: Promise<void> | undefined;
  private started = false;
  /** a heartbeat was asked for while one was in flight */
  private again = false;
  /** the Ready status last posted (events are recorded on its changes) */
  private lastReady: boolean | undefined;
  /** heartbeats refused with 401 in a row */
  private unauthorizedInARow = 0;

  constructor(private readonly opts: NodeStatusOptions) {
    this.log = opts.log.child({ component: 'node-status' });
  }

  private conditions(notReady?: string): NodeCondition[] {
    const now = kubeTime(this.opts.clock.now());
    const make = (type: string, status: 'True' | 'False', reason: string, message: string): NodeCondition => {
      const prev = this.transitions.get(type);
      const at = prev && prev.status === status ? prev.at : now;
      this.transitions.set(type, { status, at });
      return { type, status, lastHeartbeatTime: now, lastTransitionTime: at, reason, message };
    };
    const networkProblem = this.opts.networkProblem?.();
    const diskPressure = this.opts.diskPressure?.();
    const network = !this.opts.networkProblem
      ? []
      : networkProblem === undefined
        ? [make('NetworkUnavailable', 'False', 'PodNetworkReady', 'the pod bridge and its routes are set up')]
        : [make('NetworkUnavailable', 'True', 'PodNetworkUnavailable', networkProblem)];
    const notReadyMessage = notReady ?? (networkProblem === undefined ? undefined : `container runtime network not ready: ${networkProblem}`);
    return [
      ...network,
      make('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      diskPressure === undefined
        ? make('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure')
        : make('DiskPressure', 'True', 'KubeletHasDiskPressure', diskPressure),
      make('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      notReadyMessage === undefined
        ? make('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status')
        : make('Ready', 'False', 'KubeletNotReady', notReadyMessage),
    ];
  }

  private async nodeObject(): Promise<Node> {
    const runtimeVersion = await this.opts.runtime.version();
    const sys = await collectSystemInfo({ dataDir: this.opts.dataDir, runtimeVersion });
    const arch = kubeArch();
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: this.opts.nodeName,
        labels: {
          'kubernetes.io/hostname': this.opts.nodeName,
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': arch,
          'beta.kubernetes.io/os': 'linux',
          'beta.kubernetes.io/arch': arch,
        },
        ...(this.opts.localPathDir ? { annotations: { [LOCAL_PATH_DIR_ANNOTATION]: this.opts.localPathDir } } : {}),
      },
      spec: {},
      status: {
        ...sys,
        conditions: this.conditions(),
        ...(await this.imagesField()),
        ...(this.opts.daemonPort ? { daemonEndpoints: { kubeletEndpoint: { Port: this.opts.daemonPort } } } : {}),
        addresses: this.addresses(),
      },
    };
  }

  /**
   * The node's images for status.images, largest first and at most MAX_NODE_IMAGES as the kubelet
   * reports them; nothing (the field left as it was) when the runtime cannot list them now.
   */
  private async imagesField(): Promise<Pick<NodeStatus, 'images'>> {
    if (!this.opts.runtime.listImages) return {};
    try {
      const images = await this.opts.runtime.listImages();
      return { images: images.slice(0, MAX_NODE_IMAGES).map((i) => ({ names: i.names.slice(0, MAX_NAMES_PER_IMAGE), sizeBytes: i.sizeBytes })) };
    } catch {
      return {};
    }
  }

  /** What the node answers at; sent with every heartbeat too, so an overwritten list is put back. */
  private addresses(): NonNullable<NodeStatus['addresses']> {
    return [
      { type: 'InternalIP', address: this.opts.nodeIP },
      { type: 'Hostname', address: this.opts.hostname },
    ];
  }

  /** Creates the Node, or brings an existing one up to date (labels merged; spec — taints, cordon — left alone). */
  async register(): Promise<void> {
    const { client, nodeName } = this.opts;
    const desired = await this.nodeObject();
    let created: Node | undefined;
    try {
      created = await client.create<Node>(CORE.nodes, desired);
      this.log.info({ nodeIP: this.opts.nodeIP }, 'node registered');
    } catch (err) {
      if (!(isApiError(err) && (err.reason === 'AlreadyExists' || err.reason === 'Conflict'))) throw err;
    }
    if (!created) {
      const existing = await client.get<Node>(CORE.nodes, { name: nodeName });
      const labels = desired.metadata.labels!;
      const annotations = desired.metadata.annotations ?? {};
      const missing = Object.entries(labels).some(([k, v]) => existing.metadata.labels?.[k] !== v) || Object.entries(annotations).some(([k, v]) => existing.metadata.annotations?.[k] !== v);
      if (missing) await client.patch<Node>(CORE.nodes, { name: nodeName, type: 'merge', patch: { metadata: { labels, annotations } } });
      this.log.info({ nodeIP: this.opts.nodeIP }, 'node already registered; updated it');
    }
    // A create may or may not keep status; one merge patch of the status subresource settles it.
    if (!created?.status?.nodeInfo) {
      await client.patch<Node>(CORE.nodes, { name: nodeName, type: 'merge', subresource: 'status', patch: { status: desired.status } });
    }
  }

  /** One heartbeat: the runtime's health into the Ready condition. Re-registers a node that was deleted. */
  async heartbeat(): Promise<void> {
    let runtimeDown: string | undefined;
    if (this.opts.health) runtimeDown = this.opts.health.downMessage();
    else {
      try {
        await this.opts.runtime.version();
      } catch (err) {
        runtimeDown = `container runtime is down: ${(err as Error).message}`;
      }
    }
    const conditions = this.conditions(runtimeDown);
    const ready = conditions.find((c) => c.type === 'Ready')?.status === 'True';
    if (this.lastReady !== undefined && this.lastReady !== ready) this.recordReadyChange(ready);
    this.lastReady = ready;
    try {
      await this.opts.client.patch<Node>(CORE.nodes, {
        name: this.opts.nodeName,
        type: 'merge',
        subresource: 'status',
        patch: { status: { conditions, addresses: this.addresses(), ...(await this.imagesField()) } },
      });
    } catch (err) {
      if (isApiError(err) && err.reason === 'NotFound') {
        this.log.warn('node object is gone; registering again');
        await this.register();
        return;
      }
      throw err;
    }
  }

  /** The kubelet's NodeReady / NodeNotReady event (reason = the new state, on the Node, namespace default). */
  private recordReadyChange(ready: boolean): void {
    const reason = ready ? 'NodeReady' : 'NodeNotReady';
    void this.opts.recorder?.record({
      about: { apiVersion: 'v1', kind: 'Node', metadata: { name: this.opts.nodeName, uid: this.opts.nodeName } },
      type: 'Normal',
      reason,
      message: `Node ${this.opts.nodeName} status is now: ${reason}`,
    });
  }

  /** A heartbeat now (the runtime went down or came back), then the regular period again. */
  beatNow(): void {
    if (this.stopped || !this.started) return;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.beating) {
      this.again = true;
      return;
    }
    this.tick();
  }

  /** Starts periodic heartbeats (the first one heartbeatMs from now). */
  start(): void {
    this.started = true;
    this.timer = this.opts.clock.setTimeout(() => this.tick(), this.opts.heartbeatMs);
  }

  private tick(): void {
    if (this.stopped) return;
    this.timer = undefined;
    this.beating = this.heartbeat()
      .then(() => {
        this.unauthorizedInARow = 0;
      })
      .catch((err: unknown) => {
        this.log.warn({ err: (err as Error).message }, 'node heartbeat failed');
        this.unauthorizedInARow = isApiError(err) && err.reason === 'Unauthorized' ? this.unauthorizedInARow + 1 : 0;
        if (this.unauthorizedInARow === REJECTED_HEARTBEATS) {
          this.opts.onCredentialRejected?.(`the control plane no longer accepts this node's credential (401 on ${REJECTED_HEARTBEATS} heartbeats in a row): it was revoked, or another agent joined as node "${this.opts.nodeName}"`);
        }
      })
      .finally(() => {
        this.beating = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.tick();
        } else if (this.timer === undefined) this.timer = this.opts.clock.setTimeout(() => this.tick(), this.opts.heartbeatMs);
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    await this.beating;
  }
}
