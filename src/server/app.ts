/**
 * Owns the API server's request pipeline on fastify: authentication, authorization (Node and RBAC by
 * default), per-client in-flight limits and the object budget, request metrics, the error and 404
 * Status bodies, and the routes (resource paths, discovery and OpenAPI, join and CA, health, OIDC
 * discovery, pod streams, the dashboard). It never listens (listen.ts does); what a resource request
 * does is src/requests/'s and the registry's.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiError, errors } from '../api/errors.js';
import { MAX_BODY_BYTES } from '../api/body.js';
import type { KubeObject } from '../api/types.js';
import { firstValues, isWatch, queryFlag } from '../api/query-parameters.js';
import { Authorizer, forbiddenError, nonResourceAttributes, type RequestAttributes } from '../auth/authz.js';
import { NodeGraph } from '../auth/node-graph.js';
import { reviewStrategies } from '../requests/reviews/index.js';
import { RequestAuthentication } from '../auth/authentication.js';
import { RbacAuthorizer } from '../auth/rbac/rbac-authorizer.js';
import type { StaticTokenAuthenticator } from '../auth/static-tokens.js';
import type { Identity, JoinRequest, TokenAuthenticator } from '../auth/tokens.js';
import { JWKS_PATH, OPENID_CONFIGURATION_PATH, type ServiceAccountTokens } from '../auth/service-account-tokens.js';
import type { ClientCertificateAuthenticator } from '../auth/client-certificates.js';
import type { Registry } from '../registry/registry.js';
import { registerApplyEndpoint } from './apply-endpoint.js';
import { registerDiscoveryRoutes, wantsTable, renderTable, tableRowRenderer } from './kubectl-routes.js';
import { columnProviderFor } from './tables.js';
import { resolveResourcePath } from '../requests/request-path.js';
import { handleResourceRequest } from '../requests/resource-handlers.js';
import { sendJsonBytes, sendJsonList } from './large-responses.js';
import { DEFAULT_OBJECT_BUDGET, estimateObjects, ObjectBudget, ObjectCounts, resolveObjectBudget, type ObjectBudgetLimits, type ReadRequest } from './object-budget.js';
import { readConsistency, readListOptions } from '../registry/list-options.js';
import type { ResourceTarget } from '../requests/request-path.js';
import { registerPodStreams } from './pod-streams.js';
import { isDashboardPath, registerDashboard } from './dashboard-static.js';
import { serveWatch } from './watch-stream.js';
import type { ControlPlaneMetrics } from './metrics.js';
import { isLongRunningVerb, requestLabels, type RequestLabels } from './metrics-labels.js';
import { DEFAULT_CONNECTION_LIMITS, InflightLimiter, isMutatingMethod, RETRY_AFTER_SECONDS, type ConnectionLimits } from '../net/connection-hygiene.js';

export interface AppOptions {
  registry: Registry;
  auth: TokenAuthenticator;
  /** issues and authenticates service-account tokens (TokenRequest, OIDC discovery) */
  serviceAccountTokens?: ServiceAccountTokens;
  /** x509 client certificates presented over TLS; without it only bearer tokens authenticate */
  clientCertificates?: ClientCertificateAuthenticator;
  /** users of the --token-auth-file, tried after the admin and node tokens */
  staticTokens?: StaticTokenAuthenticator;
  /** PEM served at /cacerts so joining agents can pin it against their token's hash */
  caCert: string;
  /** fastify/pino logger instance or options; false disables logging */
  logger?: unknown;
  /** what clients should call us (discovery's serverAddressByClientCIDRs) */
  advertiseAddress?: string;
  /** per-client requests in flight (default kube-apiserver's 400 reads / 200 mutations) */
  inflightLimits?: Pick<ConnectionLimits, 'maxReadsInFlight' | 'maxMutationsInFlight'>;
  /**
   * objects lists and initial watch events may have in flight, server-wide and per user, then 429
   * (default DEFAULT_OBJECT_BUDGET: 40,000 and 20,000); see object-budget.ts
   */
  objectBudget?: Partial<ObjectBudgetLimits>;
  /** how often watches that allow bookmarks get one (default 60 s, as Kubernetes) */
  watchBookmarkIntervalMs?: number;
  /** decides every request; by default Node and RBAC authorizers over the registry, started with the app */
  authorizer?: Authorizer;
  /** counts requests and serves GET /metrics (authorized as a non-resource URL); without it there is no /metrics */
  metrics?: ControlPlaneMetrics;
}

