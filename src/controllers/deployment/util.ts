/**
 * Pure Deployment arithmetic: revisions, template identity (pod-template-hash), surge and
 * unavailability budgets, proportional scaling, conditions and status. No I/O here — the sync
 * code in sync.ts, rolling.ts and recreate.ts decides and writes; these functions only compute.
 */
import type { Deployment, DeploymentCondition, DeploymentStatus, IntOrString, PodTemplateSpec, ReplicaSet } from '../../api/types.js';

export const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';
export const REVISION_HISTORY_ANNOTATION = 'deployment.kubernetes.io/revision-history';
export const DESIRED_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/desired-replicas';
export const MAX_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/max-replicas';
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
export const ROLLBACK_TO_ANNOTATION = 'deprecated.deployment.rollback.to';
/** Label (and selector term) that keeps each ReplicaSet's pods apart from its siblings'. */
export const POD_TEMPLATE_HASH_LABEL = 'pod-template-hash';

/** Deployment annotations that are not copied onto its ReplicaSets. */
const NOT_COPIED = new Set([LAST_APPLIED_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION, DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION]);

/** Longest revision-history annotation kept (Kubernetes' default). */
const MAX_REVISION_HISTORY_CHARS = 2000;

// Condition types and the reasons kubectl and users look for.
export const PROGRESSING = 'Progressing';
export const AVAILABLE = 'Available';
export const REPLICA_FAILURE = 'ReplicaFailure';
export const REASON = {
  newRSCreated: 'NewReplicaSetCreated',
  foundNewRS: 'FoundNewReplicaSet',
  rsUpdated: 'ReplicaSetUpdated',
  newRSAvailable: 'NewReplicaSetAvailable',
  timedOut: 'ProgressDeadlineExceeded',
  paused: 'DeploymentPaused',
  resumed: 'DeploymentResumed',
  minimumAvailable: 'MinimumReplicasAvailable',
  minimumUnavailable: 'MinimumReplicasUnavailable',
  failedCreate: 'ReplicaSetCreateError',
} as const;

// ---------- template identity ----------

/**
 * A value reduced to what it means: object keys sorted, and null/absent, false, '' and empty
 * lists/maps dropped (they mean "unset" for the fields of a pod template). Templates that came
 * back through another client's encoder (`creationTimestamp: null`, `resources: {}`) compare
 * equal to the stored one.
 */
export function semanticNormalize(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(semanticNormalize);
    return items.length ? items : undefined;
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = semanticNormalize((value as Record<string, unknown>)[k]);
      if (v !== undefined) out[k] = v;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (value === null || value === false || value === '') return undefined;
  return value;
}

function withoutHash(template: PodTemplateSpec | undefined): unknown {
  const copy = structuredClone(template ?? {}) as PodTemplateSpec;
  if (copy.metadata?.labels) delete copy.metadata.labels[POD_TEMPLATE_HASH_LABEL];
  return semanticNormalize(copy);
}

/** Same pod template, ignoring the pod-template-hash label. */
export function equalIgnoreHash(a: PodTemplateSpec | undefined, b: PodTemplateSpec | undefined): boolean {
  return JSON.stringify(withoutHash(a)) === JSON.stringify(withoutHash(b));
}

/** Alphabet without vowels or look-alikes, so hashes never spell words (as Kubernetes encodes them). */
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(s, 'utf8');
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * The pod-template-hash of a template: FNV-32a of its meaning (see semanticNormalize), salted by
 * the Deployment's collisionCount, spelled in the safe alphabet. Equal templates, equal hashes.
 */
export function templateHash(template: PodTemplateSpec, collisionCount?: number): string {
  let input = JSON.stringify(withoutHash(template)) ?? '';
  if (collisionCount !== undefined && collisionCount !== null) input += `#${collisionCount}`;
  return String(fnv32a(input))
    .split('')
    .map((d) => SAFE_ALPHABET[d.charCodeAt(0) % SAFE_ALPHABET.length])
    .join('');
}

// ---------- revisions ----------

