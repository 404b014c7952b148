/**
 * The node-local DNS resolver process (`node dist/agent/dns/resolver-main.js --data-dir … --listen …`).
 * It runs apart from the agent so that names keep resolving while the agent restarts or is upgraded:
 * the agent starts it, supervises it and adopts it on restart (agent/dns/node-dns.ts), as it adopts its
 * containers. It keeps its own watches of Services and EndpointSlices with the node's credentials
 * (`<data-dir>/credentials.json`), and forwards other names to the upstreams of `--resolv-conf`.
 *
 * Ownership is the pid file `<data-dir>/dns/resolver.pid`, written once the UDP socket is bound: a
 * resolver whose pid file is gone (the node's data was removed) or names another process (a successor
 * took over) exits, and on exit takes the node address off the interface only if no successor holds it.
 * The UDP socket binds with SO_REUSEADDR, so a successor binds beside it and takes over without a gap;
 * TCP follows as soon as the predecessor has let go of the port.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, parseLogFormat, type LogFormat } from '../../src/client/log-format.js';
import { HttpClient } from '../../src/client/http-client.js';
import { ClusterCache } from './cluster-cache.js';
import { ClusterZone } from './cluster-records.js';
import { Forwarder, type Upstream } from './forwarder.js';
import { addNodeAddress, DNS_INTERFACE, removeNodeAddress } from './node-address.js';
import { readNodeResolverConfig } from './resolv-conf.js';
import { DnsServer } from './server.js';
import { readResolverPid, resolverPidFile, type ResolverPidFile } from './pid-file.js';

const OWNERSHIP_CHECK_MS = 2000;
const RESOLVER_NICE = -5;
const UPSTREAM_REFRESH_MS = 5000;

function fail(msg: string): never {
  process.stderr.write(`berth dns: ${msg}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'data-dir': { type: 'string' },
      listen: { type: 'string' },
      port: { type: 'string' },
      'cluster-domain': { type: 'string' },
      'resolv-conf': { type: 'string' },
      interface: { type: 'string' },
      build: { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
    },
  });
  const dataDir = values['data-dir'] ?? fail('--data-dir is required');
  const listen = values.listen ?? fail('--listen is required');
  const port = Number(values.port ?? '53');
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`invalid --port ${values.port}`);
  const iface = values.interface ?? DNS_INTERFACE;
  const resolvConf = values['resolv-conf'] ?? '/etc/resolv.conf';
  let logFormat: LogFormat | undefined;
  try {
    logFormat = parseLogFormat(values['log-format']);
  } catch (e) {
    fail((e as Error).message);
  }
  const log = createLogger({ name: 'berth-dns', level: values['log-level'], format: logFormat });
  // Every name lookup of every pod on the node waits on this process, and a query costs it tens of
  // microseconds: ahead of the node's batch work in the CPU queue, its answers do not queue behind it.
  try {
    os.setPriority(RESOLVER_NICE);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'dns: cannot raise the resolver priority');
  }

  const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as { server: string; token: string; ca?: string };
  const client = new HttpClient({ server: credentials.server, token: credentials.token, ...(credentials.ca ? { ca: credentials.ca } : {}) });
  const cache = new ClusterCache({ client, log });
  cache.start();

  // Upstreams: the node's nameservers, never this resolver itself; re-read when the file changes.
  let upstreams: Upstream[] = [];
  let resolvStamp = '';
  const refreshUpstreams = () => {
    let stamp = '';
    try {
      stamp = String(fs.statSync(resolvConf).mtimeMs);
    } catch {
      stamp = 'missing';
    }
    if (stamp === resolvStamp) return;
    resolvStamp = stamp;
    upstreams = readNodeResolverConfig(resolvConf)
      .nameservers.filter((ns) => ns !== listen)
      .map((host) => ({ host, port: 53 }));
    log.info({ upstreams: upstreams.map((u) => u.host) }, 'dns: upstream resolvers');
  };
  refreshUpstreams();
  const upstreamTimer = setInterval(refreshUpstreams, UPSTREAM_REFRESH_MS);

  await addNodeAddress(listen, iface);
  const server = new DnsServer({
    host: listen,
    port,
    zone: new ClusterZone({ domain: values['cluster-domain'] ?? 'cluster.local' }),
    view: () => (cache.synced() ? cache.view : undefined),
    forwarder: new Forwarder({ upstreams: () => upstreams }),
    reuseAddress: true,
    log,
  });
  await server.start();

  const pidFile = resolverPidFile(dataDir);
  fs.mkdirSync(path.dirname(pidFile), { recursive: true });
  const mine: ResolverPidFile = { pid: process.pid, args: process.argv.slice(2) };
  fs.writeFileSync(`${pidFile}.tmp`, JSON.stringify(mine));
  fs.renameSync(`${pidFile}.tmp`, pidFile);
  log.info({ listen, port, pid: process.pid }, 'dns: resolver serving');

  let exiting = false;
  const exit = async (why: string) => {
    if (exiting) return;
    exiting = true;
    clearInterval(upstreamTimer);
    clearInterval(ownership);
    const owner = readResolverPid(dataDir);
    const succeeded = owner !== undefined && owner.pid !== process.pid;
    log.info({ why, succeeded }, 'dns: resolver exiting');
    await server.stop();
    cache.stop();
    client.close();
    if (!succeeded) {
      await removeNodeAddress(listen, iface).catch(() => undefined);
      if (owner?.pid === process.pid) fs.rmSync(pidFile, { force: true });
    }
    process.exit(0);
  };
  const ownership = setInterval(() => {
    const owner = readResolverPid(dataDir);
    if (!owner) void exit('pid file removed');
    else if (owner.pid !== process.pid) void exit(`taken over by pid ${owner.pid}`);
  }, OWNERSHIP_CHECK_MS);
  process.on('SIGTERM', () => void exit('SIGTERM'));
  process.on('SIGINT', () => void exit('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`berth dns: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
