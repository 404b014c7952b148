/**
 * discovery.k8s.io/v1 EndpointSlice: REST identity, defaults, validation, protobuf messages and
 * `kubectl get` columns. The EndpointSlice controller (src/controllers/) keeps the slices of
 * Services with selectors; the control plane writes those of `default/kubernetes` itself.
 *
 * Validation follows kube-apiserver's ValidateEndpointSlice: addressType is required and immutable,
 * at most 1000 endpoints of 1–100 addresses each, addresses valid for the address type, ports with
 * unique DNS-label names and a protocol.
 * Validation rules live in src/api/validation/discovery.ts.
 */
import type { EndpointSlice, KubeObject } from '../../api/types.js';
import { isRecord } from '../../api/validation.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { ENDPOINTSLICES, type ResourceInfo, resourceInfo } from '../../api/identities.js';

import { validateEndpointSlice, validateEndpointSliceUpdate } from '../../api/validation/discovery.js';
export const ENDPOINTSLICE_INFO: ResourceInfo = resourceInfo(ENDPOINTSLICES, {
  listKind: 'EndpointSliceList',
  singular: 'endpointslice',
  shortNames: [],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});


// ---------- defaults (SetDefaults_EndpointPort) ----------

function defaultEndpointSlice(slice: EndpointSlice): void {
  if (!Array.isArray(slice.ports)) return;
  for (const port of slice.ports) {
    if (!isRecord(port)) continue;
    port.name ??= '';
    port.protocol ??= 'TCP';
  }
}

// ---------- protobuf (generated from Kubernetes' discovery/v1 generated.proto) ----------

const ENDPOINTSLICE_PROTOBUF = protobufMessagesOf('discovery.k8s.io/v1', 'EndpointSlice');

// ---------- table (kubectl's endpointslice printer) ----------

/** kubectl's listWithMoreString: up to three values, then "+ N more...", `<unset>` when none. */
function listWithMore(values: string[]): string {
  const max = 3;
  const text = values.slice(0, max).join(',');
  if (values.length > max) return `${text} + ${values.length - max} more...`;
  return text || '<unset>';
}

const ENDPOINTSLICE_COLUMNS: ColumnProvider = {
  columns: [
    NAME_COLUMN,
    column('AddressType', 'The type of the addresses: IPv4, IPv6 or FQDN.'),
    column('Ports', 'The port numbers of the endpoints.'),
    column('Endpoints', 'The endpoints\' addresses.'),
    AGE_COLUMN,
  ],
  cells: (obj, { now }) => {
    const slice = obj as EndpointSlice;
    const ports = (slice.ports ?? []).map((p) => (p.port !== undefined ? String(p.port) : p.name || '*'));
    const addresses = (slice.endpoints ?? []).flatMap((e) => e.addresses ?? []);
    return [obj.metadata.name ?? '', slice.addressType ?? '', listWithMore(ports), listWithMore(addresses), ageSince(obj.metadata.creationTimestamp, now)];
  },
};

export const endpointSliceStrategy: KindStrategy<EndpointSlice> = {
  info: ENDPOINTSLICE_INFO,
  table: ENDPOINTSLICE_COLUMNS,
  protobuf: ENDPOINTSLICE_PROTOBUF,
  hasStatus: false,
  applyDefaults: defaultEndpointSlice,
  validate: validateEndpointSlice,
  validateUpdate: validateEndpointSliceUpdate,
};

export const ENDPOINTSLICE_STRATEGIES: KindStrategy<KubeObject>[] = [endpointSliceStrategy];
