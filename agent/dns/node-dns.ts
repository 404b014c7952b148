/**
 * The agent's side of the node-local DNS resolver: starts the resolver process (agent/dns/resolver-main.ts),
 * supervises it, and adopts it when the agent restarts — the way it adopts its containers — so pods
 * never lose DNS while the agent is away or being upgraded.
 *
 * On start the pid file decides: a live resolver of this data directory with the same arguments (the
 * same configuration and build) is adopted as it is; one with other arguments is succeeded — the new
 * resolver binds beside it, takes the pid file, and the old one exits on seeing that (no gap in
 * answers); none at all is started. Then the agent checks every `checkMs` that the process named by the
 * pid file is alive and restarts it (backing off from 1 s to 30 s) if not. stop() only stops watching:
 * the resolver outlives the agent. stopNodeResolver ends it for good (node removal, tests).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as dnsPacket from 'dns-packet';
import dgram from 'node:dgram';
import type { Logger } from 'pino';
import type { Client } from '../../src/client/client.js';
import type { ClusterDnsSettings } from '../container/pod-host-files.js';
import { isResolverProcess, processAlive, readResolverPid, RESOLVER_ENTRY, resolverPidFile } from './pid-file.js';
import type { Service } from '../../src/api/types.js';

export interface NodeDnsOptions {
  dataDir: string;
  /** the address pods use as nameserver and the resolver binds (kubelet's --cluster-dns) */
  listenIP: string;
  /** default 53 */
  port?: number;
  clusterDomain: string;
  /** the node's resolv.conf, whose nameservers are the upstreams */
  resolvConf: string;
  log: Logger;
  /** liveness check period; default 1 s */
  checkMs?: number;
}

const ENTRY = path.join(path.dirname(fileURLToPath(import.meta.url)), RESOLVER_ENTRY);


function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Asks the resolver for the cluster zone's SOA; true on any well-formed answer. */
export function probeResolver(host: string, port: number, zone: string, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.close();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('error', () => done(false));
    socket.on('message', () => done(true));
    socket.send(dnsPacket.encode({ type: 'query', id: 1, questions: [{ name: zone, type: 'SOA', class: 'IN' }] }), port, host);
  });
}

export class NodeDns {
  private readonly dataDir: string;
  private readonly args: string[];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private backoffMs = 1000;
  private nextStartAt = 0;

  constructor(private readonly opts: NodeDnsOptions) {
    this.dataDir = path.resolve(opts.dataDir);
    // The entry file's modification time stands for the build: an upgraded agent replaces an old resolver.
    let build = 'unknown';
    try {
      build = String(Math.floor(fs.statSync(ENTRY).mtimeMs));
    } catch {
      // Left 'unknown': the resolver is adopted on configuration alone.
    }
    this.args = [
      '--data-dir', this.dataDir,
      '--listen', opts.listenIP,
      '--port', String(opts.port ?? 53),
      '--cluster-domain', opts.clusterDomain,
      '--resolv-conf', opts.resolvConf,
      '--build', build,
    ];
  }

  /** The pid of the resolver currently serving this node, if any. */
  pid(): number | undefined {
    const current = readResolverPid(this.dataDir);
    return current && isResolverProcess(current.pid, this.dataDir) ? current.pid : undefined;
  }

  /** Adopts, succeeds or starts the resolver; resolves once it answers (or after `readyTimeoutMs`, logged). */
  async start(readyTimeoutMs = 10_000): Promise<void> {
    const current = readResolverPid(this.dataDir);
    const running = current && isResolverProcess(current.pid, this.dataDir);
    if (running && JSON.stringify(current.args) === JSON.stringify(this.args)) {
      this.opts.log.info({ pid: current.pid }, 'dns: adopted the running node resolver');
    } else {
      if (running) this.opts.log.info({ pid: current.pid }, 'dns: replacing the node resolver (configuration or build changed)');
      this.spawn();
    }
    const replaced = running && current && JSON.stringify(current.args) !== JSON.stringify(this.args) ? current.pid : undefined;
    await this.waitReady(readyTimeoutMs, replaced);
    this.timer = setInterval(() => this.check(), this.opts.checkMs ?? 1000);
    this.timer.unref();
  }

