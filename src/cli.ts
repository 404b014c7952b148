/**
 * Owns the `berth` command line: each subcommand (server, agent, up, kubeconfig, token, migrate,
 * down), its flags (one table, FLAGS, from which parsing, value types and help lists all come), help
 * pages and defaults, and turning flags into options for the code that does the
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

const MAIN_HELP = `berth — a Kubernetes-style control plane and Docker node agent

Usage:
  berth server [flags]   run the control plane (API server, store, scheduler, controllers)
  berth agent  [flags]   run a node agent that joins a control plane and runs its pods on Docker
  berth up     [flags]   run the control plane plus one local agent (single-host default)
  berth kubeconfig --user NAME   write a kubeconfig for a user with a client certificate
  berth token create|list|delete   join tokens for agents (expiring, revocable)
  berth down   [flags]   stop a 'berth up' and remove its containers, networks and nftables table
  berth migrate --etcd-servers URL[,URL...]   copy a stopped server's SQLite store into etcd
  berth hollow-nodes --count N --server URL --token-file F   N simulated node agents in one process (scale tests)

Run 'berth <command> --help' for the flags of each command.`;

/** A command's help page around its Flags list, which comes from FLAGS. */
const HELP_PAGES: Record<Command, { intro: string; outro?: string }> = {
  server: {
    intro: `berth server — run the control plane

Flags:`,
    outro: `Writes DIR/kubeconfig.yaml (admin, 0600) for kubectl and DIR/node-token (0600) for agents to join.`,
  },
  agent: {
    intro: `berth agent — run a node agent

Flags:`,
  },
  up: {
    intro: `berth up — control plane plus one local agent on this host

Flags:`,
    outro: `Several clusters on one host: give each its own --data-dir, --port, --cluster-cidr and
--service-cluster-ip-range. The cluster DNS address (the 10th of the Service range) and the
nftables table (named for the pod range) follow from them. A cluster whose pod range, DNS address
or table another cluster on the host holds stops at start, naming it. Ctrl-C stops the processes
(the node resolver too); pods keep running until 'berth up' runs again or 'berth down' removes them.

Progress goes to stderr as each step completes (store, CA, API, agent, node Ready), then the
commands to use the cluster; the logs of both processes go to stdout.

The agent runs as a separate process and talks to the control plane over HTTPS, as a remote agent would.`,
  },
  down: {
    intro: `berth down — remove one cluster's node from this host

Stops the 'berth up' running on the data dir (its agent and node resolver with it), then removes
the containers, pod bridge networks (and their iptables rules) and nftables tables of that cluster,
found by the cluster id its agent recorded. Nothing of another cluster on the host is touched. The
data dir and claim volumes stay: 'berth up' on the same data dir brings the cluster back.

Flags:`,
  },
  migrate: {
    intro: `berth migrate — copy a stopped server's SQLite store (DIR/state.db) into etcd

Then start the server on the same data dir with the same --etcd-* flags; other servers join it with
--token (its DIR/node-token). Every copied object keeps its uid and content, with a resourceVersion
above any the SQLite server gave out; older resourceVersions answer 410 Gone, so watching clients relist.

Flags:`,
  },
  kubeconfig: {
    intro: `berth kubeconfig — a kubeconfig for a user authenticated by a client certificate, or the
admin kubeconfig naming another control-plane replica

Flags:`,
    outro: `Makes a key here, creates a CertificateSigningRequest (signer kubernetes.io/kube-apiserver-client) with
the admin credential, approves it and waits for the certificate: the same path as any user's request.`,
  },
  token: {
    intro: `berth token — join tokens for agents, stored as Kubernetes bootstrap tokens
(Secrets kube-system/bootstrap-token-<id>, type bootstrap.kubernetes.io/token)

Usage:
  berth token create [--ttl 24h] [--description TEXT] [--out FILE]
                          prints (or writes, mode 0600) the line an agent's --token-file holds:
                          berth1::<CA sha256>::<id>.<secret>; it is shown only once
  berth token list        ID, TTL, EXPIRES and DESCRIPTION of every token (never the secret)
  berth token delete ID   revoke a token: joins with it are refused from then on

Flags:`,
    outro: `A token admits new nodes only. A node that joined keeps its own credential when the token expires or
is deleted, and a joined node name stays that node's (its node password) until its Node is deleted.`,
  },
};

