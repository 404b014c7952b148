/**
 * Discovery documents: /version, /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>, and the aggregated
 * (apidiscovery.k8s.io) form of /api and /apis.
 *
 * Pure functions of ResourceInfo[]; the HTTP layer picks one by path and Accept header and serves
 * the result as JSON. Everything is derived from the resource list so new kinds (and CRDs) appear
 * without edits here.
 *
 * How client-go (kubectl 1.32) uses these: it GETs /api and /apis with
 *   Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,
 *           application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json
 * and decides how to parse the body from the response Content-Type alone: only a Content-Type whose
 * media type is application/json with parameters g/v/as naming APIGroupDiscoveryList is read as
 * aggregated; anything else is read as legacy APIVersions / APIGroupList (and then every
 * group-version is fetched separately). /api may 404, /apis may not.
 */
import { createHash } from 'node:crypto';
import { apiVersionOf, type ResourceInfo } from '../api/identities.js';

// ---------- media types ----------

export const DISCOVERY_GROUP = 'apidiscovery.k8s.io';
export const DISCOVERY_KIND = 'APIGroupDiscoveryList';

/** Content-Type for an aggregated discovery v2 body. The parameter order matches what the apiserver emits. */
export const AGGREGATED_DISCOVERY_V2_CONTENT_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
/** Content-Type for an aggregated discovery v2beta1 body (older clients only ask for this one). */
export const AGGREGATED_DISCOVERY_V2BETA1_CONTENT_TYPE =
  'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';

export type DiscoveryFormat = 'v2' | 'v2beta1' | 'legacy';

interface MediaRange {
  type: string;
  params: Record<string, string>;
  q: number;
}

function parseAccept(accept: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of accept.split(',')) {
    const [rawType, ...rawParams] = part.split(';');
    const type = (rawType ?? '').trim().toLowerCase();
    if (!type) continue;
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const key = p.slice(0, eq).trim().toLowerCase();
      const value = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (key === 'q') q = Number(value);
      else params[key] = value;
    }
    ranges.push({ type, params, q: Number.isFinite(q) ? q : 0 });
  }
  return ranges;
}

/**
 * Which discovery body to send for /api or /apis given the request's Accept header.
 * Honors the client's order (and q values); a plain JSON range or no header means legacy.
 * Only JSON is offered: the protobuf variant (application/vnd.kubernetes.protobuf;...) is skipped, so a
 * client listing it first still lands on a JSON range further down.
 */
export function negotiateDiscoveryFormat(accept: string | undefined): DiscoveryFormat {
  if (!accept) return 'legacy';
  const ranges = parseAccept(accept)
    .map((r, index) => ({ ...r, index }))
    .filter((r) => r.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const r of ranges) {
    const jsonish = r.type === 'application/json' || r.type === 'application/*' || r.type === '*/*';
    if (!jsonish) continue;
    const { g, v, as } = r.params;
    if (g === undefined && v === undefined && as === undefined) return 'legacy';
    if (g === DISCOVERY_GROUP && as === DISCOVERY_KIND) {
      if (v === 'v2') return 'v2';
      if (v === 'v2beta1') return 'v2beta1';
    }
    // A typed range we do not serve (other g/v/as): keep looking.
  }
  return 'legacy';
}

/** The Content-Type to send for a negotiated discovery format. */
export function discoveryContentType(format: DiscoveryFormat): string {
  if (format === 'v2') return AGGREGATED_DISCOVERY_V2_CONTENT_TYPE;
  if (format === 'v2beta1') return AGGREGATED_DISCOVERY_V2BETA1_CONTENT_TYPE;
  return 'application/json';
}

// ---------- /version ----------

export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

/** The Kubernetes minor we present ourselves as; kubectl warns when client and server are >1 minor apart. */
export const SERVED_KUBERNETES_MAJOR = '1';
export const SERVED_KUBERNETES_MINOR = '32';
export const SERVED_GIT_VERSION = 'v1.32.0-berth';

const GO_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };

export interface VersionInfoOptions {
  /** RFC 3339; defaults to a fixed date so the body is stable across restarts. */
  buildDate?: string;
  gitCommit?: string;
  /** `os/arch` in Go naming; defaults to this process's platform. */
  platform?: string;
  /** Runtime identification in the goVersion slot; defaults to the Node.js version (we are not Go). */
  runtimeVersion?: string;
}

