/**
 * Owns the lifecycle of PersistentVolumes and PersistentVolumeClaims, as kube-controller-manager's
 * persistent-volume-binder, pvc-protection, pv-protection and expand controllers do together, plus
 * Berth's built-in `berth.dev/local-path` provisioner. One pass over the caches at a time
 * (CoalescedPass): every claim and volume is brought one step closer to where it should be, and
 * each write comes back as an event that asks for the next pass.
 *
 * A pass, in order:
 * 1. volumes: a deleted one loses pv-protection once no claim is bound to it, and the local-path
 *    finalizer here when it is Retained (its node's agent removes the directory and the finalizer
 *    under Delete); a volume whose claim is gone is Released, then deleted (Delete) or kept
 *    (Retain); an unclaimed one is Available; one whose claim points back at it is Bound.
 * 2. claims: a deleted one loses pvc-protection once no pod uses it; a bound one is kept Bound (or
 *    Lost, if its volume went); an unbound one is bound to the volume it names, or pre-bound to it,
 *    or the smallest that matches, or, when its class is local-path, to a volume provisioned on the
 *    node the scheduler chose (`volume.kubernetes.io/selected-node`); otherwise it stays Pending
 *    with an event saying why, in the controller's words. A claim Bound by an earlier Berth, with no
 *    volume, is adopted: its Docker named volume becomes a PersistentVolume.
 * 3. expansion: a bound local-path claim that asks for more has its new size recorded (the
 *    directories have no size to change).
 *
 * Binding writes the volume first (claimRef), then the claim (volumeName), then each status, as
 * upstream: a pass interrupted anywhere (a server restart) finds the half-bound pair and finishes it.
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/errors.js';
import {
  ANN_BIND_COMPLETED,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BOUND_BY_CONTROLLER,
  ANN_PROVISIONED_BY,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  DEFAULT_LOCAL_PATH_DIR,
  DOCKER_VOLUME_DRIVER,
  HOSTNAME_LABEL,
  LOCAL_PATH_DIR_ANNOTATION,
  LOCAL_PATH_FINALIZER,
  LOCAL_PATH_PROVISIONER,
  PV_PROTECTION_FINALIZER,
  PVC_PROTECTION_FINALIZER,
  findMatchingVolume,
  requestedStorage,
  storageClassOf,
} from '../../api/storage.js';
import { compare, tryParseQuantity } from '../../api/quantity.js';
import type { KubeObject, Node, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../api/types.js';
import { CORE, type Client } from '../../client/client.js';
import { EventRecorder } from '../../client/events.js';
import type { Informer } from '../../client/informer.js';
import { PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, STORAGECLASSES } from '../../api/identities.js';
import { CoalescedPass } from '../runtime/coalesced-pass.js';
import type { SharedInformers } from '../runtime/informer-factory.js';

export interface PersistentVolumeControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  now?: () => number;
}

const COMPONENT = 'persistentvolume-controller';

/** The runtime volume an earlier Berth kept a claim's data in (agent/volumes/claim-volumes.ts names it so). */
export function legacyClaimVolumeName(namespace: string, claimName: string): string {
  return `berth-pvc-${namespace}-${claimName}`;
}

/** The directory name of a local-path volume, as k3s's provisioner names it: `<pv>_<namespace>_<claim>`. */
export function localPathDirName(pvName: string, pvc: PersistentVolumeClaim): string {
  return `${pvName}_${pvc.metadata.namespace}_${pvc.metadata.name}`;
}

/** Does a pod that has not finished use the claim? (what pvc-protection waits for) */
export function podUsesClaim(pod: Pod, claimName: string): boolean {
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return false;
  return (pod.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === claimName || (v.ephemeral && `${pod.metadata.name}-${v.name}` === claimName));
}

function claimRefTo(pvc: PersistentVolumeClaim): ObjectReference {
  return { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: pvc.metadata.namespace, name: pvc.metadata.name, uid: pvc.metadata.uid, resourceVersion: pvc.metadata.resourceVersion };
}

