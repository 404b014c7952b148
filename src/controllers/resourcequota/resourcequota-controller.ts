/**
 * The resource quota controller: keeps every ResourceQuota's status true — status.hard is
 * spec.hard, status.used what the namespace's objects use of it now — as kube-controller-manager's
 * resourcequota controller does. Admission (src/admission/plugins/resource-quota.ts) charges creates
 * as they happen; this controller gives back what deletes and finished pods free, and recounts.
 *
 * When a quota is counted:
 *  - on create, and when spec.hard differs from status.hard (a spec change; a status-only write by
 *    admission is not a reason, or a recount could race the charge it just made);
 *  - when an object a quota may count is deleted, a pod stops counting (Succeeded, Failed), or a
 *    Service or claim changes: every quota of its namespace, within a moment;
 *  - every quota, every resync period (default 5 minutes, as --resource-quota-sync-period upstream),
 *    which also catches what no informer here watches (`count/<resource>.<group>` deletes).
 *
 * One pass (reconcile of `namespace/name`):
 *  1. read the quota fresh from the API (gone → done);
 *  2. for each resource its hard limits, list the objects that use it (fresh, not from the cache:
 *     an object admission just charged must be found) and add up what those its scopes select use;
 *  3. write status {hard: spec.hard, used} if it differs, with the read's resourceVersion, so a
 *     charge admission made meanwhile is not overwritten (a conflict retries the pass).
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/errors.js';
import { PERSISTENTVOLUMECLAIMS, RESOURCEQUOTAS, SERVICES, type ResourceInfo } from '../../api/identities.js';
import { addUsage, maskUsage, objectUsage, podCountsForQuota, quotaMatches, resourceCountedBy, usageFromList, usageToList, type Usage } from '../../api/resource-quota.js';
import { quantityFromValue } from '../../api/quantity.js';
import type { KubeObject, Pod, ResourceQuota } from '../../api/types.js';
import { CORE, type Client, type ResourceRef } from '../../client/client.js';
import { keyOf, type Informer } from '../../client/informer.js';
import { Controller, type ReconcileResult } from '../runtime/controller.js';
import type { SharedInformers } from '../runtime/informer-factory.js';

/** kube-controller-manager's --resource-quota-sync-period default. */
export const DEFAULT_QUOTA_RESYNC_MS = 5 * 60_000;

export interface ResourceQuotaControllerOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
  /** the served resources, to find what a `count/<resource>.<group>` quota counts */
  resources: () => ResourceInfo[];
  now?: () => number;
  resyncPeriodMs?: number;
  workers?: number;
}

export class ResourceQuotaController {
  readonly quotas: Informer<ResourceQuota>;
  readonly controller: Controller;
  private readonly watched: Array<{ start(): Promise<void> }> = [];
  private readonly now: () => number;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ResourceQuotaControllerOptions) {
    this.now = opts.now ?? Date.now;
    this.quotas = opts.informers.informerFor<ResourceQuota>(RESOURCEQUOTAS);
    this.controller = new Controller({ name: 'resourcequota', reconcile: (key) => this.reconcile(key), log: opts.log, workers: opts.workers ?? 1 });
    this.quotas.addHandlers({
      onAdd: (q) => this.controller.queue.add(keyOf(q)),
      onUpdate: (q) => {
        if (!sameList(q.spec?.hard, q.status?.hard)) this.controller.queue.add(keyOf(q));
      },
    });

    const pods = opts.informers.informerFor<Pod>(CORE.pods);
    pods.addHandlers({
      onUpdate: (pod, old) => {
        if (podCountsForQuota(old, this.now()) && !podCountsForQuota(pod, this.now())) this.namespaceChanged(pod);
      },
      onDelete: (pod) => this.namespaceChanged(pod),
    });
    this.watched.push(pods);
    // Services and claims change what they use on update (type, ports, size); the rest only by going.
    for (const res of [SERVICES, PERSISTENTVOLUMECLAIMS]) {
      const inf = opts.informers.informerFor<KubeObject>(res);
      inf.addHandlers({ onUpdate: (obj) => this.namespaceChanged(obj), onDelete: (obj) => this.namespaceChanged(obj) });
      this.watched.push(inf);
    }
    for (const plural of ['configmaps', 'secrets', 'replicationcontrollers', 'resourcequotas']) {
      const inf = plural === 'resourcequotas' ? (this.quotas as Informer<KubeObject>) : opts.informers.informerFor<KubeObject>({ group: '', version: 'v1', plural, namespaced: true });
      inf.addHandlers({ onDelete: (obj) => this.namespaceChanged(obj) });
      if (plural !== 'resourcequotas') this.watched.push(inf);
    }
  }

  async start(): Promise<void> {
    await Promise.all([this.quotas.start(), ...this.watched.map((i) => i.start())]);
    this.controller.start();
    const period = this.opts.resyncPeriodMs ?? DEFAULT_QUOTA_RESYNC_MS;
    this.resyncTimer = setInterval(() => {
      for (const q of this.quotas.list()) this.controller.queue.add(keyOf(q));
    }, period);
    this.resyncTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await this.controller.stop();
  }

  private namespaceChanged(obj: KubeObject): void {
    for (const q of this.quotas.listNamespace(obj.metadata.namespace ?? '')) this.controller.queue.add(keyOf(q));
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const [namespace, name] = key.split('/') as [string, string];
    let quota: ResourceQuota;
    try {
      quota = await this.opts.client.get<ResourceQuota>(RESOURCEQUOTAS, { namespace, name });
    } catch (e) {
      if (isApiError(e) && e.reason === 'NotFound') return;
      throw e;
    }
    const hard = quota.spec?.hard ?? {};
    const used = await this.recount(quota, Object.keys(hard));
    const status = { hard: usageToList(usageFromList(hard)), used: usageToList(used) };
    if (sameList(status.hard, quota.status?.hard) && sameList(status.used, quota.status?.used)) return;
    await this.opts.client.update<ResourceQuota>(RESOURCEQUOTAS, { ...quota, status }, { subresource: 'status' });
    return;
  }

  /** What the namespace's objects use of each named resource (0 for those nothing uses). */
  async recount(quota: ResourceQuota, names: string[]): Promise<Usage> {
    const namespace = quota.metadata.namespace ?? '';
    let total: Usage = new Map(names.map((n) => [n, quantityFromValue(0n)]));
    const counted = new Map<string, { group: string; plural: string }>();
    for (const n of names) {
      const res = resourceCountedBy(n);
      if (res) counted.set(`${res.group}/${res.plural}`, res);
    }
    const nowMs = this.now();
    for (const { group, plural } of counted.values()) {
      const ref = this.refFor(group, plural);
      if (!ref) continue;
      const list = await this.opts.client.list<KubeObject>(ref, { namespace });
      for (const obj of list.items) {
        if (!quotaMatches(quota, group, plural, obj)) continue;
        total = addUsage(total, maskUsage(objectUsage(group, plural, obj, nowMs), names));
      }
    }
    return total;
  }

  private refFor(group: string, plural: string): ResourceRef | undefined {
    const info = this.opts.resources().find((r) => r.group === group && r.plural === plural && r.namespaced && r.verbs.includes('list'));
    return info ? { group: info.group, version: info.version, plural: info.plural, namespaced: true } : undefined;
  }
}

function sameList(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const x = usageToList(usageFromList(a));
  const y = usageToList(usageFromList(b));
  return JSON.stringify(x) === JSON.stringify(y);
}