declare module 'fastify' {
  interface FastifyRequest {
    identity?: Identity;
    rawBody?: Buffer;
  }
}

/** Paths any caller may use: fetching the CA (pinned by the join token) and joining (has its own secret). */
const PUBLIC_PATHS = new Set(['/cacerts', '/berth/v1/join']);

function noRouteSchemas(): never {
  throw new Error('fastify route schemas are not used here: validate in the request handlers');
}

/**
 * Build the API server. It never listens: the caller decides (HTTPS in production, `inject()` in tests).
 * Closing the app ends open watch streams.
 */
export function buildApp(opts: AppOptions): FastifyInstance {
  // fastify 5 takes a ready pino instance as `loggerInstance`, options as `logger`.
  const loggerOpt = opts.logger && typeof (opts.logger as { info?: unknown }).info === 'function' ? { loggerInstance: opts.logger as never } : { logger: (opts.logger ?? false) as never };
  const app = Fastify({
    ...loggerOpt,
    bodyLimit: MAX_BODY_BYTES,
    // One log line per request would cost more than serving it; errors are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    // kubectl sends `?` queries with repeated keys rarely; plain parsing is enough.
    routerOptions: { maxParamLength: 1024 },
    return503OnClosing: false,
    // No route declares a JSON schema: bodies are decoded and validated in src/api/body.ts and the
    // registry. Without these, fastify loads ajv and fast-json-stringify at start (≈ 4 MB resident
    // at idle) only to never call them; a route that did declare a schema fails at registration.
    schemaController: { compilersFactory: { buildValidator: noRouteSchemas, buildSerializer: noRouteSchemas } },
  }) as unknown as FastifyInstance;
  const openWatches = new Set<() => void>();
  let authorizer = opts.authorizer;
  let nodeGraph: NodeGraph | undefined;
  let rbac: RbacAuthorizer | undefined;
  if (!authorizer) {
    const graph = (nodeGraph = new NodeGraph({ registry: opts.registry }));
    const rules = (rbac = new RbacAuthorizer({ registry: opts.registry }));
    // Indexed before the server takes its first request (listen() waits for onReady).
    app.addHook('onReady', async () => void (await Promise.all([graph.start(), rules.start()])));
    authorizer = new Authorizer({ graph: nodeGraph, rbac });
  }
  const authentication = new RequestAuthentication({
    tokens: opts.auth,
    staticTokens: opts.staticTokens,
    serviceAccountTokens: opts.serviceAccountTokens,
    clientCertificates: opts.clientCertificates,
  });
  // Access and identity reviews answer with this server's own authorizer and token authenticators.
  const reviews = reviewStrategies({
    authorizer,
    authenticateToken: (token, audiences) => authentication.authenticateToken(token, audiences),
    apiAudiences: opts.serviceAccountTokens ? [...opts.serviceAccountTokens.apiAudiences] : [],
  });
  for (const kind of reviews) opts.registry.register(kind);
  const authorize = (who: Identity, attrs: RequestAttributes): void => {
    const decision = authorizer.authorize(who, attrs);
    if (!decision.allowed) throw forbiddenError(who, attrs, decision.reason);
  };
  app.addHook('onClose', async () => {
    for (const end of [...openWatches]) end();
    nodeGraph?.stop();
    rbac?.stop();
  });

  // Keep every body as raw bytes: decoding (UTF-8, JSON/YAML, depth, aliases) happens in one place, body.ts.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err, req, reply) => {
    const apiErr = toApiError(err);
    if (apiErr.code >= 500) req.log.error({ err, url: req.url, method: req.method }, 'request failed');
    void reply.code(apiErr.code).type('application/json').send(apiErr.toStatusJson());
  });
  app.setNotFoundHandler((req, reply) => {
    // Kubernetes answers unknown paths with this exact 404 Status.
    const e = new ApiError('NotFound', 'the server could not find the requested resource', { causes: [{ reason: 'UnexpectedServerResponse', message: '404 page not found' }] });
    req.log.debug({ url: req.url }, 'no route');
    void reply.code(404).type('application/json').send(e.toStatusJson());
  });

  const metrics = opts.metrics;
  if (metrics) {
    // First hook, so refused requests (401, 403, 429) are counted too; 'close' also fires for
    // hijacked replies (watches, upgrades), which is when a long-running request ends.
    app.addHook('onRequest', async (req, reply) => {
      const started = performance.now();
      const labels = boundedLabels(requestLabels(req.method, req.url, req.headers['content-type']), (g, r) => opts.registry.lookup(g, r) !== undefined);
      const longRunning = isLongRunningVerb(labels.verb);
      if (longRunning) metrics.longRunningStarted(labels);
      reply.raw.once('close', () => {
        if (longRunning) metrics.longRunningEnded(labels);
        metrics.requestDone(labels, reply.raw.statusCode, (performance.now() - started) / 1000);
      });
    });
  }

  app.addHook('onRequest', async (req) => {
    const path = req.url.split('?')[0] ?? '';
    if (PUBLIC_PATHS.has(path) || isDashboardPath(path)) return;
    const identity = await authentication.identify(req.raw, authorizer);
    if (!identity) throw errors.unauthorized();
    req.identity = identity;
  });

  // Non-resource paths (discovery, /version, /openapi, health, /metrics…) are authorized by path and
  // HTTP verb; resource requests are authorized where their path is resolved.
  app.addHook('onRequest', async (req) => {
    const who = req.identity;
    const attrs = who && nonResourceAttributes(req.method, req.url.split('?')[0] ?? '');
    if (attrs) authorize(who, attrs);
  });

  // Max-in-flight per client, after authentication so a client is its user, not its address.
  const inflight = new InflightLimiter(opts.inflightLimits ?? DEFAULT_CONNECTION_LIMITS);
  app.addHook('onRequest', async (req, reply) => {
    if (isLongRunning(req.url)) return;
    const release = inflight.tryAcquire(clientOf(req), isMutatingMethod(req.method));
    if (!release) throw tooManyRequests(reply);
    // 'close' fires both when the response is sent and when the client goes away first.
    reply.raw.once('close', release);
  });

  // Lists and watches' initial events are charged by the objects they carry (object-budget.ts).
  const objectBudget = new ObjectBudget(resolveObjectBudget(opts.objectBudget ?? DEFAULT_OBJECT_BUDGET));
  const objectCounts = new ObjectCounts();
  /** Charges a list or watch before it reads anything; the returned release is also called when the response closes. */
  const chargeRead = async (req: FastifyRequest, reply: FastifyReply, verb: string, target: ResourceTarget, query: Record<string, string | undefined>): Promise<() => void> => {
    const read = readRequestOf(verb, target, query);
    // A watch that only follows changes holds nothing but its connection.
    if (!read || (read.verb === 'watch' && !read.sendsInitialEvents)) return () => {};
    const client = clientOf(req);
    if (!objectBudget.hasRoom(client)) throw tooManyRequests(reply);
    const { info, namespace } = target;
    const stored = read.singleObject ? 1 : await objectCounts.get(`${info.group}/${info.plural}/${namespace ?? ''}`, () => opts.registry.count(info, namespace));
    const release = await objectBudget.charge(client, estimateObjects(read, stored));
    if (!release) throw tooManyRequests(reply);
    // A client that left while its request waited has no response left to close.
    if (reply.raw.closed) {
      release();
      throw tooManyRequests(reply);
    }
    reply.raw.once('close', release);
    return release;
  };

  app.get('/cacerts', async (_req, reply) => reply.type('text/plain').send(opts.caCert));
  app.post('/berth/v1/join', async (req) => {
    return opts.auth.joinNode(req.headers.authorization, parseJoinBody(req.body as Buffer | undefined));
  });
  for (const p of ['/healthz', '/livez', '/readyz']) app.get(p, async (_req, reply) => reply.type('text/plain').send('ok'));
  if (metrics) {
    app.get('/metrics', async (_req, reply) => {
      const { contentType, body } = await metrics.scrape();
      return reply.type(contentType).send(body);
    });
  }

  const saTokens = opts.serviceAccountTokens;
  if (saTokens) {
    app.get(OPENID_CONFIGURATION_PATH, async (_req, reply) => reply.header('cache-control', 'public, max-age=3600').type('application/json').send(saTokens.openIdConfiguration()));
    app.get(JWKS_PATH, async (_req, reply) => reply.header('cache-control', 'public, max-age=3600').type('application/jwk-set+json').send(JSON.stringify(await saTokens.jwks())));
  }

  registerDashboard(app);
  registerDiscoveryRoutes(app, { registry: opts.registry, advertiseAddress: opts.advertiseAddress ?? '127.0.0.1:6443' });
  registerApplyEndpoint(app, { registry: opts.registry, authorizer });

  const handler = (group: string, version: string, rest: string) => async (req: FastifyRequest, reply: FastifyReply) => {
    const target = resolveResourcePath(group, version, rest, (g, p) => opts.registry.lookup(g, p)?.info);
    const query = firstValues(req.query);
    const verb = verbOf(req.method, target.name, query);
    authorize(req.identity!, { verb, group, resource: target.info.plural, subresource: target.subresource, namespace: target.namespace, name: target.name, fieldSelector: target.name === undefined ? query.fieldSelector : undefined });
    // A verb the resource does not implement (GET on a create-only review, deletecollection of namespaces).
    if (!target.subresource && !target.info.verbs.includes(verb)) throw errors.methodNotAllowed(`the server does not allow this method on the requested resource`);
    const releaseCharge = await chargeRead(req, reply, verb, target, query);
    const table = wantsTable(req.headers.accept);
    // A CRD served at several versions stores one; the others differ only in apiVersion (no conversion).
    // Kinds with a conversion (autoscaling/v1 HPAs) are rewritten to the asked version's shape.
    const conversion = opts.registry.lookup(target.info.group, target.info.plural)?.conversion;
    const asVersion = (obj: KubeObject): KubeObject => {
      if (version === target.info.version || !obj?.apiVersion) return obj;
      const shown = conversion && obj.kind === target.info.kind ? conversion.fromStored(obj, version) : obj;
      return { ...shown, apiVersion: group ? `${group}/${version}` : version };
    };
    if (verb === 'watch') {
      reply.hijack();
      await serveWatch(reply.raw, {
        registry: opts.registry,
        target,
        query,
        open: openWatches,
        apiVersion: group ? `${group}/${version}` : version,
        bookmarkIntervalMs: opts.watchBookmarkIntervalMs,
        onInitialEventsWritten: releaseCharge,
        render: table ? tableRowRenderer(columnProviderFor(opts.registry, target.info), query, table) : version === target.info.version ? undefined : asVersion,
      });
      return;
    }
    // A plain GET of one object is sent as stored: serialized once per revision, written with backpressure.
    if (req.method === 'GET' && target.name !== undefined && !target.subresource && !table && version === target.info.version) {
      return sendJsonBytes(reply, 200, await opts.registry.getSerialized(target.info, target.namespace, target.name));
    }
    // A list shown as stored is sent from the shared serialized items, a slice at a time.
    if (req.method === 'GET' && verb === 'list' && !target.subresource && !table && version === target.info.version) {
      const list = await opts.registry.listSerialized(target.info, target.namespace, readListOptions(query));
      return sendJsonList(reply, 200, list);
    }
    const result = await handleResourceRequest(opts.registry, {
      method: req.method,
      target,
      version,
      query,
      contentType: req.headers['content-type'],
      body: req.body as Buffer | undefined,
      user: req.identity!,
      userAgent: req.headers['user-agent'],
    }, { serviceAccountTokens: opts.serviceAccountTokens });
    let body = result.body;
    if (version !== target.info.version && !table && body && typeof body === 'object') {
      const b = body as KubeObject & { items?: KubeObject[] };
      body = Array.isArray(b.items) ? { ...b, apiVersion: group ? `${group}/${version}` : version, items: b.items.map(asVersion) } : asVersion(b);
    }
    if (table && req.method === 'GET') body = renderTable(columnProviderFor(opts.registry, target.info), body as KubeObject, query, table);
    if (result.warnings?.length) reply.header('warning', result.warnings.map((w) => `299 - ${JSON.stringify(w)}`));
    return reply.code(result.code).type('application/json').send(body);
  };

  registerPodStreams(app, { registry: opts.registry, auth: opts.auth, authentication, caCert: opts.caCert, authorizer });
  app.all('/api/v1/*', async (req, reply) => handler('', 'v1', (req.params as { '*': string })['*'])(req, reply));
  app.all('/apis/:group/:version/*', async (req, reply) => {
    const p = req.params as { group: string; version: string; '*': string };
    return handler(p.group, p.version, p['*'])(req, reply);
  });
  return app;
}

