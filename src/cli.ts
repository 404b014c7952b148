/**
 * Owns the `berth` command line: each subcommand (server, agent, up, kubeconfig, token, migrate,
 * down), its flags, help text and defaults, and turning flags into options for the code that does the
 * work (startControlPlane, startAgent, …), which is loaded only when its command runs. `berth up` also
 * supervises its local agent as a child process. Shutdown on signals and exit codes are decided here;
 * what a command does is not.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import tty from 'node:tty';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { colourWanted, createLogger, defaultLogFormat, parseLogFormat, type LogFormat } from './client/log-format.js';
import { followNodeStartup, UpProgress } from './up-progress.js';
import { NODE_FLAGS } from './node-flags.js';
import type { SandboxNetworkMode } from '../agent/options.js';

const HELP: Record<string, string> = {
  main: `berth — a Kubernetes-style control plane and Docker node agent

Usage:
  berth server [flags]   run the control plane (API server, store, scheduler, controllers)
  berth agent  [flags]   run a node agent that joins a control plane and runs its pods on Docker
  berth up     [flags]   run the control plane plus one local agent (single-host default)
  berth kubeconfig --user NAME   write a kubeconfig for a user with a client certificate
  berth token create|list|delete   join tokens for agents (expiring, revocable)
  berth down   [flags]   stop a 'berth up' and remove its containers, networks and nftables table
  berth migrate --etcd-servers URL[,URL...]   copy a stopped server's SQLite store into etcd
  berth hollow-nodes --count N --server URL --token-file F   N simulated node agents in one process (scale tests)

Run 'berth <command> --help' for the flags of each command.`,
  server: `berth server — run the control plane

Flags:
  --data-dir DIR          state, certificates and credentials (default: /var/lib/berth as root, else ~/.berth)
  --port PORT             HTTPS port (default 6443)
  --bind-address ADDR     listen address (default 0.0.0.0)
  --insecure-http         serve plain HTTP (only allowed with a loopback --bind-address)
  --disable-controllers L comma-separated controllers to leave off ({controllers})
  --node-grace-period S   seconds without heartbeat before a node is Ready=Unknown (default 40)
  --node-monitor-period S how often node heartbeats are checked (default 5)
  --cluster-cidr CIDR     pod addresses of the cluster; each node gets a subnet (default 10.244.0.0/16)
  --node-cidr-mask-size N prefix length of each node's pod subnet (default 24)
  --default-toleration-seconds S  how long new pods tolerate a not-ready/unreachable node (default 300)
  --deny-service-external-ips     refuse every new Service externalIP (kube-apiserver's DenyServiceExternalIPs
                          admission plugin); without it, externalIPs in the service or pod range are refused
  --compact-interval-seconds S   how often old revisions are compacted (default 300)
  --compact-keep-revisions N     recent revisions compaction always keeps (default 1000)
  --watch-bookmark-interval-seconds S  how often watches with allowWatchBookmarks get a BOOKMARK (default 60)
  --metric-resolution D   how often the Metrics API (kubectl top) scrapes each node's usage, e.g. 15s
                          (default 15s, as metrics-server)
  --cluster-signing-duration D  longest client certificate the CSR signers issue, e.g. 720h (default 8760h)
  --job-backoff-base-ms N first Job pod re-creation delay after a failure; doubles up to 6 min (default 10000)
  --horizontal-pod-autoscaler-sync-period D  how often each HPA is reconciled, e.g. 15s (default 15s)
  --horizontal-pod-autoscaler-tolerance F    usage ratios this close to 1 leave replicas alone (default 0.1)
  --horizontal-pod-autoscaler-downscale-stabilization D  scale-down window of HPAs that set none (default 5m)
  --max-requests-inflight N            reads one client may have in flight, then 429 (default 400;
                                       0 = no limit, here and in the six flags below)
  --max-mutating-requests-inflight N   mutations one client may have in flight, then 429 (default 200)
  --max-objects-inflight N             objects all lists and watches' initial events may carry at once,
                                       each charged by the objects it returns, then 429 (default 40000)
  --max-objects-inflight-per-user N    the same for one user's lists and watches (default 20000)
  --max-connections N     open connections beyond this are closed at once (default 4096)
  --read-header-timeout-ms N   a connection's time to send a request's headers (default 32000)
  --idle-timeout-ms N     how long a kept-alive connection may wait for its next request (default 90000)
  --pod-security-default-enforce LEVEL  Pod Security level enforced in namespaces without a
                          pod-security.kubernetes.io/enforce label: privileged, baseline or restricted (default baseline)
  --pod-security-default-audit LEVEL    the same for audit (logged); default: the enforce default
  --pod-security-default-warn LEVEL     the same for warn (Warning headers); default: the enforce default
  --pod-security-exempt-namespaces L    comma-separated namespaces Pod Security never evaluates (default kube-system)
  --encryption-provider-config FILE     EncryptionConfiguration (apiserver.config.k8s.io/v1) for data at rest;
                          default: DIR/encryption-config.yaml, generated on first start (AES-GCM for Secrets)
  --storage-reserve-bytes N   space kept in DIR/state.db.reserve and released when the disk fills,
                          so reads and deletes still work (default 16777216)
  --etcd-servers URL[,URL...]  store everything in etcd v3 at these client URLs instead of DIR/state.db
  --etcd-prefix P         root of every key in etcd: P/<resource>/<namespace>/<name> (default /registry)
  --etcd-cafile FILE      CA bundle verifying the etcd servers (https:// URLs)
  --etcd-certfile FILE    client certificate presented to etcd
  --etcd-keyfile FILE     key of --etcd-certfile
  --token T               with --etcd-servers: the cluster token, i.e. the node token (DIR/node-token) of a
                          server already on this etcd; this server takes the cluster's CA, keys and tokens
                          from etcd with it (default: DIR/join-secret; the first server makes one)
  --token-file FILE       --token read from FILE (e.g. a copy of the first server's DIR/node-token)
  --service-cluster-ip-range CIDR  Service ClusterIPs; the first address is the kubernetes Service's,
                          the tenth kube-dns's (default 10.96.0.0/12)
  --service-node-port-range A-B    Service NodePorts (default 30000-32767)
  --advertise-address IP  the address pods reach the API server at, the kubernetes Service's endpoint
                          (default: --bind-address if specific, else the default-route interface's address)
  --cluster-domain DOMAIN the cluster's DNS domain, named in the serving certificate (default cluster.local)
  --service-account-issuer URL  iss of service-account tokens (default https://kubernetes.default.svc.<cluster domain>)
  --api-audiences L       comma-separated audiences the API accepts in service-account tokens (default: the issuer)
  --service-account-max-token-expiration D  longest token a TokenRequest gets, e.g. 48h (default: no limit)
  --service-account-min-token-expiration D  shortest expirationSeconds a TokenRequest may ask for (default 10m;
                          Berth-only, so tests can use short-lived tokens)
  --service-account-token-leeway D  clock skew allowed on tokens' exp and nbf (default 1m, as kube-apiserver; Berth-only)
  --token-auth-file FILE  static bearer tokens, as kube-apiserver's: CSV lines token,user,uid,"group1,group2"
                          (what they may do is RBAC's to say)
  --leader-elect[=BOOL]   run controllers, the scheduler and cron timers only while this server holds the
                          kube-system/berth-controller-manager Lease, so several servers on one store
                          have one active set (default: on with --etcd-servers, off otherwise)
  --leader-elect-lease-duration D  how long other servers wait after the Lease last changed before
                          taking it (default 15s)
  --leader-elect-renew-deadline D  how long the leader keeps leading without renewing; less than the
                          lease duration (default 10s)
  --leader-elect-retry-period D    how often the leader renews and the others retry; less than the
                          renew deadline (default 2s)
  --log-level LEVEL       pino level (default info)
  --log-format text|json  log lines for people or JSON lines (default: text when stdout is a terminal, else json)

Writes DIR/kubeconfig.yaml (admin, 0600) for kubectl and DIR/node-token (0600) for agents to join.`,
  agent: `berth agent — run a node agent

Flags:
  --server URL[,URL…]     control plane URL, e.g. https://10.0.0.1:6443 (required); with several replicas,
                          all of them in order of preference: the agent uses one and moves to the next
                          when a connection to it fails or its /readyz fails, resuming its watches there
  --node-name NAME        this node's name (default: the host name)
  --token-file FILE       file with the node token from the server's DIR/node-token (required unless
                          --data-dir already holds credentials from an earlier join)
  --data-dir DIR          agent state (default: /var/lib/berth/agent as root, else ~/.berth/agent)
  --docker-socket PATH    Docker Engine socket (default /var/run/docker.sock)
  --node-ip ADDR          address other hosts reach this node on (default: an IPv4 address of the
                          default route's interface, never link-local, as the kubelet chooses)
  --agent-port PORT       HTTPS port of the agent's endpoint for logs and exec, which only the control
                          plane may call (default 10250, or a free port if taken; 0 = any free port)
  --cluster-dns IP[,IP]   nameservers of ClusterFirst pods; the node-local resolver answers on the first
                          (default: the kube-dns Service's address, 10.96.0.10)
  --cluster-domain NAME   the cluster's DNS domain (default cluster.local)
  --resolv-conf FILE      the node's resolvers: Default pods inherit them, the node-local resolver forwards
                          other names to them (default /etc/resolv.conf)
  --heartbeat-interval-ms N   node status heartbeat period (default 10000, as the kubelet)
  --relist-interval-ms N      safety-net resync of all pods against Docker (default 10000)
  --claim-sweep-interval-ms N how often volumes of deleted PersistentVolumeClaims are removed (default 60000)
  --crash-backoff-base-ms N   first crash-loop backoff; doubles up to 300 s (default 10000, as the kubelet)
  --runtime-check-interval-ms N  how often Docker is asked whether it is up (default 5000, as the kubelet)
  --runtime-down-after-ms N      no answer from Docker for this long: node NotReady (default 30000, as the kubelet)
  --runtime-event-retry-max-ms N cap of the doubling delay between Docker event stream reconnects (default 30000)
  --token-check-interval-ms N    how often projected service account tokens are checked for a refresh
                                 (default 60000, the kubelet's sync period)
  --server-check-interval-ms N   with several --server URLs: how often the one in use is asked for /readyz
                                 (default 2000)
  --metrics-sample-interval D  how often pod and node CPU and memory are read from cgroups for the
                          Metrics API (kubectl top), e.g. 15s (default 15s, as the kubelet; 0 = off)
  --server-check-timeout-ms N    with several --server URLs: a /readyz not answered 200 within this long
                                 makes the agent move to the next server (default 3000)
  --service-proxy-table NAME     the nftables table (family ip) the service proxy owns (default berth)
  --sandbox-network agent|runtime  who wires pods into the node's pod bridge: the agent, with a veth pair
                                 per pod (default, faster), or Docker, attaching each pause container to
                                 its bridge network
  --log-level LEVEL       pino level (default info)
  --log-format text|json  log lines for people or JSON lines (default: text when stdout is a terminal, else json)`,
  up: `berth up — control plane plus one local agent on this host

Flags:
  --data-dir DIR          as for 'berth server'; the agent keeps its state in DIR/agent
  --port PORT             HTTPS port (default 6443)
  --node-name NAME        the local node's name (default: the host name)
  --docker-socket PATH    Docker Engine socket (default /var/run/docker.sock)
  --pod-security-default-enforce/-audit/-warn LEVEL, --pod-security-exempt-namespaces L
                          as for 'berth server'
  --encryption-provider-config FILE     as for 'berth server'
  --bind-address ADDR, --cluster-cidr CIDR         as for 'berth server'
  --service-cluster-ip-range CIDR                  as for 'berth server'
  --deny-service-external-ips                      as for 'berth server'
  --agent-port PORT, --cluster-dns IP, --service-proxy-table NAME   as for 'berth agent'

Several clusters on one host: give each its own --data-dir, --port, --cluster-cidr and
--service-cluster-ip-range. The cluster DNS address (the 10th of the Service range) and the
nftables table (named for the pod range) follow from them. A cluster whose pod range, DNS address
or table another cluster on the host holds stops at start, naming it. Ctrl-C stops the processes
(the node resolver too); pods keep running until 'berth up' runs again or 'berth down' removes them.
  --log-level LEVEL       pino level (default info)
  --log-format text|json  log lines for people or JSON lines (default: text when stdout is a terminal, else json)

Progress goes to stderr as each step completes (store, CA, API, agent, node Ready), then the
commands to use the cluster; the logs of both processes go to stdout.

The agent runs as a separate process and talks to the control plane over HTTPS, as a remote agent would.`,
  down: `berth down — remove one cluster's node from this host

Stops the 'berth up' running on the data dir (its agent and node resolver with it), then removes
the containers, pod bridge networks (and their iptables rules) and nftables tables of that cluster,
found by the cluster id its agent recorded. Nothing of another cluster on the host is touched. The
data dir and claim volumes stay: 'berth up' on the same data dir brings the cluster back.

Flags:
  --data-dir DIR          the data dir 'berth up' ran with (default: /var/lib/berth as root, else ~/.berth)
  --docker-socket PATH    Docker Engine socket (default /var/run/docker.sock)`,
  migrate: `berth migrate — copy a stopped server's SQLite store (DIR/state.db) into etcd

Then start the server on the same data dir with the same --etcd-* flags; other servers join it with
--token (its DIR/node-token). Every copied object keeps its uid and content, with a resourceVersion
above any the SQLite server gave out; older resourceVersions answer 410 Gone, so watching clients relist.

Flags:
  --data-dir DIR          the stopped server's data dir (default: /var/lib/berth as root, else ~/.berth)
  --from-sqlite FILE      the SQLite store to copy (default: DIR/state.db); refused while a server holds it
  --etcd-servers URL[,URL...]  client URLs of the etcd members (required)
  --etcd-prefix P         root of every key in etcd (default /registry), as for berth server
  --etcd-cafile FILE      CA bundle verifying the etcd servers (https:// URLs)
  --etcd-certfile FILE    client certificate presented to etcd
  --etcd-keyfile FILE     key of --etcd-certfile
  --force                 delete every key under the prefix first, instead of refusing a non-empty prefix
                          (running the same migration again resumes an interrupted one without --force)`,
  kubeconfig: `berth kubeconfig — a kubeconfig for a user authenticated by a client certificate, or the
admin kubeconfig naming another control-plane replica

Flags:
  --user NAME             the user (the certificate's CN) (required unless --server is given)
  --server URL            the server the kubeconfig names, and the one this command talks to (default:
                          the admin kubeconfig's); without --user, writes the admin kubeconfig with this
                          server, e.g. another replica of an HA control plane
  --group G               a group (the certificate's O); repeat for more
  --expiration DURATION   requested validity, e.g. 24h, 30m (default: the signer's maximum, one year)
  --out FILE              write here (mode 0600) instead of stdout
  --data-dir DIR          where the admin kubeconfig is (default: /var/lib/berth as root, else ~/.berth)
  --kubeconfig FILE       the admin kubeconfig to use (default DIR/kubeconfig.yaml)

Makes a key here, creates a CertificateSigningRequest (signer kubernetes.io/kube-apiserver-client) with
the admin credential, approves it and waits for the certificate: the same path as any user's request.`,
  token: `berth token — join tokens for agents, stored as Kubernetes bootstrap tokens
(Secrets kube-system/bootstrap-token-<id>, type bootstrap.kubernetes.io/token)

Usage:
  berth token create [--ttl 24h] [--description TEXT] [--out FILE]
                          prints (or writes, mode 0600) the line an agent's --token-file holds:
                          berth1::<CA sha256>::<id>.<secret>; it is shown only once
  berth token list        ID, TTL, EXPIRES and DESCRIPTION of every token (never the secret)
  berth token delete ID   revoke a token: joins with it are refused from then on

Flags:
  --ttl DURATION          how long the token admits joins, e.g. 24h, 30m; 0 = never expires (default 24h)
  --data-dir DIR          where the admin kubeconfig is (default: /var/lib/berth as root, else ~/.berth)
  --kubeconfig FILE       the admin kubeconfig to use (default DIR/kubeconfig.yaml)

A token admits new nodes only. A node that joined keeps its own credential when the token expires or
is deleted, and a joined node name stays that node's (its node password) until its Node is deleted.`,
};

function defaultDataDir(): string {
  return process.getuid?.() === 0 ? '/var/lib/berth' : path.join(os.homedir(), '.berth');
}

/** --log-format, checked; undefined leaves the choice to whether stdout is a terminal. */
function logFormatFlag(value: string | undefined): LogFormat | undefined {
  try {
    return parseLogFormat(value);
  } catch (e) {
    fail((e as Error).message);
  }
}

