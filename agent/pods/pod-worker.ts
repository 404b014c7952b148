/**
 * A pod worker owns one pod (by uid): every sync of that pod runs here, one at a time, so no two
 * operations on the same pod's containers ever interleave. Requests that arrive while a sync runs are
 * coalesced into one more sync. The worker ends after the pod is torn down.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import type { Container, ContainerStateWaiting, Pod, PodStatus } from '../../src/api/types.js';
import { CORE, type Client } from '../../src/client/client.js';
import { checkActiveDeadline, DEADLINE_EXCEEDED_MESSAGE, DEADLINE_EXCEEDED_REASON } from './active-deadline.js';
import type { Clock, TimerHandle } from '../clock.js';
import { isContainerConfigError } from '../container/config-error.js';
import { appSpec, containerHash, graceSecondsOf, infraSpec } from './container-config.js';
import { identityFromLabels, LABEL_POD_IP, labelFilter, sandboxIPOf } from '../node/labels.js';
import { FAILED_PULL_SECRET_REASON, failedPullSecretMessage, pullCredentialsFor } from '../images/pull-secrets.js';
import { hasPreStop, runPostStart, runPreStop } from './lifecycle-hooks.js';
import { computePodActions, type KillAction, type StartAction } from './pod-actions.js';
import { groupContainers, isRunning, type ObservedContainer, type PodContainers } from './pod-containers.js';
import { EventReason, type ContainerRef, type PodEvents } from './pod-events.js';
import { computePodStatus, notReadyStatus } from './pod-status.js';
import type { PrestartRunner } from '../prestart/runner.js';
import type { ProbeManager, ProbedContainer } from '../prober/manager.js';
import { isSidecar, PROBE_LABEL, type ProbeKind } from '../prober/types.js';
import { crashBackoffKey, pullBackoffKey, type Backoff } from './restart-backoff.js';
import { WaitingReason } from './restart-policy.js';
import { ImagePullError, pullPolicyOf, type AppSpec, type ContainerInfo, type ContainerRunState, type ContainerRuntime, type RuntimeEvent } from '../runtime/runtime.js';
import { wantsRuntimeWiredSandbox, type SandboxNetwork } from '../network/sandbox-network.js';
import type { StatusManager } from './status-manager.js';
import { FALLBACK_LOG_BYTES, FALLBACK_LOG_LINES, readTerminationMessage, removeTerminationLog, terminationLogPath } from './termination-message.js';

/** A container pulled and configured, waiting only for its sandbox's id to be created. */
interface PreparedContainer {
  specFor(infraId: string): AppSpec;
}

/** What every worker shares, owned by the pod manager. */
export interface PodWorkerDeps {
  nodeName: string;
  podNetwork: string;
  hostIP: string;
  /** the agent's data dir: per-pod files (termination messages) live under pods/<uid>/ */
  dataDir: string;
  /** what containers get beyond their image: env, volumes, pod files, security context, termination log (agent/prestart/) */
  prestart: PrestartRunner;
  runtime: ContainerRuntime;
  client: Client;
  status: StatusManager;
  prober: ProbeManager;
  events: PodEvents;
  /** crash-loop backoff */
  crashBackoff: Backoff;
  /** image pull backoff */
  pullBackoff: Backoff;
  clock: Clock;
  log: Logger;
  /** delay before retrying a sync that threw */
  retryMs: number;
  /** set when the agent wires sandboxes into the pod bridge itself (agent/network/sandbox-network.ts) */
  sandboxNetwork?: SandboxNetwork | undefined;
}

/** Kubernetes' minimum grace when killing a container (a 0 from a force delete still gets a moment). */
const MIN_KILL_GRACE_SECONDS = 2;
/** cap of the retry delay after failed syncs */
const MAX_RETRY_MS = 60_000;
/** OOM kills older than this when first seen (e.g. while the agent was down) get no event */
const OOM_EVENT_WINDOW_MS = 5 * 60_000;

export class PodWorker {
  private pod: Pod | undefined;
  /** the pod is gone from the API (or was never known: stray containers) */
  private removed = false;
  private running: Promise<void> | undefined;
  private again = false;
  /** consecutive failed syncs */
  private failures = 0;
  private finished = false;
  private stopped = false;
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;
  /** runtime events this worker caused itself (`action:id` or `action:name` → when), which need no resync */
  private readonly expected = new Map<string, number>();
  /** why containers are not running, when the runtime cannot tell (pull errors, backoff, create errors) */
  private readonly waiting = new Map<string, ContainerStateWaiting>();
  /** termination messages of ended containers, by container id (an ended container never changes) */
  private readonly messages = new Map<string, string>();
  /** container ids whose OOM kill was reported */
  private readonly oomReported = new Set<string>();
  private deadlineReported = false;
  /** the infra container whose wiring this worker has seen to (checked once per sandbox per agent run) */
  private attachedInfra: string | undefined;
  /** containers runtime events named since the last look */
  private readonly changed = new Set<string>();
  /** the last inspect of each container, with the state the list showed then */
  private readonly inspected = new Map<string, { listed: ContainerRunState; info: ContainerInfo }>();
  private readonly log: Logger;