/** How many objects a pass works on at once. */
const PASS_CONCURRENCY = 16;

async function eachConcurrently<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (e) {
        errors.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PASS_CONCURRENCY, items.length) }, worker));
  if (errors.length) throw errors[0];
}

function isConflict(e: unknown): boolean {
  return e instanceof ApiError && (e.reason === 'Conflict' || e.reason === 'NotFound' || e.reason === 'AlreadyExists');
}

export class PersistentVolumeController {
  readonly volumes: Informer<PersistentVolume>;
  readonly claims: Informer<PersistentVolumeClaim>;
  readonly classes: Informer<StorageClass>;
  readonly pods: Informer<Pod>;
  readonly nodes: Informer<Node>;
  private readonly pass: CoalescedPass;
  private readonly events: EventRecorder;
  /** claim uid → the last "why Pending" event recorded, so a pass repeats none */
  private readonly pendingReason = new Map<string, string>();

  constructor(private readonly opts: PersistentVolumeControllerOptions) {
    this.volumes = opts.informers.informerFor<PersistentVolume>(PERSISTENTVOLUMES);
    this.claims = opts.informers.informerFor<PersistentVolumeClaim>(PERSISTENTVOLUMECLAIMS);
    this.classes = opts.informers.informerFor<StorageClass>(STORAGECLASSES);
    this.pods = opts.informers.informerFor<Pod>(CORE.pods);
    this.nodes = opts.informers.informerFor<Node>(CORE.nodes);
    this.events = new EventRecorder({ client: opts.client, component: COMPONENT, log: opts.log, now: opts.now });
    this.pass = new CoalescedPass({
      run: () => this.sync(),
      ready: () => [this.volumes, this.claims, this.classes, this.pods, this.nodes].every((i) => i.hasSynced()),
      onError: (e) => this.opts.log.warn({ err: e.message }, 'persistent volume pass failed'),
    });
    const kick = () => this.pass.kick();
    this.volumes.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
    this.claims.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
    this.classes.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
    // Pods matter only to claims being deleted (pvc-protection): a pod's going may free one.
    this.pods.addHandlers({ onDelete: kick, onUpdate: (p, old) => p.status?.phase !== old.status?.phase && kick() });
  }

  async start(): Promise<void> {
    await this.pass.startAfter([this.volumes, this.claims, this.classes, this.pods, this.nodes]);
  }

  async stop(): Promise<void> {
    await this.pass.stop();
  }

  async idle(): Promise<void> {
    await this.pass.idle();
  }

  /** One pass (public so tests drive passes themselves). */
  async sync(): Promise<void> {
    // Objects are independent, so a pass works on several at once; two claims after one volume
    // cannot both get it, as each write names the resourceVersion it read (the loser's Conflict
    // waits for the next pass).
    await eachConcurrently(this.volumes.list(), (pv) => this.guard(() => this.syncVolume(pv)));
    await eachConcurrently(this.claims.list(), (pvc) => this.guard(() => this.syncClaim(pvc)));
  }

  private async guard(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (e) {
      // A newer version is on its way through the informers, and brings another pass.
      if (isConflict(e)) return;
      throw e;
    }
  }

  private claimOf(pv: PersistentVolume): PersistentVolumeClaim | undefined {
    const ref = pv.spec?.claimRef;
    if (!ref?.name) return undefined;
    const pvc = this.claims.get(`${ref.namespace ?? ''}/${ref.name}`);
    if (!pvc || (ref.uid && pvc.metadata.uid !== ref.uid)) return undefined;
    return pvc;
  }

  // ---------- 1. volumes ----------