function fail(msg: string): never {
  process.stderr.write(`berth: ${msg}\n`);
  process.exit(2);
}

/** `berth server --token` / `--token-file`: the cluster token, or undefined. */
function clusterTokenFlag(token: string | undefined, file: string | undefined, etcd: boolean): string | undefined {
  if (token !== undefined && file !== undefined) fail('--token and --token-file exclude each other');
  if ((token !== undefined || file !== undefined) && !etcd) fail(`--${token !== undefined ? 'token' : 'token-file'} joins servers sharing etcd: it needs --etcd-servers`);
  if (file === undefined) return token;
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    fail(`cannot read --token-file ${file}: ${(err as Error).message}`);
  }
}

/** --etcd-* flags (kube-apiserver's names) as storage options; undefined keeps the SQLite store. */
function etcdFlags(values: { 'etcd-servers'?: string; 'etcd-prefix'?: string; 'etcd-cafile'?: string; 'etcd-certfile'?: string; 'etcd-keyfile'?: string }): import('./control-plane.js').EtcdStorageOptions | undefined {
  const servers = values['etcd-servers']?.split(',').map((s) => s.trim()).filter(Boolean);
  if (servers === undefined || servers.length === 0) {
    for (const flag of ['etcd-prefix', 'etcd-cafile', 'etcd-certfile', 'etcd-keyfile'] as const) if (values[flag] !== undefined) fail(`--${flag} needs --etcd-servers`);
    return undefined;
  }
  for (const url of servers) if (!/^https?:\/\/[^/]+\/?$/.test(url)) fail(`invalid --etcd-servers URL "${url}": expected http://host:port or https://host:port`);
  if ((values['etcd-certfile'] === undefined) !== (values['etcd-keyfile'] === undefined)) fail('--etcd-certfile and --etcd-keyfile go together');
  const prefix = values['etcd-prefix'];
  if (prefix !== undefined && !/^\/[^\s]*[^/\s]$/.test(prefix)) fail(`invalid --etcd-prefix "${prefix}": expected an absolute path such as /registry`);
  return {
    servers,
    ...(prefix !== undefined ? { prefix } : {}),
    tls: { caFile: values['etcd-cafile'], certFile: values['etcd-certfile'], keyFile: values['etcd-keyfile'] },
  };
}