/** Who a request is counted against: its user, or its address before authentication. */
function clientOf(req: FastifyRequest): string {
  return req.identity?.username ?? `address:${req.socket.remoteAddress ?? '?'}`;
}

/** kube-apiserver's answer when a request does not fit its limits. */
function tooManyRequests(reply: FastifyReply): ApiError {
  void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
  return new ApiError('TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds: RETRY_AFTER_SECONDS });
}

/**
 * What a list or watch asks for, for its cost; undefined for other verbs and for parameters the
 * handler refuses anyway (it reports them). One named object (a path name or a metadata.name
 * field selector) costs one, as the list work estimator charges a single-object list.
 */
function readRequestOf(verb: string, target: ResourceTarget, query: Record<string, string | undefined>): ReadRequest | undefined {
  if (verb !== 'list' && verb !== 'watch') return undefined;
  let consistency: ReturnType<typeof readConsistency>;
  try {
    consistency = readConsistency(query, { watch: verb === 'watch' });
  } catch {
    return undefined;
  }
  const anyVersion = !consistency.resourceVersion || consistency.resourceVersion === '0';
  return {
    verb,
    limit: consistency.limit,
    filtered: Boolean(query.labelSelector || query.fieldSelector),
    singleObject: target.name !== undefined || /^metadata\.name==?[^,]*$/.test(query.fieldSelector ?? ''),
    sendsInitialEvents: verb === 'watch' && (consistency.sendInitialEvents ?? anyVersion),
  };
}

function verbOf(method: string, name: string | undefined, query: Record<string, string | undefined>): string {
  const watch = isWatch(query);
  switch (method) {
    case 'GET':
    case 'HEAD':
      return watch ? 'watch' : name === undefined ? 'list' : 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return name === undefined ? 'deletecollection' : 'delete';
    default:
      return method.toLowerCase();
  }
}

function parseJoinBody(body: Buffer | undefined): JoinRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body?.toString('utf8') ?? '');
  } catch {
    throw errors.badRequest('join body must be JSON: {"nodeName": "..."}');
  }
  const nodeName = (parsed as { nodeName?: unknown })?.nodeName;
  if (typeof nodeName !== 'string' || !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(nodeName)) {
    throw errors.badRequest('nodeName must be a lowercase RFC 1123 subdomain');
  }
  // The serving key, addresses and node password are checked by the authenticator, after the join secret.
  const { servingPublicKey, addresses, nodePassword } = parsed as { servingPublicKey?: unknown; addresses?: unknown; nodePassword?: unknown };
  return { nodeName, servingPublicKey, addresses, nodePassword };
}