/** The commands that take flags. */
type Command = 'server' | 'agent' | 'up' | 'down' | 'migrate' | 'kubeconfig' | 'token';

/** One flag of the command line: how it parses, the help it shows, and the commands that take it. */
interface FlagSpec {
  type: 'string' | 'boolean';
  /** the value's placeholder in the help (`--port PORT`); `[=BOOL]` for a switch that also takes =true|=false */
  value?: string;
  /** repeatable: the values come as a list */
  multiple?: true;
  commands: readonly Command[];
  /** the help words; a newline starts a continuation line */
  help: string;
  /** a command's own words (and placeholder) for the flag where they differ from `help` */
  helpFor?: Partial<Record<Command, { value?: string; help: string }>>;
  /** commands whose help names the flag in its usage lines rather than in the Flags list */
  inUsageOf?: readonly Command[];
}

/**
 * Every flag, declared once: parseFlags builds each command's parseArgs options from it, FlagValues
 * the type of what it returns, and helpText each command's Flags list (in this order).
 */
const FLAGS = {
  'data-dir': { type: 'string', value: 'DIR', commands: ['server', 'agent', 'up', 'down', 'migrate', 'kubeconfig', 'token'], help: 'state, certificates and credentials (default: /var/lib/berth as root, else ~/.berth)', helpFor: { agent: { help: 'agent state (default: /var/lib/berth/agent as root, else ~/.berth/agent)' }, up: { help: "as for 'berth server'; the agent keeps its state in DIR/agent" }, down: { help: "the data dir 'berth up' ran with (default: /var/lib/berth as root, else ~/.berth)" }, migrate: { help: "the stopped server's data dir (default: /var/lib/berth as root, else ~/.berth)" }, kubeconfig: { help: 'where the admin kubeconfig is (default: /var/lib/berth as root, else ~/.berth)' }, token: { help: 'where the admin kubeconfig is (default: /var/lib/berth as root, else ~/.berth)' } } },
  port: { type: 'string', value: 'PORT', commands: ['server', 'up'], help: 'HTTPS port (default 6443)' },
  'bind-address': { type: 'string', value: 'ADDR', commands: ['server', 'up'], help: 'listen address (default 0.0.0.0)', helpFor: { up: { help: "as for 'berth server'" } } },
  'insecure-http': { type: 'boolean', commands: ['server'], help: 'serve plain HTTP (only allowed with a loopback --bind-address)' },
  'disable-controllers': { type: 'string', value: 'L', commands: ['server'], help: 'comma-separated controllers to leave off ({controllers})' },
  'node-grace-period': { type: 'string', value: 'S', commands: ['server'], help: 'seconds without heartbeat before a node is Ready=Unknown (default 40)' },
  'node-monitor-period': { type: 'string', value: 'S', commands: ['server'], help: 'how often node heartbeats are checked (default 5)' },
  'cluster-cidr': { type: 'string', value: 'CIDR', commands: ['server', 'up'], help: 'pod addresses of the cluster; each node gets a subnet (default 10.244.0.0/16)', helpFor: { up: { help: "as for 'berth server'" } } },
  'node-cidr-mask-size': { type: 'string', value: 'N', commands: ['server'], help: "prefix length of each node's pod subnet (default 24)" },
  'default-toleration-seconds': { type: 'string', value: 'S', commands: ['server'], help: 'how long new pods tolerate a not-ready/unreachable node (default 300)' },
  'deny-service-external-ips': { type: 'boolean', commands: ['server', 'up'], help: "refuse every new Service externalIP (kube-apiserver's DenyServiceExternalIPs\nadmission plugin); without it, externalIPs in the service or pod range are refused", helpFor: { up: { help: "as for 'berth server'" } } },
  'compact-interval-seconds': { type: 'string', value: 'S', commands: ['server'], help: 'how often old revisions are compacted (default 300)' },
  'compact-keep-revisions': { type: 'string', value: 'N', commands: ['server'], help: 'recent revisions compaction always keeps (default 1000)' },
  'watch-bookmark-interval-seconds': { type: 'string', value: 'S', commands: ['server'], help: 'how often watches with allowWatchBookmarks get a BOOKMARK (default 60)' },
  'metric-resolution': { type: 'string', value: 'D', commands: ['server'], help: "how often the Metrics API (kubectl top) scrapes each node's usage, e.g. 15s\n(default 15s, as metrics-server)" },
  'cluster-signing-duration': { type: 'string', value: 'D', commands: ['server'], help: 'longest client certificate the CSR signers issue, e.g. 720h (default 8760h)' },
  'job-backoff-base-ms': { type: 'string', value: 'N', commands: ['server'], help: 'first Job pod re-creation delay after a failure; doubles up to 6 min (default 10000)' },
  'horizontal-pod-autoscaler-sync-period': { type: 'string', value: 'D', commands: ['server'], help: 'how often each HPA is reconciled, e.g. 15s (default 15s)' },
  'horizontal-pod-autoscaler-tolerance': { type: 'string', value: 'F', commands: ['server'], help: 'usage ratios this close to 1 leave replicas alone (default 0.1)' },
  'horizontal-pod-autoscaler-downscale-stabilization': { type: 'string', value: 'D', commands: ['server'], help: 'scale-down window of HPAs that set none (default 5m)' },
  'resource-quota-sync-period': { type: 'string', value: 'D', commands: ['server'], help: "how often every ResourceQuota's usage is recounted in full (default 5m)" },
  'max-requests-inflight': { type: 'string', value: 'N', commands: ['server'], help: 'reads one client may have in flight, then 429 (default 400;\n0 = no limit, here and in the six flags below)' },
  'max-mutating-requests-inflight': { type: 'string', value: 'N', commands: ['server'], help: 'mutations one client may have in flight, then 429 (default 200)' },
  'max-objects-inflight': { type: 'string', value: 'N', commands: ['server'], help: "objects all lists and watches' initial events may carry at once,\neach charged by the objects it returns, then 429 (default 40000)" },
  'max-objects-inflight-per-user': { type: 'string', value: 'N', commands: ['server'], help: "the same for one user's lists and watches (default 20000)" },
  'max-connections': { type: 'string', value: 'N', commands: ['server'], help: 'open connections beyond this are closed at once (default 4096)' },
  'read-header-timeout-ms': { type: 'string', value: 'N', commands: ['server'], help: "a connection's time to send a request's headers (default 32000)" },
  'idle-timeout-ms': { type: 'string', value: 'N', commands: ['server'], help: 'how long a kept-alive connection may wait for its next request (default 90000)' },
  'pod-security-default-enforce': { type: 'string', value: 'LEVEL', commands: ['server', 'up'], help: 'Pod Security level enforced in namespaces without a\npod-security.kubernetes.io/enforce label: privileged, baseline or restricted (default baseline)', helpFor: { up: { help: "as for 'berth server'" } } },
  'pod-security-default-audit': { type: 'string', value: 'LEVEL', commands: ['server', 'up'], help: 'the same for audit (logged); default: the enforce default', helpFor: { up: { help: "as for 'berth server'" } } },
  'pod-security-default-warn': { type: 'string', value: 'LEVEL', commands: ['server', 'up'], help: 'the same for warn (Warning headers); default: the enforce default', helpFor: { up: { help: "as for 'berth server'" } } },
  'pod-security-exempt-namespaces': { type: 'string', value: 'L', commands: ['server', 'up'], help: 'comma-separated namespaces Pod Security never evaluates (default kube-system)', helpFor: { up: { help: "as for 'berth server'" } } },
  'encryption-provider-config': { type: 'string', value: 'FILE', commands: ['server', 'up'], help: 'EncryptionConfiguration (apiserver.config.k8s.io/v1) for data at rest;\ndefault: DIR/encryption-config.yaml, generated on first start (AES-GCM for Secrets)', helpFor: { up: { help: "as for 'berth server'" } } },
  'storage-reserve-bytes': { type: 'string', value: 'N', commands: ['server'], help: 'space kept in DIR/state.db.reserve and released when the disk fills,\nso reads and deletes still work (default 16777216)' },
  'etcd-servers': { type: 'string', value: 'URL[,URL...]', commands: ['server', 'migrate'], help: 'store everything in etcd v3 at these client URLs instead of DIR/state.db', helpFor: { migrate: { help: 'client URLs of the etcd members (required)' } } },
  'etcd-prefix': { type: 'string', value: 'P', commands: ['server', 'migrate'], help: 'root of every key in etcd: P/<resource>/<namespace>/<name> (default /registry)', helpFor: { migrate: { help: 'root of every key in etcd (default /registry), as for berth server' } } },
  'etcd-cafile': { type: 'string', value: 'FILE', commands: ['server', 'migrate'], help: 'CA bundle verifying the etcd servers (https:// URLs)' },
  'etcd-certfile': { type: 'string', value: 'FILE', commands: ['server', 'migrate'], help: 'client certificate presented to etcd' },
  'etcd-keyfile': { type: 'string', value: 'FILE', commands: ['server', 'migrate'], help: 'key of --etcd-certfile' },
  token: { type: 'string', value: 'T', commands: ['server'], help: "with --etcd-servers: the cluster token, i.e. the node token (DIR/node-token) of a\nserver already on this etcd; this server takes the cluster's CA, keys and tokens\nfrom etcd with it (default: DIR/join-secret; the first server makes one)" },
  'token-file': { type: 'string', value: 'FILE', commands: ['server', 'agent'], help: "--token read from FILE (e.g. a copy of the first server's DIR/node-token)", helpFor: { agent: { help: "file with the node token from the server's DIR/node-token (required unless\n--data-dir already holds credentials from an earlier join)" } } },
  'service-cluster-ip-range': { type: 'string', value: 'CIDR', commands: ['server', 'up'], help: "Service ClusterIPs; the first address is the kubernetes Service's,\nthe tenth kube-dns's (default 10.96.0.0/12)", helpFor: { up: { help: "as for 'berth server'" } } },
  'service-node-port-range': { type: 'string', value: 'A-B', commands: ['server'], help: 'Service NodePorts (default 30000-32767)' },
  'advertise-address': { type: 'string', value: 'IP', commands: ['server'], help: "the address pods reach the API server at, the kubernetes Service's endpoint\n(default: --bind-address if specific, else the default-route interface's address)" },
  'cluster-domain': { type: 'string', value: 'DOMAIN', commands: ['server', 'agent'], help: "the cluster's DNS domain, named in the serving certificate (default cluster.local)", helpFor: { agent: { value: 'NAME', help: "the cluster's DNS domain (default cluster.local)" } } },
  'service-account-issuer': { type: 'string', value: 'URL', commands: ['server'], help: 'iss of service-account tokens (default https://kubernetes.default.svc.<cluster domain>)' },
  'api-audiences': { type: 'string', value: 'L', commands: ['server'], help: 'comma-separated audiences the API accepts in service-account tokens (default: the issuer)' },
  'service-account-max-token-expiration': { type: 'string', value: 'D', commands: ['server'], help: 'longest token a TokenRequest gets, e.g. 48h (default: no limit)' },
  'service-account-min-token-expiration': { type: 'string', value: 'D', commands: ['server'], help: 'shortest expirationSeconds a TokenRequest may ask for (default 10m;\nBerth-only, so tests can use short-lived tokens)' },
  'service-account-token-leeway': { type: 'string', value: 'D', commands: ['server'], help: "clock skew allowed on tokens' exp and nbf (default 1m, as kube-apiserver; Berth-only)" },
  'token-auth-file': { type: 'string', value: 'FILE', commands: ['server'], help: "static bearer tokens, as kube-apiserver's: CSV lines token,user,uid,\"group1,group2\"\n(what they may do is RBAC's to say)" },
  'leader-elect': { type: 'boolean', value: '[=BOOL]', commands: ['server'], help: 'run controllers, the scheduler and cron timers only while this server holds the\nkube-system/berth-controller-manager Lease, so several servers on one store\nhave one active set (default: on with --etcd-servers, off otherwise)' },
  'leader-elect-lease-duration': { type: 'string', value: 'D', commands: ['server'], help: 'how long other servers wait after the Lease last changed before\ntaking it (default 15s)' },
  'leader-elect-renew-deadline': { type: 'string', value: 'D', commands: ['server'], help: 'how long the leader keeps leading without renewing; less than the\nlease duration (default 10s)' },
  'leader-elect-retry-period': { type: 'string', value: 'D', commands: ['server'], help: 'how often the leader renews and the others retry; less than the\nrenew deadline (default 2s)' },
  'log-level': { type: 'string', value: 'LEVEL', commands: ['server', 'agent', 'up'], help: 'pino level (default info)' },
  'log-format': { type: 'string', value: 'text|json', commands: ['server', 'agent', 'up'], help: 'log lines for people or JSON lines (default: text when stdout is a terminal, else json)' },
  server: { type: 'string', value: 'URL[,URL…]', commands: ['agent', 'kubeconfig'], help: 'control plane URL, e.g. https://10.0.0.1:6443 (required); with several replicas,\nall of them in order of preference: the agent uses one and moves to the next\nwhen a connection to it fails or its /readyz fails, resuming its watches there', helpFor: { kubeconfig: { value: 'URL', help: "the server the kubeconfig names, and the one this command talks to (default:\nthe admin kubeconfig's); without --user, writes the admin kubeconfig with this\nserver, e.g. another replica of an HA control plane" } } },
  'node-name': { type: 'string', value: 'NAME', commands: ['agent', 'up'], help: "this node's name (default: the host name)", helpFor: { up: { help: "the local node's name (default: the host name)" } } },
  'docker-socket': { type: 'string', value: 'PATH', commands: ['agent', 'up', 'down'], help: 'Docker Engine socket (default /var/run/docker.sock)' },
  'node-ip': { type: 'string', value: 'ADDR', commands: ['agent'], help: "address other hosts reach this node on (default: an IPv4 address of the\ndefault route's interface, never link-local, as the kubelet chooses)" },
  'agent-port': { type: 'string', value: 'PORT', commands: ['agent', 'up'], help: "HTTPS port of the agent's endpoint for logs and exec, which only the control\nplane may call (default 10250, or a free port if taken; 0 = any free port)", helpFor: { up: { help: "as for 'berth agent'" } } },
  'cluster-dns': { type: 'string', value: 'IP[,IP]', commands: ['agent', 'up'], help: "nameservers of ClusterFirst pods; the node-local resolver answers on the first\n(default: the kube-dns Service's address, 10.96.0.10)", helpFor: { up: { value: 'IP', help: "as for 'berth agent'" } } },
  'resolv-conf': { type: 'string', value: 'FILE', commands: ['agent'], help: "the node's resolvers: Default pods inherit them, the node-local resolver forwards\nother names to them (default /etc/resolv.conf)" },
  'heartbeat-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'node status heartbeat period (default 10000, as the kubelet)' },
  'relist-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'safety-net resync of all pods against Docker (default 10000)' },
  'claim-sweep-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'how often volumes of deleted PersistentVolumeClaims, and directories of\nlocal-path volumes deleted under reclaim policy Delete, are removed (default 60000)' },
  'local-path-dir': { type: 'string', value: 'DIR', commands: ['agent'], help: "where the local-path provisioner's volumes of this node live, one directory\neach (default DATA_DIR/storage)" },
  'crash-backoff-base-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'first crash-loop backoff; doubles up to 300 s (default 10000, as the kubelet)' },
  'runtime-check-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'how often Docker is asked whether it is up (default 5000, as the kubelet)' },
  'runtime-down-after-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'no answer from Docker for this long: node NotReady (default 30000, as the kubelet)' },
  'runtime-event-retry-max-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'cap of the doubling delay between Docker event stream reconnects (default 30000)' },
  'token-check-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: "how often projected service account tokens are checked for a refresh\n(default 60000, the kubelet's sync period)" },
  'server-check-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'with several --server URLs: how often the one in use is asked for /readyz\n(default 2000)' },
  'metrics-sample-interval': { type: 'string', value: 'D', commands: ['agent'], help: 'how often pod and node CPU and memory are read from cgroups for the\nMetrics API (kubectl top), e.g. 15s (default 15s, as the kubelet; 0 = off)' },
  'server-check-timeout-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'with several --server URLs: a /readyz not answered 200 within this long\nmakes the agent move to the next server (default 3000)' },
  'service-proxy-table': { type: 'string', value: 'NAME', commands: ['agent', 'up'], help: 'the nftables table (family ip) the service proxy owns (default berth)', helpFor: { up: { help: "as for 'berth agent'" } } },
  ingress: { type: 'string', value: 'true|false', commands: ['agent', 'up'], help: 'run the built-in ingress controller (nginx) on this node (default true)', helpFor: { up: { help: "as for 'berth agent'" } } },
  'ingress-http-port': { type: 'string', value: 'PORT', commands: ['agent', 'up'], help: 'its host port for HTTP (default 80; 0 turns the ingress off)', helpFor: { up: { help: "as for 'berth agent'" } } },
  'ingress-https-port': { type: 'string', value: 'PORT', commands: ['agent', 'up'], help: 'its host port for HTTPS (default 443; 0 turns the ingress off)', helpFor: { up: { help: "as for 'berth agent'" } } },
  'registries-config': { type: 'string', value: 'FILE', commands: ['agent'], help: "the node's registry mirrors and logins, in k3s's registries.yaml shape\n(default DATA_DIR/registries.yaml; re-read before a pull when it changed)" },
  'images-dir': { type: 'string', value: 'DIR', commands: ['agent'], help: 'docker save tarballs (.tar, .tar.gz, .tar.zst) loaded at start and when added\n(default DATA_DIR/images)' },
  'images-poll-interval-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'how often --images-dir is looked at for new tarballs (default 5000)' },
  'registry-mirror-timeout-ms': { type: 'string', value: 'N', commands: ['agent'], help: 'how long one mirror may take before the next (or the registry itself) is\ntried (default 30000)' },
  'image-gc-high-threshold': { type: 'string', value: 'N', commands: ['agent'], help: 'percent of the image filesystem used that starts image garbage collection\n(default 85); unused images go, least recently used first, until usage is' },
  'image-gc-low-threshold': { type: 'string', value: 'N', commands: ['agent'], help: 'under this percent (default 80)' },
  'image-minimum-gc-age': { type: 'string', value: 'D', commands: ['agent'], help: 'an image first seen less than this long ago is kept (default 2m)' },
  'image-gc-period': { type: 'string', value: 'D', commands: ['agent'], help: 'how often image GC and DiskPressure measure the disks (default 5m)' },
  'serialize-image-pulls': { type: 'string', value: 'true|false', commands: ['agent'], help: 'pull one image at a time (default true, as the kubelet)' },
  'max-parallel-image-pulls': { type: 'string', value: 'N', commands: ['agent'], help: 'with --serialize-image-pulls=false: at most N pulls at once (default no limit)' },
  'sandbox-network': { type: 'string', value: 'agent|runtime', commands: ['agent'], help: "who wires pods into the node's pod bridge: the agent, with a veth pair\nper pod (default, faster), or Docker, attaching each pause container to\nits bridge network" },
  'from-sqlite': { type: 'string', value: 'FILE', commands: ['migrate'], help: 'the SQLite store to copy (default: DIR/state.db); refused while a server holds it' },
  force: { type: 'boolean', commands: ['migrate'], help: 'delete every key under the prefix first, instead of refusing a non-empty prefix\n(running the same migration again resumes an interrupted one without --force)' },
  user: { type: 'string', value: 'NAME', commands: ['kubeconfig'], help: "the user (the certificate's CN) (required unless --server is given)" },
  group: { type: 'string', value: 'G', multiple: true, commands: ['kubeconfig'], help: "a group (the certificate's O); repeat for more" },
  expiration: { type: 'string', value: 'DURATION', commands: ['kubeconfig'], help: "requested validity, e.g. 24h, 30m (default: the signer's maximum, one year)" },
  out: { type: 'string', value: 'FILE', commands: ['kubeconfig', 'token'], help: 'write here (mode 0600) instead of stdout', inUsageOf: ['token'] },
  kubeconfig: { type: 'string', value: 'FILE', commands: ['kubeconfig', 'token'], help: 'the admin kubeconfig to use (default DIR/kubeconfig.yaml)' },
  ttl: { type: 'string', value: 'DURATION', commands: ['token'], help: 'how long the token admits joins, e.g. 24h, 30m; 0 = never expires (default 24h)' },
  description: { type: 'string', value: 'TEXT', commands: ['token'], help: 'what the token is for, shown by berth token list', inUsageOf: ['token'] },
} as const satisfies Record<string, FlagSpec>;

