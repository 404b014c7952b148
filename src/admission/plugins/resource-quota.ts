/**
 * The ResourceQuota admission plugin, last in the chain as upstream: refuses (403) a create, or an
 * update that grows what an object uses, that would take a namespace over one of its quotas, and
 * charges the quotas' status.used in the same step.
 *
 * One admission, per attempt:
 *  1. read the namespace's quotas fresh from the store (not a cache: a charge another request just
 *     made must be seen);
 *  2. for each quota whose scopes select the object and whose status.hard limits something the
 *     object uses: a compute quota makes pods state the resources it limits ("failed quota");
 *     a quota the controller has not counted yet refuses ("status unknown for quota");
 *  3. what the object uses (minus what its old version used, on update), zeros dropped; nothing → admit;
 *  4. used + requested over hard for any resource → refuse with Kubernetes' "exceeded quota" message;
 *  5. write each quota's new status.used with its resourceVersion as a precondition. A conflict
 *     means another request charged the same quota meanwhile: start again from 1, skipping quotas
 *     already charged. So two concurrent creates cannot both slip under a limit, whichever API
 *     server replica serves them, because the store's compare-and-swap orders the charges.
 *
 * As upstream, a charge whose object is then not stored (a later failure) stays until the quota
 * controller's next recount for the namespace corrects it.
 */
import { ApiError, errors } from '../../api/errors.js';
import {
  addUsage,
  chargesUpdates,
  exceededResources,
  maskUsage,
  matchingResources,
  objectUsage,
  podConstraintError,
  prettyPrintUsage,
  quotaMatches,
  subtractNonNegative,
  usageFromList,
  usageToList,
  withoutZeros,
  type Usage,
} from '../../api/resource-quota.js';
import type { Pod, ResourceQuota } from '../../api/types.js';
import type { Registry } from '../../registry/registry.js';
import { RESOURCEQUOTA_INFO } from '../../registry/kinds/core-policy.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';

export interface QuotaStore {
  /**
   * The namespace's quotas: with `latest`, as stored now; without, as the list cache holds them
   * (kube-apiserver's quota admission reads an informer's cache). A stale read costs only a Conflict
   * on the status write, and the attempts after one read the latest state.
   */
  list(namespace: string, opts?: { latest?: boolean }): Promise<ResourceQuota[]>;
  /** writes status only if metadata.resourceVersion is still current; a Conflict ApiError otherwise */
  updateStatus(quota: ResourceQuota): Promise<void>;
}

export interface ResourceQuotaAdmissionOptions {
  quotas: QuotaStore;
  now?: () => number;
  /** how many times a conflicting charge is retried before the request fails (default 8) */
  maxAttempts?: number;
}

const PLUGIN = 'ResourceQuota';

function refusal(attrs: AdmissionAttributes, message: string): ApiError {
  const name = attrs.object.metadata.name ?? '';
  const resource = attrs.info.group ? `${attrs.info.plural}.${attrs.info.group}` : attrs.info.plural;
  const details: { name: string; kind: string; group?: string } = { name, kind: attrs.info.plural };
  if (attrs.info.group) details.group = attrs.info.group;
  return errors.forbidden(`${resource} "${name}" is forbidden: ${message}`, details);
}

export function resourceQuotaAdmission(opts: ResourceQuotaAdmissionOptions): AdmissionPlugin {
  const now = opts.now ?? Date.now;
  const maxAttempts = opts.maxAttempts ?? 8;
  return {
    name: PLUGIN,
    kind: 'validating',
    completeMessages: true,
    async admit(attrs) {
      const { info } = attrs;
      if (attrs.subresource || !info.namespaced) return;
      if (attrs.operation !== 'CREATE' && !(attrs.operation === 'UPDATE' && chargesUpdates(info.group, info.plural))) return;
      const namespace = attrs.object.metadata.namespace ?? '';
      const charged = new Set<string>();
      for (let attempt = 1; ; attempt++) {
        const quotas = (await opts.quotas.list(namespace, { latest: attempt > 1 })).filter((q) => !charged.has(q.metadata.uid ?? ''));
        if (!quotas.length) return;
        const updated = evaluate(attrs, quotas, now());
        if (attrs.dryRun) return;
        try {
          for (const quota of updated) {
            await opts.quotas.updateStatus(quota);
            charged.add(quota.metadata.uid ?? '');
          }
          return;
        } catch (e) {
          if (!(e instanceof ApiError && e.reason === 'Conflict') || attempt >= maxAttempts) throw e;
        }
      }
    },
  };
}

/** Steps 2–4: the quotas to write back with their new usage, or a refusal. */
function evaluate(attrs: AdmissionAttributes, quotas: ResourceQuota[], nowMs: number): ResourceQuota[] {
  const { group, plural } = attrs.info;
  const interesting: ResourceQuota[] = [];
  for (const quota of quotas) {
    if (!quotaMatches(quota, group, plural, attrs.object)) continue;
    const hard = Object.keys(quota.status?.hard ?? {});
    const restricted = matchingResources(group, plural, hard);
    if (!restricted.length) continue;
    if (group === '' && plural === 'pods') {
      const missing = podConstraintError(attrs.object as Pod, restricted);
      if (missing) throw refusal(attrs, `failed quota: ${quota.metadata.name}: ${missing}`);
    }
    const used = quota.status?.used ?? {};
    if (restricted.some((r) => !(r in used))) {
      throw refusal(attrs, `status unknown for quota: ${quota.metadata.name}, resources: ${restricted.join(',')}`);
    }
    interesting.push(quota);
  }
  if (!interesting.length) return [];

  let delta: Usage = objectUsage(group, plural, attrs.object, nowMs);
  if (attrs.operation === 'UPDATE' && attrs.oldObject) delta = subtractNonNegative(delta, objectUsage(group, plural, attrs.oldObject, nowMs));
  delta = withoutZeros(delta);
  if (!delta.size) return [];

  const out: ResourceQuota[] = [];
  for (const quota of interesting) {
    const hard = usageFromList(quota.status?.hard);
    const used = usageFromList(quota.status?.used);
    const requested = maskUsage(delta, hard.keys());
    if (!requested.size) continue;
    const next = addUsage(used, requested);
    const exceeded = exceededResources(maskUsage(next, requested.keys()), hard);
    if (exceeded.length) {
      throw refusal(
        attrs,
        `exceeded quota: ${quota.metadata.name}, requested: ${prettyPrintUsage(maskUsage(requested, exceeded))}, used: ${prettyPrintUsage(maskUsage(used, exceeded))}, limited: ${prettyPrintUsage(maskUsage(hard, exceeded))}`,
      );
    }
    out.push({ ...quota, status: { ...quota.status, used: usageToList(next) } });
  }
  return out;
}

export const RESOURCE_QUOTA_PLUGIN = PLUGIN;

/** The quotas as the registry stores them; status writes carry the read's resourceVersion as their precondition. */
export function registryQuotaStore(registry: Registry): QuotaStore {
  return {
    list: async (namespace, listOpts) => (await registry.list(RESOURCEQUOTA_INFO, namespace, listOpts?.latest ? {} : { resourceVersion: '0' })).items as ResourceQuota[],
    updateStatus: async (quota) => {
      await registry.update(RESOURCEQUOTA_INFO, quota.metadata.namespace, quota.metadata.name ?? '', quota, { subresource: 'status' });
    },
  };
}
