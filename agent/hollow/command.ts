/**
 * Owns `berth hollow-nodes`: its flags and help, running a fleet of hollow nodes until a signal, and printing
 * what they cost (once every node is Ready, then every --report-interval-seconds). src/cli.ts only routes to it.
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, parseLogFormat } from '../../src/client/log-format.js';
import { parseServerList } from '../../src/client/endpoints.js';
import { describeCost, HollowFleet } from './fleet.js';

export const HOLLOW_NODES_HELP = `berth hollow-nodes — run N simulated node agents in one process (scale tests)

Each hollow node is a real API client, as kubemark's hollow kubelet: it joins with the node token (its own
credential and serving certificate), registers its Node, heartbeats it and renews its Lease as 'berth agent'
does, watches its own pods and reports them Pending (ContainerCreating) at once and Running after
--startup-delay-ms, and serves the agent endpoint (/metrics, /metrics/resource with zero usage). No
container runs; a deleted pod is removed at once.

Flags:
  --count N               how many nodes (required)
  --server URL[,URL…]     control plane URL(s), as for 'berth agent' (required)
  --token-file FILE       the node token (DIR/node-token of the server); needed for the first join
  --data-dir DIR          credentials of each node in DIR/<node> (default: /var/lib/berth/hollow as root,
                          else ~/.berth/hollow); a second run reuses them
  --name-prefix P         node names are P-0 … P-(N-1) (default hollow)
  --node-ip IP            every node's InternalIP, where its endpoint listens (default 127.0.0.1)
  --startup-delay-ms N    from seeing a pod to reporting it Running (default 1000)
  --heartbeat-interval-ms N  Node heartbeat and Lease renewal period (default 10000, as 'berth agent')
  --join-concurrency N    joins in flight at once (default 4)
  --no-endpoint           serve no agent endpoint (the Metrics API then skips these nodes)
  --cost-window-seconds S CPU is measured over this window (default 10)
  --report-interval-seconds S  print the cost again this often; 0 = once (default 60)
  --output text|json      cost lines for people, or one JSON object a line (default text)
  --log-level LEVEL       pino level (default warn)
  --log-format text|json

Prints, once every node is Ready, the process's RSS and CPU per node. Stops on SIGINT/SIGTERM.`;

function fail(message: string): never {
  process.stderr.write(`berth hollow-nodes: ${message}\n`);
  process.exit(2);
}

function positiveInt(flag: string, value: string | undefined, fallback: number, { zero = false } = {}): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || (n === 0 && !zero)) fail(`invalid --${flag} "${value}"`);
  return n;
}

export async function runHollowNodes(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      count: { type: 'string' },
      server: { type: 'string' },
      'token-file': { type: 'string' },
      'data-dir': { type: 'string' },
      'name-prefix': { type: 'string' },
      'node-ip': { type: 'string' },
      'startup-delay-ms': { type: 'string' },
      'heartbeat-interval-ms': { type: 'string' },
      'join-concurrency': { type: 'string' },
      'no-endpoint': { type: 'boolean' },
      'cost-window-seconds': { type: 'string' },
      'report-interval-seconds': { type: 'string' },
      output: { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(HOLLOW_NODES_HELP);
  if (values.count === undefined) fail('--count is required (see berth hollow-nodes --help)');
  if (!values.server) fail('--server is required (see berth hollow-nodes --help)');
  const count = positiveInt('count', values.count, 0);
  let servers: string[] = [];
  try {
    servers = parseServerList(values.server);
  } catch (e) {
    fail(`invalid --server: ${(e as Error).message}`);
  }
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json') fail(`invalid --output "${output}": text or json`);
  let logFormat;
  try {
    logFormat = values['log-format'] === undefined ? undefined : parseLogFormat(values['log-format']);
  } catch (e) {
    fail((e as Error).message);
  }
  const prefix = values['name-prefix'] ?? 'hollow';
  const log = createLogger({ name: 'berth-hollow', level: values['log-level'] ?? 'warn', format: logFormat, fd: 2 });
  const defaultDir = process.getuid?.() === 0 ? '/var/lib/berth/hollow' : path.join(os.homedir(), '.berth', 'hollow');
  const fleet = new HollowFleet({
    count,
    servers,
    tokenFile: values['token-file'],
    dataDir: values['data-dir'] ?? defaultDir,
    namePrefix: prefix,
    nodeIP: values['node-ip'] ?? '127.0.0.1',
    heartbeatMs: positiveInt('heartbeat-interval-ms', values['heartbeat-interval-ms'], 10_000),
    startupDelayMs: positiveInt('startup-delay-ms', values['startup-delay-ms'], 1000, { zero: true }),
    concurrency: positiveInt('join-concurrency', values['join-concurrency'], 4),
    endpoint: !values['no-endpoint'],
    log,
  });
  const windowMs = positiveInt('cost-window-seconds', values['cost-window-seconds'], 10) * 1000;
  const reportMs = positiveInt('report-interval-seconds', values['report-interval-seconds'], 60, { zero: true }) * 1000;
  const print = (event: string, fields: Record<string, unknown>, text: string) => {
    process.stdout.write(output === 'json' ? JSON.stringify({ event, ...fields }) + '\n' : `berth hollow-nodes: ${text}\n`);
  };

  let stopping = false;
  let reportTimer: NodeJS.Timeout | undefined;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    if (reportTimer) clearTimeout(reportTimer);
    await fleet.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());

  const t0 = Date.now();
  const step = Math.max(1, Math.ceil(count / 10));
  await fleet.start((_node, started) => {
    if (started % step === 0 || started === count) print('progress', { started, count }, `${started}/${count} nodes registered`);
  });
  print('ready', { count, seconds: (Date.now() - t0) / 1000 }, `${count} nodes registered and watching their pods in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const report = async () => {
    if (stopping) return;
    const cost = await fleet.cost(windowMs);
    if (stopping) return;
    print('cost', { ...cost, runningPods: fleet.runningPods() }, `${describeCost(cost)}; ${fleet.runningPods()} pods Running`);
    if (reportMs > 0) reportTimer = setTimeout(() => void report(), reportMs);
  };
  await report();
}
