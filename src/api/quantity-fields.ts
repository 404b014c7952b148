/**
 * Where the kinds Berth serves hold `resource.Quantity` values, and rewriting them in canonical
 * form on write (`0.0001` → `100u`, `1.5Gi` → `1536Mi`, unquoted `1` → `"1"`), as kube-apiserver
 * does by decoding into Quantity and encoding back. Values that do not parse are left alone for
 * validation to report with the field's path.
 */
import { formatQuantity, tryParseQuantity } from './quantity.js';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/** Canonicalize every quantity of `obj`, a `group`/`kind` object, in place. Other kinds are untouched. */
export function canonicalizeQuantities(group: string, kind: string, obj: unknown): void {
  if (!isObject(obj)) return;
  const spec = isObject(obj.spec) ? obj.spec : undefined;
  const status = isObject(obj.status) ? obj.status : undefined;
  switch (`${group}/${kind}`) {
    case '/Pod':
      podSpec(spec);
      podStatus(status);
      return;
    case 'apps/Deployment':
    case 'apps/ReplicaSet':
    case 'apps/DaemonSet':
    case 'batch/Job':
      podTemplate(spec?.template);
      return;
    case 'apps/StatefulSet':
      podTemplate(spec?.template);
      for (const claim of objects(spec?.volumeClaimTemplates)) claimSpec(claim.spec);
      return;
    case 'batch/CronJob': {
      const jobTemplate = isObject(spec?.jobTemplate) ? spec.jobTemplate : undefined;
      podTemplate(isObject(jobTemplate?.spec) ? jobTemplate.spec.template : undefined);
      return;
    }
    case '/PersistentVolumeClaim':
      claimSpec(spec);
      resourceList(status, 'capacity');
      resourceList(status, 'allocatedResources');
      return;
    case '/Node':
      resourceList(status, 'capacity');
      resourceList(status, 'allocatable');
      return;
    case '/ResourceQuota':
      resourceList(spec, 'hard');
      resourceList(status, 'hard');
      resourceList(status, 'used');
      return;
    case '/LimitRange':
      for (const limit of objects(spec?.limits)) {
        for (const field of ['max', 'min', 'default', 'defaultRequest', 'maxLimitRequestRatio']) resourceList(limit, field);
      }
      return;
  }
}

function podTemplate(template: unknown): void {
  if (isObject(template)) podSpec(isObject(template.spec) ? template.spec : undefined);
}

function podSpec(spec: Json | undefined): void {
  if (!spec) return;
  for (const list of ['containers', 'initContainers', 'ephemeralContainers']) {
    for (const c of objects(spec[list])) requirements(c.resources);
  }
  resourceList(spec, 'overhead');
  requirements(spec.resources);
  for (const volume of objects(spec.volumes)) {
    if (isObject(volume.emptyDir)) quantityField(volume.emptyDir, 'sizeLimit');
    const ephemeral = isObject(volume.ephemeral) ? volume.ephemeral : undefined;
    const template = isObject(ephemeral?.volumeClaimTemplate) ? ephemeral.volumeClaimTemplate : undefined;
    claimSpec(template?.spec);
  }
}

function podStatus(status: Json | undefined): void {
  if (!status) return;
  for (const list of ['containerStatuses', 'initContainerStatuses', 'ephemeralContainerStatuses']) {
    for (const s of objects(status[list])) {
      resourceList(s, 'allocatedResources');
      requirements(s.resources);
    }
  }
}

function claimSpec(spec: unknown): void {
  if (isObject(spec)) requirements(spec.resources);
}

function requirements(r: unknown): void {
  if (!isObject(r)) return;
  resourceList(r, 'requests');
  resourceList(r, 'limits');
}

function resourceList(holder: Json | undefined, field: string): void {
  const list = holder?.[field];
  if (!isObject(list)) return;
  for (const name of Object.keys(list)) quantityField(list, name);
}

function quantityField(holder: Json, field: string): void {
  const raw = holder[field];
  if (typeof raw !== 'string' && typeof raw !== 'number') return;
  const q = tryParseQuantity(raw);
  if (q) holder[field] = formatQuantity(q);
}
