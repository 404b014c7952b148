/**
 * Owns the default RBAC policy and its reconciliation at every start, as kube-apiserver's
 * bootstrap policy: cluster-admin bound to system:masters; admin, edit and view aggregated by label
 * from the system:aggregate-to-* roles (view cannot read Secrets, edit cannot touch roles or
 * bindings, admin can in its namespace); system:basic-user, system:discovery and
 * system:public-info-viewer bound to their groups; system:service-account-issuer-discovery bound to
 * every ServiceAccount; system:monitoring for /metrics and health; the approver roles of the
 * well-known CSR signers, bound to nobody.
 *
 * Reconciling adds what is missing (rules, aggregation selectors, subjects, labels and annotations)
 * and keeps what users added; an object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"`
 * is left alone, and a deleted one is created again.
 */
import type { Logger } from 'pino';
import { CERTIFICATES_GROUP } from '../../api/certificates.js';
import { ApiError } from '../../api/errors.js';
import type { ClusterRole, ClusterRoleBinding, KubeObject, PolicyRule, Subject } from '../../api/types.js';
import type { Registry } from '../../registry/registry.js';
import { AUTOUPDATE_ANNOTATION, CLUSTER_ROLE_BINDING_INFO, CLUSTER_ROLE_INFO } from '../../registry/kinds/rbac.js';
import { RBAC_GROUP } from '../../api/identities.js';
import { covers } from './rule-matching.js';

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];
const READ_WRITE = [...READ, ...WRITE];

const BOOTSTRAP_LABELS = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };
const BOOTSTRAP_ANNOTATIONS = { [AUTOUPDATE_ANNOTATION]: 'true' };

export const AGGREGATE_TO_ADMIN = 'rbac.authorization.k8s.io/aggregate-to-admin';
export const AGGREGATE_TO_EDIT = 'rbac.authorization.k8s.io/aggregate-to-edit';
export const AGGREGATE_TO_VIEW = 'rbac.authorization.k8s.io/aggregate-to-view';

const rule = (verbs: string[], groups: string[], resources: string[], resourceNames?: string[]): PolicyRule => ({ verbs, apiGroups: groups, resources, ...(resourceNames ? { resourceNames } : {}) });
const urls = (verbs: string[], nonResourceURLs: string[]): PolicyRule => ({ verbs, nonResourceURLs });
const group = (name: string): Subject => ({ kind: 'Group', apiGroup: RBAC_GROUP, name });

function clusterRole(name: string, rules: PolicyRule[], extra: { labels?: Record<string, string>; aggregateFrom?: string } = {}): ClusterRole {
  const role: ClusterRole = {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRole',
    metadata: { name, labels: { ...BOOTSTRAP_LABELS, ...extra.labels }, annotations: { ...BOOTSTRAP_ANNOTATIONS } },
    rules,
  };
  if (extra.aggregateFrom) role.aggregationRule = { clusterRoleSelectors: [{ matchLabels: { [extra.aggregateFrom]: 'true' } }] };
  return role;
}

function clusterRoleBinding(name: string, roleName: string, subjects: Subject[]): ClusterRoleBinding {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { ...BOOTSTRAP_LABELS }, annotations: { ...BOOTSTRAP_ANNOTATIONS } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: roleName },
    subjects,
  };
}

/** The default ClusterRoles (upstream's bootstrap rule lists, the resources of the groups Berth and kubectl know). */
/** upstream's approver ClusterRoles, each for one well-known signer */
const APPROVER_ROLES: Array<[string, string]> = [
  ['system:certificates.k8s.io:kube-apiserver-client-approver', 'kubernetes.io/kube-apiserver-client'],
  ['system:certificates.k8s.io:kube-apiserver-client-kubelet-approver', 'kubernetes.io/kube-apiserver-client-kubelet'],
  ['system:certificates.k8s.io:kubelet-serving-approver', 'kubernetes.io/kubelet-serving'],
  ['system:certificates.k8s.io:legacy-unknown-approver', 'kubernetes.io/legacy-unknown'],
];