type FlagName = keyof typeof FLAGS;
/** The flags `command` takes. */
type FlagOf<C extends Command> = { [K in FlagName]: C extends (typeof FLAGS)[K]['commands'][number] ? K : never }[FlagName];
type FlagValue<K extends FlagName> = (typeof FLAGS)[K] extends { type: 'boolean' } ? boolean : (typeof FLAGS)[K] extends { multiple: true } ? string[] : string;
/** What parseFlags returns for `command`: each of its flags' value, when given, and --help. */
type FlagValues<C extends Command> = { [K in FlagOf<C>]?: FlagValue<K> } & { help?: boolean };

function flagEntries(command: Command): Array<[FlagName, FlagSpec]> {
  return (Object.entries(FLAGS) as Array<[FlagName, FlagSpec]>).filter(([, spec]) => spec.commands.includes(command));
}

/** `command`'s flags (and -h/--help) parsed from argv; an unknown flag fails as parseArgs fails it. */
function parseFlags<C extends Command>(command: C, argv: string[], opts: { allowPositionals?: boolean } = {}): { values: FlagValues<C>; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {};
  for (const [name, spec] of flagEntries(command)) options[name] = { type: spec.type, ...(spec.multiple ? { multiple: true } : {}) };
  options.help = { type: 'boolean', short: 'h' };
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: opts.allowPositionals ?? false });
  // parseArgs types its result from a literal options object; these options are built from FLAGS, whose types FlagValues states.
  return { values: values as FlagValues<C>, positionals };
}

