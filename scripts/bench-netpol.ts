/**
 * NetworkPolicy enforcement benchmark (not a timed test; bounded; run as root, needs nft and iproute2).
 * Everything happens in three network namespaces it creates and removes: a "node" namespace holding the
 * policy table, and a client and a server namespace routed through it (the node forwards between them,
 * as it forwards between pods), so no other table or address on the machine is touched.
 *  1. 200 policies over 500 pods (10 namespaces, 100 of the pods on the node): one full load, then
 *     `--samples` changes of each kind — a pod's label changing (peer sets and map elements move), a
 *     policy's rule changing (new sets and group chains, the old deleted) — timed from the change
 *     in the informers' view to the nft transaction applied (compile + diff + `nft -f`), p50/p99.
 *  2. TCP connection setup from the client to the server through the node: `--connects` sequential
 *     connects (SYN → established, each a new conntrack entry that walks the forward chain), with no
 *     table, then with the loaded table in which the server is isolated by 2 policies with 3 allow
 *     rules and the client allowed by the last of them; p50/p99.
 *
 * Usage: node dist/scripts/bench-netpol.js [--samples 100] [--connects 2000] [--json FILE]
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { NetworkPolicy } from '../src/api/types.js';
import { compilePolicies, diffScript, fullScript, type CompiledPolicies, type PolicyPod } from '../agent/network-policy/policy-rules.js';

const { values } = parseArgs({ options: { samples: { type: 'string' }, connects: { type: 'string' }, json: { type: 'string' } } });
const samples = Math.min(Number(values.samples ?? 100), 500);
const connects = Math.min(Number(values.connects ?? 2000), 10_000);
const TABLE = 'bench-np';
const id = randomBytes(3).toString('hex');
const NS = { node: `bnp-${id}-node`, client: `bnp-${id}-cli`, server: `bnp-${id}-srv` };
const CLIENT_IP = '10.233.1.2';
const SERVER_IP = '10.233.2.2';
const PORT = 8080;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
}
const r2 = (n: number) => Math.round(n * 100) / 100;

function sh(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, { input, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
}

/** One nft transaction inside the node namespace; resolves with its wall time, ms. */
function nftApply(script: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('ip', ['netns', 'exec', NS.node, 'nft', '-f', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`nft failed: ${err.slice(0, 2000)}`))));
    child.stdin.end(script);
  });
}

function setUpNamespaces(): void {
  for (const n of Object.values(NS)) sh('ip', ['netns', 'add', n]);
  const link = (ns: string, hostSide: string, podSide: string, net: string) => {
    sh('ip', ['-n', NS.node, 'link', 'add', hostSide, 'type', 'veth', 'peer', 'name', podSide, 'netns', ns]);
    sh('ip', ['-n', NS.node, 'addr', 'add', `${net}.1/24`, 'dev', hostSide]);
    sh('ip', ['-n', NS.node, 'link', 'set', hostSide, 'up']);
    sh('ip', ['-n', ns, 'addr', 'add', `${net}.2/24`, 'dev', podSide]);
    sh('ip', ['-n', ns, 'link', 'set', podSide, 'up']);
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    sh('ip', ['-n', ns, 'route', 'add', 'default', 'via', `${net}.1`]);
  };
  link(NS.client, 'vc', 'eth0', '10.233.1');
  link(NS.server, 'vs', 'eth0', '10.233.2');
  sh('ip', ['netns', 'exec', NS.node, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
}

function tearDown(): void {
  for (const n of Object.values(NS)) {
    try {
      sh('ip', ['netns', 'del', n]);
    } catch {
      // not made
    }
  }
}

/** 500 pods in 10 namespaces; every fifth on the node (plus the server); labels app=a0..a19, tier. */
function synthPods(): PolicyPod[] {
  const pods: PolicyPod[] = [];
  for (let i = 0; i < 498; i++) {
    pods.push({
      namespace: `ns${i % 10}`,
      name: `p${i}`,
      ip: `10.234.${i >> 8}.${i & 255}`,
      nodeName: i % 5 === 0 ? 'node' : `other${i % 4}`,
      labels: { app: `a${i % 20}`, tier: i % 3 === 0 ? 'front' : 'back' },
      hostNetwork: false,
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
  }
  pods.push({ namespace: 'ns0', name: 'server', ip: SERVER_IP, nodeName: 'node', labels: { app: 'a0', tier: 'back' }, hostNetwork: false, ports: [{ name: 'http', port: PORT, protocol: 'TCP' }] });
  pods.push({ namespace: 'ns1', name: 'client', ip: CLIENT_IP, nodeName: 'other1', labels: { app: 'a1', tier: 'front', bench: 'client' }, hostNetwork: false, ports: [] });
  return pods;
}

/** 200 policies: per namespace 20, each selecting one app; peers by namespace and pod labels, ports by number and name. */
function synthPolicies(): NetworkPolicy[] {
  const out: NetworkPolicy[] = [];
  for (let i = 0; i < 200; i++) {
    const ns = `ns${i % 10}`;
    const app = `a${(i / 10) | 0}`;
    const spec: NetworkPolicy['spec'] = {
      podSelector: { matchLabels: { app } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        { from: [{ namespaceSelector: { matchLabels: { team: `t${i % 5}` } }, podSelector: { matchLabels: { tier: 'front' } } }], ports: [{ port: 'http' as never }] },
        { from: [{ ipBlock: { cidr: '10.234.0.0/16', except: [`10.234.1.${i % 200}/32`] } }], ports: [{ port: 9000, endPort: 9100 }] },
      ],
      egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }, { to: [{ podSelector: {} }] }],
    };
    out.push({ metadata: { namespace: ns, name: `pol${i}`, uid: `uid-${i}` }, spec });
  }
  // The bench client is allowed in by one more policy on the server's app, the last in its group.
  out.push({ metadata: { namespace: 'ns0', name: 'zz-bench-client', uid: 'zz-bench' }, spec: { podSelector: { matchLabels: { app: 'a0' } }, ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { bench: 'client' } } }], ports: [{ port: PORT }] }] } });
  return out;
}

