/**
 * ControllerRevision history shared by the DaemonSet and StatefulSet controllers. A revision's
 * `data` is the strategic merge patch `kubectl rollout undo` sends back to the owner
 * (`{"spec":{"template":{…,"$patch":"replace"}}}`), so a rollback is just that patch; the
 * controller then finds the revision whose hash matches the restored template and re-numbers it
 * max+1, which is how Kubernetes records "a new revision from the old data".
 */
import type { ControllerRevision, KubeObject, PodTemplateSpec } from '../../api/types.js';
import type { Client } from '../../client/client.js';
import { templateHash } from '../deployment/util.js';
import { isAlreadyExists, isNotFound, newControllerRef } from '../runtime/controller-ref.js';
import { CONTROLLERREVISIONS } from '../../api/identities.js';
import { CONTROLLER_REVISION_HASH_LABEL } from '../../api/apps.js';

/** The revision data for a template: the patch kubectl applies on rollback. */
export function revisionData(template: PodTemplateSpec): { spec: { template: Record<string, unknown> } } {
  return { spec: { template: { ...structuredClone(template), $patch: 'replace' } } };
}

/** The template stored in a revision's data (without the patch directive). */
export function templateOfRevision(cr: ControllerRevision): PodTemplateSpec | undefined {
  const data = cr.data as { spec?: { template?: Record<string, unknown> } } | undefined;
  const t = data?.spec?.template;
  if (!t) return undefined;
  const { $patch: _directive, ...rest } = t;
  // The template revisionData stored (RawExtension is untyped JSON).
  return rest as PodTemplateSpec;
}

/** Hash of a template, stable across key order and server defaults (shared with Deployments). */
export function hashOfTemplate(template: PodTemplateSpec): string {
  return templateHash(template);
}

export interface EnsureRevisionOptions {
  client: Client;
  owner: KubeObject;
  ownerKind: { apiVersion: string; kind: string };
  template: PodTemplateSpec;
  /** revisions the owner already controls (from the informer cache) */
  owned: readonly ControllerRevision[];
  /** how many revisions not in use to keep */
  historyLimit: number;
  /** hashes pods still use: never pruned */
  inUse: ReadonlySet<string>;
}

/**
 * Makes sure the owner's current template has a revision with the highest number, creating it or
 * re-numbering the matching old one, then prunes the oldest unused revisions beyond the limit.
 * Returns the current revision's hash and number.
 */
export async function ensureRevision(opts: EnsureRevisionOptions): Promise<{ hash: string; revision: number }> {
  const hash = hashOfTemplate(opts.template);
  const max = opts.owned.reduce((m, cr) => Math.max(m, cr.revision ?? 0), 0);
  const match = opts.owned.find((cr) => cr.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] === hash);
  let revision = match?.revision ?? max + 1;
  const namespace = opts.owner.metadata.namespace;
  if (match && match.revision < max) {
    revision = max + 1;
    const next = structuredClone(match);
    next.revision = revision;
    await opts.client.update(CONTROLLERREVISIONS, next);
  } else if (!match) {
    const cr: ControllerRevision = {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name: `${opts.owner.metadata.name}-${hash}`,
        namespace,
        labels: { ...(opts.template.metadata?.labels ?? {}), [CONTROLLER_REVISION_HASH_LABEL]: hash },
        // The owner's annotations, as upstream's controllers copy them: rollback tools find a
        // DaemonSet's revision by its deprecated.daemonset.template.generation annotation.
        ...(opts.owner.metadata.annotations && Object.keys(opts.owner.metadata.annotations).length ? { annotations: { ...opts.owner.metadata.annotations } } : {}),
        ownerReferences: [newControllerRef(opts.owner, opts.ownerKind)],
      },
      data: revisionData(opts.template),
      revision,
    };
    try {
      await opts.client.create(CONTROLLERREVISIONS, cr, { namespace });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  const prunable = opts.owned
    .filter((cr) => {
      const h = cr.metadata.labels?.[CONTROLLER_REVISION_HASH_LABEL] ?? '';
      return h !== hash && !opts.inUse.has(h);
    })
    .sort((a, b) => a.revision - b.revision);
  for (const cr of prunable.slice(0, Math.max(0, prunable.length - opts.historyLimit))) {
    try {
      await opts.client.delete(CONTROLLERREVISIONS, { namespace, name: cr.metadata.name ?? '' });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
  return { hash, revision };
}
