/**
 * Owns the computation of a pod's status from its observed containers (the kubelet's generateAPIPodStatus):
 * phase, conditions, container statuses, IPs and QoS class. Pure; the status manager decides when to write.
 */
import type {
  Container,
  ContainerState,
  ContainerStateTerminated,
  ContainerStateWaiting,
  ContainerStatus,
  Pod,
  PodCondition,
  PodPhase,
  PodStatus,
} from '../../src/api/types.js';
import { kubeTime } from '../clock.js';
import { sandboxIPOf } from '../node/labels.js';
import { isRunning, type ObservedContainer, type PodContainers } from './pod-containers.js';
import { isSidecar } from '../prober/types.js';
import { qosClassOf } from './qos.js';
import { effectiveRestartPolicy, terminatedReason, WaitingReason } from './restart-policy.js';
import type { ContainerInfo } from '../runtime/runtime.js';

export interface ComputeStatusInput {
  pod: Pod;
  containers: PodContainers;
  /** the network the pod IP is read from */
  network: string;
  hostIP: string;
  /** why a container is not running, when the worker knows better than the runtime (pull errors, backoff) */
  waiting: Map<string, ContainerStateWaiting>;
  /** the latest status the agent knows (written or read from the API) */
  previous: PodStatus | undefined;
  now: number;
  /** probe results; without it every running container counts as started and ready */
  probes?: ProbeView;
  /** termination messages by runtime container id */
  messages?: Map<string, string>;
  /** the agent failed the pod itself (activeDeadlineSeconds): phase Failed with this reason and message */
  failure?: { reason: string; message: string };
}

/** What the status needs from the prober. */
export interface ProbeView {
  started(containerId: string, spec: Container): boolean;
  ready(containerId: string, spec: Container): boolean;
}

const ALWAYS_READY: ProbeView = { started: () => true, ready: () => true };

/** Condition types the agent owns; any other condition on the pod is kept as it is. */
const OWN_CONDITIONS = ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'];

export function isTerminalPhase(phase: string | undefined): phase is 'Succeeded' | 'Failed' {
  return phase === 'Succeeded' || phase === 'Failed';
}

function time(s: string | undefined): string | undefined {
  if (!s) return undefined;
  const ms = Date.parse(s);
  return Number.isFinite(ms) ? kubeTime(ms) : undefined;
}

export function containerIdOf(info: ContainerInfo): string {
  return `docker://${info.id}`;
}

export function imageIdOf(info: ContainerInfo): string {
  return info.imageDigest ? `docker-pullable://${info.imageDigest}` : `docker://${info.imageId}`;
}

function terminatedOf(c: ObservedContainer | undefined, messages: Map<string, string> | undefined): ContainerStateTerminated | undefined {
  const exit = c?.info.exit;
  if (!c || c.info.state !== 'exited' || !exit) return undefined;
  const t: ContainerStateTerminated = { exitCode: exit.exitCode, reason: terminatedReason(exit) };
  // The container's own message wins; the runtime's error explains a process that never ran.
  const message = messages?.get(c.info.id) || exit.error;
  if (message) t.message = message;
  const startedAt = time(exit.startedAt);
  if (startedAt) t.startedAt = startedAt;
  const finishedAt = time(exit.finishedAt);
  if (finishedAt) t.finishedAt = finishedAt;
  t.containerID = containerIdOf(c.info);
  return t;
}