  private async syncVolume(pv: PersistentVolume): Promise<void> {
    const claim = this.claimOf(pv);
    if (pv.metadata.deletionTimestamp) {
      const finalizers = pv.metadata.finalizers ?? [];
      let keep = finalizers;
      if (keep.includes(PV_PROTECTION_FINALIZER) && !(claim && claim.spec?.volumeName === pv.metadata.name && pv.status?.phase === 'Bound')) keep = keep.filter((f) => f !== PV_PROTECTION_FINALIZER);
      // Retained data stays on its node; a node that is gone has nothing left to clean.
      const pinned = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.find((e) => e.key === HOSTNAME_LABEL)?.values?.[0];
      const nodeGone = pinned !== undefined && !this.nodes.list().some((n) => (n.metadata.labels?.[HOSTNAME_LABEL] ?? n.metadata.name) === pinned);
      if (keep.includes(LOCAL_PATH_FINALIZER) && (pv.spec?.persistentVolumeReclaimPolicy !== 'Delete' || nodeGone)) keep = keep.filter((f) => f !== LOCAL_PATH_FINALIZER);
      if (keep.length !== finalizers.length) await this.opts.client.update(PERSISTENTVOLUMES, { ...pv, metadata: { ...pv.metadata, finalizers: keep } });
      return;
    }
    const ref = pv.spec?.claimRef;
    if (!ref) return void (await this.setVolumePhase(pv, 'Available'));
    if (claim) {
      if (claim.spec?.volumeName === pv.metadata.name) return void (await this.setVolumePhase(pv, 'Bound'));
      if (claim.spec?.volumeName && pv.metadata.annotations?.[ANN_BOUND_BY_CONTROLLER]) {
        // The claim went to another volume: this one was only reserved by us, so free it.
        const { claimRef: _dropped, ...spec } = pv.spec ?? {};
        await this.opts.client.update(PERSISTENTVOLUMES, { ...pv, spec });
        return;
      }
      // Pre-bound, waiting for the claim's side (step 2).
      if (pv.status?.phase === 'Pending' || !pv.status?.phase) await this.setVolumePhase(pv, 'Available');
      return;
    }
    // Pre-bound by an administrator to a claim that does not exist yet.
    if (!ref.uid) return void (await this.setVolumePhase(pv, 'Available'));
    if (pv.status?.phase !== 'Released' && pv.status?.phase !== 'Failed') await this.setVolumePhase(pv, 'Released');
    await this.reclaim(pv);
  }

  private async reclaim(pv: PersistentVolume): Promise<void> {
    switch (pv.spec?.persistentVolumeReclaimPolicy) {
      case 'Delete': {
        const provisioner = pv.metadata.annotations?.[ANN_PROVISIONED_BY];
        if (provisioner === LOCAL_PATH_PROVISIONER || pv.spec?.csi?.driver === DOCKER_VOLUME_DRIVER) {
          await this.opts.client.delete(PERSISTENTVOLUMES, { name: pv.metadata.name!, preconditions: { uid: pv.metadata.uid } });
          return;
        }
        if (pv.status?.phase !== 'Failed') {
          const message = `error getting deleter volume plugin for volume "${pv.metadata.name}": no deletable volume plugin matched`;
          await this.setVolumePhase(pv, 'Failed', message);
          void this.events.record({ about: pv, type: 'Warning', reason: 'VolumeFailedDelete', message });
        }
        return;
      }
      case 'Recycle':
        if (pv.status?.phase !== 'Failed') {
          const message = 'No recycler plugin found for the volume!';
          await this.setVolumePhase(pv, 'Failed', message);
          void this.events.record({ about: pv, type: 'Warning', reason: 'VolumeFailedRecycle', message });
        }
        return;
      default:
        return;
    }
  }

  private async setVolumePhase(pv: PersistentVolume, phase: string, message?: string): Promise<PersistentVolume> {
    if (pv.status?.phase === phase && (pv.status?.message ?? undefined) === message) return pv;
    const status = { phase, lastPhaseTransitionTime: this.timestamp(), ...(message ? { message } : {}) };
    return this.opts.client.update(PERSISTENTVOLUMES, { ...pv, status }, { subresource: 'status' });
  }

  // ---------- 2. claims ----------

