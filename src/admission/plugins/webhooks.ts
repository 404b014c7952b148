/**
 * Owns calling users' admission webhooks (MutatingAdmissionWebhook, ValidatingAdmissionWebhook):
 * matching a request against each webhook's rules and selectors, the AdmissionReview it is sent,
 * reaching the webhook by URL or through its Service's endpoints, and applying or refusing on its
 * answer. The webhook configurations are stored and validated by their kinds
 * (src/registry/kinds/admissionregistration.ts).
 */
import { randomInt, randomUUID } from 'node:crypto';
import https from 'node:https';
import type { Logger } from 'pino';
import { ApiError, errors, type StatusReason } from '../../api/errors.js';
import { applyJsonPatch } from '../../api/patch.js';
import { labelSelectorFromObject, matchesLabels } from '../../api/selectors.js';
import { SERVICE_NAME_LABEL } from '../../api/services.js';
import type { EndpointSlice, KubeObject, Service, Webhook, WebhookConfiguration } from '../../api/types.js';
import type { Registry, RegistryWatcher } from '../../registry/registry.js';
import type { ResourceInfo } from '../../api/identities.js';
import { MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS } from '../../registry/kinds/admissionregistration.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';

export interface WebhookPluginOptions {
  registry: Registry;
  log: Logger;
}

/**
 * Calls the user's admission webhooks (admissionregistration.k8s.io/v1) with AdmissionReview v1
 * over HTTPS: mutating ones in order, applying their JSONPatch responses; validating ones after the
 * kind's own validation. Matching follows Kubernetes: rules (operations, apiGroups, apiVersions,
 * resources incl. `*` and `res/sub`), namespaceSelector, objectSelector. `failurePolicy` decides
 * whether an unreachable or broken webhook blocks the write (Fail, the default) or is skipped.
 * A webhook is reached by `clientConfig.url`, or through `clientConfig.service` as kube-apiserver
 * does with endpoint routing: the Service port numbered `service.port` (default 443), a random ready
 * endpoint of the Service's EndpointSlices serving that port's name, called as
 * https://<endpoint IP>:<endpoint port><path> while the certificate is checked for (and SNI names)
 * `<name>.<namespace>.svc`, against the caBundle. Webhook configurations themselves are never sent to
 * webhooks, so a broken webhook cannot lock its own configuration.
 */
export function webhookAdmission(kind: 'mutating' | 'validating', opts: WebhookPluginOptions): AdmissionPlugin {
  const configInfo = kind === 'mutating' ? MUTATING_WEBHOOKS : VALIDATING_WEBHOOKS;
  const configurations = new ConfigurationCache(opts.registry, configInfo);
  return {
    name: kind === 'mutating' ? 'MutatingAdmissionWebhook' : 'ValidatingAdmissionWebhook',
    kind,
    async admit(attrs) {
      if (attrs.info.group === 'admissionregistration.k8s.io') return;
      if (kind === 'mutating' && attrs.operation === 'DELETE') return;
      const configs = [...(await configurations.get())];
      if (!configs.length) return;
      const hooks: Webhook[] = [];
      for (const hook of configs.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '')).flatMap((c) => c.webhooks ?? [])) {
        if (await matches(hook, attrs, opts.registry)) hooks.push(hook);
      }
      for (const hook of hooks) {
        if (attrs.dryRun && !['None', 'NoneOnDryRun'].includes(hook.sideEffects ?? '')) {
          throw errors.badRequest(`admission webhook "${hook.name}" does not support dry run`);
        }
        await callOne(hook, attrs, kind, opts.log, opts.registry);
      }
    },
  };
}

/**
 * One kind's webhook configurations, listed once and kept until a watch of them reports any change or
 * fails, as kube-apiserver keeps them in an informer: admission runs on every write (mutating and
 * validating), and reading the configurations from the store each time cost two range reads per write.
 * A change reaches the cache before the write that made it is acknowledged on SQLite (its watchers are
 * told before the commit's fsync ends); on etcd, as in Kubernetes, as soon as the watch event arrives.
 */
export class ConfigurationCache {
  private cached: Promise<readonly WebhookConfiguration[]> | undefined;
  private watcher: RegistryWatcher | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly info: ResourceInfo,
  ) {}

  get(): Promise<readonly WebhookConfiguration[]> {
    const loading = (this.cached ??= this.load());
    // A failed read is not kept: the next admission tries again.
    loading.catch(() => {
      if (this.cached === loading) this.cached = undefined;
    });
    return loading;
  }

  private invalidate(): void {
    this.cached = undefined;
  }

  private async load(): Promise<readonly WebhookConfiguration[]> {
    const list = await this.registry.list(this.info, undefined);
    if (!this.watcher) {
      try {
        this.watcher = await this.registry.watch(this.info, undefined, {
          resourceVersion: list.metadata.resourceVersion,
          sendInitialEvents: false,
          onEvent: () => this.invalidate(),
          onError: () => {
            this.watcher?.close();
            this.watcher = undefined;
            this.invalidate();
          },
        });
      } catch {
        // No watch (the list's revision already compacted away): this answer is not kept.
        queueMicrotask(() => this.invalidate());
      }
    }
    return list.items as WebhookConfiguration[];
  }
}

