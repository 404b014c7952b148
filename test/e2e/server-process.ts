/**
 * Extra `berth server` processes for tests that run several servers on one store (replicas on etcd, a
 * server started after a migration): started on loopback, waited for, with an admin client, and
 * stopped on request. The first server of a test is still the harness's (`startCluster`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HttpClient } from '../../src/client/http-client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { BERTH_BIN, waitFor } from './harness.js';
import { freePort } from './ports.js';

export interface ServerProcess {
  dir: string;
  url: string;
  process: ChildProcess;
  /** an admin client (the admin token and CA of `secretsFrom`, else of its own data dir) */
  client: HttpClient;
  logFile: string;
  /** signals the server (default SIGTERM) and waits for it to exit; SIGKILL after 15 s */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface ServerProcessOptions {
  dir: string;
  logFile: string;
  /** flags after `--data-dir`, `--port`, `--bind-address` and `--log-level` */
  args: string[];
  /** default: a free one */
  port?: number;
  /** default warn */
  logLevel?: string;
  /** the data dir holding the admin token and CA the client uses (default `dir`) */
  secretsFrom?: string;
}

export async function startServerProcess(o: ServerProcessOptions): Promise<ServerProcess> {
  const port = o.port ?? (await freePort());
  const out = fs.openSync(o.logFile, 'a');
  const child = spawn(process.execPath, [
    ...NODE_FLAGS, BERTH_BIN, 'server', '--data-dir', o.dir, '--port', String(port), '--bind-address', '127.0.0.1', '--log-level', o.logLevel ?? 'warn', ...o.args,
  ], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const late = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(late);
  };
  const logTail = () => fs.readFileSync(o.logFile, 'utf8').slice(-4000);
  try {
    await waitFor(() => fs.existsSync(path.join(o.dir, 'kubeconfig.yaml')) || child.exitCode !== null, 30_000, () => `server in ${o.dir} did not start; log:\n${logTail()}`);
    if (child.exitCode !== null) throw new Error(`server in ${o.dir} exited (${child.exitCode}); log:\n${logTail()}`);
  } catch (err) {
    await stop('SIGKILL');
    throw err;
  }
  const secrets = o.secretsFrom ?? o.dir;
  const url = `https://127.0.0.1:${port}`;
  const client = new HttpClient({
    server: url,
    token: fs.readFileSync(path.join(secrets, 'admin-token'), 'utf8').trim(),
    ca: fs.readFileSync(path.join(secrets, 'pki', 'ca.crt'), 'utf8'),
  });
  return { dir: o.dir, url, process: child, client, logFile: o.logFile, stop };
}