  private async syncClaim(pvc: PersistentVolumeClaim): Promise<void> {
    if (pvc.metadata.deletionTimestamp) {
      const finalizers = pvc.metadata.finalizers ?? [];
      if (finalizers.includes(PVC_PROTECTION_FINALIZER) && !this.pods.listNamespace(pvc.metadata.namespace ?? '').some((p) => podUsesClaim(p, pvc.metadata.name ?? ''))) {
        await this.opts.client.update(PERSISTENTVOLUMECLAIMS, { ...pvc, metadata: { ...pvc.metadata, finalizers: finalizers.filter((f) => f !== PVC_PROTECTION_FINALIZER) } });
      }
      return;
    }
    const volumeName = pvc.spec?.volumeName;
    if (volumeName) return this.syncBoundClaim(pvc, volumeName);
    if (pvc.status?.phase === 'Bound') return this.adoptLegacyClaim(pvc);
    const className = storageClassOf(pvc);
    const sc = className ? this.classes.get(className) : undefined;
    const waitForConsumer = sc?.volumeBindingMode === 'WaitForFirstConsumer';
    const selectedNode = pvc.metadata.annotations?.[ANN_SELECTED_NODE];
    const node = selectedNode ? this.nodes.get(selectedNode) : undefined;
    if (waitForConsumer && !selectedNode) {
      // Without a node the only volumes it may have are the ones pre-bound to it.
      const pre = this.volumes.list().find((pv) => pv.spec?.claimRef && findMatchingVolume(pvc, [pv]));
      if (pre) return this.bind(pvc, pre);
      return this.pending(pvc, 'Normal', 'WaitForFirstConsumer', 'waiting for first consumer to be created before binding');
    }
    const match = findMatchingVolume(pvc, this.volumes.list(), waitForConsumer ? node : undefined);
    if (match) return this.bind(pvc, match);
    if (!className) return this.pending(pvc, 'Normal', 'FailedBinding', 'no persistent volumes available for this claim and no storage class is set');
    if (!sc) return this.pending(pvc, 'Warning', 'ProvisioningFailed', `storageclass.storage.k8s.io ${JSON.stringify(className)} not found`);
    if (sc.provisioner !== LOCAL_PATH_PROVISIONER) {
      await this.annotateProvisioner(pvc, sc.provisioner);
      return this.pending(pvc, 'Normal', 'ExternalProvisioning', `Waiting for a volume to be created either by the external provisioner '${sc.provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`);
    }
    if (!node) {
      const message = selectedNode ? `failed to provision volume with StorageClass ${JSON.stringify(className)}: node ${JSON.stringify(selectedNode)} not found` : `failed to provision volume with StorageClass ${JSON.stringify(className)}: configuration error, no node was specified`;
      return this.pending(pvc, 'Warning', 'ProvisioningFailed', message);
    }
    await this.provision(pvc, sc, node);
  }

  private async pending(pvc: PersistentVolumeClaim, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const key = `${reason}|${message}`;
    if (this.pendingReason.get(pvc.metadata.uid ?? '') === key) return;
    this.pendingReason.set(pvc.metadata.uid ?? '', key);
    void this.events.record({ about: pvc, type, reason, message });
  }

  private async annotateProvisioner(pvc: PersistentVolumeClaim, provisioner: string): Promise<PersistentVolumeClaim> {
    const ann = pvc.metadata.annotations ?? {};
    if (ann[ANN_STORAGE_PROVISIONER] === provisioner && ann[ANN_BETA_STORAGE_PROVISIONER] === provisioner) return pvc;
    return this.opts.client.update(PERSISTENTVOLUMECLAIMS, { ...pvc, metadata: { ...pvc.metadata, annotations: { ...ann, [ANN_STORAGE_PROVISIONER]: provisioner, [ANN_BETA_STORAGE_PROVISIONER]: provisioner } } });
  }