/** Body of GET /version (version.Info). */
export function versionInfo(options: VersionInfoOptions = {}): VersionInfo {
  const platform = options.platform ?? `${process.platform}/${GO_ARCH[process.arch] ?? process.arch}`;
  return {
    major: SERVED_KUBERNETES_MAJOR,
    minor: SERVED_KUBERNETES_MINOR,
    gitVersion: SERVED_GIT_VERSION,
    gitCommit: options.gitCommit ?? '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: options.buildDate ?? '2025-01-01T00:00:00Z',
    goVersion: options.runtimeVersion ?? `node${process.versions.node}`,
    compiler: 'gc',
    platform,
  };
}

// ---------- legacy discovery ----------

export interface APIVersions {
  kind: 'APIVersions';
  versions: string[];
  serverAddressByClientCIDRs: Array<{ clientCIDR: string; serverAddress: string }>;
}

/** Body of GET /api (legacy form). `serverAddress` is host:port as clients should reach us. */
export function coreApiVersions(serverAddress: string): APIVersions {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

export interface APIResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  group?: string;
  version?: string;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}

export interface APIResourceList {
  kind: 'APIResourceList';
  apiVersion: 'v1';
  groupVersion: string;
  resources: APIResource[];
}

export interface GroupVersionForDiscovery {
  groupVersion: string;
  version: string;
}

export interface APIGroup {
  kind: 'APIGroup';
  apiVersion: 'v1';
  name: string;
  versions: GroupVersionForDiscovery[];
  preferredVersion: GroupVersionForDiscovery;
}

export interface APIGroupList {
  kind: 'APIGroupList';
  apiVersion: 'v1';
  groups: Array<Omit<APIGroup, 'kind' | 'apiVersion'>>;
}

/** What discovery says about one subresource: its verbs and the kind its endpoint returns. */
export interface SubresourceDescriptor {
  verbs: string[];
  /** Defaults to the parent's group/version/kind. */
  responseKind?: { group: string; version: string; kind: string };
}

/**
 * Well-known subresources with the verbs and response kinds the Kubernetes apiserver advertises.
 * Unknown names fall back to the parent's kind with get/patch/update (the status/scale shape).
 */