function containerStatusOf(
  spec: Container,
  list: ObservedContainer[],
  hint: ContainerStateWaiting | undefined,
  opts: { init: boolean; blockedByInit: boolean; probes: ProbeView; messages: Map<string, string> | undefined },
): ContainerStatus {
  const sidecar = opts.init && isSidecar(spec);
  const latest = list[0];
  const status: ContainerStatus = {
    name: spec.name,
    state: {},
    lastState: {},
    ready: false,
    restartCount: latest?.identity.restartCount ?? 0,
    image: spec.image,
    imageID: latest ? imageIdOf(latest.info) : '',
    started: false,
  };
  const previousRun = terminatedOf(list[1], opts.messages);
  if (latest && isRunning(latest)) {
    const running: ContainerState['running'] = {};
    const startedAt = time(latest.info.startedAt);
    if (startedAt) running.startedAt = startedAt;
    status.state = { running };
    if (previousRun) status.lastState = { terminated: previousRun };
    status.started = opts.probes.started(latest.info.id, spec);
    // A regular init container is never ready while it runs; app containers and sidecars follow their probes.
    status.ready = (!opts.init || sidecar) && opts.probes.ready(latest.info.id, spec);
    status.containerID = containerIdOf(latest.info);
    return status;
  }
  const ended = terminatedOf(latest, opts.messages);
  if (hint) {
    status.state = { waiting: { ...hint } };
    const last = ended ?? previousRun;
    if (last) status.lastState = { terminated: last };
    if (latest) status.containerID = containerIdOf(latest.info);
    return status;
  }
  if (ended) {
    status.state = { terminated: ended };
    if (previousRun) status.lastState = { terminated: previousRun };
    status.containerID = containerIdOf(latest!.info);
    status.ready = opts.init && !sidecar && ended.exitCode === 0;
    return status;
  }
  status.state = { waiting: { reason: opts.blockedByInit ? WaitingReason.PodInitializing : WaitingReason.ContainerCreating } };
  if (previousRun) status.lastState = { terminated: previousRun };
  return status;
}

/**
 * The kubelet's phase rules (getPhase). Regular init containers: a failed one under Never fails the pod,
 * an unfinished one keeps it Pending. Sidecars (restartable init containers) keep it Pending until they
 * started, count as running while they run, and are ignored once terminated. App containers: Running
 * while any container runs; once none runs, Always means Running (they restart), all-zero exits mean
 * Succeeded, and a failure means Failed under Never — so a pod is Failed only once every container ended.
 */
