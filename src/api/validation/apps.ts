/**
 * apps/v1 validation: ReplicaSet, Deployment, DaemonSet, StatefulSet and ControllerRevision, and the replicated pod template ReplicationController shares.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import type { FieldError } from '../errors.js';
import { isEverythingSelector, labelSelectorFromObject, matchesLabels } from '../selectors.js';
import type { ControllerRevision, DaemonSet, Deployment, LabelSelector, ReplicaSet, StatefulSet } from '../types.js';
import {
  child,
  expectInteger,
  expectObject,
  fieldErrors,
  isRecord,
  validateLabelSelectorObject,
  validateLabels,
  validateAnnotations,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validatePodSpec
} from '../validation.js';

export function validateNonNegative(v: unknown, path: string): FieldError[] {
  const errs = expectInteger(path, v);
  if (!errs.length && typeof v === 'number' && v < 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than or equal to 0'));
  return errs;
}

/**
 * selector + template, shared by ReplicaSet and Deployment: a non-empty selector that matches
 * the template's labels, and a pod template whose restartPolicy is Always — a replica count
 * only means something for pods that are meant to keep running.
 */
function validateSelectorAndTemplate(spec: Record<string, unknown>, kindWord: string): FieldError[] {
  const errs: FieldError[] = [];
  const selectorPath = 'spec.selector';
  if (spec.selector === undefined || spec.selector === null) {
    errs.push(fieldErrors.required(selectorPath));
  } else {
    const selErrs = validateLabelSelectorObject(spec.selector, selectorPath);
    errs.push(...selErrs);
    if (!selErrs.length) {
      const sel = labelSelectorFromObject(spec.selector as LabelSelector);
      if (isEverythingSelector(sel)) errs.push(fieldErrors.invalid(selectorPath, spec.selector, `empty selector is invalid for ${kindWord}`));
    }
  }
  const selectorValid = !errs.some((e) => e.field.startsWith(selectorPath)) && isRecord(spec.selector);
  const matches = selectorValid ? (labels: Record<string, string>) => matchesLabels(labelSelectorFromObject(spec.selector as LabelSelector), labels) : undefined;
  errs.push(...validateReplicatedTemplate({ template: spec.template, matchesSelector: matches, kind: 'ReplicaSet' }));
  return errs;
}

/**
 * `spec.template` of a kind that keeps N copies of a pod running (ReplicaSet, Deployment,
 * ReplicationController): required, labels the selector matches (when the selector itself is
 * valid, `matchesSelector` is given), a valid pod spec with restartPolicy Always and no
 * activeDeadlineSeconds (`kind` names the kind in that message, as upstream words it).
 */
export function validateReplicatedTemplate(opts: { template: unknown; matchesSelector?: (labels: Record<string, string>) => boolean; kind: string }): FieldError[] {
  const errs: FieldError[] = [];
  const templatePath = 'spec.template';
  const template = opts.template;
  if (!isRecord(template)) {
    errs.push(...(template === undefined || template === null ? [fieldErrors.required(templatePath)] : expectObject(templatePath, template)));
    return errs;
  }
  const meta = template.metadata;
  const metaPath = child(templatePath, 'metadata');
  errs.push(...expectObject(metaPath, meta));
  const labels = isRecord(meta) ? meta.labels : undefined;
  if (isRecord(meta)) {
    errs.push(...validateLabels(meta.labels, child(metaPath, 'labels')), ...validateAnnotations(meta.annotations, child(metaPath, 'annotations')));
  }
  if (opts.matchesSelector && !opts.matchesSelector((isRecord(labels) ? labels : {}) as Record<string, string>)) {
    errs.push(fieldErrors.invalid(child(metaPath, 'labels'), labels ?? {}, '`selector` does not match template `labels`'));
  }
  const podSpecPath = child(templatePath, 'spec');
  const podSpec = template.spec;
  if (!isRecord(podSpec)) {
    errs.push(podSpec === undefined || podSpec === null ? fieldErrors.required(child(podSpecPath, 'containers')) : fieldErrors.typeInvalid(podSpecPath, podSpec, 'must be an object'));
    return errs;
  }
  errs.push(...validatePodSpec(podSpec, podSpecPath));
  if (podSpec.restartPolicy !== undefined && podSpec.restartPolicy !== 'Always' && !errs.some((e) => e.field === child(podSpecPath, 'restartPolicy'))) {
    errs.push(fieldErrors.notSupported(child(podSpecPath, 'restartPolicy'), podSpec.restartPolicy, ['Always']));
  }
  if (podSpec.activeDeadlineSeconds !== undefined && podSpec.activeDeadlineSeconds !== null) {
    errs.push(fieldErrors.forbidden(child(podSpecPath, 'activeDeadlineSeconds'), `activeDeadlineSeconds in ${opts.kind} is not Supported`));
  }
  return errs;
}