  /** Stops supervising; the resolver keeps serving. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private spawn(): void {
    const logFile = path.join(this.dataDir, 'dns', 'resolver.log');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const out = fs.openSync(logFile, 'a');
    // Its own process group (detached): signals to the agent's group do not reach it.
    // The agent's own V8 flags (its launcher set them), so the resolver gets the same small heap settings.
    const child = spawn(process.execPath, [...process.execArgv, ENTRY, ...this.args], { detached: true, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    child.unref();
    this.opts.log.info({ pid: child.pid }, 'dns: started the node resolver');
  }

  /** Waits until the resolver this agent wants (not `predecessor`) holds the pid file and answers. */
  private async waitReady(timeoutMs: number, predecessor: number | undefined): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !this.stopped) {
      const current = readResolverPid(this.dataDir);
      const wanted = current !== undefined && current.pid !== predecessor && JSON.stringify(current.args) === JSON.stringify(this.args);
      if (wanted && (await probeResolver(this.opts.listenIP, this.opts.port ?? 53, this.opts.clusterDomain))) return;
      await sleep(100);
    }
    this.opts.log.warn({ log: path.join(this.dataDir, 'dns', 'resolver.log') }, 'dns: the node resolver is not answering yet');
  }

  private check(): void {
    if (this.stopped || this.pid() !== undefined) {
      this.backoffMs = 1000;
      return;
    }
    if (Date.now() < this.nextStartAt) return;
    this.opts.log.warn({ retryInMs: this.backoffMs }, 'dns: the node resolver is not running; starting it');
    this.nextStartAt = Date.now() + this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
    this.spawn();
  }
}

/** Ends this node's resolver for good (it takes its address off the interface as it exits). */
export async function stopNodeResolver(dataDir: string, timeoutMs = 5000): Promise<void> {
  const dir = path.resolve(dataDir);
  const current = readResolverPid(dir);
  if (!current || !isResolverProcess(current.pid, dir)) {
    fs.rmSync(resolverPidFile(dir), { force: true });
    return;
  }
  process.kill(current.pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (processAlive(current.pid) && isResolverProcess(current.pid, dir) && Date.now() < deadline) await sleep(50);
  if (processAlive(current.pid) && isResolverProcess(current.pid, dir)) process.kill(current.pid, 'SIGKILL');
}

/** The kube-dns Service's address the control plane assigns (the 10th of the default Service range). */
export const DEFAULT_CLUSTER_DNS_IP = '10.96.0.10';

export interface AgentDnsOptions {
  client: Client;
  dataDir: string;
  /** kubelet's --cluster-dns; absent: the kube-dns Service's clusterIP, else DEFAULT_CLUSTER_DNS_IP */
  clusterDNS: string[] | undefined;
  clusterDomain: string;
  resolvConf: string;
  /** run the node-local resolver (off when the agent has no credentials of its own, as in unit tests) */
  runResolver: boolean;
  /** called with the resolver's address before it is started or adopted; throws to refuse it (agent/node/host-conflicts.ts) */
  checkAddress?: (address: string) => void;
  log: Logger;
}

/** The address of kube-system/kube-dns, if the control plane has one. */
async function kubeDnsAddress(client: Client): Promise<string | undefined> {
  try {
    const svc = await client.get<Service>({ plural: 'services' }, { namespace: 'kube-system', name: 'kube-dns' });
    const ip = svc.spec?.clusterIP;
    return ip && ip !== 'None' ? ip : undefined;
  } catch {
    return undefined;
  }
}

/** Decides the pods' cluster DNS and starts (or adopts) the node-local resolver answering on it. */
export async function startAgentDns(o: AgentDnsOptions): Promise<{ settings: ClusterDnsSettings; stop(): void }> {
  const nameservers = o.clusterDNS?.length ? o.clusterDNS : [(await kubeDnsAddress(o.client)) ?? DEFAULT_CLUSTER_DNS_IP];
  const settings: ClusterDnsSettings = { nameservers, domain: o.clusterDomain };
  if (!o.runResolver) return { settings, stop: () => undefined };
  o.checkAddress?.(nameservers[0]!);
  const dns = new NodeDns({ dataDir: o.dataDir, listenIP: nameservers[0]!, clusterDomain: o.clusterDomain, resolvConf: o.resolvConf, log: o.log.child({ component: 'dns' }) });
  await dns.start();
  return { settings, stop: () => dns.stop() };
}
