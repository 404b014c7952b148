/**
 * A pod worker owns one pod (by uid): every sync of that pod runs here, one at a time, so no two
 * operations on the same pod's containers ever interleave. Requests that arrive while a sync runs are
 * coalesced into one more sync. The worker ends after the pod is torn down.
 */
import type { Logger } from 'pino';
import { isApiError } from '../src/api/errors.js';
import type { ContainerStateWaiting, Pod } from '../src/api/types.js';
import { CORE, type Client } from '../src/client/client.js';
import type { Clock, TimerHandle } from './clock.js';
import { appSpec, containerHash, graceSecondsOf, infraSpec } from './container-config.js';
import { labelFilter } from './labels.js';
import { computePodActions, type StartAction } from './pod-actions.js';
import { groupContainers, isRunning, type PodContainers } from './pod-containers.js';
import { computePodStatus } from './pod-status.js';
import { crashBackoffKey, pullBackoffKey, type Backoff } from './restart-backoff.js';
import { WaitingReason } from './restart-policy.js';
import { defaultPullPolicy, ImagePullError, type ContainerInfo, type ContainerRuntime, type RuntimeEvent } from './runtime/runtime.js';
import type { StatusManager } from './status.js';

/** What every worker shares, owned by the pod manager. */
export interface PodWorkerDeps {
  nodeName: string;
  podNetwork: string;
  hostIP: string;
  runtime: ContainerRuntime;
  client: Client;
  status: StatusManager;
  /** crash-loop backoff */
  crashBackoff: Backoff;
  /** image pull backoff */
  pullBackoff: Backoff;
  clock: Clock;
  log: Logger;
  /** delay before retrying a sync that threw */
  retryMs: number;
}

