/**
 * Owns the StatefulSet controller: stable pod names and hostnames, claims made from
 * volumeClaimTemplates and their retention policy, ordered or parallel creation and deletion, and
 * rolling updates by revision down to the partition. ControllerRevision history is shared with
 * DaemonSets (src/controllers/daemonset/history.ts); the agent backs each claim with a runtime volume.
 */
import type { Logger } from 'pino';
import type { ControllerRevision, OwnerReference, PersistentVolumeClaim, Pod, PodTemplateSpec, StatefulSet, StatefulSetStatus } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import { CONTROLLER_UID_INDEX, INDEX_FUNCS, keyOf, splitKey, type Informer } from '../../client/informer.js';
import { ensureRevision, templateOfRevision } from '../daemonset/history.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import { isAlreadyExists, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import type { SharedInformers } from '../runtime/informer-factory.js';
import { isPodReady } from '../runtime/pod-util.js';
import { CONTROLLERREVISIONS, PERSISTENTVOLUMECLAIMS, STATEFULSETS } from '../../api/identities.js';
import { CONTROLLER_REVISION_HASH_LABEL } from '../../api/apps.js';
import { controllerNow } from '../runtime/clock.js';

export interface StatefulSetControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
  workers?: number;
}

/** Labels Kubernetes puts on StatefulSet pods. */
export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

const COMPONENT = 'statefulset-controller';

/** `<set>-<ordinal>` → ordinal, or undefined for a name that is not one of the set's. */
export function ordinalOf(setName: string, podName: string | undefined): number | undefined {
  if (!podName?.startsWith(`${setName}-`)) return undefined;
  const rest = podName.slice(setName.length + 1);
  return /^(0|[1-9][0-9]*)$/.test(rest) ? Number(rest) : undefined;
}

/** The claim name of a volumeClaimTemplate for one ordinal: `<template>-<set>-<ordinal>`. */
export function claimName(template: string, setName: string, ordinal: number): string {
  return `${template}-${setName}-${ordinal}`;
}

const isRunningAndReady = (p: Pod) => p.status?.phase === 'Running' && isPodReady(p);
const isTerminating = (p: Pod) => p.metadata.deletionTimestamp !== undefined && p.metadata.deletionTimestamp !== null;
const isFailed = (p: Pod) => p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded';

/** What one pass decided, before any write (exported so tests can read decisions). */
export interface StatefulSetAction {
  kind: 'create' | 'delete';
  ordinal: number;
  pod?: Pod;
}

/**
 * Keeps a StatefulSet's pods `<name>-0 … <name>-N-1` with stable identity and storage.
 *
 * Each pod gets hostname = its name and subdomain = `serviceName`; each volumeClaimTemplate
 * becomes a PersistentVolumeClaim `<template>-<name>-<ordinal>` (created before the pod, kept when
 * the pod goes) mounted as a `persistentVolumeClaim` volume, which the agent backs with a Docker
 * named volume — so a recreated pod finds its data again.
 *
 * OrderedReady: pods are created lowest ordinal first, the next only once every lower one is
 * Running and Ready; scale-down removes the highest first, one at a time, and nothing moves while
 * a pod is unhealthy. Parallel: all creations and deletions at once. RollingUpdate replaces pods
 * whose revision is not the update revision, highest ordinal first, down to `partition`, one at a
 * time once all are ready; OnDelete only recreates what users delete. Pods below the partition
 * are (re)created from the current revision. persistentVolumeClaimRetentionPolicy: whenDeleted
 * Delete makes the set own its claims (garbage-collected with it); whenScaled Delete deletes the
 * claims of ordinals removed by a scale-down once their pod is gone.
 */
export class StatefulSetController {
  readonly sets: Informer<StatefulSet>;
  readonly pods: Informer<Pod>;
  readonly claims: Informer<PersistentVolumeClaim>;
  readonly revisions: Informer<ControllerRevision>;
  readonly controller: Controller;
  private readonly events: EventRecorder;
  private readonly now: () => number;