const subresourceDescriptors = new Map<string, SubresourceDescriptor>([
  ['status', { verbs: ['get', 'patch', 'update'] }],
  ['scale', { verbs: ['get', 'patch', 'update'], responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' } }],
  ['log', { verbs: ['get'] }],
  ['exec', { verbs: ['create', 'get'], responseKind: { group: '', version: 'v1', kind: 'PodExecOptions' } }],
  ['attach', { verbs: ['create', 'get'], responseKind: { group: '', version: 'v1', kind: 'PodAttachOptions' } }],
  ['portforward', { verbs: ['create', 'get'], responseKind: { group: '', version: 'v1', kind: 'PodPortForwardOptions' } }],
  ['binding', { verbs: ['create'], responseKind: { group: '', version: 'v1', kind: 'Binding' } }],
  ['eviction', { verbs: ['create'], responseKind: { group: 'policy', version: 'v1', kind: 'Eviction' } }],
  ['ephemeralcontainers', { verbs: ['get', 'patch', 'update'] }],
  ['finalize', { verbs: ['update'] }],
  ['token', { verbs: ['create'], responseKind: { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' } }],
]);

/** Teach discovery a subresource's verbs/kind (e.g. a later `pods/resize`). Replaces any earlier entry. */
export function registerSubresource(name: string, descriptor: SubresourceDescriptor): void {
  subresourceDescriptors.set(name, { verbs: [...descriptor.verbs], ...(descriptor.responseKind ? { responseKind: { ...descriptor.responseKind } } : {}) });
}

function describeSubresource(info: ResourceInfo, name: string): Required<SubresourceDescriptor> {
  const known = subresourceDescriptors.get(name);
  return {
    verbs: known?.verbs ?? ['get', 'patch', 'update'],
    responseKind: known?.responseKind ?? { group: info.group, version: info.version, kind: info.kind },
  };
}

/** kube-apiserver lists a resource's subresources in name order (pods/attach … pods/status). */
function sortedSubresources(info: ResourceInfo): string[] {
  return [...info.subresources].sort();
}

/**
 * storageVersionHash as the apiserver computes it: base64 of the first 8 bytes of
 * sha256("<group>/<version>/<kind>"). Clients only compare it for equality.
 */
export function storageVersionHash(info: Pick<ResourceInfo, 'group' | 'version' | 'kind'>): string {
  const digest = createHash('sha256').update(`${info.group}/${info.version}/${info.kind}`).digest();
  return digest.subarray(0, 8).toString('base64');
}

function toApiResources(infos: ResourceInfo[]): APIResource[] {
  const out: APIResource[] = [];
  for (const info of infos) {
    const main: APIResource = {
      name: info.plural,
      singularName: info.singular,
      namespaced: info.namespaced,
      kind: info.kind,
      verbs: [...info.verbs],
    };
    if (info.shortNames.length > 0) main.shortNames = [...info.shortNames];
    if (info.categories.length > 0) main.categories = [...info.categories];
    main.storageVersionHash = storageVersionHash(info);
    out.push(main);
    for (const sub of sortedSubresources(info)) {
      const d = describeSubresource(info, sub);
      const entry: APIResource = {
        name: `${info.plural}/${sub}`,
        singularName: '',
        namespaced: info.namespaced,
        kind: d.responseKind.kind,
        verbs: [...d.verbs],
      };
      // Legacy discovery only names group/version when they differ from the list's own.
      if (d.responseKind.group !== info.group || d.responseKind.version !== info.version) {
        entry.group = d.responseKind.group;
        entry.version = d.responseKind.version;
      }
      out.push(entry);
    }
  }
  return out;
}

/** Body of GET /api/v1. */
export function coreResourceList(resources: ResourceInfo[]): APIResourceList {
  return groupResourceList('', 'v1', resources);
}

/** Body of GET /apis/<group>/<version> (or /api/v1 when group is ''). */
export function groupResourceList(group: string, version: string, resources: ResourceInfo[]): APIResourceList {
  const served = resources.filter((r) => r.group === group && r.version === version);
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf({ group, version }),
    resources: toApiResources(served),
  };
}

// ---------- versions and groups ----------

/**
 * Kubernetes version priority (apimachinery's CompareKubeAwareVersionStrings): GA before beta before
 * alpha, higher numbers first, and non-Kubernetes-looking strings last in lexical order.
 */
export function compareKubeVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return undefined;
    const stability = m[2] === 'alpha' ? 0 : m[2] === 'beta' ? 1 : 2;
    return { major: Number(m[1]), stability, minor: m[3] ? Number(m[3]) : 0 };
  };
  const pa = parse(a);
  const pb = parse(b);
  if (pa && !pb) return -1;
  if (!pa && pb) return 1;
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  if (pa.stability !== pb.stability) return pb.stability - pa.stability;
  if (pa.major !== pb.major) return pb.major - pa.major;
  return pb.minor - pa.minor;
}

/**
 * Groups in first-appearance order, each with versions in preference order. A group-version that is
 * only the kind of a subresource's body (policy/v1 for pods/eviction, autoscaling/v1 for the scale subresources)
 * is listed too, with no resources of its own: the apiserver always lists those groups, and clients
 * look for them there. kubectl before 1.22 posts an Eviction only when /apis lists the policy
 * group (and falls back to deleting the pod otherwise); newer ones read pods/eviction's group/version.
 */
function groupsOf(resources: ResourceInfo[]): Array<{ name: string; versions: string[] }> {
  const order: string[] = [];
  const versions = new Map<string, Set<string>>();
  const add = (group: string, version: string) => {
    let set = versions.get(group);
    if (!set) {
      set = new Set();
      versions.set(group, set);
      order.push(group);
    }
    set.add(version);
  };
  for (const r of resources) add(r.group, r.version);
  for (const r of resources) {
    for (const sub of r.subresources) {
      const { group, version } = describeSubresource(r, sub).responseKind;
      if (group !== '') add(group, version);
    }
  }
  return order.map((name) => ({ name, versions: [...(versions.get(name) ?? [])].sort(compareKubeVersions) }));
}

function toApiGroupBody(name: string, versions: string[]): Omit<APIGroup, 'kind' | 'apiVersion'> {
  const entries = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  const preferred = entries[0] ?? { groupVersion: `${name}/`, version: '' };
  return { name, versions: entries, preferredVersion: preferred };
}

/** Body of GET /apis (legacy form): every non-core group with its preferred version. */
export function apiGroupList(resources: ResourceInfo[]): APIGroupList {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groupsOf(resources)
      .filter((g) => g.name !== '')
      .map((g) => toApiGroupBody(g.name, g.versions)),
  };
}

/** Body of GET /apis/<group>, or undefined when no resource is served in that group (answer 404). */
export function apiGroup(group: string, resources: ResourceInfo[]): APIGroup | undefined {
  if (group === '') return undefined;
  const found = groupsOf(resources).find((g) => g.name === group);
  if (!found) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...toApiGroupBody(found.name, found.versions) };
}