/** Kubernetes' minimum grace when killing a container (a 0 from a force delete still gets a moment). */
const MIN_KILL_GRACE_SECONDS = 2;
/** cap of the retry delay after failed syncs */
const MAX_RETRY_MS = 60_000;

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
    for (const key of [`${ev.action}:${ev.containerId}`, ev.name ? `${ev.action}:${ev.name}` : '']) {
      if (key && this.expected.delete(key)) return;
    }
    this.kick();
  }

  private expect(action: string, idOrName: string): void {
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
    this.running = this.loop().finally(() => {
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

  private async observe(): Promise<{ infos: ContainerInfo[]; containers: PodContainers }> {
    const summaries = await this.deps.runtime.list({ labels: labelFilter({ nodeName: this.deps.nodeName, podUid: this.uid }) });
    const infos = (await Promise.all(summaries.map((s) => this.deps.runtime.inspect(s.id)))).filter((i): i is ContainerInfo => i !== undefined);
    return { infos, containers: groupContainers(infos) };
  }

  /**
   * Syncs one pod, in kubelet order:
   * 1. observe the pod's containers (by labels) and compute the actions (pod-actions.ts);
   * 2. kill the infra container if it must change (gone, dead, different spec) — with its app containers;
   * 3. kill unwanted containers (spec hash changed, name no longer in the spec), remove old exited ones;
   * 4. create the infra container if missing;
   * 5. init containers (one at a time), then app containers: pull per policy → create → start;
   * 6. compute the status from what now runs and hand it to the status manager;
   * 7. stop the infra container of a finished pod; schedule a resync for the earliest backoff expiry.
   */
  private async sync(pod: Pod): Promise<void> {
    const { runtime, status, clock } = this.deps;
    for (const [k, at] of this.expected) if (clock.now() - at > 30_000) this.expected.delete(k); // events that never came
    // Step 1
    let { containers } = await this.observe();
    const previous = status.latestStatus(this.uid) ?? pod.status;
    const actions = computePodActions({ pod, containers, network: this.deps.podNetwork, backoff: this.deps.crashBackoff, phase: previous?.phase });
    let changed = false;

    // Steps 2–3: kills run in parallel (each may wait out its grace period), then removals.
    if (actions.kill.length) {
      changed = true;
      await Promise.all(
        actions.kill.map(async (k) => {
          this.log.info({ container: k.containerName, id: k.id.slice(0, 12), reason: k.reason }, 'killing container');
          this.expect('die', k.id);
          await runtime.stop(k.id, k.graceSeconds);
          if (k.remove) {
            this.expect('destroy', k.id);
            await runtime.remove(k.id);
          }
        }),
      );
    }
    if (actions.remove.length) {
      changed = true;
      await Promise.all(
        actions.remove.map((id) => {
          this.expect('destroy', id);
          return runtime.remove(id);
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
    if (actions.createInfra) {
      changed = true;
      const spec = infraSpec({ pod, nodeName: this.deps.nodeName, network: this.deps.podNetwork, attempt: actions.createInfra.attempt });
      this.expect('start', spec.name);
      const created = await runtime.runInfra(spec);
      infraId = created.id;
      this.log.info({ id: infraId.slice(0, 12), attempt: actions.createInfra.attempt }, 'infra container started');
    }

    // Step 5
    for (const [name, waitMs] of actions.backoff) {
      const delay = Math.ceil(this.deps.crashBackoff.currentDelayMs(this.crashKeyOf(pod, name)) / 1000);
      this.waiting.set(name, {
        reason: WaitingReason.CrashLoopBackOff,
        message: `back-off ${delay}s restarting failed container=${name} pod=${pod.metadata.name}_${pod.metadata.namespace}(${this.uid})`,
      });
      this.syncAfter(waitMs);
    }
    if (infraId && actions.start.length) {
      changed = true;
      const init = actions.start.filter((s) => s.type === 'init');
      const apps = actions.start.filter((s) => s.type === 'app');
      for (const s of init) await this.startContainer(pod, s, infraId);
      // App containers are independent of each other; starting them together saves a round trip each.
      await Promise.all(apps.map((s) => this.startContainer(pod, s, infraId!)));
    }

    // Step 6
    if (changed) ({ containers } = await this.observe());
    for (const [name, list] of containers.byName) if (isRunning(list[0])) this.waiting.delete(name);
    const next = computePodStatus({
      pod,
      containers,
      network: this.deps.podNetwork,
      hostIP: this.deps.hostIP,
      waiting: this.waiting,
      previous,
      now: clock.now(),
    });
    status.setStatus(pod, next);

    // Step 7
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

  private crashKeyOf(pod: Pod, name: string): string {
    const spec = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === name);
    return spec ? crashBackoffKey(this.uid, name, containerHash(spec)) : '';
  }

  /** Pull per policy → create → start one container; failures become waiting reasons, not exceptions. */
  private async startContainer(pod: Pod, s: StartAction, infraId: string): Promise<void> {
    const { runtime } = this.deps;
    const c = s.container;
    const log = this.log.child({ container: c.name });
    if (s.existingId) {
      this.expect('start', s.existingId);
      await runtime.start(s.existingId);
      this.waiting.delete(c.name);
      return;
    }
    // Pull, with its own backoff per image.
    const policy = c.imagePullPolicy ?? defaultPullPolicy(c.image);
    const pullKey = pullBackoffKey(this.uid, c.image);
    const pullWait = this.deps.pullBackoff.remainingSinceLast(pullKey);
    if (pullWait > 0) {
      this.waiting.set(c.name, { reason: WaitingReason.ImagePullBackOff, message: `Back-off pulling image "${c.image}"` });
      this.syncAfter(pullWait);
      return;
    }
    try {
      await runtime.ensureImage(c.image, policy);
      this.deps.pullBackoff.reset(pullKey);
    } catch (err) {
      if (!(err instanceof ImagePullError)) throw err;
      const delay = this.deps.pullBackoff.next(pullKey);
      this.waiting.set(c.name, { reason: err.neverPull ? WaitingReason.ErrImageNeverPull : WaitingReason.ErrImagePull, message: err.message });
      log.warn({ image: c.image, err: err.message }, 'image pull failed');
      // A sync soon reports ImagePullBackOff (as the kubelet's next sync would); the retry comes after the delay.
      this.syncAfter(Math.min(delay, this.deps.retryMs));
      return;
    }
    let spec;
    try {
      spec = appSpec({ pod, container: c, nodeName: this.deps.nodeName, infraId, restartCount: s.restartCount, type: s.type });
    } catch (err) {
      this.waiting.set(c.name, { reason: WaitingReason.CreateContainerConfigError, message: (err as Error).message });
      this.syncAfter(this.deps.retryMs * 10);
      return;
    }
    let id: string;
    try {
      const created = await runtime.createApp(spec);
      id = created.id;
    } catch (err) {
      this.waiting.set(c.name, { reason: WaitingReason.CreateContainerError, message: (err as Error).message });
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
      log.info({ id: id.slice(0, 12), restartCount: s.restartCount }, 'container started');
    } catch (err) {
      // The container is left in place; the runtime records why it could not run and the next sync restarts it.
      this.waiting.set(c.name, { reason: WaitingReason.RunContainerError, message: (err as Error).message });
      log.warn({ err: (err as Error).message }, 'container start failed');
      if (s.crashKey === undefined) this.deps.crashBackoff.next(crashBackoffKey(this.uid, c.name, containerHash(c)), this.deps.clock.now());
      this.syncAfter(this.deps.retryMs);
    }
  }

  /**
   * Tears the pod down: app containers get SIGTERM and the grace period (deletionGracePeriodSeconds,
   * else spec.terminationGracePeriodSeconds, else 30 s), then SIGKILL; then everything is removed, and a
   * pod still in the API is deleted for real (grace 0, guarded by its uid).
   */
  private async terminate(): Promise<void> {
    const { runtime, client } = this.deps;
    const pod = this.pod;
    const { infos, containers } = await this.observe();
    // A stray (no pod object) is stopped with the grace period recorded on its containers.
    const labelGrace = Math.max(0, ...[...containers.infra, ...[...containers.byName.values()].flat()].map((c) => c.identity.terminationGraceSeconds));
    const grace = Math.max(
      MIN_KILL_GRACE_SECONDS,
      pod ? (pod.metadata.deletionGracePeriodSeconds ?? graceSecondsOf(pod)) : labelGrace,
    );
    const apps = [...containers.byName.values()].flat();
    if (infos.length) this.log.info({ containers: infos.length, graceSeconds: grace }, 'stopping pod');
    await Promise.all(apps.filter((c) => isRunning(c)).map((c) => runtime.stop(c.info.id, grace)));
    await Promise.all(apps.map((c) => runtime.remove(c.info.id)));
    await Promise.all(containers.infra.map((c) => runtime.remove(c.info.id)));

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
