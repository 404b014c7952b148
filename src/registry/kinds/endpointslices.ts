/**
 * discovery.k8s.io/v1 EndpointSlice: REST identity, defaults, validation, protobuf messages and
 * `kubectl get` columns. The EndpointSlice controller (src/controllers/) keeps the slices of
 * Services with selectors; the control plane writes those of `default/kubernetes` itself.
 *
 * Validation follows kube-apiserver's ValidateEndpointSlice: addressType is required and immutable,
 * at most 1000 endpoints of 1–100 addresses each, addresses valid for the address type, ports with
 * unique DNS-label names and a protocol.
 */
import { isIP } from 'node:net';
import type { FieldError } from '../../api/errors.js';
import type { EndpointSlice, KubeObject } from '../../api/types.js';
import {
  child,
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  expectArray,
  fieldErrors,
  index,
  invalidEach,
  isRecord,
  qualifiedNameErrors,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../../api/validation.js';
import { protobufMessagesOf } from '../../api/protobuf/messages.js';
import type { KindStrategy } from '../strategy.js';
import { AGE_COLUMN, NAME_COLUMN, ageSince, column, type ColumnProvider } from '../table-columns.js';
import { SERVICE_PROTOCOLS } from './services.js';
import { ENDPOINTSLICES, type ResourceInfo, resourceInfo } from '../../api/identities.js';

export const ENDPOINTSLICE_INFO: ResourceInfo = resourceInfo(ENDPOINTSLICES, {
  listKind: 'EndpointSliceList',
  singular: 'endpointslice',
  shortNames: [],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: [],
  categories: [],
});

export const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'] as const;
/** Upstream's limits on one slice. */
export const MAX_SLICE_ENDPOINTS = 1000;
export const MAX_ENDPOINT_ADDRESSES = 100;
export const MAX_SLICE_PORTS = 20000;

// ---------- defaults (SetDefaults_EndpointPort) ----------

function defaultEndpointSlice(slice: EndpointSlice): void {
  if (!Array.isArray(slice.ports)) return;
  for (const port of slice.ports) {
    if (!isRecord(port)) continue;
    port.name ??= '';
    port.protocol ??= 'TCP';
  }
}

// ---------- validation ----------

function addressErrors(addressType: unknown, address: unknown): string[] {
  if (typeof address !== 'string') return ['must be a string'];
  if (addressType === 'IPv4') return isIP(address) === 4 ? [] : ['must be a valid IPv4 address'];
  if (addressType === 'IPv6') return isIP(address) === 6 ? [] : ['must be a valid IPv6 address'];
  if (addressType === 'FQDN') return dns1123SubdomainErrors(address);
  return [];
}

function validateEndpoint(endpoint: unknown, addressType: unknown, path: string): FieldError[] {
  if (!isRecord(endpoint)) return [fieldErrors.typeInvalid(path, endpoint, 'must be an object')];
  const errs: FieldError[] = [...expectArray(child(path, 'addresses'), endpoint.addresses)];
  const addresses = Array.isArray(endpoint.addresses) ? endpoint.addresses : [];
  const addressesPath = child(path, 'addresses');
  if (addresses.length === 0) errs.push(fieldErrors.required(addressesPath, 'must contain at least 1 address'));
  else if (addresses.length > MAX_ENDPOINT_ADDRESSES) errs.push({ field: addressesPath, type: 'FieldValueTooMany', message: `Too many: ${addresses.length}: must have at most ${MAX_ENDPOINT_ADDRESSES} items` });
  addresses.forEach((address, i) => errs.push(...invalidEach(index(addressesPath, i), address, addressErrors(addressType, address))));
  if (typeof endpoint.hostname === 'string') errs.push(...invalidEach(child(path, 'hostname'), endpoint.hostname, dns1123LabelErrors(endpoint.hostname)));
  if (typeof endpoint.nodeName === 'string') errs.push(...invalidEach(child(path, 'nodeName'), endpoint.nodeName, dns1123SubdomainErrors(endpoint.nodeName)));
  if (endpoint.conditions !== undefined && endpoint.conditions !== null && !isRecord(endpoint.conditions)) {
    errs.push(fieldErrors.typeInvalid(child(path, 'conditions'), endpoint.conditions, 'must be an object'));
  }
  return errs;
}

function validatePorts(ports: unknown): FieldError[] {
  const errs = expectArray('ports', ports);
  if (!Array.isArray(ports)) return errs;
  if (ports.length > MAX_SLICE_PORTS) errs.push({ field: 'ports', type: 'FieldValueTooMany', message: `Too many: ${ports.length}: must have at most ${MAX_SLICE_PORTS} items` });
  const names = new Set<string>();
  ports.forEach((port: unknown, i) => {
    const path = index('ports', i);
    if (!isRecord(port)) {
      errs.push(fieldErrors.typeInvalid(path, port, 'must be an object'));
      return;
    }
    const name = typeof port.name === 'string' ? port.name : '';
    if (name) errs.push(...invalidEach(child(path, 'name'), name, dns1123LabelErrors(name)));
    if (names.has(name)) errs.push(fieldErrors.duplicate(child(path, 'name'), name));
    names.add(name);
    if (!port.protocol) errs.push(fieldErrors.required(child(path, 'protocol')));
    else if (!(SERVICE_PROTOCOLS as readonly unknown[]).includes(port.protocol)) errs.push(fieldErrors.notSupported(child(path, 'protocol'), port.protocol, SERVICE_PROTOCOLS));
    if (port.port !== undefined && port.port !== null) {
      if (typeof port.port !== 'number' || !Number.isInteger(port.port) || port.port < 1 || port.port > 65535) {
        errs.push(fieldErrors.invalid(child(path, 'port'), port.port, 'must be between 1 and 65535, inclusive'));
      }
    }
    if (typeof port.appProtocol === 'string') errs.push(...invalidEach(child(path, 'appProtocol'), port.appProtocol, qualifiedNameErrors(port.appProtocol)));
  });
  return errs;
}

export function validateEndpointSlice(slice: EndpointSlice): FieldError[] {
  const errs = validateObjectMeta(slice.metadata, { namespaced: true, nameRule: 'subdomain' });
  const addressType = (slice as { addressType?: unknown }).addressType;
  if (!addressType) errs.push(fieldErrors.required('addressType'));
  else if (!(ADDRESS_TYPES as readonly unknown[]).includes(addressType)) errs.push(fieldErrors.notSupported('addressType', addressType, ADDRESS_TYPES));
  const endpoints = (slice as { endpoints?: unknown }).endpoints;
  errs.push(...expectArray('endpoints', endpoints));
  if (Array.isArray(endpoints)) {
    if (endpoints.length > MAX_SLICE_ENDPOINTS) errs.push({ field: 'endpoints', type: 'FieldValueTooMany', message: `Too many: ${endpoints.length}: must have at most ${MAX_SLICE_ENDPOINTS} items` });
    endpoints.forEach((e, i) => errs.push(...validateEndpoint(e, addressType, index('endpoints', i))));
  }
  errs.push(...validatePorts(slice.ports));
  return errs;
}

function validateEndpointSliceUpdate(slice: EndpointSlice, old: EndpointSlice): FieldError[] {
  const errs = [...validateObjectMetaUpdate(slice.metadata, old.metadata), ...validateEndpointSlice(slice)];
  if (slice.addressType !== old.addressType) errs.push(fieldErrors.invalid('addressType', slice.addressType, 'field is immutable'));
  return errs;
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