/** The column the help words start at, after the `--flag VALUE` part. */
const HELP_WORDS_COLUMN = 26;

/** `command`'s help page: its intro, one line (and continuation lines) per flag from FLAGS, its outro. */
function helpText(command: Command): string {
  const lines: string[] = [];
  for (const [name, spec] of flagEntries(command)) {
    if (spec.inUsageOf?.includes(command)) continue;
    const own = spec.helpFor?.[command];
    const value = own?.value ?? spec.value;
    const usage = `  --${name}${value === undefined ? '' : value.startsWith('[') ? value : ` ${value}`}`;
    const [first = '', ...more] = (own?.help ?? spec.help).split('\n');
    lines.push(`${usage.length < HELP_WORDS_COLUMN ? usage.padEnd(HELP_WORDS_COLUMN) : `${usage}  `}${first}`);
    for (const line of more) lines.push(`${' '.repeat(HELP_WORDS_COLUMN)}${line}`);
  }
  const page = HELP_PAGES[command];
  return [`${page.intro}\n${lines.join('\n')}`, ...(page.outro === undefined ? [] : [page.outro])].join('\n\n');
}

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

/** --ingress: true or false (`--ingress=false` turns the node's ingress controller off). */
function ingressFlag(s: string | undefined): boolean | undefined {
  if (s === undefined) return undefined;
  if (s === 'true' || s === 'false') return s === 'true';
  fail(`invalid --ingress "${s}" (true or false)`);
}

