/**
 * The pod subresources that stream from a node: `log` (GET …/pods/{name}/log) and `exec` / `attach` /
 * `portforward` (upgrade requests to …/pods/{name}/exec|attach|portforward). The API server authenticates
 * and authorizes the caller (verb `get` on pods/log, `create` on pods/exec, pods/attach and pods/portforward —
 * the WebSocket GET included, as Kubernetes does since 1.30), checks the pod and container the way the
 * kubelet would, and then proxies to the agent of the pod's node (agent-proxy.ts), which speaks every
 * streaming protocol itself (port-forward's WebSocket tunnel of SPDY and its WebSocket channels included), so
 * the API server splices bytes and never translates. Users never talk to agents directly.
 *
 * Upgrade requests bypass fastify's routing (Node hands them to the server's 'upgrade' event, which listen.ts
 * forwards to `app.server`), so this module authenticates those itself.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errors, isApiError } from '../api/errors.js';
import type { Container, ContainerStatus, Node, Pod } from '../api/types.js';
import { forbiddenError, type Authorizer } from '../auth/authz.js';
import type { RequestAuthentication } from '../auth/authentication.js';
import type { Identity, TokenAuthenticator } from '../auth/tokens.js';
import type { Registry } from '../registry/registry.js';
import { podLogOptionsQuery, podPortForwardOptionsQuery, podStreamOptionsQuery, readPodLogOptions, readPodPortForwardOptions, readPodStreamOptions } from '../api/query-parameters.js';
import { agentGet, proxyUpgrade, refuseUpgrade, type AgentTarget } from './agent-proxy.js';

export interface PodStreamsOptions {
  registry: Registry;
  /** node credentials: the proxy secret presented to agents */
  auth: TokenAuthenticator;
  /** who an upgrade request is, as for every other request */
  authentication: RequestAuthentication;
  /** cluster CA PEM: agents' serving certificates must chain to it */
  caCert: string;
  authorizer: Authorizer;
}

const STREAM_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/;

export function registerPodStreams(app: FastifyInstance, opts: PodStreamsOptions): void {
  const streams = new PodStreams(opts);
  app.get('/api/v1/namespaces/:namespace/pods/:name/log', (req, reply) => streams.serveLog(req, reply));
  // Reaching a route means no Upgrade header: exec, attach and portforward only exist as upgrades.
  for (const sub of ['exec', 'attach', 'portforward']) {
    app.route({
      method: ['GET', 'POST'],
      url: `/api/v1/namespaces/:namespace/pods/:name/${sub}`,
      handler: async () => {
        throw errors.badRequest('Upgrade request required');
      },
    });
  }
  app.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void streams.serveUpgrade(req, socket, head));
}

class PodStreams {
  constructor(private readonly opts: PodStreamsOptions) {}