  /** Volume side first (claimRef, Bound), then the claim (volumeName, Bound). */
  private async bind(pvc: PersistentVolumeClaim, pv: PersistentVolume): Promise<void> {
    let volume = pv;
    const ref = pv.spec?.claimRef;
    if (!ref || ref.uid !== pvc.metadata.uid) {
      const annotations = { ...(pv.metadata.annotations ?? {}), [ANN_BOUND_BY_CONTROLLER]: 'yes' };
      volume = await this.opts.client.update(PERSISTENTVOLUMES, { ...pv, metadata: { ...pv.metadata, annotations }, spec: { ...pv.spec, claimRef: claimRefTo(pvc) } });
    }
    volume = await this.setVolumePhase(volume, 'Bound');
    const annotations: Record<string, string> = { ...(pvc.metadata.annotations ?? {}), [ANN_BIND_COMPLETED]: 'yes' };
    if (!pvc.spec?.volumeName) annotations[ANN_BOUND_BY_CONTROLLER] = 'yes';
    const claim = await this.opts.client.update(PERSISTENTVOLUMECLAIMS, { ...pvc, metadata: { ...pvc.metadata, annotations }, spec: { ...pvc.spec, volumeName: volume.metadata.name } });
    await this.setClaimBound(claim, volume);
    this.pendingReason.delete(pvc.metadata.uid ?? '');
  }

  private async setClaimBound(pvc: PersistentVolumeClaim, pv: PersistentVolume): Promise<void> {
    const status = { ...(pvc.status ?? {}), phase: 'Bound', accessModes: pv.spec?.accessModes ?? [], capacity: { ...(pv.spec?.capacity ?? {}) } };
    if (JSON.stringify(status) === JSON.stringify(pvc.status)) return;
    await this.opts.client.update(PERSISTENTVOLUMECLAIMS, { ...pvc, status }, { subresource: 'status' });
  }

  private async syncBoundClaim(pvc: PersistentVolumeClaim, volumeName: string): Promise<void> {
    const pv = this.volumes.get(volumeName);
    if (!pv) {
      if (pvc.status?.phase === 'Bound') {
        await this.opts.client.update(PERSISTENTVOLUMECLAIMS, { ...pvc, status: { ...pvc.status, phase: 'Lost' } }, { subresource: 'status' });
        void this.events.record({ about: pvc, type: 'Warning', reason: 'ClaimLost', message: 'Bound claim has lost its PersistentVolume. Data on the volume is lost!' });
      }
      return;
    }
    const ref = pv.spec?.claimRef;
    if (ref && !(ref.namespace === pvc.metadata.namespace && ref.name === pvc.metadata.name && (!ref.uid || ref.uid === pvc.metadata.uid))) {
      return this.pending(pvc, 'Warning', 'FailedBinding', `volume ${JSON.stringify(volumeName)} already bound to a different claim.`);
    }
    if (!ref || !ref.uid || pv.status?.phase !== 'Bound' || pvc.metadata.annotations?.[ANN_BIND_COMPLETED] !== 'yes') return this.bind(pvc, pv);
    await this.setClaimBound(pvc, pv);
    await this.expand(pvc, pv);
  }

  // ---------- 3. expansion ----------

  private async expand(pvc: PersistentVolumeClaim, pv: PersistentVolume): Promise<void> {
    const want = tryParseQuantity(requestedStorage(pvc));
    const have = tryParseQuantity(pv.spec?.capacity?.storage ?? '0');
    if (!want || !have || compare(want, have) <= 0) return;
    // Only what the admission check let through reaches here: a class that allows expansion.
    if (pv.metadata.annotations?.[ANN_PROVISIONED_BY] !== LOCAL_PATH_PROVISIONER) return;
    const size = requestedStorage(pvc);
    const resized = await this.opts.client.update(PERSISTENTVOLUMES, { ...pv, spec: { ...pv.spec, capacity: { ...(pv.spec?.capacity ?? {}), storage: size } } });
    await this.setClaimBound(pvc, resized);
    void this.events.record({ about: pvc, type: 'Normal', reason: 'VolumeResizeSuccessful', message: `ExpandVolume succeeded for volume ${pv.metadata.name}` });
  }