function parsePort(s: string | undefined, fallback: number): number {
  if (s === undefined) return fallback;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`invalid port "${s}"`);
  return n;
}

async function runServer(rawArgv: string[]): Promise<void> {
  const { argv, value: leaderElectFlag } = explicitBoolean(rawArgv, 'leader-elect');
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      port: { type: 'string' },
      'bind-address': { type: 'string' },
      'insecure-http': { type: 'boolean' },
      'disable-controllers': { type: 'string' },
      'node-grace-period': { type: 'string' },
      'node-monitor-period': { type: 'string' },
      'cluster-cidr': { type: 'string' },
      'node-cidr-mask-size': { type: 'string' },
      'default-toleration-seconds': { type: 'string' },
      'deny-service-external-ips': { type: 'boolean' },
      'compact-interval-seconds': { type: 'string' },
      'compact-keep-revisions': { type: 'string' },
      'watch-bookmark-interval-seconds': { type: 'string' },
      'metric-resolution': { type: 'string' },
      'job-backoff-base-ms': { type: 'string' },
      'cluster-signing-duration': { type: 'string' },
      'horizontal-pod-autoscaler-sync-period': { type: 'string' },
      'horizontal-pod-autoscaler-tolerance': { type: 'string' },
      'horizontal-pod-autoscaler-downscale-stabilization': { type: 'string' },
      'max-requests-inflight': { type: 'string' },
      'max-mutating-requests-inflight': { type: 'string' },
      'max-objects-inflight': { type: 'string' },
      'max-objects-inflight-per-user': { type: 'string' },
      'max-connections': { type: 'string' },
      'read-header-timeout-ms': { type: 'string' },
      'idle-timeout-ms': { type: 'string' },
      'encryption-provider-config': { type: 'string' },
      'storage-reserve-bytes': { type: 'string' },
      'etcd-servers': { type: 'string' },
      'etcd-prefix': { type: 'string' },
      'etcd-cafile': { type: 'string' },
      'etcd-certfile': { type: 'string' },
      'etcd-keyfile': { type: 'string' },
      token: { type: 'string' },
      'token-file': { type: 'string' },
      'service-cluster-ip-range': { type: 'string' },
      'service-node-port-range': { type: 'string' },
      'advertise-address': { type: 'string' },
      'cluster-domain': { type: 'string' },
      'service-account-issuer': { type: 'string' },
      'api-audiences': { type: 'string' },
      'service-account-max-token-expiration': { type: 'string' },
      'service-account-min-token-expiration': { type: 'string' },
      'service-account-token-leeway': { type: 'string' },
      'token-auth-file': { type: 'string' },
      'leader-elect': { type: 'boolean' },
      'leader-elect-lease-duration': { type: 'string' },
      'leader-elect-renew-deadline': { type: 'string' },
      'leader-elect-retry-period': { type: 'string' },
      ...POD_SECURITY_FLAGS,
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  // The names come from the controller registrations, which load every controller: only for this help.
  if (values.help) return void console.log(HELP.server!.replace('{controllers}', (await import('./controller-names.js')).CONTROLLER_NAMES.join(', ')));
  const num = (s: string | undefined, flag: string) => {
    if (s === undefined) return undefined;
    const n = Number(s);
    if (!Number.isFinite(n) || n < 0) fail(`invalid --${flag} "${s}"`);
    return n;
  };
  const leaderElection = await leaderElectionFlags({
    // Several servers share a store only through etcd; on SQLite a crashed server restarted with
    // election would sit a lease duration without controllers, waiting out its own old Lease.
    enabled: leaderElectFlag ?? (values['leader-elect'] || Boolean((values as Record<string, unknown>)['etcd-servers'])),
    leaseDuration: values['leader-elect-lease-duration'],
    renewDeadline: values['leader-elect-renew-deadline'],
    retryPeriod: values['leader-elect-retry-period'],
  });
  const log = createLogger({ name: 'berth-server', level: values['log-level'], format: logFormatFlag(values['log-format']) });
  // Loaded here, not at the top: `berth agent` must not carry the control plane in its heap.
  const { startControlPlane } = await import('./control-plane.js');
  const cp = await startControlPlane({
    dataDir: values['data-dir'] ?? defaultDataDir(),
    port: parsePort(values.port, 6443),
    bindAddress: values['bind-address'],
    insecureHttp: values['insecure-http'],
    disabledControllers: values['disable-controllers']?.split(',').map((s) => s.trim()).filter(Boolean),
    nodeGracePeriodMs: mul(num(values['node-grace-period'], 'node-grace-period'), 1000),
    nodeMonitorPeriodMs: mul(num(values['node-monitor-period'], 'node-monitor-period'), 1000),
    clusterCidr: values['cluster-cidr'],
    nodeCidrMaskSize: num(values['node-cidr-mask-size'], 'node-cidr-mask-size'),
    defaultTolerationSeconds: num(values['default-toleration-seconds'], 'default-toleration-seconds'),
    denyServiceExternalIPs: values['deny-service-external-ips'],
    compactIntervalMs: mul(num(values['compact-interval-seconds'], 'compact-interval-seconds'), 1000),
    compactKeepRevisions: num(values['compact-keep-revisions'], 'compact-keep-revisions'),
    watchBookmarkIntervalMs: mul(num(values['watch-bookmark-interval-seconds'], 'watch-bookmark-interval-seconds'), 1000),
    metricResolutionMs: await durationFlag('metric-resolution', values['metric-resolution']),
    jobBackoffBaseMs: num(values['job-backoff-base-ms'], 'job-backoff-base-ms'),
    clusterSigningDurationMs: values['cluster-signing-duration'] === undefined ? undefined : await signingDurationFlag(values['cluster-signing-duration']),
    hpaSyncPeriodMs: await durationFlagMs('horizontal-pod-autoscaler-sync-period', values['horizontal-pod-autoscaler-sync-period']),
    hpaTolerance: num(values['horizontal-pod-autoscaler-tolerance'], 'horizontal-pod-autoscaler-tolerance'),
    hpaDownscaleStabilizationMs: await durationFlagMs('horizontal-pod-autoscaler-downscale-stabilization', values['horizontal-pod-autoscaler-downscale-stabilization']),
    connectionLimits: {
      maxReadsInFlight: num(values['max-requests-inflight'], 'max-requests-inflight'),
      maxMutationsInFlight: num(values['max-mutating-requests-inflight'], 'max-mutating-requests-inflight'),
      maxConnections: num(values['max-connections'], 'max-connections'),
      readHeaderTimeoutMs: num(values['read-header-timeout-ms'], 'read-header-timeout-ms'),
      idleTimeoutMs: num(values['idle-timeout-ms'], 'idle-timeout-ms'),
    },
    objectBudget: {
      maxObjectsInFlight: num(values['max-objects-inflight'], 'max-objects-inflight'),
      maxObjectsInFlightPerUser: num(values['max-objects-inflight-per-user'], 'max-objects-inflight-per-user'),
    },
    ...podSecurityOptions(values),
    encryptionProviderConfig: values['encryption-provider-config'],
    storageReserveBytes: num(values['storage-reserve-bytes'], 'storage-reserve-bytes'),
    etcd: etcdFlags(values),
    clusterToken: clusterTokenFlag(values.token, values['token-file'], values['etcd-servers'] !== undefined),
    serviceClusterIPRange: values['service-cluster-ip-range'],
    serviceNodePortRange: values['service-node-port-range'],
    advertiseAddress: values['advertise-address'],
    clusterDomain: values['cluster-domain'],
    serviceAccountIssuer: values['service-account-issuer'],
    apiAudiences: values['api-audiences']?.split(',').map((s) => s.trim()).filter(Boolean),
    serviceAccountMaxTokenExpirationSeconds: durationSeconds(values['service-account-max-token-expiration'], 'service-account-max-token-expiration'),
    serviceAccountMinTokenExpirationSeconds: durationSeconds(values['service-account-min-token-expiration'], 'service-account-min-token-expiration'),
    serviceAccountTokenLeewaySeconds: durationSeconds(values['service-account-token-leeway'], 'service-account-token-leeway'),
    tokenAuthFile: values['token-auth-file'],
    leaderElection,
    logger: log,
  });
  onShutdown(async () => {
    await cp.stop();
  });
}