const PERCENT = /^[0-9]+%$/;

/** Validates an IntOrString that is a count or a percentage; returns errors and the value as a fraction-or-count. */
function validateIntOrPercent(v: unknown, path: string, maxPercent?: number): { errs: FieldError[]; isZero: boolean } {
  if (v === undefined || v === null) return { errs: [], isZero: false };
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return { errs: [fieldErrors.typeInvalid(path, v, 'must be an integer or a percentage')], isZero: false };
    if (v < 0) return { errs: [fieldErrors.invalid(path, v, 'must be greater than or equal to 0')], isZero: false };
    return { errs: [], isZero: v === 0 };
  }
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      return { errs: [fieldErrors.invalid(path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")], isZero: false };
    }
    const n = Number(v.slice(0, -1));
    if (maxPercent !== undefined && n > maxPercent) return { errs: [fieldErrors.invalid(path, v, `must not be greater than ${maxPercent}%`)], isZero: false };
    return { errs: [], isZero: n === 0 };
  }
  return { errs: [fieldErrors.typeInvalid(path, v, 'must be an integer or a percentage')], isZero: false };
}

function validateStrategy(strategy: unknown): FieldError[] {
  const path = 'spec.strategy';
  if (strategy === undefined || strategy === null) return [];
  if (!isRecord(strategy)) return expectObject(path, strategy);
  const errs: FieldError[] = [];
  const type = strategy.type;
  if (type !== 'Recreate' && type !== 'RollingUpdate') {
    errs.push(type === undefined ? fieldErrors.required(child(path, 'type')) : fieldErrors.notSupported(child(path, 'type'), type, ['Recreate', 'RollingUpdate']));
    return errs;
  }
  const ru = strategy.rollingUpdate;
  const ruPath = child(path, 'rollingUpdate');
  if (type === 'Recreate') {
    if (ru !== undefined && ru !== null) errs.push(fieldErrors.forbidden(ruPath, "may not be specified when strategy `type` is 'Recreate'"));
    return errs;
  }
  if (ru === undefined || ru === null) return errs;
  if (!isRecord(ru)) return expectObject(ruPath, ru);
  const unavailable = validateIntOrPercent(ru.maxUnavailable, child(ruPath, 'maxUnavailable'), 100);
  const surge = validateIntOrPercent(ru.maxSurge, child(ruPath, 'maxSurge'));
  errs.push(...unavailable.errs, ...surge.errs);
  if (!errs.length && unavailable.isZero && surge.isZero) {
    errs.push(fieldErrors.invalid(child(ruPath, 'maxUnavailable'), ru.maxUnavailable, 'may not be 0 when `maxSurge` is 0'));
  }
  return errs;
}