export function computePhase(pod: Pod, init: ContainerStatus[], apps: ContainerStatus[]): PodPhase {
  const policy = effectiveRestartPolicy(pod.spec.restartPolicy);
  const initSpecs = pod.spec.initContainers ?? [];
  let pendingInit = 0;
  let failedInit = 0;
  let pendingSidecars = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  let unknown = 0;
  const sidecars = new Set(initSpecs.filter(isSidecar).map((c) => c.name));
  // Init containers by their statuses, plus any the spec has that report none yet.
  const initEntries: Array<{ name: string; s: ContainerStatus | undefined }> = init.map((s) => ({ name: s.name, s }));
  for (const c of initSpecs) if (!init.some((s) => s.name === c.name)) initEntries.push({ name: c.name, s: undefined });
  for (const { name, s } of initEntries) {
    if (sidecars.has(name)) {
      if (!s) unknown++;
      else if (s.state?.running) {
        if (!s.started) pendingSidecars++;
        running++;
      } else if (s.state?.waiting && !s.lastState?.terminated) pendingSidecars++;
      else if (!s.state?.terminated && !s.state?.waiting) pendingSidecars++;
      continue;
    }
    if (!s) pendingInit++;
    else if (s.state?.running) pendingInit++;
    else if (s.state?.terminated) {
      if (s.state.terminated.exitCode !== 0) failedInit++;
    } else if (s.state?.waiting && s.lastState?.terminated) {
      if (s.lastState.terminated.exitCode !== 0) failedInit++;
      else pendingInit++;
    } else pendingInit++;
  }
  for (const s of apps) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }
  if (failedInit > 0 && policy === 'Never') return 'Failed';
  if (pendingInit > 0 || pendingSidecars > 0 || waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(type: string, ok: boolean, previous: PodCondition[] | undefined, now: number, reason?: string, message?: string): PodCondition {
  const status = ok ? 'True' : 'False';
  const before = previous?.find((c) => c.type === type);
  const c: PodCondition = {
    type,
    status,
    lastProbeTime: null,
    // Only a change of status moves the transition time.
    lastTransitionTime: before && before.status === status && before.lastTransitionTime ? before.lastTransitionTime : kubeTime(now),
  };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

/** The pod's status as the agent sees it now. */
export function computePodStatus(input: ComputeStatusInput): PodStatus {
  const { pod, containers, previous, now } = input;
  const listOf = (name: string) => containers.byName.get(name) ?? [];

  const probes = input.probes ?? ALWAYS_READY;
  const initStatuses: ContainerStatus[] = [];
  const incompleteInit: string[] = [];
  for (const spec of pod.spec.initContainers ?? []) {
    const s = containerStatusOf(spec, listOf(spec.name), input.waiting.get(spec.name), { init: true, blockedByInit: false, probes, messages: input.messages });
    initStatuses.push(s);
    // A regular init container is done once it exited 0; a sidecar once it started.
    const done = isSidecar(spec) ? s.started === true && s.state?.running !== undefined : s.state?.terminated?.exitCode === 0;
    if (!done) incompleteInit.push(spec.name);
  }
  // Once any app container exists the pod was initialized, and stays so when a sidecar restarts later.
  const appsCreated = pod.spec.containers.some((c) => listOf(c.name).length > 0);
  const initDone = appsCreated || incompleteInit.length === 0;
  const appStatuses = pod.spec.containers
    .map((spec) => containerStatusOf(spec, listOf(spec.name), input.waiting.get(spec.name), { init: false, blockedByInit: !initDone, probes, messages: input.messages }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  let phase = computePhase(pod, initStatuses, appStatuses);
  let reason: string | undefined;
  let message: string | undefined;
  if (input.failure) {
    phase = 'Failed';
    ({ reason, message } = input.failure);
  }
  // Terminal is forever: a finished pod never runs again, whatever the runtime shows later.
  const previousPhase = previous?.phase;
  if (isTerminalPhase(previousPhase)) {
    phase = previousPhase;
    reason = previous?.reason;
    message = previous?.message;
  }

  const infra = containers.infra[0];
  const infraUp = isRunning(infra);
  // a hostNetwork pod has the node's address
  const liveIP = infraUp ? (input.pod.spec.hostNetwork === true ? input.hostIP : sandboxIPOf(infra!.info, input.network)) : undefined;
  const podIP = liveIP ?? previous?.podIP;

  const prevConditions = previous?.conditions;
  const sidecarNames = new Set((pod.spec.initContainers ?? []).filter(isSidecar).map((c) => c.name));
  const unready = [...initStatuses.filter((s) => sidecarNames.has(s.name)), ...appStatuses].filter((s) => !s.ready).map((s) => s.name);
  const completed = phase === 'Succeeded';
  const readyReason = completed ? 'PodCompleted' : unready.length ? 'ContainersNotReady' : undefined;
  const readyMessage = !completed && unready.length ? `containers with unready status: [${unready.join(' ')}]` : undefined;
  const conditions: PodCondition[] = [
    condition('PodReadyToStartContainers', infraUp, prevConditions, now),
    condition(
      'Initialized',
      initDone || completed,
      prevConditions,
      now,
      completed ? 'PodCompleted' : !initDone ? 'ContainersNotInitialized' : undefined,
      !completed && !initDone ? `containers with incomplete status: [${incompleteInit.join(' ')}]` : undefined,
    ),
    condition('Ready', unready.length === 0 && !completed, prevConditions, now, readyReason, readyMessage),
    condition('ContainersReady', unready.length === 0 && !completed, prevConditions, now, readyReason, readyMessage),
    condition('PodScheduled', true, prevConditions, now),
  ];
  for (const c of prevConditions ?? []) if (!OWN_CONDITIONS.includes(c.type)) conditions.push(c);

  const status: PodStatus = {
    phase,
    conditions,
    hostIP: input.hostIP,
    hostIPs: [{ ip: input.hostIP }],
    startTime: previous?.startTime ?? kubeTime(now),
    containerStatuses: appStatuses,
    qosClass: qosClassOf(pod.spec),
  };
  if (podIP) {
    status.podIP = podIP;
    status.podIPs = [{ ip: podIP }];
  }
  if (initStatuses.length) status.initContainerStatuses = initStatuses;
  if (reason) status.reason = reason;
  if (message) status.message = message;
  return status;
}

/**
 * The status with the pod and every container not ready (the runtime stopped answering): Ready and
 * ContainersReady False, as Kubernetes' MarkPodsNotReady sets them; container states stay as last seen.
 */
export function notReadyStatus(previous: PodStatus, now: number): PodStatus {
  const next = structuredClone(previous);
  for (const c of next.conditions ?? []) {
    if ((c.type === 'Ready' || c.type === 'ContainersReady') && c.status !== 'False') {
      c.status = 'False';
      c.lastTransitionTime = kubeTime(now);
    }
  }
  for (const list of [next.containerStatuses, next.initContainerStatuses]) for (const c of list ?? []) c.ready = false;
  return next;
}
