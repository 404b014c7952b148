/**
 * Owns the routes kubectl reads before it acts — /version, discovery (legacy and aggregated), OpenAPI
 * v3 and v2 — and rendering responses as meta.k8s.io Tables for `kubectl get`. The documents' content
 * is discovery.ts's, openapi.ts's, openapi-v2.ts's and tables.ts's; this file wires them to paths and
 * content negotiation.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError, errors } from '../api/errors.js';
import type { KubeList, KubeObject } from '../api/types.js';
import type { Registry } from '../registry/registry.js';
import type { ColumnProvider } from '../registry/table-columns.js';
import {
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  coreApiVersions,
  coreResourceList,
  discoveryContentType,
  groupResourceList,
  negotiateDiscoveryFormat,
  servesGroupVersion,
  versionInfo,
} from './discovery.js';
import { openapiV3Group, openapiV3Root, servedKindSchemas } from './openapi.js';
import { OPENAPI_V2_PROTOBUF, etagMatches, negotiateOpenAPIV2Format, renderOpenAPIV2 } from './openapi-v2.js';
import { toTable } from './tables.js';

/**
 * The read-only surface kubectl needs before it does anything: /version, discovery (plain and
 * aggregated), OpenAPI v3 and OpenAPI v2 (JSON or gnostic protobuf). All of it is computed from the registered resources on each call,
 * so kinds added later (CRDs) appear without a restart.
 */
export function registerDiscoveryRoutes(app: FastifyInstance, opts: { registry: Registry; advertiseAddress: string }): void {
  const resources = () => opts.registry.resources();

  app.get('/version', async () => versionInfo());

  app.get('/api', async (req, reply) => {
    const format = negotiateDiscoveryFormat(req.headers.accept);
    reply.header('vary', 'Accept').type(discoveryContentType(format));
    return format === 'legacy' ? coreApiVersions(opts.advertiseAddress) : aggregatedDiscovery(resources(), 'api', { version: format });
  });
  app.get('/api/v1', async () => coreResourceList(resources()));

  app.get('/apis', async (req, reply) => {
    const format = negotiateDiscoveryFormat(req.headers.accept);
    reply.header('vary', 'Accept').type(discoveryContentType(format));
    return format === 'legacy' ? apiGroupList(resources()) : aggregatedDiscovery(resources(), 'apis', { version: format });
  });
  app.get('/apis/:group', async (req) => {
    const { group } = req.params as { group: string };
    const g = apiGroup(group, resources());
    if (!g) throw errors.notFound({ resource: 'apigroups', name: group });
    return g;
  });
  app.get('/apis/:group/:version', async (req) => {
    const { group, version } = req.params as { group: string; version: string };
    if (!servesGroupVersion(group, version, resources())) throw errors.notFound({ resource: 'apiversions', name: `${group}/${version}` });
    return groupResourceList(group, version, resources());
  });

  app.get('/openapi/v3', async () => openapiV3Root(servedKindSchemas(opts.registry)));
  app.get('/openapi/v3/*', async (req) => {
    const path = (req.params as { '*': string })['*'];
    const doc = openapiV3Group(path, servedKindSchemas(opts.registry));
    if (!doc) throw errors.notFound({ resource: 'openapi', name: path });
    return doc;
  });
  // kubectl before 1.27 reads only v2 (as protobuf); newer kubectl falls back to it.
  app.get('/openapi/v2', async (req, reply) => {
    const format = negotiateOpenAPIV2Format(req.headers.accept);
    reply.header('vary', 'Accept');
    if (!format) {
      throw new ApiError('NotAcceptable', `only application/json and ${OPENAPI_V2_PROTOBUF} are served at /openapi/v2`);
    }
    const rendered = renderOpenAPIV2(servedKindSchemas(opts.registry), format);
    reply.header('etag', rendered.etag);
    if (etagMatches(req.headers['if-none-match'], rendered.etag)) return reply.code(304).send();
    return reply.type(rendered.contentType).send(rendered.body);
  });
}

/** kubectl get asks for `application/json;as=Table;v=v1;g=meta.k8s.io` (v1beta1 too, on older clients). */
export { wantsTable } from './tables.js';

function includeObjectOf(query: Record<string, string | undefined>): 'None' | 'Metadata' | 'Object' {
  const v = query.includeObject;
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

/** A list or single object as a Table in the kind's columns, stamped with the Table version the client asked for. */
export function renderTable(columns: ColumnProvider, body: KubeObject | KubeList, query: Record<string, string | undefined>, tableVersion: 'v1' | 'v1beta1' = 'v1'): unknown {
  const isList = Array.isArray((body as KubeList).items);
  const objects = isList ? (body as KubeList).items : [body as KubeObject];
  const meta = isList ? (body as KubeList).metadata : { resourceVersion: (body as KubeObject).metadata.resourceVersion };
  return toTable({ columns, objects, includeObject: includeObjectOf(query), now: new Date(), resourceVersion: meta.resourceVersion, continue: (meta as { continue?: string }).continue, tableVersion });
}

/** For `kubectl get -w`: each watch event carries a one-row Table. */
export function tableRowRenderer(columns: ColumnProvider, query: Record<string, string | undefined>, tableVersion: 'v1' | 'v1beta1' = 'v1'): (obj: KubeObject) => unknown {
  return (obj) => toTable({ columns, objects: [obj], includeObject: includeObjectOf(query), now: new Date(), resourceVersion: obj.metadata.resourceVersion, tableVersion });
}