  constructor(private readonly opts: StatefulSetControllerOptions) {
    this.now = opts.now ?? controllerNow();
    const byController = { [CONTROLLER_UID_INDEX]: INDEX_FUNCS[CONTROLLER_UID_INDEX]! };
    this.sets = opts.informers.informerFor<StatefulSet>(STATEFULSETS);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods, byController);
    this.claims = opts.informers.informerFor<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS);
    this.revisions = opts.informers.informerFor<ControllerRevision>(CONTROLLERREVISIONS, byController);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: this.now });
    this.controller = new Controller({ name: 'statefulset', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 2 });
    const enqueue = (s: StatefulSet) => this.controller.queue.add(keyOf(s));
    this.sets.addHandlers({ onAdd: enqueue, onUpdate: enqueue, onDelete: enqueue });
    const podChanged = (pod: Pod) => {
      const s = this.ownerOf(pod);
      if (s) enqueue(s);
    };
    this.pods.addHandlers({ onAdd: podChanged, onUpdate: podChanged, onDelete: podChanged });
  }

  async start(): Promise<void> {
    await Promise.all([this.sets.start(), this.pods.start(), this.claims.start(), this.revisions.start()]);
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private ownerOf(pod: Pod): StatefulSet | undefined {
    const ref: OwnerReference | undefined = (pod.metadata.ownerReferences ?? []).find((r) => r.controller);
    if (!ref || ref.kind !== STATEFULSETS.kind) return undefined;
    const s = this.sets.get(`${pod.metadata.namespace}/${ref.name}`);
    return s && s.metadata.uid === ref.uid ? s : undefined;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const set = this.sets.get(key);
    if (!set || set.metadata.deletionTimestamp) return;
    const name = set.metadata.name ?? '';
    const owned = this.revisions.byIndex(CONTROLLER_UID_INDEX, set.metadata.uid ?? '');
    const pods = this.pods.byIndex(CONTROLLER_UID_INDEX, set.metadata.uid ?? '');
    const inUse = new Set(pods.map((p) => (p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '').slice(name.length + 1)));
    if (set.status?.currentRevision) inUse.add(set.status.currentRevision.slice(name.length + 1));
    const { hash } = await ensureRevision({
      client: this.opts.client,
      owner: set,
      ownerKind: STATEFULSETS,
      template: set.spec.template,
      owned,
      historyLimit: set.spec.revisionHistoryLimit ?? 10,
      inUse,
    });
    const updateRevision = `${name}-${hash}`;
    const currentRevision = set.status?.currentRevision ?? updateRevision;
    const currentTemplate = owned.find((r) => r.metadata.name === currentRevision);
    const templates = { update: set.spec.template, current: (currentTemplate && templateOfRevision(currentTemplate)) ?? set.spec.template };

    const actions = planStatefulSet({ set, pods, updateRevision, currentRevision });
    for (const a of actions) {
      if (a.kind === 'create') await this.createPod(set, a.ordinal, a.ordinal >= partitionOf(set) ? { template: templates.update, revision: updateRevision } : { template: templates.current, revision: currentRevision });
      else if (a.pod) await this.deletePod(set, a.pod);
    }
    await this.syncClaimOwnership(set);
    await this.cleanUpScaledClaims(set, pods);
    await this.writeStatus(set, computeStatus({ set, pods, updateRevision, currentRevision }));
  }

  private async ensureClaims(set: StatefulSet, ordinal: number): Promise<void> {
    const namespace = set.metadata.namespace;
    const deleteWithSet = set.spec.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete';
    for (const t of set.spec.volumeClaimTemplates ?? []) {
      const cname = claimName(t.metadata.name ?? '', set.metadata.name ?? '', ordinal);
      if (this.claims.get(`${namespace}/${cname}`)) continue;
      const claim: PersistentVolumeClaim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: cname,
          namespace,
          labels: { ...(t.metadata.labels ?? {}), ...(set.spec.selector.matchLabels ?? {}) },
          ...(deleteWithSet ? { ownerReferences: [{ ...newControllerRef(set, STATEFULSETS), controller: false }] } : {}),
        },
        spec: structuredClone(t.spec ?? {}),
      };
      try {
        await this.opts.client.create(PERSISTENTVOLUMECLAIMS, claim, { namespace });
        void this.events.record({ about: set, type: 'Normal', reason: 'SuccessfulCreate', message: `create Claim ${cname} Pod ${set.metadata.name}-${ordinal} in StatefulSet ${set.metadata.name} success` });
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
      }
    }
  }

  private async createPod(set: StatefulSet, ordinal: number, from: { template: PodTemplateSpec; revision: string }): Promise<void> {
    await this.ensureClaims(set, ordinal);
    const name = `${set.metadata.name}-${ordinal}`;
    const meta = from.template.metadata ?? {};
    const spec = structuredClone(from.template.spec);
    spec.hostname = name;
    if (set.spec.serviceName) spec.subdomain = set.spec.serviceName;
    const claimVolumes = (set.spec.volumeClaimTemplates ?? []).map((t) => ({
      name: t.metadata.name ?? '',
      persistentVolumeClaim: { claimName: claimName(t.metadata.name ?? '', set.metadata.name ?? '', ordinal) },
    }));
    const claimNames = new Set(claimVolumes.map((v) => v.name));
    spec.volumes = [...(spec.volumes ?? []).filter((v) => !claimNames.has(v.name)), ...claimVolumes];
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: set.metadata.namespace,
        labels: { ...(meta.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: from.revision, [POD_NAME_LABEL]: name, [POD_INDEX_LABEL]: String(ordinal) },
        ownerReferences: [newControllerRef(set, STATEFULSETS)],
      },
      spec,
    };
    if (meta.annotations && Object.keys(meta.annotations).length) pod.metadata.annotations = { ...meta.annotations };
    try {
      await this.opts.client.create<Pod>(CORE.pods, pod, { namespace: set.metadata.namespace });
    } catch (e) {
      // The previous pod of this ordinal is still terminating: the next pass creates it.
      if (isAlreadyExists(e)) return;
      // Refusals (Pod Security, quota, a webhook) are shown where the user looks: the set's events.
      void this.events.record({ about: set, type: 'Warning', reason: 'FailedCreate', message: `create Pod ${name} in StatefulSet ${set.metadata.name} failed error: ${(e as Error).message}` });
      throw e;
    }
    void this.events.record({ about: set, type: 'Normal', reason: 'SuccessfulCreate', message: `create Pod ${name} in StatefulSet ${set.metadata.name} successful` });
  }

  private async deletePod(set: StatefulSet, pod: Pod): Promise<void> {
    try {
      await this.opts.client.delete(CORE.pods, { namespace: pod.metadata.namespace, name: pod.metadata.name ?? '', preconditions: { uid: pod.metadata.uid } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return;
    }
    void this.events.record({ about: set, type: 'Normal', reason: 'SuccessfulDelete', message: `delete Pod ${pod.metadata.name} in StatefulSet ${set.metadata.name} successful` });
  }

  /**
   * whenDeleted follows the policy as it is now, as upstream's claim owner update does: under Delete
   * every claim of the set's ordinals is owned by the set (so it goes with it), under Retain none is.
   */
  private async syncClaimOwnership(set: StatefulSet): Promise<void> {
    const setName = set.metadata.name ?? '';
    const owned = set.spec.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete';
    const replicas = set.spec.replicas ?? 1;
    for (const t of set.spec.volumeClaimTemplates ?? []) {
      for (const claim of this.claims.listNamespace(set.metadata.namespace ?? '')) {
        const ordinal = ordinalOf(`${t.metadata.name}-${setName}`, claim.metadata.name);
        if (ordinal === undefined || ordinal >= replicas || claim.metadata.deletionTimestamp) continue;
        const refs = claim.metadata.ownerReferences ?? [];
        const has = refs.some((r) => r.uid === set.metadata.uid);
        if (has === owned) continue;
        const ownerReferences = owned ? [...refs, { ...newControllerRef(set, STATEFULSETS), controller: false }] : refs.filter((r) => r.uid !== set.metadata.uid);
        try {
          await this.opts.client.update(PERSISTENTVOLUMECLAIMS, { ...claim, metadata: { ...claim.metadata, ownerReferences } });
        } catch (e) {
          // A newer claim is on its way through the informer, which brings another pass.
          if (!(isNotFound(e) || (e as { reason?: string }).reason === 'Conflict')) throw e;
        }
      }
    }
  }

  /** whenScaled: Delete — claims of ordinals at or above replicas go once their pod is gone. */
  private async cleanUpScaledClaims(set: StatefulSet, pods: readonly Pod[]): Promise<void> {
    if (set.spec.persistentVolumeClaimRetentionPolicy?.whenScaled !== 'Delete') return;
    const replicas = set.spec.replicas ?? 1;
    const setName = set.metadata.name ?? '';
    const live = new Set(pods.map((p) => ordinalOf(setName, p.metadata.name)));
    for (const t of set.spec.volumeClaimTemplates ?? []) {
      const prefix = `${t.metadata.name}-${setName}-`;
      for (const claim of this.claims.listNamespace(set.metadata.namespace ?? '')) {
        const cname = claim.metadata.name ?? '';
        if (!cname.startsWith(prefix) || claim.metadata.deletionTimestamp) continue;
        const ordinal = ordinalOf(`${t.metadata.name}-${setName}`, cname);
        if (ordinal === undefined || ordinal < replicas || live.has(ordinal)) continue;
        try {
          await this.opts.client.delete(PERSISTENTVOLUMECLAIMS, { namespace: set.metadata.namespace, name: cname });
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      }
    }
  }

  private async writeStatus(set: StatefulSet, status: StatefulSetStatus): Promise<void> {
    if (JSON.stringify(set.status ?? {}) === JSON.stringify(status)) return;
    const { namespace, name } = splitKey(keyOf(set));
    const next: StatefulSet = { ...set, metadata: { ...set.metadata, namespace, name }, status };
    delete next.metadata.resourceVersion;
    try {
      await this.opts.client.update(STATEFULSETS, next, { subresource: 'status' });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

function partitionOf(set: StatefulSet): number {
  return set.spec.updateStrategy?.type === 'OnDelete' ? 0 : (set.spec.updateStrategy?.rollingUpdate?.partition ?? 0);
}

/**
 * The creates and deletes of one pass (pure: tests call it directly). OrderedReady stops at the
 * first action or the first pod that is not Running and Ready; Parallel does everything at once.
 */
export function planStatefulSet(opts: { set: StatefulSet; pods: readonly Pod[]; updateRevision: string; currentRevision: string }): StatefulSetAction[] {
  const { set } = opts;
  const setName = set.metadata.name ?? '';
  const replicas = set.spec.replicas ?? 1;
  const ordered = (set.spec.podManagementPolicy ?? 'OrderedReady') === 'OrderedReady';
  const byOrdinal = new Map<number, Pod>();
  const condemned: Pod[] = [];
  for (const p of opts.pods) {
    const ordinal = ordinalOf(setName, p.metadata.name);
    if (ordinal === undefined) continue;
    if (ordinal < replicas) byOrdinal.set(ordinal, p);
    else condemned.push(p);
  }
  const actions: StatefulSetAction[] = [];
  let blocked = false;
  for (let i = 0; i < replicas; i++) {
    const pod = byOrdinal.get(i);
    if (!pod) {
      actions.push({ kind: 'create', ordinal: i });
      if (ordered) return actions;
      continue;
    }
    if (isFailed(pod) && !isTerminating(pod)) {
      // A failed pod is replaced by deleting it; the next pass recreates the same ordinal.
      actions.push({ kind: 'delete', ordinal: i, pod });
      if (ordered) return actions;
      continue;
    }
    if (isTerminating(pod) || !isRunningAndReady(pod)) {
      blocked = true;
      if (ordered) return actions;
    }
  }
  // Scale down: highest ordinal first.
  condemned.sort((a, b) => (ordinalOf(setName, b.metadata.name) ?? 0) - (ordinalOf(setName, a.metadata.name) ?? 0));
  for (const pod of condemned) {
    if (isTerminating(pod)) {
      if (ordered) return actions;
      continue;
    }
    if (ordered && blocked) return actions;
    actions.push({ kind: 'delete', ordinal: ordinalOf(setName, pod.metadata.name) ?? 0, pod });
    if (ordered) return actions;
  }
  if (condemned.length && ordered) return actions;
  // Rolling update: highest ordinal first, down to the partition, one pod at a time.
  if (set.spec.updateStrategy?.type === 'OnDelete' || blocked || actions.length) return actions;
  const partition = partitionOf(set);
  for (let i = replicas - 1; i >= partition; i--) {
    const pod = byOrdinal.get(i);
    if (!pod) continue;
    if (pod.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] !== opts.updateRevision) {
      if (!isTerminating(pod)) actions.push({ kind: 'delete', ordinal: i, pod });
      return actions;
    }
  }
  return actions;
}

/** Status from the set's pods: counts by readiness and revision; currentRevision moves once every pod is updated. */
export function computeStatus(opts: { set: StatefulSet; pods: readonly Pod[]; updateRevision: string; currentRevision: string }): StatefulSetStatus {
  const { set } = opts;
  const setName = set.metadata.name ?? '';
  const live = opts.pods.filter((p) => ordinalOf(setName, p.metadata.name) !== undefined && !isTerminating(p) && !isFailed(p));
  const replicas = set.spec.replicas ?? 1;
  const ready = live.filter(isRunningAndReady).length;
  const updated = live.filter((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === opts.updateRevision).length;
  let currentRevision = opts.currentRevision;
  let current = live.filter((p) => p.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === currentRevision).length;
  if (updated === replicas && live.length === replicas) {
    currentRevision = opts.updateRevision;
    current = updated;
  }
  const status: StatefulSetStatus = {
    replicas: live.length,
    readyReplicas: ready,
    currentReplicas: current,
    updatedReplicas: updated,
    availableReplicas: ready,
    currentRevision,
    updateRevision: opts.updateRevision,
    collisionCount: 0,
  };
  if (set.metadata.generation !== undefined) status.observedGeneration = set.metadata.generation;
  return status;
}
