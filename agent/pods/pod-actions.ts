/**
 * Owns the decision of what one sync must do to a pod's containers (the kubelet's computePodActions):
 * a pure function from the pod spec and the observed containers to a list of kills, removals, an optional
 * new infra container, and container starts. The pod worker carries the actions out; nothing here does I/O.
 */
import type { Container, Pod, RestartPolicy } from '../../src/api/types.js';
import { containerHash, graceSecondsOf, infraHash } from './container-config.js';
import { finishedAtMs, isRunning, type ObservedContainer, type PodContainers } from './pod-containers.js';
import { isSidecar, PROBE_LABEL, type ProbeKind } from '../prober/types.js';
import { crashBackoffKey, type Backoff } from './restart-backoff.js';
import { effectiveRestartPolicy, shouldRestart } from './restart-policy.js';

export interface KillAction {
  id: string;
  containerName: string;
  graceSeconds: number;
  reason: string;
  /** remove it once stopped (it has no future use: stray name, duplicate) */
  remove: boolean;
  /** the container's spec, when it still has one (its preStop hook runs before the stop) */
  spec?: Container;
  /** an init container or sidecar (event field path) */
  init?: boolean;
  /** the Killing event's message, when it says more than "Stopping container" */
  eventMessage?: string;
  /** the kill makes room for a restart: sync again right after it */
  restart?: boolean;
  /** sidecars stop after the app containers (in reverse order): higher goes later */
  order?: number;
}

export interface StartAction {
  container: Container;
  type: 'app' | 'init';
  restartCount: number;
  /** a container that was created but never started (agent crashed in between): start it as is */
  existingId?: string;
  /** set when this start restarts a failed container: the crash backoff is advanced from failedAt */
  crashKey?: string;
  failedAt?: number;
}

export interface PodActions {
  kill: KillAction[];
  /** exited containers to remove (older than the previous one of their name, or strays) */
  remove: string[];
  /** start a new infra container with this attempt number */
  createInfra?: { attempt: number };
  /** the running infra container app containers join (when not creating one) */
  infraId?: string;
  /** containers to create and start, in order (init containers: at most one) */
  start: StartAction[];
  /** containers held back by crash backoff: name → ms until the restart is allowed */
  backoff: Map<string, number>;
  /** the pod is finished: stop its infra container (kept for its record) */
  stopInfra?: string;
}

export interface ComputeActionsInput {
  pod: Pod;
  containers: PodContainers;
  /** the network infra containers join (part of the infra hash) */
  network: string;
  backoff: Backoff;
  /** the pod's latest phase; Succeeded/Failed pods never run anything again */
  phase?: string | undefined;
  /** probe results; without it every container counts as started and healthy */
  probes?: ProbeActionsView;
}

/** What the actions need from the prober. */
export interface ProbeActionsView {
  /** startup probe passed (or none) */
  started(containerId: string, spec: Container): boolean;
  /** 'liveness' / 'startup' when that probe failed: the container is killed */
  failed(containerId: string): ProbeKind | undefined;
}

const NO_PROBES: ProbeActionsView = { started: () => true, failed: () => undefined };

/** Grace for the pause container: it exits on SIGTERM at once, the wait is only a safety net. */
const INFRA_GRACE_SECONDS = 2;

/**
 * Decides one sync, in kubelet order:
 * 1. containers under names the spec no longer has, and older duplicates, are killed/removed;
 * 2. a finished pod (Succeeded/Failed) only has its running parts stopped;
 * 3. if the infra container is missing, dead or built from a different spec, a new one is planned and
 *    every running container is killed — except for restartPolicy Never pods that already ran, which
 *    are not brought back;
 * 4. init containers run one at a time, each to success, before any app container; a sidecar
 *    (restartPolicy Always) only has to start (pass its startup probe) and is kept running from then on,
 *    restarted whatever the pod's policy;
 * 5. app containers are started when missing, replaced when their spec hash changed, killed when their
 *    liveness or startup probe failed, and restarted after exiting when the restart policy says so,
 *    subject to crash backoff;
 * 6. once every app container has finished for good, the sidecars are stopped, last one first.
 */
