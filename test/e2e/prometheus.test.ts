/**
 * A real Prometheus (Debian's /usr/bin/prometheus 2.42) scrapes a real cluster: the API server's
 * /metrics and the agent's, both over HTTPS with the cluster CA, as a ServiceAccount whose
 * ClusterRole grants `get /metrics` and `get nodes/metrics` and nothing else. A token without
 * those rules is refused by both. Prometheus' HTTP API must then report `up == 1` for both jobs,
 * a request-rate series and the agent's pod start histogram for a pod started meanwhile.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import type { Node } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { podManifest, serviceAccountToken, sleep, startCluster, TEST_IMAGE, type Cluster } from './harness.js';
import { freePort } from './ports.js';

const PROMETHEUS = '/usr/bin/prometheus';
const SA = 'metrics-reader';

let c: Cluster;
let prometheus: ChildProcess | undefined;
let promDir: string;
let promUrl: string;
let ca: string;
let readerToken: string;
let strangerToken: string;
let nodeName: string;
let agentPort: number;
const stopPrometheus = () => {
  prometheus?.kill('SIGKILL');
  prometheus = undefined;
};

/** GET over HTTPS trusting the cluster CA, with a bearer token; servername for the agent's certificate. */
function httpsGet(url: string, token: string, servername?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, servername, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

async function promQuery(query: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(query)}`);
  const json = (await res.json()) as { status: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
  assert.equal(json.status, 'success');
  return json.data.result;
}

async function eventually<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what} not seen within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
    await sleep(250);
  }
}

before(async () => {
  // Interrupted: Prometheus, the cluster and the scratch dir go too, then the run ends.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanUp().finally(() => process.exit(130)));
  process.once('exit', stopPrometheus);
  promDir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-prometheus-'));
  c = await startCluster();
  nodeName = c.nodeNames[0]!;
  ca = fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8');
  await c.kubectl(['create', 'serviceaccount', SA, '-n', 'default']);
  await c.kubectl(['create', 'clusterrole', SA, '--verb=get', '--non-resource-url=/metrics']);
  await c.kubectl(['patch', 'clusterrole', SA, '--type=json', '-p', JSON.stringify([{ op: 'add', path: '/rules/-', value: { apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] } }])]);
  await c.kubectl(['create', 'clusterrolebinding', SA, `--clusterrole=${SA}`, `--serviceaccount=default:${SA}`]);
  await c.kubectl(['create', 'serviceaccount', 'stranger', '-n', 'default']);
  readerToken = await serviceAccountToken(c.client, 'default', SA);
  strangerToken = await serviceAccountToken(c.client, 'default', 'stranger');
  agentPort = await eventually('the agent endpoint port in the Node status', 30_000, async () => {
    const n = await c.client.get<Node>(CORE.nodes, { name: nodeName });
    return (n.status?.daemonEndpoints as { kubeletEndpoint?: { Port?: number } } | undefined)?.kubeletEndpoint?.Port;
  });
});

async function cleanUp(): Promise<void> {
  stopPrometheus();
  await c?.stop();
  if (promDir) fs.rmSync(promDir, { recursive: true, force: true });
}

after(cleanUp);

it('serves /metrics to a token allowed to read it and refuses others, on the server and the agent', async () => {
  const server = await httpsGet(`${c.url}/metrics`, readerToken);
  assert.equal(server.status, 200, server.body);
  assert.match(server.body, /^apiserver_request_total\{verb="[A-Z]+"/m);
  assert.match(server.body, /^workqueue_adds_total\{name="deployment"\}/m);
  assert.match(server.body, /^etcd_request_duration_seconds_count\{operation="get",type="[a-z]/m);
  assert.equal((await httpsGet(`${c.url}/metrics`, strangerToken)).status, 403);
  const agentUrl = `https://127.0.0.1:${agentPort}/metrics`;
  const agent = await httpsGet(agentUrl, readerToken, nodeName);
  assert.equal(agent.status, 200, agent.body);
  assert.match(agent.body, /^kubelet_runtime_operations_total\{operation_type="version"\}/m);
  assert.equal((await httpsGet(agentUrl, strangerToken, nodeName)).status, 403);
  assert.equal((await httpsGet(agentUrl, 'not-a-token', nodeName)).status, 401);
});

