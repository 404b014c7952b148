/**
 * discovery.k8s.io/v1 validation: EndpointSlice (address type, endpoints, ports) and its fixed address type on update.
 * Pure functions returning FieldError[] in Kubernetes' field paths and wording; the kind module in
 * src/registry/kinds/ calls them from its strategy.
 */
import { isIP } from 'node:net';
import type { FieldError } from '../errors.js';
import type { EndpointSlice } from '../types.js';
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
} from '../validation.js';
import { SERVICE_PROTOCOLS } from './services.js';

export const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'] as const;
/** Upstream's limits on one slice. */
export const MAX_SLICE_ENDPOINTS = 1000;
export const MAX_ENDPOINT_ADDRESSES = 100;
export const MAX_SLICE_PORTS = 20000;

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

export function validateEndpointSliceUpdate(slice: EndpointSlice, old: EndpointSlice): FieldError[] {
  const errs = [...validateObjectMetaUpdate(slice.metadata, old.metadata), ...validateEndpointSlice(slice)];
  if (slice.addressType !== old.addressType) errs.push(fieldErrors.invalid('addressType', slice.addressType, 'field is immutable'));
  return errs;
}

