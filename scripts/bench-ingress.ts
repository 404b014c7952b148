/**
 * Ingress benchmark (not a timed test; bounded; host-local traffic only; run as root, needs nginx,
 * openssl and wrk from Debian): requests/s and latency percentiles for a small response at 64
 * concurrent connections, through Berth's ingress (the agent's nginx, configured from an Ingress) and
 * through a plain nginx from the same package, configured by hand as an operator would, with the same
 * worker count, upstream keep-alive and access log. Plain HTTP and TLS (ECDSA P-256, TLS 1.3).
 * Two backends, both behind both proxies:
 *  - `pod`: a pod (busybox httpd, which forks per connection and keeps none alive) — the issue's
 *    "same pod", but it, not the proxy, is the bottleneck;
 *  - `host`: a keep-alive Node server on the node's address (a selector-less Service with an
 *    EndpointSlice), so the proxies' own cost shows.
 * The cases run in turn, `--rounds` times, `--seconds` each; each figure is the median of its rounds.
 *
 * Usage: node dist/scripts/bench-ingress.js [--rounds 3] [--seconds 5] [--connections 64] [--json FILE]
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { INGRESSES } from '../src/api/identities.js';
import type { EndpointSlice, Ingress, Node, Pod, Service } from '../src/api/types.js';
import { CORE } from '../src/client/client.js';
import { podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod } from '../test/e2e/harness.js';
import { freePort } from '../test/e2e/ports.js';
import { ensureDefaultCertificate, findNginx } from '../agent/ingress/nginx-process.js';

const execFileP = promisify(execFile);
const { values } = parseArgs({ options: { rounds: { type: 'string' }, seconds: { type: 'string' }, connections: { type: 'string' }, json: { type: 'string' } } });
const rounds = Math.min(Number(values.rounds ?? 3), 10);
const seconds = Math.min(Number(values.seconds ?? 5), 30);
const connections = Math.min(Number(values.connections ?? 64), 256);

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** wrk's duration (`1.23ms`, `850.00us`, `1.02s`) in milliseconds. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
}

async function wrk(url: string, host: string): Promise<WrkResult> {
  const { stdout } = await execFileP('wrk', ['-t', '2', '-c', String(connections), '-d', `${seconds}s`, '--latency', '-H', `Host: ${host}`, url], { timeout: (seconds + 30) * 1000 });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const p50 = ms(/^\s+50%\s+(\S+)/m.exec(stdout)?.[1] ?? '');
  const p99 = ms(/^\s+99%\s+(\S+)/m.exec(stdout)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const errors = non2xx + (socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
  return { rps, p50, p99, errors };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const nginx = findNginx();
  if (!nginx) throw new Error('nginx is not installed (apt-get install nginx)');
  execFileSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }); // Debian's wrk package
  const [ingHttp, ingHttps, plainHttp, plainHttps] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const c = await startCluster({ agents: ['bench-ing'], agentArgs: ['--ingress-http-port', String(ingHttp), '--ingress-https-port', String(ingHttps)] });
  const plainDir = fs.mkdtempSync(path.join(c.dir, 'plain-nginx-'));
  const children: Array<{ kill(): boolean }> = [];
  try {
    const script = 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www';
    await c.client.create(CORE.pods, podManifest('web', { containers: [{ name: 'web', image: TEST_IMAGE, command: ['sh', '-c', script], ports: [{ name: 'http', containerPort: 8080 }], readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 } }], terminationGracePeriodSeconds: 0 }, { labels: { app: 'web' } }));
    await c.client.create({ plural: 'services' }, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } } as Service);
    const pod = await waitForPod(c.client, 'default', 'web', (p: Pod) => (p.status?.containerStatuses ?? []).some((s) => s.ready), 60_000);
    const podIP = pod.status!.podIP!;
    const node = await c.client.get<Node>(CORE.nodes, { name: c.nodeNames[0]! });
    const nodeIP = node.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
    const fastPort = await freePort();
    const fast = spawn(process.execPath, ['-e', `const s=require('http').createServer((q,r)=>r.end('ok\\n'));s.keepAliveTimeout=75000;s.listen(${fastPort},'${nodeIP}')`], { stdio: 'ignore' });
    children.push(fast);
    await c.client.create({ plural: 'services' }, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'fast', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 80, targetPort: fastPort }] } } as Service);
    await c.client.create({ group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' }, {
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'fast-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'fast' } },
      addressType: 'IPv4', ports: [{ name: 'http', port: fastPort, protocol: 'TCP' }], endpoints: [{ addresses: [nodeIP], conditions: { ready: true } }],
    } as EndpointSlice);
    const ingress: Ingress = {
      apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'bench', namespace: 'default' },
      spec: {
        rules: [['pod.test', 'web'], ['pod-tls.test', 'web'], ['host.test', 'fast'], ['host-tls.test', 'fast']].map(([host, svc]) => ({ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: svc!, port: { name: 'http' } } } }] } })),
        tls: [{ hosts: ['pod-tls.test', 'host-tls.test'] }],
      },
    };
    await c.client.create(INGRESSES, ingress);
    await waitFor(async () => {
      const ok = async (host: string) => (await execFileP('curl', ['-s', '-H', `Host: ${host}`, `http://127.0.0.1:${ingHttp}/`]).catch(() => ({ stdout: '' }))).stdout.trim() === 'ok';
      return (await ok('pod.test')) && (await ok('host.test'));
    }, 30_000, 'the ingress serves the pod');

    // Plain nginx: what an operator writes by hand to proxy to the pod, with the same workers, keep-alive and access log.
    const cert = { cert: path.join(plainDir, 'tls.crt'), key: path.join(plainDir, 'tls.key') };
    ensureDefaultCertificate(cert);
    for (const d of ['logs', 'tmp']) fs.mkdirSync(path.join(plainDir, d));
    fs.writeFileSync(path.join(plainDir, 'nginx.conf'), [
      'worker_processes auto;', `pid ${plainDir}/nginx.pid;`, `error_log ${plainDir}/logs/error.log warn;`, 'events { worker_connections 4096; }', 'http {',
      `  access_log ${plainDir}/logs/access.log combined buffer=64k flush=1s;`, `  client_body_temp_path ${plainDir}/tmp/body;`, `  proxy_temp_path ${plainDir}/tmp/proxy;`,
      `  fastcgi_temp_path ${plainDir}/tmp/fastcgi;`, `  uwsgi_temp_path ${plainDir}/tmp/uwsgi;`, `  scgi_temp_path ${plainDir}/tmp/scgi;`,
      '  keepalive_requests 10000;', '  ssl_protocols TLSv1.2 TLSv1.3;', '  ssl_session_cache shared:plain_ssl:10m;',
      `  upstream web { server ${podIP}:8080; keepalive 64; }`,
      `  upstream fast { server ${nodeIP}:${fastPort}; keepalive 64; }`,
      ...[['pod.test pod-tls.test', 'web'], ['host.test host-tls.test', 'fast']].flatMap(([names, upstream]) => [
        `  server { listen 127.0.0.1:${plainHttp}; listen 127.0.0.1:${plainHttps} ssl; server_name ${names}; ssl_certificate ${cert.cert}; ssl_certificate_key ${cert.key};`,
        `    location / { proxy_pass http://${upstream}; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; } }`,
      ]),
      '}', '',
    ].join('\n'));
    execFileSync(nginx, ['-p', `${plainDir}/`, '-c', path.join(plainDir, 'nginx.conf')]);

    const cases = (['pod', 'host'] as const).flatMap((backend) => [
      { name: `${backend}: berth ingress, http`, url: `http://127.0.0.1:${ingHttp}/`, host: `${backend}.test` },
      { name: `${backend}: plain nginx, http`, url: `http://127.0.0.1:${plainHttp}/`, host: `${backend}.test` },
      { name: `${backend}: berth ingress, https`, url: `https://127.0.0.1:${ingHttps}/`, host: `${backend}-tls.test` },
      { name: `${backend}: plain nginx, https`, url: `https://127.0.0.1:${plainHttps}/`, host: `${backend}-tls.test` },
    ]);
    const got = new Map<string, WrkResult[]>(cases.map((k) => [k.name, []]));
    for (const k of cases) await wrk(k.url, k.host); // warm-up: connections, sessions, caches
    for (let r = 0; r < rounds; r++) for (const k of cases) got.get(k.name)!.push(await wrk(k.url, k.host));
    const summary = cases.map((k) => {
      const rs = got.get(k.name)!;
      return { case: k.name, rps: Math.round(median(rs.map((x) => x.rps))), p50ms: median(rs.map((x) => x.p50)), p99ms: median(rs.map((x) => x.p99)), errors: rs.reduce((a, x) => a + x.errors, 0) };
    });
    const ratio = (a: string, b: string) => {
      const x = summary.find((s) => s.case === a)!;
      const y = summary.find((s) => s.case === b)!;
      return { rps: Math.round((x.rps / y.rps) * 100) / 100, p99: Math.round((x.p99ms / y.p99ms) * 100) / 100 };
    };
    const ratios = Object.fromEntries((['pod', 'host'] as const).flatMap((b) => (['http', 'https'] as const).map((p) => [`${b} ${p}`, ratio(`${b}: berth ingress, ${p}`, `${b}: plain nginx, ${p}`)])));
    const result = { connections, seconds, rounds, cores: (await import('node:os')).cpus().length, summary, ratios };
    console.table(summary);
    for (const [k, v] of Object.entries(ratios)) console.log(`berth/plain, ${k}: requests/s ×${v.rps}, p99 ×${v.p99}`);
    if (values.json) fs.writeFileSync(values.json, JSON.stringify(result, null, 2));
  } finally {
    try {
      const pid = Number(fs.readFileSync(path.join(plainDir, 'nginx.pid'), 'utf8'));
      process.kill(pid, 'SIGQUIT');
    } catch {
      // never started
    }
    for (const child of children) child.kill();
    await c.stop();
  }
}

await main();