export function revisionOf(obj: { metadata: { annotations?: Record<string, string> } } | undefined): number {
  const v = obj?.metadata.annotations?.[REVISION_ANNOTATION];
  const n = v === undefined ? 0 : Number(v);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

export function maxRevision(list: readonly ReplicaSet[]): number {
  return list.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
}

/**
 * Copy the Deployment's annotations onto its new ReplicaSet and give it `newRevision` when that is
 * higher than what it has; a ReplicaSet that had a revision (a rollback to it) remembers the old
 * one in revision-history. On creation (`exists` false) the replica annotations are set as well.
 * Mutates `rs`; true when anything changed.
 */
export function setNewReplicaSetAnnotations(d: Deployment, rs: ReplicaSet, newRevision: number, exists: boolean): boolean {
  let changed = copyDeploymentAnnotations(d, rs);
  const annotations = (rs.metadata.annotations ??= {});
  const oldRaw = annotations[REVISION_ANNOTATION];
  const had = oldRaw !== undefined;
  let oldRevision = 0;
  if (had) {
    oldRevision = Number(oldRaw);
    if (!Number.isSafeInteger(oldRevision)) return changed;
  }
  if (oldRevision < newRevision) {
    annotations[REVISION_ANNOTATION] = String(newRevision);
    changed = true;
    if (had) {
      const history = annotations[REVISION_HISTORY_ANNOTATION];
      let entries = history ? history.split(',') : [];
      entries.push(oldRaw!);
      while (entries.join(',').length > MAX_REVISION_HISTORY_CHARS && entries.length > 1) entries = entries.slice(1);
      annotations[REVISION_HISTORY_ANNOTATION] = entries.join(',');
    }
  }
  if (!exists && setReplicasAnnotations(rs, d.spec.replicas ?? 1, (d.spec.replicas ?? 1) + maxSurge(d))) changed = true;
  return changed;
}

function copyDeploymentAnnotations(d: Deployment, rs: ReplicaSet): boolean {
  let changed = false;
  for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) {
    if (NOT_COPIED.has(k)) continue;
    const annotations = (rs.metadata.annotations ??= {});
    if (annotations[k] === v) continue;
    annotations[k] = v;
    changed = true;
  }
  return changed;
}

/** Record the desired and surge-inclusive replica counts the ReplicaSet was sized for. Mutates; true when changed. */
export function setReplicasAnnotations(rs: ReplicaSet, desired: number, max: number): boolean {
  const annotations = (rs.metadata.annotations ??= {});
  let changed = false;
  if (annotations[DESIRED_REPLICAS_ANNOTATION] !== String(desired)) {
    annotations[DESIRED_REPLICAS_ANNOTATION] = String(desired);
    changed = true;
  }
  if (annotations[MAX_REPLICAS_ANNOTATION] !== String(max)) {
    annotations[MAX_REPLICAS_ANNOTATION] = String(max);
    changed = true;
  }
  return changed;
}

