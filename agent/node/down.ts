/**
 * `berth down`: removes one cluster's node from this host, and nothing of any other cluster's. It
 * stops the `berth up` of that data dir if one runs (and with it the agent, the node resolver and
 * the ingress's nginx, which is also ended here if a killed agent left it running),
 * then removes from the host what the agent made, found by the cluster id the agent recorded in its
 * data dir (agent/node/cluster-scope.ts): the containers carrying that id, the pod bridge networks labelled
 * with it and their iptables rules, the nftables tables whose owner comment names it
 * (agent/node/host-conflicts.ts), and the pods' in-memory volume mounts. The data dir (store, certificates) and claim volumes stay: `berth up` on
 * the same data dir starts the cluster again, with its objects, and pods come back.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { LABEL_CLUSTER, readRecordedClusterId } from './cluster-scope.js';
import { stopNodeResolver } from '../dns/node-dns.js';
import { findNginx, NginxProcess } from '../ingress/nginx-process.js';
import { processAlive } from '../dns/pid-file.js';
import { ruleComment } from '../network/bridge-network.js';
import { nftTableOwner } from './host-conflicts.js';
import { deleteIptablesRulesByComment } from '../network/host-commands.js';
import { unmountAllUnder } from '../volumes/mounts.js';

const execFileP = promisify(execFile);

export interface DownOptions {
  /** the data dir `berth up` ran with; the agent's is DIR/agent */
  dataDir: string;
  /** Docker Engine socket (default /var/run/docker.sock) */
  dockerSocket?: string | undefined;
  log: (line: string) => void;
  /** how long a running `berth up` gets to stop before SIGKILL (default 60 s) */
  stopTimeoutMs?: number;
}

export interface DownReport {
  clusterId: string | undefined;
  stoppedUp: number | undefined;
  containers: number;
  networks: string[];
  tables: string[];
}


/** The pid of the `berth up` running on `dataDir`, if one runs (its pid file, checked against /proc). */
function runningUp(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(dataDir, 'berth-up.pid'), 'utf8').trim());
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
  try {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.includes('up') ? pid : undefined;
  } catch {
    return undefined;
  }
}

export async function down(o: DownOptions): Promise<DownReport> {
  const dataDir = path.resolve(o.dataDir);
  const agentDir = path.join(dataDir, 'agent');
  const docker = (args: string[]) => execFileP('docker', ['-H', `unix://${o.dockerSocket ?? '/var/run/docker.sock'}`, ...args], { maxBuffer: 64 * 1024 * 1024 }).then((r) => r.stdout);
  const report: DownReport = { clusterId: readRecordedClusterId(agentDir), stoppedUp: runningUp(dataDir), containers: 0, networks: [], tables: [] };

  if (report.stoppedUp !== undefined) {
    o.log(`stopping berth up (pid ${report.stoppedUp})`);
    process.kill(report.stoppedUp, 'SIGTERM');
    const deadline = Date.now() + (o.stopTimeoutMs ?? 60_000);
    while (processAlive(report.stoppedUp) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (processAlive(report.stoppedUp)) process.kill(report.stoppedUp, 'SIGKILL');
  }
  await stopNodeResolver(agentDir);
  const ingressDir = path.join(agentDir, 'ingress');
  if (fs.existsSync(ingressDir)) await new NginxProcess({ dir: ingressDir, binary: findNginx() ?? 'nginx' }).stop();
  if (!report.clusterId) {
    o.log(`no cluster id recorded in ${agentDir}: no agent ran there, so there is nothing of it on this host to remove`);
    return report;
  }
  const label = `${LABEL_CLUSTER}=${report.clusterId}`;

  const ids = (await docker(['ps', '-aq', '--filter', `label=${label}`])).split('\n').filter(Boolean);
  // App containers and pause containers alike; the volumes Docker made for them go too (-v), claim volumes are named and stay.
  if (ids.length) await docker(['rm', '-f', '-v', ...ids]);
  report.containers = ids.length;
  // The pods' in-memory volumes (tmpfs under the agent's data dir) outlive their containers.
  await unmountAllUnder(path.join(agentDir, 'pods')).catch(() => undefined);

  const networks = (await docker(['network', 'ls', '--filter', `label=${label}`, '--format', '{{.Name}}'])).split('\n').filter(Boolean);
  for (const name of networks) {
    for (const table of ['nat', 'filter']) await deleteIptablesRulesByComment(table, ruleComment(name)).catch(() => 0);
    await docker(['network', 'rm', name]);
    report.networks.push(name);
  }

  const listing = await execFileP('nft', ['list', 'tables', 'ip']).then((r) => r.stdout).catch(() => '');
  for (const table of listing.split('\n').map((l) => /^table ip (\S+)/.exec(l)?.[1]).filter((t): t is string => !!t)) {
    if ((await nftTableOwner(table)) !== report.clusterId) continue;
    await execFileP('nft', ['delete', 'table', 'ip', table]);
    report.tables.push(table);
  }
  return report;
}