const namespaces = new Map(Array.from({ length: 10 }, (_, i) => [`ns${i}`, { 'kubernetes.io/metadata.name': `ns${i}`, team: `t${i % 5}` }] as [string, Record<string, string>]));

/** Sequential TCP connects client → server; ms each (connect only, closed at once). */
function connectLatencies(n: number): number[] {
  const server = spawn('ip', ['netns', 'exec', NS.server, process.execPath, '-e', `require('net').createServer((s)=>s.destroy()).listen(${PORT},'${SERVER_IP}',()=>console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    execFileSync('sh', ['-c', `for i in $(seq 50); do case "$(ip netns exec ${NS.server} ss -ltn)" in *':${PORT} '*) exit 0 ;; esac; sleep 0.1; done; exit 1`]);
    const client = `const net=require('net');const n=${n};const out=[];let i=0;function one(){const t=process.hrtime.bigint();const s=net.connect(${PORT},'${SERVER_IP}',()=>{out.push(Number(process.hrtime.bigint()-t)/1e6);s.destroy();if(++i<n)one();else console.log(JSON.stringify(out));});s.setTimeout(2000,()=>{console.error('timeout');process.exit(1);});}one();`;
    const outText = execFileSync('ip', ['netns', 'exec', NS.client, process.execPath, '-e', client], { maxBuffer: 16 * 1024 * 1024 }).toString();
    return JSON.parse(outText) as number[];
  } finally {
    server.kill();
  }
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = { policies: 201, pods: 500, samples, connects };
  setUpNamespaces();
  try {
    // 2a. connection setup without a table
    connectLatencies(200); // warm-up
    const bare = connectLatencies(connects);

    // 1. programming
    let pods = synthPods();
    const policies = synthPolicies();
    const compile = (ps: NetworkPolicy[], pp: PolicyPod[]): CompiledPolicies => compilePolicies({ nodeName: 'node', policies: ps, pods: pp, namespaces });
    let t0 = performance.now();
    let state = compile(policies, pods);
    const compileFullMs = performance.now() - t0;
    const fullMs = await nftApply(fullScript(TABLE, state));
    results.full = { compileMs: r2(compileFullMs), nftMs: r2(fullMs), sets: state.sets.size, chains: state.chains.size, isolatedIngress: state.ingress.size, isolatedEgress: state.egress.size };
    console.log(`full load: compile ${r2(compileFullMs)} ms, nft ${r2(fullMs)} ms (${state.sets.size} sets, ${state.chains.size} group chains)`);

    const measure = async (label: string, change: (i: number) => { ps: NetworkPolicy[]; pp: PolicyPod[] }) => {
      const total: number[] = [];
      const nft: number[] = [];
      for (let i = 0; i < samples; i++) {
        const { ps, pp } = change(i);
        const start = performance.now();
        const next = compile(ps, pp);
        const script = diffScript(TABLE, state, next);
        const applied = script ? await nftApply(script) : 0;
        total.push(performance.now() - start);
        nft.push(applied);
        state = next;
        pods = pp;
      }
      const row = { p50: r2(pct(total, 50)), p99: r2(pct(total, 99)), nftP50: r2(pct(nft, 50)), nftP99: r2(pct(nft, 99)) };
      results[label] = row;
      console.log(`${label}: change → applied p50 ${row.p50} ms, p99 ${row.p99} ms (of which nft -f p50 ${row.nftP50} ms, p99 ${row.nftP99} ms)`);
    };
    // A pod's tier flips: it enters or leaves peer sets of the policies whose peers want tier=front.
    await measure('podLabelChange', (i) => ({ ps: policies, pp: pods.map((p, k) => (k === (i * 7) % 498 ? { ...p, labels: { ...p.labels, tier: p.labels.tier === 'front' ? 'back' : 'front' } } : p)) }));
    // A policy's port changes: new sets and group chains for the pods it selects, old ones deleted.
    await measure('policyChange', (i) => ({ ps: policies.map((p, k) => (k === (i * 13) % 200 ? { ...p, spec: { ...p.spec!, ingress: [{ ...p.spec!.ingress![0]!, ports: [{ port: 7000 + i }] }, p.spec!.ingress![1]!] } } : p)), pp: pods }));

    // 2b. connection setup with the table loaded (state has the server isolated, the client allowed last)
    const serverChain = state.chains.get(state.ingress.get(SERVER_IP)!)!;
    const policed = connectLatencies(connects);
    results.connect = {
      withoutTable: { p50: r2(pct(bare, 50)), p99: r2(pct(bare, 99)) },
      withPolicies: { p50: r2(pct(policed, 50)), p99: r2(pct(policed, 99)), serverGroupRules: serverChain.length },
    };
    console.log(`TCP connect through the node (${connects} sequential): no table p50 ${r2(pct(bare, 50))} ms p99 ${r2(pct(bare, 99))} ms; with 201 policies over 500 pods p50 ${r2(pct(policed, 50))} ms p99 ${r2(pct(policed, 99))} ms (server's group chain: ${serverChain.length} rules)`);
  } finally {
    tearDown();
  }
  if (values.json) fs.writeFileSync(values.json, JSON.stringify(results, null, 2));
}

main().catch((err: unknown) => {
  tearDown();
  console.error(err);
  process.exit(1);
});