  constructor(
    readonly uid: string,
    private readonly deps: PodWorkerDeps,
    private readonly onFinished: (uid: string) => void,
    pod?: Pod,
  ) {
    this.pod = pod;
    if (!pod) this.removed = true;
    this.log = deps.log.child(pod ? { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, uid } : { uid });
  }

  /** A newer version of the pod arrived; `resync` false when only its status changed (nothing to do). */
  update(pod: Pod, resync = true): void {
    this.pod = pod;
    if (resync) this.kick();
  }

  /** A runtime event about one of this pod's containers: resync unless the worker caused it itself. */
  runtimeEvent(ev: RuntimeEvent): void {
    // Docker's list can lag its events by a moment; whatever the event was about is inspected afresh.
    this.inspected.delete(ev.containerId);
    if (ev.action !== 'destroy') this.changed.add(ev.containerId);
    for (const key of [`${ev.action}:${ev.containerId}`, ev.name ? `${ev.action}:${ev.name}` : '']) {
      if (key && this.expected.delete(key)) return;
    }
    this.kick();
  }

  /**
   * The runtime is down: nothing this node reports about its containers can be vouched for, so the pod
   * and its containers stop counting as ready (what Kubernetes' node lifecycle controller does to the pods
   * of a NotReady node). States stay as last seen until the runtime answers again.
   */
  runtimeDown(): void {
    const pod = this.pod;
    if (!pod || this.removed || pod.metadata.deletionTimestamp) return;
    const previous = this.deps.status.latestStatus(this.uid) ?? pod.status;
    if (!previous) return;
    this.deps.status.setStatus(pod, notReadyStatus(previous, this.deps.clock.now()));
  }

  /** One probe run failed: the kubelet's Unhealthy event. */
  probeFailed(containerName: string, kind: ProbeKind, output: string): void {
    const pod = this.pod;
    if (!pod || this.removed) return;
    this.deps.events.warning(pod, EventReason.Unhealthy, `${PROBE_LABEL[kind]} probe failed: ${output}`.trimEnd(), this.refOf(pod, containerName));
  }

  private expect(action: string, idOrName: string): void {
    this.inspected.delete(idOrName); // the worker is changing it: the next look inspects it afresh
    this.expected.set(`${action}:${idOrName}`, this.deps.clock.now());
  }

  /** The pod is gone from the API: tear down whatever is left. */
  remove(pod?: Pod): void {
    if (pod) this.pod = pod;
    this.removed = true;
    this.kick();
  }

  /** A sync is running or queued. */
  isBusy(): boolean {
    return this.running !== undefined;
  }

  isFinished(): boolean {
    return this.finished;
  }