export function bootstrapClusterRoles(): ClusterRole[] {
  return [
    clusterRole('cluster-admin', [rule(['*'], ['*'], ['*']), urls(['*'], ['*'])]),
    clusterRole('system:discovery', [urls(['get'], ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'])]),
    clusterRole('system:monitoring', [urls(['get'], ['/healthz', '/healthz/*', '/livez', '/livez/*', '/metrics', '/metrics/slis', '/readyz', '/readyz/*'])]),
    clusterRole('system:basic-user', [
      rule(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']),
      rule(['create'], ['authentication.k8s.io'], ['selfsubjectreviews']),
    ]),
    clusterRole('system:public-info-viewer', [urls(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/'])]),
    clusterRole('system:service-account-issuer-discovery', [urls(['get'], ['/.well-known/openid-configuration', '/.well-known/openid-configuration/', '/openid/v1/jwks', '/openid/v1/jwks/'])]),
    // Approving a CSR needs `approve` on its signer (the CertificateApproval admission plugin); upstream's
    // roles to bind for each well-known signer.
    ...APPROVER_ROLES.map(([name, signer]) => clusterRole(name, [rule(['approve'], [CERTIFICATES_GROUP], ['signers'], [signer])])),
    clusterRole('admin', [], { aggregateFrom: AGGREGATE_TO_ADMIN }),
    clusterRole('edit', [], { aggregateFrom: AGGREGATE_TO_EDIT, labels: { [AGGREGATE_TO_ADMIN]: 'true' } }),
    clusterRole('view', [], { aggregateFrom: AGGREGATE_TO_VIEW, labels: { [AGGREGATE_TO_EDIT]: 'true' } }),
    // metrics-server's role, which makes view, edit and admin read the Metrics API.
    clusterRole('system:aggregated-metrics-reader', [rule(READ, ['metrics.k8s.io'], ['pods', 'nodes'])], {
      labels: { [AGGREGATE_TO_VIEW]: 'true', [AGGREGATE_TO_EDIT]: 'true', [AGGREGATE_TO_ADMIN]: 'true' },
    }),
    clusterRole(
      'system:aggregate-to-admin',
      [rule(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']), rule(READ_WRITE, [RBAC_GROUP], ['roles', 'rolebindings'])],
      { labels: { [AGGREGATE_TO_ADMIN]: 'true' } },
    ),
    clusterRole(
      'system:aggregate-to-edit',
      [
        rule(READ, [''], ['pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward', 'secrets', 'services/proxy']),
        rule(['impersonate'], [''], ['serviceaccounts']),
        rule(WRITE, [''], ['pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward']),
        rule(['create'], [''], ['pods/eviction']),
        rule(WRITE, [''], ['replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/proxy', 'persistentvolumeclaims', 'configmaps', 'secrets', 'events']),
        rule(['create'], [''], ['serviceaccounts/token']),
        rule(WRITE, ['apps'], ['statefulsets', 'statefulsets/scale', 'daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'replicasets', 'replicasets/scale']),
        rule(WRITE, ['autoscaling'], ['horizontalpodautoscalers']),
        rule(WRITE, ['batch'], ['jobs', 'cronjobs']),
        rule(WRITE, ['extensions'], ['daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'ingresses', 'replicasets', 'replicasets/scale', 'replicationcontrollers/scale', 'networkpolicies']),
        rule(WRITE, ['policy'], ['poddisruptionbudgets']),
        rule(WRITE, ['networking.k8s.io'], ['networkpolicies', 'ingresses']),
        rule(WRITE, ['coordination.k8s.io'], ['leases']),
      ],
      { labels: { [AGGREGATE_TO_EDIT]: 'true' } },
    ),
    clusterRole(
      'system:aggregate-to-view',
      [
        rule(READ, [''], ['pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'configmaps']),
        rule(READ, [''], ['limitranges', 'resourcequotas', 'bindings', 'events', 'pods/status', 'resourcequotas/status', 'namespaces/status', 'replicationcontrollers/status', 'pods/log']),
        rule(READ, [''], ['namespaces']),
        rule(READ, ['discovery.k8s.io'], ['endpointslices']),
        rule(READ, ['apps'], ['controllerrevisions', 'statefulsets', 'statefulsets/status', 'statefulsets/scale', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/status', 'deployments/scale', 'replicasets', 'replicasets/status', 'replicasets/scale']),
        rule(READ, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
        rule(READ, ['batch'], ['jobs', 'jobs/status', 'cronjobs', 'cronjobs/status']),
        rule(READ, ['extensions'], ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses', 'ingresses/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale', 'networkpolicies']),
        rule(READ, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
        rule(READ, ['networking.k8s.io'], ['ingresses', 'ingresses/status', 'networkpolicies']),
      ],
      { labels: { [AGGREGATE_TO_VIEW]: 'true' } },
    ),
  ];
}

/** The default ClusterRoleBindings. */
export function bootstrapClusterRoleBindings(): ClusterRoleBinding[] {
  return [
    clusterRoleBinding('cluster-admin', 'cluster-admin', [group('system:masters')]),
    clusterRoleBinding('system:monitoring', 'system:monitoring', [group('system:monitoring')]),
    clusterRoleBinding('system:discovery', 'system:discovery', [group('system:authenticated')]),
    clusterRoleBinding('system:basic-user', 'system:basic-user', [group('system:authenticated')]),
    clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', [group('system:authenticated'), group('system:unauthenticated')]),
    clusterRoleBinding('system:service-account-issuer-discovery', 'system:service-account-issuer-discovery', [group('system:serviceaccounts')]),
  ];
}

/** The reconciled ClusterRole, or undefined when the stored one needs nothing (or must be left alone). */
export function reconcileClusterRole(existing: ClusterRole, expected: ClusterRole): ClusterRole | undefined {
  if (existing.metadata.annotations?.[AUTOUPDATE_ANNOTATION] === 'false') return undefined;
  const next: ClusterRole = structuredClone(existing);
  let changed = mergeMetadata(next, expected);
  const expectedSelectors = expected.aggregationRule?.clusterRoleSelectors ?? [];
  if (expectedSelectors.length) {
    const have = next.aggregationRule?.clusterRoleSelectors ?? [];
    const missing = expectedSelectors.filter((s) => !have.some((h) => JSON.stringify(h) === JSON.stringify(s)));
    if (missing.length) {
      next.aggregationRule = { clusterRoleSelectors: [...have, ...missing] };
      changed = true;
    }
  } else {
    const { uncovered } = covers(next.rules ?? [], expected.rules ?? []);
    if (uncovered.length) {
      next.rules = [...(next.rules ?? []), ...uncovered];
      changed = true;
    }
  }
  return changed ? next : undefined;
}

/** The reconciled binding: its subjects gain the expected ones. A different roleRef means delete and create. */
export function reconcileClusterRoleBinding(existing: ClusterRoleBinding, expected: ClusterRoleBinding): ClusterRoleBinding | 'recreate' | undefined {
  if (existing.metadata.annotations?.[AUTOUPDATE_ANNOTATION] === 'false') return undefined;
  const ref = existing.roleRef;
  if (ref?.kind !== expected.roleRef.kind || ref?.name !== expected.roleRef.name || ref?.apiGroup !== expected.roleRef.apiGroup) return 'recreate';
  const next: ClusterRoleBinding = structuredClone(existing);
  let changed = mergeMetadata(next, expected);
  const have = next.subjects ?? [];
  const missing = (expected.subjects ?? []).filter((s) => !have.some((h) => h.kind === s.kind && h.name === s.name && (h.namespace ?? '') === (s.namespace ?? '')));
  if (missing.length) {
    next.subjects = [...have, ...missing];
    changed = true;
  }
  return changed ? next : undefined;
}

/** Expected labels and annotations are added; values already stored win. */
function mergeMetadata(next: KubeObject, expected: KubeObject): boolean {
  let changed = false;
  for (const field of ['labels', 'annotations'] as const) {
    const want = expected.metadata[field] ?? {};
    const have = { ...(next.metadata[field] ?? {}) };
    for (const [k, v] of Object.entries(want)) {
      if (!(k in have)) {
        have[k] = v;
        changed = true;
      }
    }
    next.metadata[field] = have;
  }
  return changed;
}

export interface ReconcileOptions {
  registry: Registry;
  log?: Pick<Logger, 'info' | 'warn' | 'debug'>;
}

/** Attempts per object a start-up gives a concurrent replica's writes before failing (each reads afresh). */
const RACE_ATTEMPTS = 5;

/**
 * Creates or reconciles every default ClusterRole and ClusterRoleBinding. Replicas starting together
 * on one store race here: a write that loses (AlreadyExists, Conflict, or NotFound of a binding the
 * other replica is recreating) is reconciled again from a fresh read of that object.
 */
export async function reconcileBootstrapPolicy(opts: ReconcileOptions): Promise<void> {
  const { registry, log } = opts;
  // A first start creates dozens; one line says so, each object only at debug level.
  const created = { clusterRoles: 0, clusterRoleBindings: 0 };
  for (const expected of bootstrapClusterRoles()) {
    await againIfRaced(opts, async () => {
      const existing = (await getOrUndefined(registry, CLUSTER_ROLE_INFO, expected.metadata.name!)) as ClusterRole | undefined;
      if (!existing) {
        await registry.create(CLUSTER_ROLE_INFO, undefined, expected);
        log?.debug({ clusterRole: expected.metadata.name }, 'created default cluster role');
        created.clusterRoles++;
        return;
      }
      const next = reconcileClusterRole(existing, expected);
      if (next) {
        await registry.update(CLUSTER_ROLE_INFO, undefined, next.metadata.name!, next);
        log?.info({ clusterRole: next.metadata.name }, 'reconciled default cluster role');
      }
    });
  }
  for (const expected of bootstrapClusterRoleBindings()) {
    const name = expected.metadata.name!;
    await againIfRaced(opts, async () => {
      const existing = (await getOrUndefined(registry, CLUSTER_ROLE_BINDING_INFO, name)) as ClusterRoleBinding | undefined;
      if (!existing) {
        await registry.create(CLUSTER_ROLE_BINDING_INFO, undefined, expected);
        log?.debug({ clusterRoleBinding: name }, 'created default cluster role binding');
        created.clusterRoleBindings++;
        return;
      }
      const next = reconcileClusterRoleBinding(existing, expected);
      if (next === 'recreate') {
        await registry.delete(CLUSTER_ROLE_BINDING_INFO, undefined, name);
        const recreated: ClusterRoleBinding = { ...expected, subjects: [...(expected.subjects ?? []), ...(existing.subjects ?? []).filter((s) => !(expected.subjects ?? []).some((e) => e.kind === s.kind && e.name === s.name))] };
        await registry.create(CLUSTER_ROLE_BINDING_INFO, undefined, recreated);
        log?.info({ clusterRoleBinding: name }, 'recreated default cluster role binding with its role');
      } else if (next) {
        await registry.update(CLUSTER_ROLE_BINDING_INFO, undefined, name, next);
        log?.info({ clusterRoleBinding: name }, 'reconciled default cluster role binding');
      }
    });
  }
  if (created.clusterRoles + created.clusterRoleBindings > 0) log?.info(created, 'created the default cluster roles and bindings');
}

async function againIfRaced(opts: ReconcileOptions, reconcile: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await reconcile();
    } catch (e) {
      const lostRace = e instanceof ApiError && (e.reason === 'AlreadyExists' || e.reason === 'Conflict' || e.reason === 'NotFound');
      if (!lostRace || attempt >= RACE_ATTEMPTS) throw e;
      opts.log?.info({ reason: e.reason, attempt }, 'default RBAC object changed concurrently; reconciling it again');
    }
  }
}

async function getOrUndefined(registry: Registry, info: typeof CLUSTER_ROLE_INFO, name: string): Promise<KubeObject | undefined> {
  try {
    return await registry.get(info, undefined, name);
  } catch (e) {
    if (e instanceof ApiError && e.code === 404) return undefined;
    throw e;
  }
}