/**
 * `--name`, `--name=true` and `--name=false` (as Go's boolean flags take them): the arguments
 * without the `=BOOL` forms, and the value those gave (undefined when none was given).
 */
export function explicitBoolean(argv: string[], name: string): { argv: string[]; value: boolean | undefined } {
  let value: boolean | undefined;
  const rest: string[] = [];
  for (const arg of argv) {
    const m = new RegExp(`^--${name}=(.*)$`).exec(arg);
    if (!m) {
      rest.push(arg);
      continue;
    }
    if (m[1] === 'true') value = true;
    else if (m[1] === 'false') value = false;
    else fail(`invalid --${name} "${m[1]}" (true or false)`);
  }
  return { argv: rest, value };
}

/** A Go duration ("15s", "1m30s", "500ms") in milliseconds; Go's flags require the unit. */
export function durationMs(s: string | undefined, flag: string): number | undefined {
  if (s === undefined) return undefined;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = s;
  if (!rest) fail(`invalid --${flag} "" (a duration such as 15s or 1m)`);
  while (rest) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (!m) fail(`invalid --${flag} "${s}" (a duration such as 15s or 1m)`);
    total += Number(m[1]) * unit[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  return Math.round(total);
}

/** The --leader-elect flags as control-plane options (undefined when election is off); bad timings fail the start. */
async function leaderElectionFlags(f: { enabled: boolean; leaseDuration?: string; renewDeadline?: string; retryPeriod?: string }) {
  if (!f.enabled) {
    for (const [flag, v] of [['lease-duration', f.leaseDuration], ['renew-deadline', f.renewDeadline], ['retry-period', f.retryPeriod]] as const) {
      if (v !== undefined) fail(`--leader-elect-${flag} needs --leader-elect`);
    }
    return undefined;
  }
  const { DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS, validateLeaderElectionTimings } = await import('./controllers/runtime/leader-election.js');
  const timings = {
    leaseDurationMs: durationMs(f.leaseDuration, 'leader-elect-lease-duration') ?? DEFAULT_LEASE_DURATION_MS,
    renewDeadlineMs: durationMs(f.renewDeadline, 'leader-elect-renew-deadline') ?? DEFAULT_RENEW_DEADLINE_MS,
    retryPeriodMs: durationMs(f.retryPeriod, 'leader-elect-retry-period') ?? DEFAULT_RETRY_PERIOD_MS,
  };
  try {
    validateLeaderElectionTimings(timings);
  } catch (e) {
    fail((e as Error).message);
  }
  return timings;
}

/** A Go duration flag ("90s", "10m", "1h30m") in whole seconds; a bare number is seconds. */
export function durationSeconds(s: string | undefined, flag: string): number | undefined {
  if (s === undefined) return undefined;
  if (/^\d+$/.test(s)) return Number(s);
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };
  let total = 0;
  let rest = s;
  while (rest) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (!m) fail(`invalid --${flag} "${s}" (a duration such as 90s, 10m or 48h)`);
    total += Number(m[1]) * unit[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  return Math.floor(total);
}

async function runAgent(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      server: { type: 'string' },
      'node-name': { type: 'string' },
      'token-file': { type: 'string' },
      'data-dir': { type: 'string' },
      'docker-socket': { type: 'string' },
      'node-ip': { type: 'string' },
      'agent-port': { type: 'string' },
      'cluster-dns': { type: 'string' },
      'cluster-domain': { type: 'string' },
      'resolv-conf': { type: 'string' },
      'heartbeat-interval-ms': { type: 'string' },
      'relist-interval-ms': { type: 'string' },
      'claim-sweep-interval-ms': { type: 'string' },
      'crash-backoff-base-ms': { type: 'string' },
      'runtime-check-interval-ms': { type: 'string' },
      'runtime-down-after-ms': { type: 'string' },
      'runtime-event-retry-max-ms': { type: 'string' },
      'token-check-interval-ms': { type: 'string' },
      'server-check-interval-ms': { type: 'string' },
      'server-check-timeout-ms': { type: 'string' },
      'metrics-sample-interval': { type: 'string' },
      'service-proxy-table': { type: 'string' },
      'sandbox-network': { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(HELP.agent);
  type MsFlag =
    | 'heartbeat-interval-ms'
    | 'relist-interval-ms'
    | 'claim-sweep-interval-ms'
    | 'crash-backoff-base-ms'
    | 'runtime-check-interval-ms'
    | 'runtime-down-after-ms'
    | 'runtime-event-retry-max-ms'
    | 'token-check-interval-ms'
    | 'server-check-interval-ms'
    | 'server-check-timeout-ms';
  const ms = (flag: MsFlag) => {
    const s = values[flag];
    if (s === undefined) return undefined;
    const n = Number(s);
    if (!Number.isInteger(n) || n <= 0) fail(`invalid --${flag} "${s}"`);
    return n;
  };
  if (!values.server) fail('agent: --server is required (see berth agent --help)');
  const { parseServerList } = await import('./client/endpoints.js');
  let servers: string[] = [];
  try {
    servers = parseServerList(values.server);
  } catch (e) {
    fail(`invalid --server: ${(e as Error).message}`);
  }
  const log = createLogger({ name: 'berth-agent', level: values['log-level'], format: logFormatFlag(values['log-format']) });
  // The agent is loaded only here so `berth server` never pays for dockerode.
  const { startAgent } = await import('../agent/agent.js');
  const { installProcessGuard } = await import('../agent/process-guard.js');
  const { HostConflictError, EXIT_HOST_CONFLICT } = await import('../agent/host-conflicts.js');
  installProcessGuard({ log });
  let agent: Awaited<ReturnType<typeof startAgent>>;
  try {
    agent = await startAgent({
      server: servers,
      nodeName: values['node-name'] ?? os.hostname().toLowerCase(),
      tokenFile: values['token-file'],
      dataDir: values['data-dir'] ?? path.join(defaultDataDir(), 'agent'),
      dockerSocket: values['docker-socket'],
      nodeIP: values['node-ip'],
      agentPort: values['agent-port'] === undefined ? undefined : parsePort(values['agent-port'], 0),
      clusterDNS: clusterDnsFlag(values['cluster-dns']),
      clusterDomain: values['cluster-domain'],
      resolvConf: values['resolv-conf'],
      serviceProxyTable: values['service-proxy-table'],
      sandboxNetwork: values['sandbox-network'] as SandboxNetworkMode | undefined,
      intervals: {
        heartbeatMs: ms('heartbeat-interval-ms'),
        relistMs: ms('relist-interval-ms'),
        claimVolumeSweepMs: ms('claim-sweep-interval-ms'),
        runtimeCheckMs: ms('runtime-check-interval-ms'),
        runtimeDownAfterMs: ms('runtime-down-after-ms'),
        eventRetryMaxMs: ms('runtime-event-retry-max-ms'),
        tokenCheckMs: ms('token-check-interval-ms'),
        serverCheckMs: ms('server-check-interval-ms'),
        serverCheckTimeoutMs: ms('server-check-timeout-ms'),
        metricsSampleMs: await durationFlag('metrics-sample-interval', values['metrics-sample-interval']),
      },
      backoff: { baseMs: ms('crash-backoff-base-ms') },
      logger: log,
    });
  } catch (err) {
    // Another cluster on this host holds what this node would take: say which, and what to change.
    if (!(err instanceof HostConflictError)) throw err;
    log.error({ err: err.message }, 'another cluster on this host is in the way');
    process.stderr.write(`berth agent: ${err.message}\n`);
    process.exit(EXIT_HOST_CONFLICT);
  }
  onShutdown(async () => {
    await agent.stop();
  });
  void agent.credentialRejected.then(async (reason) => {
    log.error({ reason }, 'node credential rejected: stopping the agent and leaving its containers as they are');
    await agent.stop();
    process.stderr.write(`berth agent: ${reason}. The agent stopped; its containers were left as they are. To run this node again, delete ${path.join(values['data-dir'] ?? path.join(defaultDataDir(), 'agent'), 'credentials.json')} and start the agent with a fresh join token (--token-file).\n`);
    process.exit(EXIT_CREDENTIAL_REJECTED);
  });
}

/** The agent's exit status when the control plane no longer accepts its credential. */
const EXIT_CREDENTIAL_REJECTED = 3;

/** --cluster-dns: comma-separated IPv4 addresses. */
function clusterDnsFlag(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const ips = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const ip of ips) if (!net.isIPv4(ip)) fail(`invalid --cluster-dns "${ip}": must be an IPv4 address`);
  return ips.length ? ips : undefined;
}

/** How long `berth up` waits for its node to be Ready before pointing at the API anyway. */
const NODE_READY_HINT_MS = 60_000;

async function runUp(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      port: { type: 'string' },
      'node-name': { type: 'string' },
      'docker-socket': { type: 'string' },
      'encryption-provider-config': { type: 'string' },
      ...POD_SECURITY_FLAGS,
      'bind-address': { type: 'string' },
      'cluster-cidr': { type: 'string' },
      'service-cluster-ip-range': { type: 'string' },
      'deny-service-external-ips': { type: 'boolean' },
      'agent-port': { type: 'string' },
      'cluster-dns': { type: 'string' },
      'service-proxy-table': { type: 'string' },
      'log-level': { type: 'string' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(HELP.up);
  const dataDir = values['data-dir'] ?? defaultDataDir();
  const level = values['log-level'] ?? 'info';
  // Resolved here and handed to the agent, so both processes on this terminal write the same way.
  const logFormat = logFormatFlag(values['log-format']) ?? defaultLogFormat(tty.isatty(1));
  const log = createLogger({ name: 'berth-server', level, format: logFormat });
  const progress = new UpProgress({ write: (text) => process.stderr.write(text), colour: colourWanted(tty.isatty(2)) });
  process.stderr.write(`berth up: starting the control plane and a local agent (data in ${dataDir})\n`);
  const nodeName = values['node-name'] ?? os.hostname().toLowerCase();
  const { startControlPlane } = await import('./control-plane.js');
  const cp = await startControlPlane({
    dataDir,
    port: parsePort(values.port, 6443),
    ...podSecurityOptions(values),
    encryptionProviderConfig: values['encryption-provider-config'],
    bindAddress: values['bind-address'],
    clusterCidr: values['cluster-cidr'],
    serviceClusterIPRange: values['service-cluster-ip-range'],
    denyServiceExternalIPs: values['deny-service-external-ips'],
    logger: log,
    onStartupStep: (s) => {
      if (s.step === 'store-opened') progress.step('store opened', s.store);
      else if (s.step === 'ca-ready') progress.step('CA ready', s.caFile);
      else progress.step('API listening', s.url);
    },
  });
  const agentArgs = ['agent', '--server', cp.url, '--token-file', cp.nodeTokenPath, '--data-dir', path.join(dataDir, 'agent'), '--log-level', level, '--log-format', logFormat];
  agentArgs.push('--node-name', nodeName);
  for (const flag of ['docker-socket', 'agent-port', 'cluster-dns', 'service-proxy-table'] as const) {
    const value = values[flag];
    if (value !== undefined) agentArgs.push(`--${flag}`, value);
  }
  let stopping = false;
  let child: ChildProcess | undefined;
  const startChild = () => {
    child = spawn(process.execPath, [...NODE_FLAGS, fileURLToPath(import.meta.url), ...agentArgs], { stdio: 'inherit' });
    child.once('spawn', () => progress.step('agent started', `pid ${child?.pid}`));
    child.on('exit', (code, signal) => {
      if (stopping) return;
      if (code === EXIT_HOST_CONFLICT_CODE) {
        // The agent said which cluster is in the way; restarting would only say it again.
        process.stderr.write('berth up: the local agent cannot start beside another cluster on this host (above); stopping\n');
        stopping = true;
        fs.rmSync(upPidFile(dataDir), { force: true });
        void cp.stop().finally(() => process.exit(EXIT_HOST_CONFLICT_CODE));
        return;
      }
      // Supervise like systemd's Restart=always: the agent adopts its containers on restart.
      log.warn({ code, signal }, 'local agent exited; restarting in 1 s');
      setTimeout(startChild, 1000).unref();
    });
  };
  const agentStartedAt = Date.now();
  startChild();
  const { HttpClient } = await import('./client/http-client.js');
  const client = new HttpClient({ server: cp.url, token: cp.adminToken, ca: cp.caCert });
  const nodeProgress = followNodeStartup({
    client,
    nodeName,
    sinceEpochMs: agentStartedAt,
    onJoined: () => progress.step('agent joined', `node ${nodeName}`),
    onReady: () => {
      clearTimeout(slowNodeHint);
      progress.step('node Ready', nodeName);
      progress.done({
        kubeconfigPath: cp.kubeconfigPath,
        nodeName,
        dashboardUrl: `${cp.url}/dashboard/`,
        adminTokenFile: path.join(dataDir, 'admin-token'),
      });
      // After the informer's own stop, which followNodeStartup schedules the same way.
      setImmediate(() => client.close());
    },
  });
  // The control plane is usable even while the node is not: say how to look, rather than stay silent.
  const slowNodeHint = setTimeout(() => {
    process.stderr.write(`berth up: node ${nodeName} is not Ready after ${NODE_READY_HINT_MS / 1000}s; the API is up:\n  export KUBECONFIG=${cp.kubeconfigPath}\n  kubectl describe node ${nodeName}\n`);
  }, NODE_READY_HINT_MS);
  slowNodeHint.unref();
  onShutdown(async () => {
    stopping = true;
    nodeProgress.stop();
    clearTimeout(slowNodeHint);
    client.close();
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    // The node resolver outlives agent restarts, never the cluster `berth up` runs (its containers stay, as k3s's do).
    const { stopNodeResolver } = await import('../agent/dns/node-dns.js');
    await stopNodeResolver(path.join(dataDir, 'agent')).catch(() => undefined);
    fs.rmSync(upPidFile(dataDir), { force: true });
    await cp.stop();
  });
  fs.writeFileSync(upPidFile(dataDir), String(process.pid));
}

/** Where a running `berth up` writes its pid, for `berth down`. */
function upPidFile(dataDir: string): string {
  return path.join(dataDir, 'berth-up.pid');
}

/** `berth agent`'s exit status when another cluster on the host holds what it would take (agent/host-conflicts.ts). */
const EXIT_HOST_CONFLICT_CODE = 4;

const POD_SECURITY_FLAGS = {
  'pod-security-default-enforce': { type: 'string' },
  'pod-security-default-audit': { type: 'string' },
  'pod-security-default-warn': { type: 'string' },
  'pod-security-exempt-namespaces': { type: 'string' },
} as const;

type PodSecurityLevel = 'privileged' | 'baseline' | 'restricted';

/** The Pod Security flags as control-plane options; audit and warn follow enforce unless given. */
function podSecurityOptions(values: Partial<Record<keyof typeof POD_SECURITY_FLAGS, string>>): {
  podSecurityDefaults: { enforce: PodSecurityLevel; audit: PodSecurityLevel; warn: PodSecurityLevel };
  podSecurityExemptNamespaces?: string[];
} {
  const level = (flag: keyof typeof POD_SECURITY_FLAGS, fallback: PodSecurityLevel): PodSecurityLevel => {
    const v = values[flag];
    if (v === undefined) return fallback;
    if (v !== 'privileged' && v !== 'baseline' && v !== 'restricted') fail(`invalid --${flag} "${v}": must be one of privileged, baseline, restricted`);
    return v;
  };
  const enforce = level('pod-security-default-enforce', 'baseline');
  const exempt = values['pod-security-exempt-namespaces'];
  return {
    podSecurityDefaults: { enforce, audit: level('pod-security-default-audit', enforce), warn: level('pod-security-default-warn', enforce) },
    podSecurityExemptNamespaces: exempt === undefined ? undefined : exempt.split(',').map((s) => s.trim()).filter(Boolean),
  };
}

function mul(n: number | undefined, by: number): number | undefined {
  return n === undefined ? undefined : n * by;
}

function onShutdown(fn: () => Promise<void>): void {
  let called = false;
  const handler = () => {
    if (called) return;
    called = true;
    fn().then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`berth: shutdown failed: ${(e as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/** A Go-style duration flag (15s, 1m) in ms; undefined when absent. */
async function durationFlag(flag: string, text: string | undefined): Promise<number | undefined> {
  if (text === undefined) return undefined;
  const { parseDurationSeconds } = await import('./user-kubeconfig.js');
  try {
    return text === '0' ? 0 : parseDurationSeconds(text) * 1000;
  } catch (e) {
    fail(`--${flag}: ${(e as Error).message}`);
  }
}

async function signingDurationFlag(text: string): Promise<number> {
  const { parseDurationSeconds } = await import('./user-kubeconfig.js');
  try {
    return parseDurationSeconds(text) * 1000;
  } catch (e) {
    fail(`--cluster-signing-duration: ${(e as Error).message}`);
  }
}

/** A Go-style duration flag (`15s`, `5m`, `1m30s`) in milliseconds; undefined when not given. */
async function durationFlagMs(flag: string, text: string | undefined): Promise<number | undefined> {
  if (text === undefined) return undefined;
  const { parseDurationSeconds } = await import('./user-kubeconfig.js');
  try {
    return parseDurationSeconds(text) * 1000;
  } catch (e) {
    fail(`--${flag}: ${(e as Error).message}`);
  }
}

async function runKubeconfig(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      user: { type: 'string' },
      group: { type: 'string', multiple: true },
      expiration: { type: 'string' },
      out: { type: 'string' },
      'data-dir': { type: 'string' },
      kubeconfig: { type: 'string' },
      server: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP.kubeconfig);
    return;
  }
  if (!values.user && values.server === undefined) fail('--user is required (or --server, for the admin kubeconfig naming that server)');
  let server: string | undefined;
  if (values.server !== undefined) {
    const { parseServerList } = await import('./client/endpoints.js');
    try {
      const list = parseServerList(values.server);
      if (list.length !== 1) throw new Error('give one server: a kubeconfig names one');
      server = list[0];
    } catch (e) {
      fail(`invalid --server: ${(e as Error).message}`);
    }
  }
  const { adminKubeconfigFor, parseDurationSeconds, userKubeconfig } = await import('./user-kubeconfig.js');
  let expirationSeconds: number | undefined;
  if (values.expiration !== undefined) {
    try {
      expirationSeconds = parseDurationSeconds(values.expiration);
    } catch (e) {
      fail(`--expiration: ${(e as Error).message}`);
    }
  }
  const adminPath = values.kubeconfig ?? path.join(values['data-dir'] ?? defaultDataDir(), 'kubeconfig.yaml');
  const adminKubeconfig = fs.readFileSync(adminPath, 'utf8');
  const text = values.user
    ? await userKubeconfig({ adminKubeconfig, user: values.user, groups: values.group ?? [], expirationSeconds, server })
    : adminKubeconfigFor({ adminKubeconfig, server: server! });
  const who = values.user ? `user ${values.user}` : 'the admin';
  if (!values.out) {
    process.stdout.write(text);
    return;
  }
  fs.writeFileSync(values.out, text, { mode: 0o600 });
  fs.chmodSync(values.out, 0o600); // an existing file keeps its old mode on write
  console.error(`berth: wrote ${values.out} for ${who}${server ? ` naming ${server}` : ''}`);
}

async function runToken(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ttl: { type: 'string' },
      description: { type: 'string' },
      out: { type: 'string' },
      'data-dir': { type: 'string' },
      kubeconfig: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [action, id, ...extra] = positionals;
  if (values.help || action === undefined) return void console.log(HELP.token);
  if (extra.length) fail(`unexpected arguments: ${extra.join(' ')}`);
  const adminKubeconfig = fs.readFileSync(values.kubeconfig ?? path.join(values['data-dir'] ?? defaultDataDir(), 'kubeconfig.yaml'), 'utf8');
  const { createJoinToken, deleteJoinToken, listJoinTokens } = await import('./join-tokens.js');
  const { parseDurationSeconds } = await import('./user-kubeconfig.js');
  const { DEFAULT_BOOTSTRAP_TOKEN_TTL_SECONDS } = await import('./api/bootstrap-tokens.js');
  switch (action) {
    case 'create': {
      let ttlSeconds = DEFAULT_BOOTSTRAP_TOKEN_TTL_SECONDS;
      if (values.ttl !== undefined) {
        try {
          ttlSeconds = values.ttl === '0' ? 0 : parseDurationSeconds(values.ttl);
        } catch (e) {
          fail(`--ttl: ${(e as Error).message}`);
        }
      }
      const created = await createJoinToken({ adminKubeconfig, ttlSeconds, description: values.description });
      const until = created.expiresAt ? `until ${created.expiresAt.toISOString()}` : 'without expiry';
      if (values.out) {
        fs.writeFileSync(values.out, created.tokenFileText, { mode: 0o600 });
        fs.chmodSync(values.out, 0o600);
        console.error(`berth: wrote join token ${created.id} (valid ${until}) to ${values.out}`);
      } else {
        process.stdout.write(created.tokenFileText);
        console.error(`berth: join token ${created.id}, valid ${until}`);
      }
      return;
    }
    case 'list':
      process.stdout.write(await listJoinTokens({ adminKubeconfig }));
      return;
    case 'delete':
      if (!id) fail('berth token delete ID: the token id is required (see berth token list)');
      await deleteJoinToken({ adminKubeconfig, id });
      console.error(`berth: join token ${id} deleted`);
      return;
    default:
      fail(`unknown action "${action}"\n\n${HELP.token}`);
  }
}

async function runMigrate(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      'from-sqlite': { type: 'string' },
      'etcd-servers': { type: 'string' },
      'etcd-prefix': { type: 'string' },
      'etcd-cafile': { type: 'string' },
      'etcd-certfile': { type: 'string' },
      'etcd-keyfile': { type: 'string' },
      force: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP.migrate);
    return;
  }
  const etcd = etcdFlags(values);
  if (etcd === undefined) fail('migrate needs --etcd-servers');
  const dataDir = values['data-dir'] ?? defaultDataDir();
  const sqliteFile = values['from-sqlite'] ?? path.join(dataDir, 'state.db');
  const { migrateSqliteToEtcd, MigrationRefused } = await import('./migrate.js');
  try {
    const report = await migrateSqliteToEtcd({ sqliteFile, etcd, force: values.force ?? false, log: (m) => console.error(`berth: ${m}`) });
    if (report.outcome === 'already-done') {
      console.error(`berth: ${report.source} (revision ${report.sourceRevision}) was already migrated into this etcd prefix; nothing to do`);
    } else {
      console.error(
        `berth: ${report.outcome} ${report.keys} keys from ${report.source} (revision ${report.sourceRevision}); ` +
          `resourceVersions ${report.firstCopiedRevision}..${report.lastCopiedRevision}, history compacted at ${report.compactedAt}`,
      );
    }
    console.log(JSON.stringify(report));
  } catch (err) {
    if (err instanceof MigrationRefused) {
      process.stderr.write(`berth: migrate refused: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

async function runDown(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, 'docker-socket': { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(HELP.down);
  const { down } = await import('../agent/down.js');
  const report = await down({ dataDir: values['data-dir'] ?? defaultDataDir(), dockerSocket: values['docker-socket'], log: (line) => process.stderr.write(`berth down: ${line}\n`) });
  process.stderr.write(
    `berth down: removed ${report.containers} containers, networks [${report.networks.join(', ')}], nftables tables [${report.tables.join(', ')}]` +
      `${report.stoppedUp !== undefined ? `; stopped berth up (pid ${report.stoppedUp})` : ''}\n`,
  );
}

export async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'server':
      return runServer(rest);
    case 'agent':
      return runAgent(rest);
    case 'up':
      return runUp(rest);
    case 'kubeconfig':
      return runKubeconfig(rest);
    case 'token':
      return runToken(rest);
    case 'migrate':
      return runMigrate(rest);
    case 'down':
      return runDown(rest);
    case 'hollow-nodes':
      // Loaded only here: its own flags and help live with it (agent/hollow/command.ts).
      return (await import('../agent/hollow/command.js')).runHollowNodes(rest);
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      console.log(HELP.main);
      return;
    default:
      fail(`unknown command "${cmd}"\n\n${HELP.main}`);
  }
}

const invokedDirectly = process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`berth: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
}