  async serveLog(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const { namespace, name } = req.params as { namespace: string; name: string };
    this.authorize(req.identity!, 'get', 'log', namespace, name);
    const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length));
    // Decoded and validated here, as kube-apiserver does before it calls the kubelet; the agent
    // gets one spelling of each value.
    const logOptions = readPodLogOptions(query, name);
    const pod = await this.pod(namespace, name);
    const container = pickContainer(pod, logOptions.container ?? null);
    const containerID = logContainerID(pod, container, logOptions.previous);
    const target = await this.agentTarget(pod);
    const forward = podLogOptionsQuery(logOptions);
    forward.set('podUID', pod.metadata.uid ?? '');
    forward.set('containerID', containerID);
    const upstream = await agentGet(target, `${agentPath('containerLogs', namespace, name, container)}?${forward}`);

    reply.hijack();
    const res = reply.raw;
    // The client may have given up while the agent was being reached: then nobody will ever close this stream.
    if (res.destroyed || req.raw.socket.destroyed) return void upstream.destroy();
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
    res.flushHeaders();
    // Either side may end it: the container stops (agent ends), or the client leaves (kubectl logs -f killed).
    res.on('close', () => upstream.destroy());
    upstream.on('error', () => res.destroy());
    upstream.on('aborted', () => res.destroy());
    upstream.pipe(res);
  }

  async serveUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    try {
      // Who first, as for every other request: anonymous callers learn nothing, not even which paths exist.
      const identity = await this.opts.authentication.identify(req, this.opts.authorizer);
      if (!identity) throw errors.unauthorized();
      const url = new URL(req.url ?? '/', 'https://apiserver');
      const m = STREAM_PATH.exec(url.pathname);
      if (!m) throw new ApiError('NotFound', 'the server could not find the requested resource');
      const [namespace, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
      const subresource = m[3] as 'exec' | 'attach' | 'portforward';
      this.authorize(identity, 'create', subresource, namespace, name);
      const pod = await this.pod(namespace, name);
      if (subresource === 'portforward') {
        // As kube-apiserver: the pod must be on a node; whether it runs is the agent's (the kubelet's) call.
        // `ports` (WebSocket channel clients) is decoded here, as kube-apiserver decodes PodPortForwardOptions.
        const forward = podPortForwardOptionsQuery(readPodPortForwardOptions(url.searchParams));
        const target = await this.agentTarget(pod);
        forward.set('podUID', pod.metadata.uid ?? '');
        return proxyUpgrade(target, req, socket, head, `/portForward/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?${forward}`);
      }
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') throw errors.badRequest(`cannot ${subresource} into a container in a completed pod; current phase is ${phase}`);
      const streamOptions = readPodStreamOptions(url.searchParams);
      const container = pickContainer(pod, streamOptions.container ?? null);
      const target = await this.agentTarget(pod);
      const forward = podStreamOptionsQuery(streamOptions);
      forward.set('podUID', pod.metadata.uid ?? '');
      proxyUpgrade(target, req, socket, head, `${agentPath(subresource, namespace, name, container)}?${forward}`);
    } catch (err) {
      refuseUpgrade(socket, isApiError(err) ? err : err instanceof URIError ? errors.badRequest('malformed request path') : errors.internal((err as Error).message));
    }
  }

  private authorize(who: Identity, verb: string, subresource: string, namespace: string, name: string): void {
    const attrs = { verb, group: '', resource: 'pods', subresource, namespace, name };
    const decision = this.opts.authorizer.authorize(who, attrs);
    if (!decision.allowed) throw forbiddenError(who, attrs, decision.reason);
  }

  private async pod(namespace: string, name: string): Promise<Pod> {
    return (await this.opts.registry.get(this.info('pods'), namespace, name)) as Pod;
  }

  private info(plural: string) {
    const strategy = this.opts.registry.lookup('', plural);
    if (!strategy) throw errors.internal(`resource ${plural} is not registered`);
    return strategy.info;
  }

  /** The node's agent: InternalIP, the port it advertises, and the secret it expects from us. */
  private async agentTarget(pod: Pod): Promise<AgentTarget> {
    const nodeName = pod.spec.nodeName;
    if (!nodeName) throw errors.badRequest(`pod ${pod.metadata.name} does not have a host assigned`);
    let node: Node;
    try {
      node = (await this.opts.registry.get(this.info('nodes'), undefined, nodeName)) as Node;
    } catch (err) {
      if (isApiError(err) && err.code === 404) throw errors.badRequest(`node "${nodeName}" of pod ${pod.metadata.name} no longer exists`);
      throw err;
    }
    const addresses = node.status?.addresses ?? [];
    const host = (addresses.find((a) => a.type === 'InternalIP') ?? addresses.find((a) => a.type === 'ExternalIP') ?? addresses.find((a) => a.type === 'Hostname'))?.address;
    const endpoints = node.status?.daemonEndpoints as { kubeletEndpoint?: { Port?: unknown } } | undefined;
    const port = Number(endpoints?.kubeletEndpoint?.Port);
    if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) {
      throw errors.unavailable(`node "${nodeName}" does not advertise an agent endpoint (address and daemonEndpoints.kubeletEndpoint.Port)`);
    }
    const secret = await this.opts.auth.proxySecretFor(nodeName);
    if (!secret) throw errors.unavailable(`node "${nodeName}" joined without agent endpoint credentials; restart its agent so it joins again`);
    return { nodeName, host, port, secret, ca: this.opts.caCert };
  }
}

function agentPath(route: string, namespace: string, pod: string, container: string): string {
  return `/${route}/${encodeURIComponent(namespace)}/${encodeURIComponent(pod)}/${encodeURIComponent(container)}`;
}

function allContainers(pod: Pod): Container[] {
  return [...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])];
}

/** The requested container, or the only one; errors as the API server words them. */
export function pickContainer(pod: Pod, requested: string | null): string {
  const name = pod.metadata.name;
  if (requested) {
    if (!allContainers(pod).some((c) => c.name === requested)) throw errors.badRequest(`container ${requested} is not valid for pod ${name}`);
    return requested;
  }
  const containers = pod.spec.containers ?? [];
  if (containers.length === 1) return containers[0]!.name;
  const inits = (pod.spec.initContainers ?? []).map((c) => c.name);
  const choice = `choose one of: [${containers.map((c) => c.name).join(' ')}]${inits.length ? ` or one of the init containers: [${inits.join(' ')}]` : ''}`;
  throw errors.badRequest(`a container name must be specified for pod ${name}, ${choice}`);
}

/**
 * Which container instance's log to read, by the kubelet's rules: the running one, else the terminated one,
 * else the last terminated; with `previous`, the last terminated (lastState). Errors are 400s.
 */
export function logContainerID(pod: Pod, container: string, previous: boolean): string {
  const podName = pod.metadata.name;
  const statuses: ContainerStatus[] = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])];
  const st = statuses.find((s) => s.name === container);
  if (!st) throw errors.badRequest(`container "${container}" in pod "${podName}" is waiting to start: ContainerCreating`);
  const last = st.lastState?.terminated;
  if (previous) {
    if (last?.containerID) return last.containerID;
    throw errors.badRequest(`previous terminated container "${container}" in pod "${podName}" not found`);
  }
  if (st.state?.running && st.containerID) return st.containerID;
  const ended = st.state?.terminated;
  if (ended?.containerID) return ended.containerID;
  if (last?.containerID) return last.containerID;
  const reason = st.state?.waiting?.reason;
  if (reason === 'ErrImagePull' || reason === 'ImagePullBackOff') throw errors.badRequest(`container "${container}" in pod "${podName}" is waiting to start: image can't be pulled`);
  throw errors.badRequest(`container "${container}" in pod "${podName}" is waiting to start: ${reason ?? 'ContainerCreating'}`);
}