async function callOne(hook: Webhook, attrs: AdmissionAttributes, kind: 'mutating' | 'validating', log: Logger, registry: Registry): Promise<void> {
  const uid = randomUUID();
  let response: AdmissionResponse;
  try {
    response = await post(hook, review(uid, attrs), registry);
    if (response.uid !== uid) throw new Error(`expected response.uid="${uid}", got "${response.uid}"`);
  } catch (e) {
    if (hook.failurePolicy === 'Ignore') {
      log.warn({ webhook: hook.name, err: (e as Error).message }, 'webhook call failed; ignored by failurePolicy');
      return;
    }
    throw new ApiError('InternalError', `Internal error occurred: failed calling webhook "${hook.name}": ${(e as Error).message}`);
  }
  if (!response.allowed) {
    const code = response.status?.code ?? 403;
    const reason = (response.status?.reason as StatusReason | undefined) ?? reasonFor(code);
    throw new ApiError(reason, `admission webhook "${hook.name}" denied the request${response.status?.message ? `: ${response.status.message}` : ' without explanation'}`);
  }
  if (kind === 'mutating' && response.patch) {
    if (response.patchType !== 'JSONPatch') throw errors.internal(`webhook "${hook.name}" returned an unsupported patchType ${response.patchType}`);
    const ops = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as unknown[];
    const patched = applyJsonPatch(attrs.object, ops) as KubeObject;
    for (const k of Object.keys(attrs.object)) delete (attrs.object as Record<string, unknown>)[k];
    Object.assign(attrs.object, patched);
  }
}

function reasonFor(code: number): StatusReason {
  return code === 400 ? 'BadRequest' : code === 404 ? 'NotFound' : code === 409 ? 'Conflict' : code === 422 ? 'Invalid' : code >= 500 ? 'InternalError' : 'Forbidden';
}

interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; message?: string; reason?: string };
  patch?: string;
  patchType?: string;
  warnings?: string[];
}

function review(uid: string, a: AdmissionAttributes): unknown {
  const gvk = { group: a.info.group, version: a.info.version, kind: a.info.kind };
  const gvr = { group: a.info.group, version: a.info.version, resource: a.info.plural };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: gvk,
      resource: gvr,
      ...(a.subresource ? { subResource: a.subresource } : {}),
      requestKind: gvk,
      requestResource: gvr,
      name: a.object.metadata.name ?? '',
      ...(a.info.namespaced ? { namespace: a.object.metadata.namespace } : {}),
      operation: a.operation,
      userInfo: a.user ?? { username: 'system:berth', groups: [] },
      object: a.operation === 'DELETE' ? null : a.object,
      oldObject: a.operation === 'DELETE' ? a.object : a.oldObject ?? null,
      dryRun: a.dryRun,
    },
  };
}

/** Where a webhook call goes: the URL, and the name its certificate must carry when that is not the URL's host. */
export interface WebhookTarget {
  url: string;
  servername?: string;
}

/** Service types a webhook may be reached through (an ExternalName has no endpoints). */
const ROUTABLE_TYPES = new Set(['ClusterIP', 'NodePort', 'LoadBalancer']);

/**
 * The endpoint a `clientConfig.service` reference resolves to (kube-apiserver's endpoint routing):
 * the Service port numbered `port` (default 443), then a random ready endpoint, among the Service's
 * EndpointSlices, that serves a port of the same name. Errors say what is missing.
 */
