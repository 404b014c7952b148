/**
 * Starts (or re-keys) the agent's HTTPS endpoint from the node's join credentials, so agent.ts needs one call
 * at start and one after a re-join. Credentials from a server that issued no serving certificate leave the
 * endpoint off: logs and exec are then unavailable on this node, everything else works.
 */
import type { Logger } from 'pino';
import { servingCredentialsOf, type NodeCredentials } from '../node/join.js';
import type { ContainerRuntime } from '../runtime/runtime.js';
import { AgentServer, DEFAULT_AGENT_PORT, type AgentServerMetrics } from './agent-server.js';

export interface AgentEndpointParams {
  runtime: ContainerRuntime;
  nodeName: string;
  /** from the join; undefined when the agent runs with an injected client (tests) */
  credentials: NodeCredentials | undefined;
  /** --agent-port; undefined = the kubelet's 10250, or any free port when that one is taken */
  port: number | undefined;
  /** /metrics on the endpoint */
  metrics?: AgentServerMetrics;
  /** the body of GET /metrics/resource */
  resourceMetrics?: () => string;
  log: Logger;
}

/** The running endpoint after applying these credentials (current one re-keyed, or a new one), if any. */
export async function syncAgentEndpoint(current: AgentServer | undefined, p: AgentEndpointParams): Promise<AgentServer | undefined> {
  const serving = p.credentials ? servingCredentialsOf(p.credentials) : undefined;
  if (!serving) {
    if (p.credentials) p.log.warn('the control plane issued no serving certificate: kubectl logs and exec will not reach this node');
    return current;
  }
  if (current) {
    current.setCredentials(serving);
    return current;
  }
  const server = new AgentServer({
    runtime: p.runtime,
    nodeName: p.nodeName,
    credentials: serving,
    port: p.port ?? DEFAULT_AGENT_PORT,
    fallbackToFreePort: p.port === undefined,
    metrics: p.metrics,
    resourceMetrics: p.resourceMetrics,
    log: p.log,
  });
  await server.listen();
  return server;
}