function intAnnotation(rs: ReplicaSet, name: string): number | undefined {
  const v = rs.metadata.annotations?.[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

export const desiredReplicasOf = (rs: ReplicaSet) => intAnnotation(rs, DESIRED_REPLICAS_ANNOTATION);
export const maxReplicasOf = (rs: ReplicaSet) => intAnnotation(rs, MAX_REPLICAS_ANNOTATION);

// ---------- surge and unavailability ----------

/** A count or a percentage of `total`, percentages rounded up or down. */
export function scaledValue(v: IntOrString | undefined, total: number, roundUp: boolean): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) {
    const n = Number(v);
    return Number.isInteger(n) ? n : 0;
  }
  const exact = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

export function isRollingUpdate(d: Deployment): boolean {
  return (d.spec.strategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
}

/** maxSurge rounded up, maxUnavailable rounded down; both 0 would deadlock, so unavailability becomes 1. */
export function resolveFenceposts(d: Deployment): { surge: number; unavailable: number } {
  const desired = d.spec.replicas ?? 1;
  const ru = d.spec.strategy?.rollingUpdate ?? {};
  const surge = scaledValue(ru.maxSurge ?? '25%', desired, true);
  let unavailable = scaledValue(ru.maxUnavailable ?? '25%', desired, false);
  if (surge === 0 && unavailable === 0) unavailable = 1;
  return { surge, unavailable };
}

export function maxSurge(d: Deployment): number {
  return isRollingUpdate(d) ? resolveFenceposts(d).surge : 0;
}

export function maxUnavailable(d: Deployment): number {
  const desired = d.spec.replicas ?? 1;
  if (!isRollingUpdate(d) || desired === 0) return 0;
  return Math.min(resolveFenceposts(d).unavailable, desired);
}

// ---------- counting ReplicaSets ----------

export const specReplicas = (rs: ReplicaSet | undefined) => rs?.spec.replicas ?? 0;

/** Sum of spec.replicas. */
export function replicaCount(list: readonly (ReplicaSet | undefined)[]): number {
  return list.reduce((n, rs) => n + specReplicas(rs), 0);
}

/**
 * Pods that exist or are about to: per ReplicaSet the larger of what it is asked for and what it
 * still has. A ReplicaSet just scaled down keeps its surplus until it has deleted it, so counting
 * spec alone would let the new ReplicaSet grow into pods that are not gone yet.
 */
export function podCount(list: readonly (ReplicaSet | undefined)[]): number {
  return list.reduce((n, rs) => n + Math.max(specReplicas(rs), rs?.status?.replicas ?? 0), 0);
}

/** Sum of status.replicas. */
export function actualReplicaCount(list: readonly (ReplicaSet | undefined)[]): number {
  return list.reduce((n, rs) => n + (rs?.status?.replicas ?? 0), 0);
}

export function readyReplicaCount(list: readonly (ReplicaSet | undefined)[]): number {
  return list.reduce((n, rs) => n + (rs?.status?.readyReplicas ?? 0), 0);
}

/**
 * Available pods that will stay: a ReplicaSet scaled below what it reports available is about to
 * delete the difference, so it counts for no more than its spec.
 */
export function availableReplicaCount(list: readonly (ReplicaSet | undefined)[]): number {
  return list.reduce((n, rs) => n + (rs ? Math.min(rs.status?.availableReplicas ?? 0, specReplicas(rs)) : 0), 0);
}

export function filterActive(list: readonly (ReplicaSet | undefined)[]): ReplicaSet[] {
  return list.filter((rs): rs is ReplicaSet => !!rs && specReplicas(rs) > 0);
}

function createdAt(rs: ReplicaSet): number {
  const t = rs.metadata.creationTimestamp ? Date.parse(rs.metadata.creationTimestamp) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

/** Oldest first (name breaks ties). */
export function byCreation(a: ReplicaSet, b: ReplicaSet): number {
  return createdAt(a) - createdAt(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}

/** Lowest revision first, then oldest. */
export function byRevision(a: ReplicaSet, b: ReplicaSet): number {
  return revisionOf(a) - revisionOf(b) || byCreation(a, b);
}

/** The ReplicaSet whose template is the Deployment's (the oldest, should there be several). */
export function findNewReplicaSet(d: Deployment, list: readonly ReplicaSet[]): ReplicaSet | undefined {
  return [...list].sort(byCreation).find((rs) => equalIgnoreHash(rs.spec.template, d.spec.template));
}

/** The new ReplicaSet is at full size and every pod of it is available. */
export function isSaturated(d: Deployment, rs: ReplicaSet | undefined): boolean {
  if (!rs) return false;
  const desired = d.spec.replicas ?? 1;
  return specReplicas(rs) === desired && desiredReplicasOf(rs) === desired && (rs.status?.availableReplicas ?? 0) === desired;
}

/** How big the new ReplicaSet may be now. */
export function newRSNewReplicas(d: Deployment, all: readonly (ReplicaSet | undefined)[], newRS: ReplicaSet): number {
  const desired = d.spec.replicas ?? 1;
  if (!isRollingUpdate(d)) return desired;
  const current = podCount(all);
  const maxTotal = desired + maxSurge(d);
  if (current >= maxTotal) return specReplicas(newRS);
  const up = Math.min(maxTotal - current, desired - specReplicas(newRS));
  return specReplicas(newRS) + Math.max(0, up);
}

/**
 * Of several active ReplicaSets, this one's share of `toAdd` replicas (negative: to remove) when the
 * Deployment is resized mid-rollout, in proportion to its size against what the set was sized for.
 */
export function proportion(rs: ReplicaSet, d: Deployment, toAdd: number, added: number): number {
  if (specReplicas(rs) === 0 || toAdd === 0 || toAdd === added) return 0;
  const fraction = replicaSetFraction(rs, d);
  const allowed = toAdd - added;
  return toAdd > 0 ? Math.min(fraction, allowed) : Math.max(fraction, allowed);
}

function replicaSetFraction(rs: ReplicaSet, d: Deployment): number {
  const desired = d.spec.replicas ?? 1;
  if (desired === 0) return -specReplicas(rs);
  const target = desired + maxSurge(d);
  const annotated = maxReplicasOf(rs) ?? d.status?.replicas ?? 0;
  if (annotated === 0) return 0;
  return Math.round((specReplicas(rs) * target) / annotated) - specReplicas(rs);
}

/**
 * With at most one active ReplicaSet, the one a plain resize applies to: the active one, else the
 * new one, else the newest old one. Undefined when several are active (a rollout is under way).
 */
export function findActiveOrLatest(newRS: ReplicaSet | undefined, olds: readonly ReplicaSet[]): ReplicaSet | undefined {
  if (!newRS && olds.length === 0) return undefined;
  const newestFirst = [...olds].sort((a, b) => byCreation(b, a));
  const active = filterActive([...newestFirst, newRS]);
  if (active.length === 0) return newRS ?? newestFirst[0];
  if (active.length === 1) return active[0];
  return undefined;
}

// ---------- conditions ----------

export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function newCondition(type: string, status: DeploymentCondition['status'], reason: string, message: string, now: number): DeploymentCondition {
  const t = isoSeconds(now);
  return { type, status, lastUpdateTime: t, lastTransitionTime: t, reason, message };
}

export function getCondition(status: DeploymentStatus | undefined, type: string): DeploymentCondition | undefined {
  return status?.conditions?.find((c) => c.type === type);
}

/** Set a condition; a no-op when status and reason are unchanged; keeps lastTransitionTime while status is. */
export function setCondition(status: DeploymentStatus, cond: DeploymentCondition): void {
  const current = getCondition(status, cond.type);
  if (current && current.status === cond.status && current.reason === cond.reason) return;
  const next = { ...cond };
  if (current && current.status === cond.status) next.lastTransitionTime = current.lastTransitionTime;
  status.conditions = [...(status.conditions ?? []).filter((c) => c.type !== cond.type), next];
}

export function removeCondition(status: DeploymentStatus, type: string): void {
  if (!status.conditions) return;
  status.conditions = status.conditions.filter((c) => c.type !== type);
  if (status.conditions.length === 0) delete status.conditions;
}

export function hasProgressDeadline(d: Deployment): boolean {
  const p = d.spec.progressDeadlineSeconds;
  return p !== undefined && p !== null && p < 2147483647;
}

/** Every replica updated and available, and the latest spec observed. */
export function deploymentComplete(d: Deployment, status: DeploymentStatus): boolean {
  const desired = d.spec.replicas ?? 1;
  return (
    (status.updatedReplicas ?? 0) === desired &&
    (status.replicas ?? 0) === desired &&
    (status.availableReplicas ?? 0) === desired &&
    (status.observedGeneration ?? 0) >= (d.metadata.generation ?? 0)
  );
}

/** Anything moved forward since the stored status: more updated, fewer old, more ready or available. */
export function deploymentProgressing(d: Deployment, next: DeploymentStatus): boolean {
  const old = d.status ?? {};
  const oldOld = (old.replicas ?? 0) - (old.updatedReplicas ?? 0);
  const newOld = (next.replicas ?? 0) - (next.updatedReplicas ?? 0);
  return (
    (next.updatedReplicas ?? 0) > (old.updatedReplicas ?? 0) ||
    newOld < oldOld ||
    (next.readyReplicas ?? 0) > (old.readyReplicas ?? 0) ||
    (next.availableReplicas ?? 0) > (old.availableReplicas ?? 0)
  );
}

/** No progress for progressDeadlineSeconds since the Progressing condition was last updated. */
export function deploymentTimedOut(d: Deployment, status: DeploymentStatus, now: number): boolean {
  if (!hasProgressDeadline(d)) return false;
  const cond = getCondition(status, PROGRESSING);
  if (!cond) return false;
  if (cond.reason === REASON.newRSAvailable) return false;
  if (cond.reason === REASON.timedOut) return true;
  const from = cond.lastUpdateTime ? Date.parse(cond.lastUpdateTime) : NaN;
  if (Number.isNaN(from)) return false;
  return from + (d.spec.progressDeadlineSeconds ?? 600) * 1000 < now;
}

/**
 * The counts and Available condition the ReplicaSets add up to. Conditions other than Available
 * are carried over for the caller to adjust. Zero counts are omitted, as the API server's encoding
 * omits them.
 */
export function calculateStatus(d: Deployment, all: readonly (ReplicaSet | undefined)[], newRS: ReplicaSet | undefined, now: number): DeploymentStatus {
  const available = availableReplicaCount(all);
  const unavailable = Math.max(0, replicaCount(all) - available);
  const counts: Record<string, number | undefined> = {
    observedGeneration: d.metadata.generation,
    replicas: actualReplicaCount(all),
    updatedReplicas: actualReplicaCount([newRS]),
    readyReplicas: readyReplicaCount(all),
    availableReplicas: available,
    unavailableReplicas: unavailable,
  };
  const status: DeploymentStatus = {};
  for (const [k, v] of Object.entries(counts)) if (v) (status as Record<string, unknown>)[k] = v;
  if (d.status?.conditions?.length) status.conditions = d.status.conditions.map((c) => ({ ...c }));
  if (d.status?.collisionCount !== undefined) status.collisionCount = d.status.collisionCount;
  if (available >= (d.spec.replicas ?? 1) - maxUnavailable(d)) {
    setCondition(status, newCondition(AVAILABLE, 'True', REASON.minimumAvailable, 'Deployment has minimum availability.', now));
  } else {
    setCondition(status, newCondition(AVAILABLE, 'False', REASON.minimumUnavailable, 'Deployment does not have minimum availability.', now));
  }
  return status;
}

/** Stable JSON (sorted keys) for "did it change" comparisons. */
export function canonical(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}