/** Map anything thrown to an ApiError once, here. */
function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { statusCode?: number; code?: string; message?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e.statusCode === 413) return errors.tooLarge(`the request body exceeds the limit of ${MAX_BODY_BYTES} bytes`);
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e.statusCode === 415) return errors.unsupportedMediaType(e.message ?? 'unsupported media type');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) return errors.badRequest(e.message ?? 'bad request');
  return errors.internal(e.message ?? String(err));
}

/**
 * A path naming no served resource (a typo, a probe for one) still counts, but under empty
 * group/version/resource/subresource labels: request paths chosen by clients must not grow the
 * label set.
 */
function boundedLabels(labels: RequestLabels, served: (group: string, resource: string) => boolean): RequestLabels {
  if (labels.resource === '') return labels;
  if (!served(labels.group, labels.resource)) return { ...labels, group: '', version: '', resource: '', subresource: '' };
  return labels.subresource === '' || KNOWN_SUBRESOURCES.has(labels.subresource) ? labels : { ...labels, subresource: '' };
}

/** Subresources kept as a label value; any other is counted under ''. */
const KNOWN_SUBRESOURCES = new Set(['status', 'scale', 'log', 'exec', 'attach', 'portforward', 'proxy', 'eviction', 'binding', 'token', 'ephemeralcontainers', 'finalize', 'approval', 'resize']);

/** Watches and followed logs stay open as long as their clients want; they are not counted as in flight. */
function isLongRunning(url: string): boolean {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path.includes('/watch/')) return true;
  const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  return isWatch(query) || (path.endsWith('/log') && queryFlag(query, 'follow'));
}