  // ---------- provisioning and adoption ----------

  /** A local-path volume for the claim on the node: a directory its agent makes when a pod first mounts it. */
  private async provision(pvc: PersistentVolumeClaim, sc: StorageClass, node: Node): Promise<void> {
    const name = `pvc-${pvc.metadata.uid}`;
    const dir = node.metadata.annotations?.[LOCAL_PATH_DIR_ANNOTATION] ?? DEFAULT_LOCAL_PATH_DIR;
    const hostname = node.metadata.labels?.[HOSTNAME_LABEL] ?? node.metadata.name ?? '';
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      // No cleanup finalizer yet: the node's agent adds it before it makes the directory, so a volume
      // no pod ever mounted has nothing to clean and is not held.
      metadata: { name, annotations: { [ANN_PROVISIONED_BY]: LOCAL_PATH_PROVISIONER, [ANN_BOUND_BY_CONTROLLER]: 'yes' } },
      spec: {
        capacity: { storage: requestedStorage(pvc) },
        accessModes: pvc.spec?.accessModes ?? [],
        persistentVolumeReclaimPolicy: sc.reclaimPolicy ?? 'Delete',
        storageClassName: sc.metadata.name,
        volumeMode: pvc.spec?.volumeMode ?? 'Filesystem',
        hostPath: { path: `${dir.replace(/\/+$/, '')}/${localPathDirName(name, pvc)}`, type: 'DirectoryOrCreate' },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: HOSTNAME_LABEL, operator: 'In', values: [hostname] }] }] } },
        claimRef: claimRefTo(pvc),
        ...(sc.mountOptions ? { mountOptions: sc.mountOptions } : {}),
      },
    };
    let created: PersistentVolume;
    try {
      created = await this.opts.client.create(PERSISTENTVOLUMES, pv);
    } catch (e) {
      // Made by an earlier pass whose event has not come back yet: the next pass binds it.
      if (e instanceof ApiError && e.reason === 'AlreadyExists') return;
      throw e;
    }
    void this.events.record({ about: pvc, type: 'Normal', reason: 'ProvisioningSucceeded', message: `Successfully provisioned volume ${name}` });
    await this.bind(pvc, created);
  }

  /**
   * A claim an earlier Berth marked Bound at once, whose data is the Docker named volume
   * `berth-pvc-<namespace>-<claim>` on whichever node first mounted it: it gets a volume naming that
   * Docker volume (driver berth.dev/docker-volume), with no node affinity since the server cannot
   * tell which node holds it, and reclaim policy Delete, as those volumes were removed with their
   * claims.
   */
  private async adoptLegacyClaim(pvc: PersistentVolumeClaim): Promise<void> {
    const name = `pvc-${pvc.metadata.uid}`;
    let pv = this.volumes.get(name);
    if (!pv) {
      const size = pvc.status?.capacity?.storage ?? requestedStorage(pvc);
      const created: PersistentVolume = {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name, annotations: { [ANN_BOUND_BY_CONTROLLER]: 'yes' } },
        spec: {
          capacity: { storage: size === '0' ? '1Gi' : size },
          accessModes: pvc.spec?.accessModes ?? ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Delete',
          storageClassName: storageClassOf(pvc),
          volumeMode: pvc.spec?.volumeMode ?? 'Filesystem',
          csi: { driver: DOCKER_VOLUME_DRIVER, volumeHandle: legacyClaimVolumeName(pvc.metadata.namespace ?? '', pvc.metadata.name ?? '') },
          claimRef: claimRefTo(pvc),
        },
      };
      pv = await this.opts.client.create(PERSISTENTVOLUMES, created);
      this.opts.log.info({ claim: `${pvc.metadata.namespace}/${pvc.metadata.name}`, volume: name }, 'adopted the Docker volume of a claim made by an earlier Berth');
    }
    await this.bind(pvc, pv);
  }

  private timestamp(): string {
    return new Date((this.opts.now ?? Date.now)()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
}