/** True when /apis/<group>/<version> (or /api/v1) is served: it has resources, or is a subresource's body kind. */
export function servesGroupVersion(group: string, version: string, resources: ResourceInfo[]): boolean {
  return groupsOf(resources).some((g) => g.name === group && g.versions.includes(version));
}

// ---------- aggregated discovery ----------

export interface GroupVersionKindRef {
  group: string;
  version: string;
  kind: string;
}

export interface APISubresourceDiscovery {
  subresource: string;
  responseKind: GroupVersionKindRef;
  verbs: string[];
}

export interface APIResourceDiscovery {
  resource: string;
  responseKind: GroupVersionKindRef;
  scope: 'Namespaced' | 'Cluster';
  singularResource: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: APISubresourceDiscovery[];
}

export interface APIVersionDiscovery {
  version: string;
  resources: APIResourceDiscovery[];
  freshness: 'Current' | 'Stale';
}

export interface APIGroupDiscovery {
  metadata: { name?: string; creationTimestamp: null };
  versions: APIVersionDiscovery[];
}

export interface APIGroupDiscoveryList {
  kind: 'APIGroupDiscoveryList';
  apiVersion: string;
  metadata: Record<string, never>;
  items: APIGroupDiscovery[];
}

function toResourceDiscovery(info: ResourceInfo): APIResourceDiscovery {
  const out: APIResourceDiscovery = {
    resource: info.plural,
    // client-go drops any resource or subresource without a responseKind, so it is always set.
    responseKind: { group: info.group, version: info.version, kind: info.kind },
    scope: info.namespaced ? 'Namespaced' : 'Cluster',
    singularResource: info.singular,
    verbs: [...info.verbs],
  };
  if (info.shortNames.length > 0) out.shortNames = [...info.shortNames];
  if (info.categories.length > 0) out.categories = [...info.categories];
  if (info.subresources.length > 0) {
    out.subresources = sortedSubresources(info).map((sub) => {
      const d = describeSubresource(info, sub);
      return { subresource: sub, responseKind: { ...d.responseKind }, verbs: [...d.verbs] };
    });
  }
  return out;
}

/**
 * Body of GET /api (which='api': the core group only) or GET /apis (which='apis': every other
 * group) when the client asked for APIGroupDiscoveryList. `options.version` (from
 * negotiateDiscoveryFormat) selects the apiVersion stamped on the list; v2 and v2beta1 have the same JSON shape for the fields we emit.
 */
export function aggregatedDiscovery(
  resources: ResourceInfo[],
  which: 'api' | 'apis',
  options: { version?: 'v2' | 'v2beta1' } = {},
): APIGroupDiscoveryList {
  const version = options.version ?? 'v2';
  const items: APIGroupDiscovery[] = [];
  for (const group of groupsOf(resources)) {
    if ((which === 'api') !== (group.name === '')) continue;
    items.push({
      // The apiserver omits name for the core group; creationTimestamp: null mirrors its ObjectMeta encoding.
      metadata: group.name === '' ? { creationTimestamp: null } : { name: group.name, creationTimestamp: null },
      versions: group.versions.map((v) => ({
        version: v,
        resources: resources.filter((r) => r.group === group.name && r.version === v).map(toResourceDiscovery),
        freshness: 'Current' as const,
      })),
    });
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion: `${DISCOVERY_GROUP}/${version}`, metadata: {}, items };
}