function parsePort(s: string | undefined, fallback: number): number {
  if (s === undefined) return fallback;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`invalid port "${s}"`);
  return n;
}

async function runServer(rawArgv: string[]): Promise<void> {
  const { argv, value: leaderElectFlag } = explicitBoolean(rawArgv, 'leader-elect');
  const { values } = parseFlags('server', argv);
  // The names come from the controller registrations, which load every controller: only for this help.
  if (values.help) return void console.log(helpText('server').replace('{controllers}', (await import('./controller-names.js')).CONTROLLER_NAMES.join(', ')));
  const num = (s: string | undefined, flag: string) => {
    if (s === undefined) return undefined;
    const n = Number(s);
    if (!Number.isFinite(n) || n < 0) fail(`invalid --${flag} "${s}"`);
    return n;
  };
  const leaderElection = await leaderElectionFlags({
    // Several servers share a store only through etcd; on SQLite a crashed server restarted with
    // election would sit a lease duration without controllers, waiting out its own old Lease.
    enabled: leaderElectFlag ?? (values['leader-elect'] || Boolean(values['etcd-servers'])),
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
    resourceQuotaSyncPeriodMs: await durationFlagMs('resource-quota-sync-period', values['resource-quota-sync-period']),
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
  const { values } = parseFlags('agent', argv);
  if (values.help) return void console.log(helpText('agent'));
  const maxParallelImagePulls = imagePullLimit(values['serialize-image-pulls'], values['max-parallel-image-pulls']);
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
    | 'server-check-timeout-ms'
    | 'images-poll-interval-ms'
    | 'registry-mirror-timeout-ms';
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
  const { installProcessGuard } = await import('../agent/node/process-guard.js');
  const { HostConflictError, EXIT_HOST_CONFLICT } = await import('../agent/node/host-conflicts.js');
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
      localPathDir: values['local-path-dir'],
      ingress: {
        enabled: ingressFlag(values.ingress),
        httpPort: values['ingress-http-port'] === undefined ? undefined : parsePort(values['ingress-http-port'], 0),
        httpsPort: values['ingress-https-port'] === undefined ? undefined : parsePort(values['ingress-https-port'], 0),
      },
      registriesConfig: values['registries-config'],
      imagesDir: values['images-dir'],
      maxParallelImagePulls,
      registryMirrorTimeoutMs: ms('registry-mirror-timeout-ms'),
      ...imageGcThresholds(values['image-gc-high-threshold'], values['image-gc-low-threshold']),
      imageMinimumGcAgeMs: await durationFlag('image-minimum-gc-age', values['image-minimum-gc-age']),
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
        imagesPollMs: ms('images-poll-interval-ms'),
        imageGcMs: await durationFlagMs('image-gc-period', values['image-gc-period']),
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

/**
 * --serialize-image-pulls (default true) and --max-parallel-image-pulls, as the kubelet reads them: the
 * limit needs serialized pulls off; off without a limit is no limit (0).
 */
function imagePullLimit(serialize: string | undefined, max: string | undefined): number {
  if (serialize !== undefined && serialize !== 'true' && serialize !== 'false') fail(`invalid --serialize-image-pulls "${serialize}": must be true or false`);
  const serialized = serialize !== 'false';
  if (max === undefined) return serialized ? 1 : 0;
  const n = Number(max);
  if (!Number.isInteger(n) || n < 1) fail(`invalid --max-parallel-image-pulls "${max}": must be a positive integer`);
  if (serialized && n > 1) fail('--max-parallel-image-pulls greater than 1 needs --serialize-image-pulls=false');
  return n;
}

/** --image-gc-high-threshold / --image-gc-low-threshold: percents, low not above high (the kubelet's check). */
function imageGcThresholds(high: string | undefined, low: string | undefined): { imageGcHighThresholdPercent?: number; imageGcLowThresholdPercent?: number } {
  const percent = (flag: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0 || n > 100) fail(`invalid --${flag} "${v}": must be an integer percent between 0 and 100`);
    return n;
  };
  const h = percent('image-gc-high-threshold', high);
  const l = percent('image-gc-low-threshold', low);
  if ((l ?? 80) > (h ?? 85)) fail(`--image-gc-low-threshold (${l ?? 80}) must not be greater than --image-gc-high-threshold (${h ?? 85})`);
  return { ...(h === undefined ? {} : { imageGcHighThresholdPercent: h }), ...(l === undefined ? {} : { imageGcLowThresholdPercent: l }) };
}

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
  const { values } = parseFlags('up', argv);
  if (values.help) return void console.log(helpText('up'));
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
  for (const flag of ['docker-socket', 'agent-port', 'cluster-dns', 'service-proxy-table', 'ingress', 'ingress-http-port', 'ingress-https-port'] as const) {
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

/** `berth agent`'s exit status when another cluster on the host holds what it would take (agent/node/host-conflicts.ts). */
const EXIT_HOST_CONFLICT_CODE = 4;

/** The Pod Security flags, as `berth server` and `berth up` take them. */
type PodSecurityFlag = 'pod-security-default-enforce' | 'pod-security-default-audit' | 'pod-security-default-warn' | 'pod-security-exempt-namespaces';

type PodSecurityLevel = 'privileged' | 'baseline' | 'restricted';

/** The Pod Security flags as control-plane options; audit and warn follow enforce unless given. */
function podSecurityOptions(values: Partial<Record<PodSecurityFlag, string>>): {
  podSecurityDefaults: { enforce: PodSecurityLevel; audit: PodSecurityLevel; warn: PodSecurityLevel };
  podSecurityExemptNamespaces?: string[];
} {
  const level = (flag: PodSecurityFlag, fallback: PodSecurityLevel): PodSecurityLevel => {
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
  const { values } = parseFlags('kubeconfig', argv);
  if (values.help) {
    console.log(helpText('kubeconfig'));
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
  const { values, positionals } = parseFlags('token', argv, { allowPositionals: true });
  const [action, id, ...extra] = positionals;
  if (values.help || action === undefined) return void console.log(helpText('token'));
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
      fail(`unknown action "${action}"\n\n${helpText('token')}`);
  }
}

async function runMigrate(argv: string[]): Promise<void> {
  const { values } = parseFlags('migrate', argv);
  if (values.help) {
    console.log(helpText('migrate'));
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
  const { values } = parseFlags('down', argv);
  if (values.help) return void console.log(helpText('down'));
  const { down } = await import('../agent/node/down.js');
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
      console.log(MAIN_HELP);
      return;
    default:
      fail(`unknown command "${cmd}"\n\n${MAIN_HELP}`);
  }
}

const invokedDirectly = process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`berth: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
}
