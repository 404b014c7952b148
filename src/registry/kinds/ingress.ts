/**
 * networking.k8s.io/v1 Ingress and IngressClass: their REST identities, validation hook-up, defaults
 * and table columns. The rules are in src/api/validation/networking-ingress.ts and
 * networking-ingressclass.ts; the default-class admission fills
 * spec.ingressClassName (src/admission/plugins/default-ingress-class.ts); the ingress-status controller
 * keeps status.loadBalancer (src/controllers/ingress-status); the node agent's ingress controller serves it.
 *
 * As upstream: spec changes count in metadata.generation, a create cannot set status, networking/v1
 * has no field defaults (pathType is required), and the legacy `kubernetes.io/ingress.class`
 * annotation must agree with spec.ingressClassName on create only.
 */
import type { FieldError } from '../../api/errors.js';
import type { Ingress, IngressClass, KubeObject } from '../../api/types.js';
import { validateIngressClassAnnotation, validateIngressSpec, validateIngressStatus, validateObjectMeta, validateObjectMetaUpdate } from '../../api/validation.js';
import { validateIngressClass, validateIngressClassUpdate } from '../../api/validation/networking-ingressclass.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { INGRESSCLASSES, INGRESSES, type ResourceInfo, resourceInfo } from '../../api/identities.js';
import type { KindStrategy } from '../strategy.js';

export const INGRESS_INFO: ResourceInfo = resourceInfo(INGRESSES, {
  listKind: 'IngressList',
  singular: 'ingress',
  shortNames: ['ing'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status'],
  categories: [],
});

function validateIngress(ing: Ingress): FieldError[] {
  return [...validateObjectMeta(ing.metadata, { namespaced: true, nameRule: 'subdomain' }), ...validateIngressSpec(ing.spec)];
}

/** How many hosts the HOSTS column names before it says how many more there are (kubectl's printer). */
const HOSTS_SHOWN = 4;

/** kubectl's HOSTS cell: the rules' hosts, `*` for a rule without one, then "+ N more...". */
export function ingressHostsCell(ing: Ingress): string {
  const hosts = (ing.spec?.rules ?? []).map((r) => r.host || '*');
  if (hosts.length === 0) return '*';
  const shown = hosts.slice(0, HOSTS_SHOWN).join(',');
  return hosts.length > HOSTS_SHOWN ? `${shown} + ${hosts.length - HOSTS_SHOWN} more...` : shown;
}

const INGRESS_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Class', 'The name of the IngressClass resource that should be used for ingress.'),
    column('Hosts', 'Hosts that incoming requests are matched against before the ingress rule'),
    column('Address', 'Address is a list containing ingress points for the load-balancer'),
    column('Ports', 'Ports of TLS configurations that open'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const ing = obj as Ingress;
    const address = (ing.status?.loadBalancer?.ingress ?? []).map((e) => e.ip || e.hostname || '').filter((a) => a !== '').join(',');
    return [
      obj.metadata.name ?? '',
      ing.spec?.ingressClassName ?? '<none>',
      ingressHostsCell(ing),
      address,
      (ing.spec?.tls ?? []).length > 0 ? '80, 443' : '80',
      ageSince(obj.metadata.creationTimestamp, now),
    ];
  },
};

export const ingressStrategy: KindStrategy<Ingress> = {
  info: INGRESS_INFO,
  table: INGRESS_COLUMNS,
  protobuf: protobufMessagesOf('networking.k8s.io/v1', 'Ingress'),
  hasStatus: true,
  generation: true,
  validate: (ing) => [...validateIngress(ing), ...validateIngressClassAnnotation(ing.metadata.annotations, ing.spec)],
  validateUpdate: (ing, old) => [...validateIngress(ing), ...validateObjectMetaUpdate(ing.metadata, old.metadata), ...validateIngressStatus(ing.status ?? {})],
};

export const INGRESSCLASS_INFO: ResourceInfo = resourceInfo(INGRESSCLASSES, {
  listKind: 'IngressClassList',
  singular: 'ingressclass',
  shortNames: [],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});

/** kubectl's PARAMETERS cell: `<none>`, or the referenced `Kind[.apiGroup]/name`. */
export function ingressClassParametersCell(cls: IngressClass): string {
  const params = cls.spec?.parameters;
  if (!params) return '<none>';
  return `${params.kind}${params.apiGroup !== undefined ? `.${params.apiGroup}` : ''}/${params.name}`;
}

const INGRESSCLASS_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('Controller', 'Controller that is responsible for handling this class'),
    column('Parameters', 'A reference to a resource with additional parameters'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const cls = obj as IngressClass;
    return [obj.metadata.name ?? '', cls.spec?.controller ?? '', ingressClassParametersCell(cls), ageSince(obj.metadata.creationTimestamp, now)];
  },
};

export const ingressClassStrategy: KindStrategy<IngressClass> = {
  info: INGRESSCLASS_INFO,
  table: INGRESSCLASS_COLUMNS,
  hasStatus: false,
  generation: true,
  // networking/v1's only default: a parameters reference without a scope names a cluster-scoped object.
  applyDefaults(cls) {
    if (cls.spec?.parameters) cls.spec.parameters.scope ??= 'Cluster';
  },
  validate: validateIngressClass,
  validateUpdate: validateIngressClassUpdate,
};

export const INGRESS_STRATEGIES: KindStrategy<KubeObject>[] = [ingressStrategy, ingressClassStrategy] as KindStrategy<KubeObject>[];