it('is scraped by a real Prometheus: up == 1 for both, a request rate, and the pod start histogram', async () => {
  assert.ok(fs.existsSync(PROMETHEUS), `${PROMETHEUS} is not installed (scripts/setup.sh --for-tests installs it)`);
  const tokenFile = path.join(promDir, 'token');
  fs.writeFileSync(tokenFile, readerToken, { mode: 0o600 });
  const caFile = path.join(promDir, 'ca.crt');
  fs.writeFileSync(caFile, ca);
  const serverPort = new URL(c.url).port;
  const tls = (serverName?: string) => `    tls_config:\n      ca_file: ${caFile}\n${serverName ? `      server_name: ${serverName}\n` : ''}`;
  const job = (name: string, target: string, serverName?: string) =>
    `  - job_name: ${name}\n    scheme: https\n    authorization:\n      credentials_file: ${tokenFile}\n${tls(serverName)}    static_configs:\n      - targets: ['${target}']\n`;
  const config = `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${job('berth-apiserver', `127.0.0.1:${serverPort}`)}${job('berth-agent', `127.0.0.1:${agentPort}`, nodeName)}`;
  fs.writeFileSync(path.join(promDir, 'prometheus.yml'), config);
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  const log = fs.openSync(path.join(promDir, 'prometheus.log'), 'a');
  prometheus = spawn(PROMETHEUS, [`--config.file=${path.join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', log, log] });
  const promLog = () => fs.readFileSync(path.join(promDir, 'prometheus.log'), 'utf8').slice(-3000);
  prometheus.once('exit', (code) => code && console.error(`prometheus exited ${code}:\n${promLog()}`));

  // Traffic to count, and a pod for the agent to start.
  await c.client.create(CORE.pods, podManifest('watched-pod-x', { containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
  for (let i = 0; i < 5; i++) await c.kubectl(['get', 'pods', '-n', 'default']);

  const up = await eventually('up == 1 for both jobs', 60_000, async () => {
    const r = await promQuery('up == 1');
    const jobs = new Set(r.map((s) => s.metric.job));
    return jobs.has('berth-apiserver') && jobs.has('berth-agent') ? r : undefined;
  }).catch((err: Error) => {
    throw new Error(`${err.message}\nprometheus log:\n${promLog()}`);
  });
  assert.equal(up.length, 2);
  const rate = await eventually('a request rate series', 30_000, async () => {
    // Requests while Prometheus scrapes, so the window holds an increase.
    await c.kubectl(['get', 'pods', '-n', 'default']);
    const r = await promQuery('sum by (verb, resource) (rate(apiserver_request_total{resource="pods"}[10s]))');
    return r.some((s) => s.metric.verb === 'LIST' && Number(s.value[1]) > 0) ? r : undefined;
  });
  assert.ok(rate.length > 0);
  const started = await eventually('the pod start in kubelet_pod_start_duration_seconds', 60_000, async () => {
    const r = await promQuery('kubelet_pod_start_duration_seconds_count{job="berth-agent"} >= 1');
    return r.length ? r : undefined;
  });
  assert.equal(started.length, 1);
  const scheduled = await promQuery('scheduler_schedule_attempts_total{job="berth-apiserver",result="scheduled"}');
  assert.ok(Number(scheduled[0]?.value[1]) >= 1, JSON.stringify(scheduled));
  const running = await promQuery('kubelet_running_pods{job="berth-agent"}');
  assert.ok(Number(running[0]?.value[1]) >= 1, JSON.stringify(running));
  // No series of the agent carries a pod's name or UID.
  const series = await fetch(`${promUrl}/api/v1/series?match[]=${encodeURIComponent('{job="berth-agent"}')}`).then((r) => r.json() as Promise<{ data: Array<Record<string, string>> }>);
  for (const s of series.data) for (const v of Object.values(s)) assert.ok(!v.includes('watched-pod-x'), `label value ${v} names the pod`);
});
