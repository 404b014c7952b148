/** Service and EndpointSlice builders for the service proxy's unit tests. */
import type { Endpoint, EndpointSlice, Service, ServiceSpec } from '../../src/api/types.js';

export function service(name: string, spec: ServiceSpec, extra: Partial<Service> = {}): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'default', name, ...(extra.metadata ?? {}) }, spec: { type: 'ClusterIP', ...spec }, ...(extra.status ? { status: extra.status } : {}) };
}

export function endpoint(ip: string, nodeName: string, conditions: Endpoint['conditions'] = { ready: true, serving: true, terminating: false }): Endpoint {
  return { addresses: [ip], nodeName, conditions };
}

export function slice(serviceName: string, endpoints: Endpoint[], ports: EndpointSlice['ports'] = [{ name: 'http', port: 8080, protocol: 'TCP' }], name = `${serviceName}-abc`): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { namespace: 'default', name, labels: { 'kubernetes.io/service-name': serviceName } },
    addressType: 'IPv4',
    endpoints,
    ports,
  };
}

export const HTTP_PORT = [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' as const }];