  /** Requests a sync; coalesced with one that is running. */
  kick(): void {
    if (this.finished || this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop()
      .catch((err: unknown) => this.log.error({ err: (err as Error)?.stack ?? String(err) }, 'pod worker loop failed'))
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Resolves when the worker has nothing in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Syncs again after `ms` (keeping an earlier request if there is one). */
  private syncAfter(ms: number): void {
    const at = this.deps.clock.now() + ms;
    if (at >= this.timerAt || this.stopped) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.kick();
    }, ms);
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const deleting = this.removed || this.pod?.metadata.deletionTimestamp !== undefined;
        if (deleting) await this.terminate();
        else await this.sync(this.pod!);
        this.failures = 0;
      } catch (err) {
        // Doubling retry delay: a daemon that is down or a broken pause image should not flood the log.
        const delay = Math.min(this.deps.retryMs * 2 ** this.failures, MAX_RETRY_MS);
        this.failures++;
        this.log.warn({ err: (err as Error).message, retryInMs: delay }, 'pod sync failed; will retry');
        this.syncAfter(delay);
      }
    } while (this.again && !this.finished && !this.stopped);
  }

  /**
   * Lists the pod's containers and inspects those whose listed state changed since the last look, or
   * that a runtime event named since: an exited container never changes again and a running one only by
   * leaving that state, so a sync after one container died costs one list and one inspect, not one
   * inspect per container. (The event matters: Docker updates what list shows a little after it sends
   * `die`.)
   */
  private async observe(): Promise<{ infos: ContainerInfo[]; containers: PodContainers }> {
    const { runtime } = this.deps;
    // Containers an event named are inspected while the list runs: an exit reaches the status sooner.
    const early = new Map([...this.changed].map((id) => [id, runtime.inspect(id)]));
    // Handled from the start: the list may fail first (the daemon went away), and then nobody awaits them.
    for (const p of early.values()) p.catch(() => undefined);
    const changed = [...this.changed];
    this.changed.clear();
    let summaries;
    try {
      summaries = await runtime.list({ labels: labelFilter({ nodeName: this.deps.nodeName, podUid: this.uid }) });
    } catch (err) {
      for (const id of changed) this.changed.add(id); // still to be inspected afresh by the next look
      throw err;
    }
    const live = new Set(summaries.map((s) => s.id));
    for (const id of this.inspected.keys()) if (!live.has(id)) this.inspected.delete(id);
    const infos = (
      await Promise.all(
        summaries.map(async (s) => {
          const known = this.inspected.get(s.id);
          if (!early.has(s.id) && known && known.listed === s.state && (s.state === 'running' || s.state === 'exited')) return known.info;
          const info = await (early.get(s.id) ?? runtime.inspect(s.id));
          if (info) this.inspected.set(s.id, { listed: s.state, info });
          else this.inspected.delete(s.id);
          return info;
        }),
      )
    ).filter((i): i is ContainerInfo => i !== undefined);
    return { infos, containers: groupContainers(infos) };
  }

  private specOf(pod: Pod, name: string): { spec: Container; init: boolean } | undefined {
    const init = pod.spec.initContainers?.find((c) => c.name === name);
    if (init) return { spec: init, init: true };
    const app = pod.spec.containers.find((c) => c.name === name);
    return app ? { spec: app, init: false } : undefined;
  }

  private refOf(pod: Pod, name: string): ContainerRef {
    return { name, init: this.specOf(pod, name)?.init ?? false };
  }

  private podIPOf(containers: PodContainers): string | undefined {
    const infra = containers.infra[0];
    if (isRunning(infra) && this.pod?.spec.hostNetwork === true) return this.deps.hostIP; // hostNetwork: the node's address
    return isRunning(infra) ? sandboxIPOf(infra!.info, this.deps.podNetwork) : undefined;
  }

  /**
   * Syncs one pod, in kubelet order:
   * 1. observe the pod's containers (by labels); check activeDeadlineSeconds; read the termination
   *    messages of containers that ended; publish the status they show (so an exit reaches the API
   *    before any restart is attempted);
   * 2. compute the actions (pod-actions.ts); kill the infra container if it must change (gone, dead,
   *    different spec) — with its app containers;
   * 3. kill unwanted containers (spec hash changed, probe failed, pod finished) — preStop first — and
   *    remove old exited ones;
   * 4. create the infra container if missing;
   * 5. the prestart hooks' pod step: the pod's volumes set up or brought up to date (agent/prestart/);
   * 6. init containers (one at a time), then app containers: pull per policy → prestart hooks (env,
   *    volume mounts, /etc/hosts and resolv.conf, security context, termination log) → create → start →
   *    postStart;
   * 7. compute the status from what now runs, hand it to the status manager, and tell the prober which
   *    containers run;
   * 8. stop the infra container of a finished pod; schedule a resync for the earliest backoff expiry.
   */
  private async sync(pod: Pod): Promise<void> {
    const { runtime, status, clock, events, prober } = this.deps;
    this.log.debug('sync');
    for (const [k, at] of this.expected) if (clock.now() - at > 30_000) this.expected.delete(k); // events that never came
    // Step 1
    let { infos, containers } = await this.observe();
    let podIP = this.podIPOf(containers);
    const initialStatus = status.latestStatus(this.uid) ?? pod.status;
    const terminal = initialStatus?.phase === 'Succeeded' || initialStatus?.phase === 'Failed';
    const deadline = checkActiveDeadline(pod, initialStatus?.startTime, clock.now());
    const failure = deadline.exceeded && !terminal ? { reason: DEADLINE_EXCEEDED_REASON, message: DEADLINE_EXCEEDED_MESSAGE } : undefined;
    if (failure && !this.deadlineReported) {
      this.deadlineReported = true;
      this.log.info('active deadline exceeded; failing the pod');
      events.warning(pod, EventReason.DeadlineExceeded, DEADLINE_EXCEEDED_MESSAGE);
    }
    if (deadline.remainingMs !== undefined && !terminal) this.syncAfter(deadline.remainingMs);
    await this.readMessages(pod, containers);
    this.reportOOMKills(pod, containers);
    if (infos.length) this.publishStatus(pod, containers, failure);

    // Step 2
    const phase = failure ? 'Failed' : status.latestStatus(this.uid)?.phase ?? pod.status?.phase;
    const actions = computePodActions({ pod, containers, network: this.deps.podNetwork, backoff: this.deps.crashBackoff, phase, probes: prober });
    let changed = false;

    // Step 3: kills run in parallel (each may wait out its grace period), sidecars after the rest; then removals.
    if (actions.kill.length) {
      changed = true;
      const orders = [...new Set(actions.kill.map((k) => k.order ?? 0))].sort((a, b) => a - b);
      for (const order of orders) {
        await Promise.all(actions.kill.filter((k) => (k.order ?? 0) === order).map((k) => this.killContainer(pod, k, podIP)));
      }
      // A container killed for a failed probe is restarted (per policy, after backoff) by the next sync.
      if (actions.kill.some((k) => k.restart)) this.again = true;
    }
    if (actions.remove.length) {
      changed = true;
      const byId = new Map(infos.map((i) => [i.id, i]));
      await Promise.all(
        actions.remove.map(async (id) => {
          this.expect('destroy', id);
          await runtime.remove(id);
          this.messages.delete(id);
          const info = byId.get(id);
          if (info) await removeTerminationLog(this.terminationFileOf(info));
        }),
      );
    }

    if (actions.stopInfra) {
      changed = true;
      this.expect('die', actions.stopInfra);
      await runtime.stop(actions.stopInfra, MIN_KILL_GRACE_SECONDS);
    }

    // Step 4
    let infraId = actions.infraId;
    // Every sandbox's address comes from the agent's pool, also one the runtime attaches (annotated pods):
    // the runtime's own IPAM does not know the pool, and the two would hand out the same address.
    const addresses = pod.spec.hostNetwork === true ? undefined : this.deps.sandboxNetwork;
    const runtimeAttached = wantsRuntimeWiredSandbox(pod.metadata.annotations);
    const wiring = runtimeAttached ? undefined : addresses;
    /** pulls and prestart configs of the app containers, made while the new sandbox starts */
    let prepared: Map<StartAction, Promise<PreparedContainer | undefined>> | undefined;
    if (actions.createInfra) {
      changed = true;
      const sandboxIP = addresses ? await addresses.allocate() : undefined;
      // The address is known before the sandbox exists, so the pod's volumes and its containers' pulls
      // and configs need not wait for the sandbox: they run while it starts.
      if (sandboxIP && actions.start.every((s) => s.type === 'app' && !s.existingId)) {
        const volumes = this.deps.prestart.syncPod(pod, () => this.kick());
        prepared = new Map(actions.start.map((s) => [s, volumes.then(() => this.prepareContainer(pod, s, sandboxIP))]));
        // Awaited in step 6; a failure meanwhile (the sandbox failed first) must not go unhandled.
        for (const p of prepared.values()) p.catch(() => undefined);
      }
      const spec = infraSpec({ pod, nodeName: this.deps.nodeName, network: this.deps.podNetwork, attempt: actions.createInfra.attempt, sandboxIP, runtimeAttached });
      this.expect('start', spec.name);
      const created = await runtime.runInfra(spec).finally(() => sandboxIP && addresses?.settle(sandboxIP));
      infraId = created.id;
      const info = pod.spec.hostNetwork === true ? undefined : await runtime.inspect(infraId);
      // An adopted container (its create went through unacknowledged) keeps the address its labels name.
      if (wiring && info) await this.attachSandbox(wiring, info, { again: created.adopted });
      podIP = pod.spec.hostNetwork === true ? this.deps.hostIP : info && sandboxIPOf(info, this.deps.podNetwork);
      if (podIP !== sandboxIP) prepared = undefined; // configs made for another address are redone
      this.log.info({ id: infraId.slice(0, 12), attempt: actions.createInfra.attempt, adopted: created.adopted, podIP }, 'infra container started');
    } else if (wiring && infraId && this.attachedInfra !== infraId) {
      // A sandbox from before this agent started: wired then, unless the agent died half-way.
      const infra = containers.infra[0]!.info;
      const address = { containerId: infra.id, pid: infra.pid ?? 0, ip: infra.labels[LABEL_POD_IP] ?? '' };
      if (address.ip && address.pid && !(await wiring.isAttached(address))) {
        this.log.info({ id: infra.id.slice(0, 12), podIP: address.ip }, 'sandbox network was not wired; wiring it');
        await this.attachSandbox(wiring, infra, { again: true });
      }
      this.attachedInfra = infraId;
    }

    // Step 5 (already under way when the containers' preparation overlapped the sandbox start)
    if (!prepared) await this.deps.prestart.syncPod(pod, () => this.kick());

    // Step 6
    for (const [name, waitMs] of actions.backoff) {
      const delay = Math.ceil(this.deps.crashBackoff.currentDelayMs(this.crashKeyOf(pod, name)) / 1000);
      this.waiting.set(name, {
        reason: WaitingReason.CrashLoopBackOff,
        message: `back-off ${delay}s restarting failed container=${name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${this.uid})`,
      });
      events.warning(pod, EventReason.BackOff, `Back-off restarting failed container ${name} in pod ${pod.metadata.name}_${pod.metadata.namespace}(${this.uid})`, this.refOf(pod, name));
      this.syncAfter(waitMs);
    }
    if (infraId && actions.start.length) {
      changed = true;
      const init = actions.start.filter((s) => s.type === 'init');
      const apps = actions.start.filter((s) => s.type === 'app');
      for (const s of init) await this.startContainer(pod, s, infraId, podIP);
      // A sidecar that started lets the next init container go: that is the next sync's job, and no
      // runtime event of ours will ask for it (its start was expected).
      if (init.some((s) => isSidecar(s.container))) this.again = true;
      // App containers are independent of each other; starting them together saves a round trip each.
      await Promise.all(apps.map((s) => this.startContainer(pod, s, infraId!, podIP, prepared?.get(s))));
    }

    // Step 7
    if (changed) {
      ({ infos, containers } = await this.observe());
      await this.readMessages(pod, containers);
    }
    for (const [name, list] of containers.byName) if (isRunning(list[0])) this.waiting.delete(name);
    prober.syncPod(this.uid, this.podIPOf(containers), this.runningForProbes(pod, containers));
    const next = this.publishStatus(pod, containers, failure);

    // Step 8
    const infra = containers.infra[0];
    if ((next.phase === 'Succeeded' || next.phase === 'Failed') && infra && isRunning(infra)) {
      const allEnded = [...containers.byName.values()].every((list) => !isRunning(list[0]));
      if (allEnded) {
        this.log.info({ phase: next.phase }, 'pod finished; stopping its infra container');
        this.expect('die', infra.info.id);
        await runtime.stop(infra.info.id, MIN_KILL_GRACE_SECONDS);
      }
    }
  }

  private publishStatus(pod: Pod, containers: PodContainers, failure: { reason: string; message: string } | undefined): PodStatus {
    const next = computePodStatus({
      pod,
      containers,
      network: this.deps.podNetwork,
      hostIP: this.deps.hostIP,
      waiting: this.waiting,
      previous: this.deps.status.latestStatus(this.uid) ?? pod.status,
      now: this.deps.clock.now(),
      probes: this.deps.prober,
      messages: this.messages,
      ...(failure ? { failure } : {}),
    });
    this.deps.status.setStatus(pod, next);
    return next;
  }

  /** The running containers the prober should watch (the newest of each name). */
  private runningForProbes(pod: Pod, containers: PodContainers): ProbedContainer[] {
    const out: ProbedContainer[] = [];
    for (const [name, list] of containers.byName) {
      const latest = list[0];
      const known = this.specOf(pod, name);
      if (!latest || !known || !isRunning(latest)) continue;
      if (known.init && !isSidecar(known.spec)) continue; // regular init containers have no probes
      const started = latest.info.startedAt ? Date.parse(latest.info.startedAt) : NaN;
      out.push({ name, id: latest.info.id, spec: known.spec, startedAtMs: Number.isFinite(started) ? started : this.deps.clock.now() });
    }
    return out;
  }

  private terminationFileOf(info: ContainerInfo): string | undefined {
    const id = identityFromLabels(info.labels);
    if (!id || id.type === 'infra') return undefined;
    return terminationLogPath({ dataDir: this.deps.dataDir, podUid: this.uid, containerName: id.containerName, restartCount: id.restartCount });
  }

  /** Reads the message of every ended container not read yet (the latest two of each name are reported). */
  private async readMessages(pod: Pod, containers: PodContainers): Promise<void> {
    const reads: Promise<void>[] = [];
    for (const [name, list] of containers.byName) {
      const spec = this.specOf(pod, name)?.spec;
      for (const c of list.slice(0, 2)) {
        if (c.info.state !== 'exited' || !c.info.exit || this.messages.has(c.info.id)) continue;
        const file = terminationLogPath({ dataDir: this.deps.dataDir, podUid: this.uid, containerName: name, restartCount: c.identity.restartCount });
        const exitCode = c.info.exit.exitCode;
        reads.push(
          readTerminationMessage({
            file,
            policy: spec?.terminationMessagePolicy,
            exitCode,
            readLogs: () => this.deps.runtime.readLogs(c.info.id, { tailLines: FALLBACK_LOG_LINES, maxBytes: FALLBACK_LOG_BYTES }),
          }).then((m) => {
            this.messages.set(c.info.id, m);
          }),
        );
      }
    }
    await Promise.all(reads);
  }

  private reportOOMKills(pod: Pod, containers: PodContainers): void {
    for (const [name, list] of containers.byName) {
      const c = list[0];
      const exit = c?.info.exit;
      if (!c || !exit?.oomKilled || this.oomReported.has(c.info.id)) continue;
      this.oomReported.add(c.info.id);
      const at = exit.finishedAt ? Date.parse(exit.finishedAt) : NaN;
      if (Number.isFinite(at) && this.deps.clock.now() - at > OOM_EVENT_WINDOW_MS) continue;
      this.deps.events.warning(pod, EventReason.OOMKilling, `Memory cgroup out of memory: container ${name} was OOM-killed`, this.refOf(pod, name));
    }
  }

  /**
   * Stops one container the kubelet way: the Killing event, the preStop hook (if its spec has one) within
   * the grace period, then the stop signal with what is left of the grace (at least 2 s).
   */
  private async killContainer(pod: Pod | undefined, k: KillAction, podIP: string | undefined): Promise<void> {
    const { runtime, clock, events } = this.deps;
    this.log.info({ container: k.containerName, id: k.id.slice(0, 12), reason: k.reason }, 'killing container');
    if (pod && (k.spec || k.eventMessage)) {
      events.normal(pod, EventReason.Killing, k.eventMessage ?? `Stopping container ${k.containerName}`, { name: k.containerName, init: k.init === true });
    }
    let graceSeconds = k.graceSeconds;
    if (pod && k.spec && hasPreStop(k.spec)) {
      const began = clock.now();
      const graceMs = Math.max(MIN_KILL_GRACE_SECONDS, k.graceSeconds) * 1000;
      const r = await runPreStop({ runtime, clock, pod, container: k.spec, containerId: k.id, podIP }, graceMs);
      if (!r.ok) {
        this.log.warn({ container: k.containerName, err: r.message }, 'preStop hook failed');
        events.warning(pod, EventReason.FailedPreStopHook, r.message, { name: k.containerName, init: k.init === true });
      }
      graceSeconds = Math.max(MIN_KILL_GRACE_SECONDS, k.graceSeconds - Math.ceil((clock.now() - began) / 1000));
    }
    this.expect('die', k.id);
    await runtime.stop(k.id, graceSeconds);
    if (k.remove) {
      this.expect('destroy', k.id);
      await runtime.remove(k.id);
    }
  }

  private crashKeyOf(pod: Pod, name: string): string {
    const spec = this.specOf(pod, name)?.spec;
    return spec ? crashBackoffKey(this.uid, name, containerHash(spec)) : '';
  }

  /** Wires a started sandbox that carries its address label (one made by the runtime's own network has none). */
  private async attachSandbox(wiring: SandboxNetwork, infra: ContainerInfo, opts: { again?: boolean } = {}): Promise<void> {
    const ip = infra.labels[LABEL_POD_IP];
    if (!ip) return;
    if (!infra.pid) throw new Error(`infra container ${infra.id.slice(0, 12)} is not running; cannot wire its network`);
    await wiring.attach({ containerId: infra.id, pid: infra.pid, ip, again: opts.again === true });
    this.attachedInfra = infra.id;
  }

  /** The pull (per policy) and prestart hooks of a new container: what its create needs but the sandbox's id. */
  private async prepareContainer(pod: Pod, s: StartAction, podIP: string | undefined): Promise<PreparedContainer | undefined> {
    const { runtime, events, clock } = this.deps;
    const c = s.container;
    const ref: ContainerRef = { name: c.name, init: s.type === 'init' };
    const log = this.log.child({ container: c.name });
    // Pull, with its own backoff per image.
    const policy = pullPolicyOf(c);
    const pullKey = pullBackoffKey(this.uid, c.image);
    const pullWait = this.deps.pullBackoff.remainingSinceLast(pullKey);
    if (pullWait > 0) {
      this.waiting.set(c.name, { reason: WaitingReason.ImagePullBackOff, message: `Back-off pulling image "${c.image}"` });
      events.normal(pod, EventReason.BackOff, `Back-off pulling image "${c.image}"`, ref);
      events.warning(pod, EventReason.Failed, `Error: ${WaitingReason.ImagePullBackOff}`, ref);
      this.syncAfter(pullWait);
      return undefined;
    }
    const pullStarted = clock.now();
    try {
      const image = await runtime.ensureImage(c.image, policy, {
        onPulling: () => events.normal(pod, EventReason.Pulling, `Pulling image "${c.image}"`, ref),
        credentials: async () => {
          const found = await pullCredentialsFor({ client: this.deps.client, pod, image: c.image });
          if (found.problems.length) events.warning(pod, FAILED_PULL_SECRET_REASON, failedPullSecretMessage(found.problems));
          return found.credentials;
        },
      });
      this.deps.pullBackoff.reset(pullKey);
      if (image.pulled) {
        const took = ((clock.now() - pullStarted) / 1000).toFixed(3);
        const size = image.size !== undefined ? ` Image size: ${image.size} bytes.` : '';
        events.normal(pod, EventReason.Pulled, `Successfully pulled image "${c.image}" in ${took}s (${took}s including waiting).${size}`, ref);
      } else {
        events.normal(pod, EventReason.Pulled, `Container image "${c.image}" already present on machine`, ref);
      }
    } catch (err) {
      if (!(err instanceof ImagePullError)) throw err;
      const delay = this.deps.pullBackoff.next(pullKey);
      const reason = err.neverPull ? WaitingReason.ErrImageNeverPull : WaitingReason.ErrImagePull;
      this.waiting.set(c.name, { reason, message: err.message });
      events.warning(pod, EventReason.Failed, err.neverPull ? err.message : `Failed to pull image "${c.image}": ${err.message}`, ref);
      events.warning(pod, EventReason.Failed, `Error: ${reason}`, ref);
      log.warn({ image: c.image, err: err.message }, 'image pull failed');
      // A sync soon reports ImagePullBackOff (as the kubelet's next sync would); the retry comes after the delay.
      this.syncAfter(Math.min(delay, this.deps.retryMs));
      return undefined;
    }
    try {
      const config = await this.deps.prestart.forContainer({ pod, container: c, podIP, restartCount: s.restartCount });
      return { specFor: (infraId) => appSpec({ pod, container: c, nodeName: this.deps.nodeName, infraId, restartCount: s.restartCount, type: s.type, config }) };
    } catch (err) {
      const reason = isContainerConfigError(err) ? err.reason : WaitingReason.CreateContainerConfigError;
      this.waiting.set(c.name, { reason, message: (err as Error).message });
      events.warning(pod, EventReason.Failed, `Error: ${(err as Error).message}`, ref);
      this.syncAfter(this.deps.retryMs * 10);
      return undefined;
    }
  }

  /**
   * Pull per policy → prestart hooks → create → start → postStart for one container; failures become
   * waiting reasons, not exceptions. `prepared` is the pull-and-config step when it already ran (it
   * overlaps the start of a new sandbox).
   */
  private async startContainer(pod: Pod, s: StartAction, infraId: string, podIP: string | undefined, prepared?: Promise<PreparedContainer | undefined>): Promise<void> {
    const { runtime, events } = this.deps;
    const c = s.container;
    const ref: ContainerRef = { name: c.name, init: s.type === 'init' };
    const log = this.log.child({ container: c.name });
    if (s.existingId) {
      this.expect('start', s.existingId);
      await runtime.start(s.existingId);
      this.waiting.delete(c.name);
      events.normal(pod, EventReason.Started, `Started container ${c.name}`, ref);
      await this.postStart(pod, c, ref, s.existingId, podIP);
      return;
    }
    const ready = await (prepared ?? this.prepareContainer(pod, s, podIP));
    if (!ready) return;
    const spec = ready.specFor(infraId);
    let id: string;
    try {
      const created = await runtime.createApp(spec);
      id = created.id;
      events.normal(pod, EventReason.Created, `Created container ${c.name}`, ref);
    } catch (err) {
      this.waiting.set(c.name, { reason: WaitingReason.CreateContainerError, message: (err as Error).message });
      events.warning(pod, EventReason.Failed, `Error: ${(err as Error).message}`, ref);
      log.warn({ err: (err as Error).message }, 'container create failed');
      this.syncAfter(this.deps.retryMs * 10);
      return;
    }
    // The restart counts against the backoff whether or not the start succeeds.
    if (s.crashKey !== undefined) this.deps.crashBackoff.next(s.crashKey, s.failedAt);
    try {
      this.expect('start', id);
      await runtime.start(id);
      this.waiting.delete(c.name);
      events.normal(pod, EventReason.Started, `Started container ${c.name}`, ref);
      log.info({ id: id.slice(0, 12), restartCount: s.restartCount }, 'container started');
    } catch (err) {
      // The container is left in place; the runtime records why it could not run and the next sync restarts it.
      this.waiting.set(c.name, { reason: WaitingReason.RunContainerError, message: (err as Error).message });
      events.warning(pod, EventReason.Failed, `Error: ${(err as Error).message}`, ref);
      log.warn({ err: (err as Error).message }, 'container start failed');
      if (s.crashKey === undefined) this.deps.crashBackoff.next(crashBackoffKey(this.uid, c.name, containerHash(c)), this.deps.clock.now());
      this.syncAfter(this.deps.retryMs);
      return;
    }
    await this.postStart(pod, c, ref, id, podIP);
  }

  /** Runs postStart; a failure kills the container, which is then restarted per policy (with backoff). */
  private async postStart(pod: Pod, c: Container, ref: ContainerRef, id: string, podIP: string | undefined): Promise<void> {
    const { runtime, clock, events } = this.deps;
    const r = await runPostStart({ runtime, clock, pod, container: c, containerId: id, podIP });
    if (r.ok) return;
    this.log.warn({ container: c.name, err: r.message }, 'postStart hook failed');
    events.warning(pod, EventReason.FailedPostStartHook, r.message, ref);
    await this.killContainer(pod, { id, containerName: c.name, graceSeconds: graceSecondsOf(pod), reason: 'postStart hook failed', remove: false, init: ref.init, eventMessage: 'FailedPostStartHook' }, podIP);
    this.again = true;
  }

  /**
   * Tears the pod down: app containers get their preStop hook and SIGTERM within the grace period
   * (deletionGracePeriodSeconds, else spec.terminationGracePeriodSeconds, else 30 s), then SIGKILL;
   * sidecars are stopped after them, the last declared first, with what is left of the grace; then
   * everything is removed, and a pod still in the API is deleted for real (grace 0, guarded by its uid).
   */
  private async terminate(): Promise<void> {
    const { runtime, client, clock } = this.deps;
    const pod = this.pod;
    const { infos, containers } = await this.observe();
    // A stray (no pod object) is stopped with the grace period recorded on its containers.
    const labelGrace = Math.max(0, ...[...containers.infra, ...[...containers.byName.values()].flat()].map((c) => c.identity.terminationGraceSeconds));
    const grace = Math.max(MIN_KILL_GRACE_SECONDS, pod ? (pod.metadata.deletionGracePeriodSeconds ?? graceSecondsOf(pod)) : labelGrace);
    const all = [...containers.byName.values()].flat();
    if (infos.length) this.log.info({ containers: infos.length, graceSeconds: grace }, 'stopping pod');
    const podIP = this.podIPOf(containers);
    const began = clock.now();
    const killOf = (c: ObservedContainer, graceSeconds: number): KillAction => {
      const known = pod ? this.specOf(pod, c.identity.containerName) : undefined;
      const k: KillAction = { id: c.info.id, containerName: c.identity.containerName, graceSeconds, reason: 'pod is being deleted', remove: false };
      if (known) {
        k.init = known.init;
        if (c.identity.hash === containerHash(known.spec)) k.spec = known.spec;
      }
      return k;
    };
    const sidecarNames = (pod?.spec.initContainers ?? []).filter(isSidecar).map((c) => c.name);
    const running = all.filter((c) => isRunning(c));
    const first = running.filter((c) => !sidecarNames.includes(c.identity.containerName));
    await Promise.all(first.map((c) => this.killContainer(pod, killOf(c, grace), podIP)));
    for (const name of [...sidecarNames].reverse()) {
      const left = Math.max(MIN_KILL_GRACE_SECONDS, grace - Math.ceil((clock.now() - began) / 1000));
      for (const c of running.filter((x) => x.identity.containerName === name)) await this.killContainer(pod, killOf(c, left), podIP);
    }
    this.deps.prober.removePod(this.uid);
    await Promise.all(all.map((c) => runtime.remove(c.info.id)));
    await Promise.all(containers.infra.map((c) => runtime.remove(c.info.id)));
    await this.deps.prestart.cleanup(this.uid);

    if (pod && !this.removed) {
      try {
        await client.delete(CORE.pods, {
          namespace: pod.metadata.namespace ?? 'default',
          name: pod.metadata.name ?? '',
          gracePeriodSeconds: 0,
          preconditions: { uid: this.uid },
        });
        this.log.info('pod deleted');
      } catch (err) {
        // Gone already, or a different pod now has the name: either way ours is finished.
        if (!(isApiError(err) && (err.reason === 'NotFound' || err.reason === 'Conflict'))) throw err;
      }
    }
    this.deps.status.forget(this.uid);
    this.deps.crashBackoff.resetPrefix(`${this.uid}/`);
    this.deps.pullBackoff.resetPrefix(`${this.uid}/`);
    this.finished = true;
    this.clearTimer();
    this.onFinished(this.uid);
  }
}