export function computePodActions(input: ComputeActionsInput): PodActions {
  const { pod, containers } = input;
  const actions: PodActions = { kill: [], remove: [], start: [], backoff: new Map() };
  const probes = input.probes ?? NO_PROBES;
  const grace = graceSecondsOf(pod);
  const policy = effectiveRestartPolicy(pod.spec.restartPolicy);
  const initSpecs = pod.spec.initContainers ?? [];
  const wanted = new Set([...initSpecs, ...pod.spec.containers].map((c) => c.name));

  const killOrRemove = (c: ObservedContainer, reason: string, graceSeconds = grace) => {
    if (isRunning(c)) actions.kill.push({ id: c.info.id, containerName: c.identity.containerName, graceSeconds, reason, remove: true });
    else actions.remove.push(c.info.id);
  };
  const specOf = new Map<string, { spec: Container; init: boolean }>();
  for (const c of initSpecs) specOf.set(c.name, { spec: c, init: true });
  for (const c of pod.spec.containers) specOf.set(c.name, { spec: c, init: false });
  const kill = (c: ObservedContainer, reason: string, graceSeconds = grace, extra: Partial<KillAction> = {}) => {
    if (!isRunning(c)) return;
    const known = specOf.get(c.identity.containerName);
    const k: KillAction = { id: c.info.id, containerName: c.identity.containerName, graceSeconds, reason, remove: false, ...extra };
    // The preStop hook belongs to the spec the container was made from; a replaced spec's hook may differ.
    if (known && c.identity.hash === containerHash(known.spec)) k.spec = known.spec;
    if (known?.init) k.init = true;
    actions.kill.push(k);
  };
  /** Kills a running container whose liveness/startup probe failed; true when it did. */
  const killIfUnhealthy = (c: ObservedContainer, spec: Container): boolean => {
    const failed = probes.failed(c.info.id);
    if (!failed) return false;
    kill(c, `${failed} probe failed`, grace, {
      eventMessage: `Container ${spec.name} failed ${PROBE_LABEL[failed].toLowerCase()} probe, will be restarted`,
      restart: true,
    });
    return true;
  };

  // Step 1: strays and older infra containers.
  for (const [name, list] of containers.byName) {
    if (!wanted.has(name)) for (const c of list) killOrRemove(c, 'container is not in the pod spec');
  }
  const latestInfra = containers.infra[0];
  for (const c of containers.infra.slice(1)) killOrRemove(c, 'older infra container');

  /** Old containers of a name: keep the newest and the one before it (logs --previous), or one fewer when a new one comes. */
  const collectOld = (list: ObservedContainer[], replacing: boolean) => {
    for (const c of list.slice(replacing ? 1 : 2)) killOrRemove(c, 'older container of the same name');
    if (!replacing && list[1]) kill(list[1], 'duplicate container of the same name');
  };
  const latestOf = (name: string): ObservedContainer[] => containers.byName.get(name) ?? [];

  // Step 2: a finished pod.
  if (input.phase === 'Succeeded' || input.phase === 'Failed') {
    for (const name of wanted) {
      const list = latestOf(name);
      if (list[0]) kill(list[0], 'pod is finished', grace, sidecarOrder(name));
      collectOld(list, false);
    }
    if (latestInfra && isRunning(latestInfra)) actions.stopInfra = latestInfra.info.id;
    return finish(actions);
  }

  // Step 3: the infra container.
  const wantedInfraHash = infraHash(pod, input.network);
  const infraReady = latestInfra !== undefined && isRunning(latestInfra) && latestInfra.identity.hash === wantedInfraHash;
  const fresh = !infraReady;
  const ranBefore = [...wanted].some((n) => latestOf(n).length > 0);
  // Never started: created only (the agent died between create and start), or its start failed.
  const infraNeverStarted = latestInfra !== undefined && !isRunning(latestInfra) && !latestInfra.info.startedAt;
  if (fresh && latestInfra?.info.state === 'created' && latestInfra.identity.hash === wantedInfraHash && !(policy === 'Never' && ranBefore)) {
    // Start that one, under its own name, rather than make a second infra container; whatever still runs
    // belongs to an older sandbox and makes way.
    actions.createInfra = { attempt: latestInfra.identity.restartCount };
    for (const name of wanted) {
      const latest = latestOf(name)[0];
      if (latest) kill(latest, 'infra container is being replaced');
    }
  } else if (fresh) {
    // One that never ran has nothing to keep: it goes before the next one is made, never beside it.
    // A replaced sandbox is no use either: it goes too, so a pod never has two pause containers.
    if (latestInfra && infraNeverStarted) actions.remove.push(latestInfra.info.id);
    else if (latestInfra) killOrRemove(latestInfra, 'infra container must change', INFRA_GRACE_SECONDS);
    for (const name of wanted) {
      const latest = latestOf(name)[0];
      if (latest) kill(latest, 'infra container is being replaced');
    }
    // A Never pod whose sandbox went away has run its course; its containers get no second life.
    if (policy === 'Never' && ranBefore) {
      for (const name of wanted) collectOld(latestOf(name), false);
      return finish(actions);
    }
    actions.createInfra = { attempt: latestInfra ? latestInfra.identity.restartCount + 1 : 0 };
  } else {
    actions.infraId = latestInfra.info.id;
  }
  const sandboxCreatedAt = fresh ? Infinity : latestInfra!.info.createdAt;

  const restart = (spec: Container, type: 'app' | 'init', list: ObservedContainer[]) => {
    const latest = list[0];
    const start: StartAction = { container: spec, type, restartCount: latest ? latest.identity.restartCount + 1 : 0 };
    if (latest?.info.state === 'created') actions.remove.push(latest.info.id); // never ran; nothing to keep
    if (latest && latest.info.state === 'exited') {
      const key = crashBackoffKey(pod.metadata.uid ?? '', spec.name, containerHash(spec));
      const failedAt = finishedAtMs(latest.info);
      const wait = input.backoff.remainingMs(key, failedAt);
      if (wait > 0) {
        actions.backoff.set(spec.name, wait);
        collectOld(list, false);
        return;
      }
      start.crashKey = key;
      start.failedAt = failedAt;
    }
    collectOld(list, true);
    actions.start.push(start);
  };

  // Step 4: init containers; only runs inside the current sandbox count.
  const currentOf = (name: string): ObservedContainer | undefined => {
    const latest = latestOf(name)[0];
    return latest && latest.info.createdAt >= sandboxCreatedAt ? latest : undefined;
  };
  const appsDone = allAppsDone(pod, latestOf, policy);
  const initialized = pod.spec.containers.some((c) => currentOf(c.name) !== undefined);
  for (const spec of initSpecs) {
    const list = latestOf(spec.name);
    const current = currentOf(spec.name);
    if (isSidecar(spec)) {
      if (current && isRunning(current)) {
        collectOld(list, false);
        if (killIfUnhealthy(current, spec)) return finish(actions);
        if (!initialized && !probes.started(current.info.id, spec)) return finish(actions); // next one waits until it started
        continue;
      }
      if (appsDone) {
        collectOld(list, false); // the app containers are done: the sidecar is not needed again
        continue;
      }
      if (current?.info.state === 'created') {
        actions.start.push({ container: spec, type: 'init', restartCount: current.identity.restartCount, existingId: current.info.id });
        collectOld(list, false);
      } else restart(spec, 'init', list);
      if (!initialized) return finish(actions);
      continue;
    }
    if (initialized) {
      collectOld(list, false); // regular init containers are done once the app containers exist
      continue;
    }
    if (current?.info.state === 'exited' && current.info.exit?.exitCode === 0) {
      collectOld(list, false);
      continue;
    }
    if (current && isRunning(current)) {
      collectOld(list, false);
      return finish(actions);
    }
    if (current?.info.state === 'created') {
      actions.start.push({ container: spec, type: 'init', restartCount: current.identity.restartCount, existingId: current.info.id });
      collectOld(list, false);
      return finish(actions);
    }
    if (current && policy === 'Never') {
      collectOld(list, false);
      return finish(actions); // failed init under Never: the pod fails
    }
    restart(spec, 'init', list);
    return finish(actions);
  }

  // Step 5: app containers.
  for (const spec of pod.spec.containers) {
    const list = latestOf(spec.name);
    const latest = list[0];
    if (!latest) {
      actions.start.push({ container: spec, type: 'app', restartCount: 0 });
      continue;
    }
    const sameSpec = latest.identity.hash === containerHash(spec);
    if (fresh) {
      // Everything restarts in the new sandbox, except what has legitimately finished.
      if (latest.info.state === 'exited' && latest.info.exit && !shouldRestart(policy, latest.info.exit)) {
        collectOld(list, false);
        continue;
      }
      restart(spec, 'app', list);
      continue;
    }
    switch (latest.info.state) {
      case 'created':
        if (sameSpec) {
          actions.start.push({ container: spec, type: 'app', restartCount: latest.identity.restartCount, existingId: latest.info.id });
          collectOld(list, false);
        } else {
          actions.remove.push(latest.info.id);
          collectOld(list, true);
          actions.start.push({ container: spec, type: 'app', restartCount: latest.identity.restartCount + 1 });
        }
        break;
      case 'running':
      case 'unknown':
        if (sameSpec) {
          collectOld(list, false);
          killIfUnhealthy(latest, spec);
        } else {
          // A changed spec replaces the container whatever the restart policy says.
          kill(latest, 'container spec changed', grace, { eventMessage: `Container ${spec.name} definition changed, will be restarted` });
          collectOld(list, true);
          actions.start.push({ container: spec, type: 'app', restartCount: latest.identity.restartCount + 1 });
        }
        break;
      case 'exited':
        if (latest.info.exit && shouldRestart(policy, latest.info.exit)) restart(spec, 'app', list);
        else collectOld(list, false);
        break;
    }
  }

  // Step 6: sidecars outlive the app containers only as long as those may still run.
  if (appsDone) {
    for (const spec of initSpecs.filter(isSidecar)) {
      const latest = latestOf(spec.name)[0];
      if (latest) kill(latest, "pod's app containers completed", grace, sidecarOrder(spec.name));
    }
  }
  return finish(actions);

  /** Sidecars stop after the app containers, the last declared first. */
  function sidecarOrder(name: string): Partial<KillAction> {
    const i = initSpecs.findIndex((c) => c.name === name && isSidecar(c));
    return i < 0 ? {} : { order: 1 + initSpecs.length - i };
  }
}

/** Every app container ended and none will run again under the policy (Always never finishes). */
function allAppsDone(pod: Pod, latestOf: (name: string) => ObservedContainer[], policy: RestartPolicy): boolean {
  if (policy === 'Always') return false;
  return pod.spec.containers.every((spec) => {
    const latest = latestOf(spec.name)[0];
    if (!latest || latest.info.state !== 'exited' || !latest.info.exit) return false;
    return latest.identity.hash === containerHash(spec) && !shouldRestart(policy, latest.info.exit);
  });
}

/** One entry per container: a container both killed and listed for removal is killed, then removed. */
function finish(actions: PodActions): PodActions {
  const killed = new Map<string, KillAction>();
  for (const k of actions.kill) {
    const seen = killed.get(k.id);
    if (!seen) killed.set(k.id, k);
    else if (k.remove) seen.remove = true;
  }
  const remove = new Set<string>();
  for (const id of actions.remove) {
    const k = killed.get(id);
    if (k) k.remove = true;
    else remove.add(id);
  }
  actions.kill = [...killed.values()];
  actions.remove = [...remove];
  return actions;
}