export async function resolveWebhookService(
  registry: Registry,
  ref: { namespace: string; name: string; path?: string; port?: number },
  pick: (n: number) => number = (n) => randomInt(n),
): Promise<WebhookTarget> {
  const serviceInfo = registry.lookup('', 'services')?.info;
  const sliceInfo = registry.lookup('discovery.k8s.io', 'endpointslices')?.info;
  if (!serviceInfo || !sliceInfo) throw new Error('services are not served');
  let service: Service;
  try {
    service = (await registry.get(serviceInfo, ref.namespace, ref.name)) as Service;
  } catch {
    throw new Error(`service "${ref.name}" not found`);
  }
  const type = service.spec?.type ?? 'ClusterIP';
  if (!ROUTABLE_TYPES.has(type)) throw new Error(`unsupported service type "${type}"`);
  const wanted = ref.port ?? 443;
  const servicePort = (service.spec?.ports ?? []).find((p) => p.port === wanted);
  if (!servicePort) throw new Error(`no service port ${wanted} found for service "${ref.name}"`);
  const portName = servicePort.name ?? '';
  const slices = (await registry.list(sliceInfo, ref.namespace, { labelSelector: `${SERVICE_NAME_LABEL}=${ref.name}` })).items as EndpointSlice[];
  const candidates: Array<{ ip: string; port: number }> = [];
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4') continue;
    const port = (slice.ports ?? []).find((p) => (p.name ?? '') === portName)?.port;
    if (port === undefined) continue;
    for (const ep of slice.endpoints ?? []) {
      // An unset ready condition means ready (the EndpointSlice API's rule).
      if (ep.conditions?.ready === false || !ep.addresses[0]) continue;
      candidates.push({ ip: ep.addresses[0], port });
    }
  }
  if (candidates.length === 0) throw new Error(`no endpoints available for service "${ref.name}"`);
  const chosen = candidates[pick(candidates.length)]!;
  const path = ref.path ?? '';
  return { url: `https://${chosen.ip}:${chosen.port}${path.startsWith('/') || path === '' ? path : `/${path}`}`, servername: `${ref.name}.${ref.namespace}.svc` };
}

async function post(hook: Webhook, body: unknown, registry: Registry): Promise<AdmissionResponse> {
  let target: WebhookTarget;
  if (hook.clientConfig.url) target = { url: hook.clientConfig.url };
  else if (hook.clientConfig.service) target = await resolveWebhookService(registry, hook.clientConfig.service);
  else throw new Error('clientConfig has neither url nor service');
  const url = target.url;
  const ca = hook.clientConfig.caBundle ? Buffer.from(hook.clientConfig.caBundle, 'base64').toString('utf8') : undefined;
  const payload = JSON.stringify(body);
  const timeoutMs = (hook.timeoutSeconds ?? 10) * 1000;
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', ca, ...(target.servername ? { servername: target.servername } : {}), headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(payload) }, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 3 * 1024 * 1024) req.destroy(new Error('webhook response too large'));
        else chunks.push(c);
      });
      res.on('end', () => {
        if ((res.statusCode ?? 0) !== 200) return reject(new Error(`the server responded with status ${res.statusCode}`));
        try {
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { response?: AdmissionResponse };
          if (!parsed.response) return reject(new Error('webhook response was absent'));
          resolve(parsed.response);
        } catch (e) {
          reject(new Error(`could not decode the webhook response: ${(e as Error).message}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`context deadline exceeded (timeout ${hook.timeoutSeconds ?? 10}s)`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function matches(hook: Webhook, a: AdmissionAttributes, registry: Registry): Promise<boolean> {
  const sub = a.subresource ? `${a.info.plural}/${a.subresource}` : a.info.plural;
  const anyOf = (list: string[] | undefined, v: string) => !!list?.some((x) => x === '*' || x === v);
  const ruleOk = (hook.rules ?? []).some(
    (r) =>
      anyOf(r.operations, a.operation) &&
      anyOf(r.apiGroups, a.info.group) &&
      anyOf(r.apiVersions, a.info.version) &&
      !!r.resources?.some((res) => res === '*' && !a.subresource || res === '*/*' || res === sub || (res.startsWith('*/') && a.subresource === res.slice(2))) &&
      (r.scope === undefined || r.scope === '*' || (r.scope === 'Namespaced') === a.info.namespaced),
  );
  if (!ruleOk) return false;
  const target = a.operation === 'DELETE' ? a.object : a.object;
  if (hook.objectSelector && !matchesLabels(labelSelectorFromObject(hook.objectSelector as never), target.metadata.labels)) return false;
  if (hook.namespaceSelector && Object.keys(hook.namespaceSelector).length) {
    let nsLabels: Record<string, string> | undefined;
    if (a.info.kind === 'Namespace' && a.info.group === '') nsLabels = a.object.metadata.labels;
    else if (a.info.namespaced) {
      const nsInfo = registry.lookup('', 'namespaces')?.info;
      try {
        nsLabels = nsInfo ? (await registry.get(nsInfo, undefined, a.object.metadata.namespace ?? 'default')).metadata.labels : undefined;
      } catch {
        nsLabels = undefined;
      }
    } else return true;
    if (!matchesLabels(labelSelectorFromObject(hook.namespaceSelector as never), nsLabels)) return false;
  }
  return true;
}