export function validateReplicaSet(rs: ReplicaSet): FieldError[] {
  const errs = validateObjectMeta(rs.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(rs.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = rs.spec;
  errs.push(...validateNonNegative(spec.replicas, 'spec.replicas'), ...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  errs.push(...validateSelectorAndTemplate(spec, 'replicaset'));
  return errs;
}

export function validateDeployment(d: Deployment): FieldError[] {
  const errs = validateObjectMeta(d.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(d.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = d.spec;
  errs.push(
    ...validateNonNegative(spec.replicas, 'spec.replicas'),
    ...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'),
    ...validateNonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'),
    ...validateNonNegative(spec.progressDeadlineSeconds, 'spec.progressDeadlineSeconds'),
  );
  if (typeof spec.progressDeadlineSeconds === 'number' && spec.progressDeadlineSeconds <= ((spec.minReadySeconds as number | undefined) ?? 0)) {
    errs.push(fieldErrors.invalid('spec.progressDeadlineSeconds', spec.progressDeadlineSeconds, 'must be greater than minReadySeconds'));
  }
  if (spec.paused !== undefined && typeof spec.paused !== 'boolean') errs.push(fieldErrors.typeInvalid('spec.paused', spec.paused, 'must be a boolean'));
  errs.push(...validateStrategy(spec.strategy), ...validateSelectorAndTemplate(spec, 'deployment'));
  return errs;
}

/** A selector compared by meaning, not by key order. */
function canonicalSelector(sel: unknown): string {
  if (!isRecord(sel)) return JSON.stringify(sel ?? null);
  const labels = isRecord(sel.matchLabels) ? Object.entries(sel.matchLabels).sort(([a], [b]) => a.localeCompare(b)) : [];
  const exprs = Array.isArray(sel.matchExpressions) ? sel.matchExpressions : [];
  return JSON.stringify({ labels, exprs });
}

export function validateSelectorImmutable(obj: { spec: { selector?: unknown } }, old: { spec: { selector?: unknown } }): FieldError[] {
  const next = obj.spec?.selector;
  const prev = old.spec?.selector;
  if (canonicalSelector(next) !== canonicalSelector(prev)) return [fieldErrors.invalid('spec.selector', next, 'field is immutable')];
  return [];
}

// ---------- DaemonSet and StatefulSet ----------

/** A non-empty selector that matches the template labels, and a valid pod spec with restartPolicy Always. */
function validateSetSelectorAndTemplate(spec: Record<string, unknown>): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.selector === undefined || spec.selector === null) errs.push(fieldErrors.required('spec.selector'));
  else {
    const selErrs = validateLabelSelectorObject(spec.selector, 'spec.selector');
    errs.push(...selErrs);
    if (!selErrs.length) {
      const sel = labelSelectorFromObject(spec.selector as LabelSelector);
      const template = isRecord(spec.template) ? spec.template : {};
      const labels = isRecord(template.metadata) && isRecord(template.metadata.labels) ? template.metadata.labels : {};
      if (isEverythingSelector(sel)) errs.push(fieldErrors.invalid('spec.selector', spec.selector, 'empty selector is invalid'));
      else if (!matchesLabels(sel, labels as Record<string, string>)) {
        errs.push(fieldErrors.invalid('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
      }
    }
  }
  const template = spec.template;
  if (!isRecord(template) || !isRecord(template.spec)) {
    errs.push(fieldErrors.required('spec.template.spec.containers'));
    return errs;
  }
  errs.push(...validatePodSpec(template.spec, 'spec.template.spec'));
  const rp = template.spec.restartPolicy;
  if (rp !== undefined && rp !== 'Always') errs.push(fieldErrors.notSupported('spec.template.spec.restartPolicy', rp, ['Always']));
  return errs;
}

export function validateDaemonSet(ds: DaemonSet): FieldError[] {
  const errs = validateObjectMeta(ds.metadata, { namespaced: true, nameRule: 'subdomain' });
  if (!isRecord(ds.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = ds.spec;
  errs.push(...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'), ...validateNonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'));
  const us = spec.updateStrategy;
  if (isRecord(us) && us.type !== 'RollingUpdate' && us.type !== 'OnDelete') {
    errs.push(fieldErrors.notSupported('spec.updateStrategy.type', us.type, ['OnDelete', 'RollingUpdate']));
  }
  errs.push(...validateSetSelectorAndTemplate(spec));
  return errs;
}

export function validateStatefulSet(sts: StatefulSet): FieldError[] {
  const errs = validateObjectMeta(sts.metadata, { namespaced: true, nameRule: 'label' });
  if (!isRecord(sts.spec)) return [...errs, fieldErrors.required('spec.selector')];
  const spec: Record<string, unknown> = sts.spec;
  errs.push(...validateNonNegative(spec.replicas, 'spec.replicas'), ...validateNonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  const policy = spec.podManagementPolicy;
  if (policy !== 'OrderedReady' && policy !== 'Parallel') errs.push(fieldErrors.notSupported('spec.podManagementPolicy', policy, ['OrderedReady', 'Parallel']));
  const us = spec.updateStrategy;
  if (isRecord(us)) {
    if (us.type !== 'RollingUpdate' && us.type !== 'OnDelete') errs.push(fieldErrors.notSupported('spec.updateStrategy.type', us.type, ['OnDelete', 'RollingUpdate']));
    if (isRecord(us.rollingUpdate)) errs.push(...validateNonNegative(us.rollingUpdate.partition, 'spec.updateStrategy.rollingUpdate.partition'));
  }
  const templates = spec.volumeClaimTemplates;
  if (templates !== undefined && !Array.isArray(templates)) errs.push(fieldErrors.typeInvalid('spec.volumeClaimTemplates', templates, 'must be a list'));
  if (Array.isArray(templates)) {
    templates.forEach((t, i) => {
      const name = isRecord(t) && isRecord(t.metadata) ? t.metadata.name : undefined;
      if (typeof name !== 'string' || !name) errs.push(fieldErrors.required(`spec.volumeClaimTemplates[${i}].metadata.name`));
    });
  }
  const retention = spec.persistentVolumeClaimRetentionPolicy;
  if (isRecord(retention)) {
    for (const k of ['whenDeleted', 'whenScaled']) {
      const v = retention[k];
      if (v !== 'Retain' && v !== 'Delete') errs.push(fieldErrors.notSupported(child('spec.persistentVolumeClaimRetentionPolicy', k), v, ['Retain', 'Delete']));
    }
  }
  // Claim templates are volumes of every pod: validate the template as the pods will be.
  const claimNames = Array.isArray(templates) ? templates.map((t) => (isRecord(t) && isRecord(t.metadata) ? t.metadata.name : undefined)).filter((n): n is string => typeof n === 'string' && !!n) : [];
  let withClaims = spec;
  if (claimNames.length && isRecord(spec.template) && isRecord(spec.template.spec)) {
    const podSpec = spec.template.spec;
    const volumes = (Array.isArray(podSpec.volumes) ? podSpec.volumes : []).filter((v) => !(isRecord(v) && claimNames.includes(v.name as string)));
    const claimVolumes = claimNames.map((name) => ({ name, persistentVolumeClaim: { claimName: name } }));
    withClaims = { ...spec, template: { ...spec.template, spec: { ...podSpec, volumes: [...volumes, ...claimVolumes] } } };
  }
  errs.push(...validateSetSelectorAndTemplate(withClaims));
  return errs;
}

export function validateSetSelectorImmutable(obj: { spec: { selector?: unknown } }, old: { spec: { selector?: unknown } }): FieldError[] {
  const canon = (s: unknown) => JSON.stringify(s ?? null, (_k, v: unknown) => (isRecord(v) && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b))) : v));
  return canon(obj.spec?.selector) === canon(old.spec?.selector) ? [] : [fieldErrors.invalid('spec.selector', obj.spec?.selector, 'field is immutable')];
}

// ---------- ControllerRevision ----------

export function validateControllerRevision(cr: ControllerRevision): FieldError[] {
  const errs = validateObjectMeta(cr.metadata, { namespaced: true, nameRule: 'subdomain' });
  errs.push(...validateNonNegative(cr.revision, 'revision'));
  return errs;
}

export function validateControllerRevisionUpdate(cr: ControllerRevision, old: ControllerRevision): FieldError[] {
  const errs = validateObjectMetaUpdate(cr.metadata, old.metadata);
  // The snapshot is history: only its revision number may move (rollback re-numbers it).
  if (JSON.stringify(cr.data ?? null) !== JSON.stringify(old.data ?? null)) errs.push(fieldErrors.invalid('data', '', 'field is immutable'));
  errs.push(...validateNonNegative(cr.revision, 'revision'));
  return errs;
}
