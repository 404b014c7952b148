/**
 * The container runtime contract the agent drives (a Nomad-driver-sized interface). It owns nothing but the
 * vocabulary; agent/runtime/docker.ts implements it over dockerode and agent/runtime/fake.ts in memory.
 * Everything above this interface is runtime-neutral: no Docker types leak past it.
 */
import type { PullCredential } from '../images/keyring.js';
import type { Duplex } from 'node:stream';
import type { PullPolicy } from '../../src/api/types.js';
import type { ContainerOptions, SandboxOptions } from './container-options.js';
import type { NetworkRuntime } from './networks.js';
import type { VolumeRuntime } from './volumes.js';

/** How a container ended, as the runtime recorded it. */
export interface ExitResult {
  exitCode: number;
  /** the kernel OOM killer ended it (Docker's State.OOMKilled — not inferred from exit 137) */
  oomKilled: boolean;
  /** RFC 3339 as the runtime reports it (sub-second precision kept); undefined if it never started */
  startedAt?: string;
  finishedAt?: string;
  /** the runtime's own error text (e.g. "executable file not found"), empty when none */
  error: string;
}

export type ContainerRunState = 'created' | 'running' | 'exited' | 'unknown';

/** A container as listed (cheap: no per-container inspect). */
export interface ContainerSummary {
  id: string;
  /** without Docker's leading slash */
  name: string;
  labels: Record<string, string>;
  state: ContainerRunState;
  /** ms since epoch */
  createdAt: number;
}

/** A container as inspected. */
export interface ContainerInfo extends ContainerSummary {
  /** the image reference it was created from */
  image: string;
  /** the image's id (sha256:…) */
  imageId: string;
  /** `repo@sha256:…` when the image came from a registry */
  imageDigest?: string;
  /** set while running (startedAt) or after it ended (all fields) */
  startedAt?: string;
  exit?: ExitResult;
  /** IPv4 address per network name (only meaningful for infra containers) */
  ips: Record<string, string>;
  /** the container's first process, while it runs (its /proc/<pid>/ns/* are the container's namespaces) */
  pid?: number;
}

/** The image as resolved locally, used for containerStatuses[].imageID. */
export interface ImageRef {
  id: string;
  /** `repo@sha256:…` when the image came from a registry */
  repoDigests: string[];
  /** ensureImage: the image was pulled now (not already present) */
  pulled?: boolean;
  /** ensureImage: bytes of the image, when known (the Pulled event mentions it) */
  size?: number;
  /** the image's configured user (`Config.User`), '' when unset: runAsNonRoot checks it */
  user?: string;
}

export interface InfraSpec {
  name: string;
  labels: Record<string, string>;
  hostname: string;
  /** the network the pod's IP lives on */
  network: string;
  /** the address the runtime gives the sandbox on `network` (the agent's pool chose it), instead of one of its own */
  address?: string;
  /** host namespaces and sysctls of the pod (agent/runtime/container-options.ts) */
  sandbox?: SandboxOptions;
}

export interface AppSpec {
  name: string;
  labels: Record<string, string>;
  image: string;
  /** the infra container whose network and IPC namespaces it joins */
  infraId: string;
  /** share the infra container's PID namespace (spec.shareProcessNamespace) */
  sharePid?: boolean;
  entrypoint?: string[];
  cmd?: string[];
  env: string[];
  workingDir?: string;
  /** bytes; swap is disabled by setting the swap limit to the same value */
  memoryBytes?: number;
  nanoCpus?: number;
  cpuShares?: number;
  /** mounts (volumes, /etc/hosts, resolv.conf, termination log) and securityContext, from the prestart hooks (agent/prestart/) */
  options?: ContainerOptions;
}

/** How a command run inside a container (probe, hook) ended. */
export interface ExecResult {
  /** -1 when it timed out or its exit code could not be read */
  exitCode: number;
  /** stdout and stderr interleaved, cut to the caller's maxOutputBytes */
  output: string;
  timedOut: boolean;
}

export interface CreateResult {
  id: string;
  /** the name already existed (an earlier create that was never acknowledged); that container was adopted */
  adopted: boolean;
}

export type RuntimeEventAction = 'create' | 'start' | 'die' | 'oom' | 'destroy' | 'stop' | 'kill';

export interface RuntimeEvent {
  action: RuntimeEventAction | string;
  containerId: string;
  /** container name, when the runtime reports it */
  name?: string;
  labels: Record<string, string>;
}

export interface EventSubscription {
  close(): void;
}

/** What a pull needs from its caller, asked only when a pull happens. */
export interface PullHooks {
  onPulling?(): void;
  /** the pod's registry logins that match the image (its pull Secrets), most specific first */
  credentials?(): Promise<PullCredential[]>;
}

/** One image on the node, as Node status.images lists it. */
export interface NodeImage {
  names: string[];
  sizeBytes: number;
}

/** Pull failures carry their own class so the pod worker can report ErrImagePull and back off. */
export class ImagePullError extends Error {
  constructor(
    readonly image: string,
    message: string,
    /** true when policy Never forbids pulling a missing image (ErrImageNeverPull) */
    readonly neverPull = false,
  ) {
    super(message);
    this.name = 'ImagePullError';
  }
}

/** The container's imagePullPolicy, or the default when it is unset (validation refuses any other value). */
export function pullPolicyOf(c: { image: string; imagePullPolicy?: string }): PullPolicy {
  const policy = c.imagePullPolicy;
  return policy === 'Always' || policy === 'IfNotPresent' || policy === 'Never' ? policy : defaultPullPolicy(c.image);
}

/** Policy Kubernetes applies when imagePullPolicy is unset: Always for `:latest` or untagged, else IfNotPresent. */
export function defaultPullPolicy(image: string): PullPolicy {
  if (image.includes('@')) return 'IfNotPresent';
  const tag = imageTag(image);
  return tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** The tag of an image reference, if any (a `:` after the last `/` — a registry port is not a tag). */
export function imageTag(image: string): string | undefined {
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const at = lastSegment.indexOf('@');
  const nameAndTag = at >= 0 ? lastSegment.slice(0, at) : lastSegment;
  const colon = nameAndTag.indexOf(':');
  return colon >= 0 ? nameAndTag.slice(colon + 1) : undefined;
}

/** The reference with `:latest` added when it names neither a tag nor a digest (Docker pulls every tag otherwise). */
export function withDefaultTag(image: string): string {
  return image.includes('@') || imageTag(image) !== undefined ? image : `${image}:latest`;
}

/** What `kubectl logs` asks for, in runtime terms. */
export interface LogStreamOptions {
  /** keep streaming what the container writes until it exits or the caller destroys the stream */
  follow: boolean;
  /** only the last N lines */
  tailLines?: number;
  /** only lines written at or after this time (ms since epoch) */
  sinceMs?: number;
  /** prefix each line with its RFC 3339 (nanosecond) timestamp and a space */
  timestamps: boolean;
}

/** A command to run inside a running container (`kubectl exec`). */
export interface ExecOptions {
  command: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** Which streams to connect to a container's main process (`kubectl attach`). */
export interface AttachOptions {
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** Terminal size in character cells. */
export interface TerminalSize {
  width: number;
  height: number;
}

/**
 * The stdio of a process inside a container, connected. Output streams end when the process (or, for attach,
 * the container) is done; with a TTY everything arrives on stdout and there is no stderr.
 */
export interface ContainerProcess {
  /** present when stdin was requested; end() closes the process's stdin (EOF), the output keeps flowing */
  stdin?: NodeJS.WritableStream;
  stdout?: NodeJS.ReadableStream;
  stderr?: NodeJS.ReadableStream;
  /** resolves once the connection to the process has ended (all output delivered to the streams above) */
  ended: Promise<void>;
  /** only meaningful with a TTY */
  resize(size: TerminalSize): Promise<void>;
  /** the exit code, once the output has ended; undefined when the runtime cannot tell (attach) */
  exitCode(): Promise<number | undefined>;
  /** tears the connection down (the process may keep running, as with `docker exec` detached) */
  close(): void;
}

/**
 * TCP connections to ports inside one pod's network namespace (`kubectl port-forward`, CRI's PortForward):
 * `localhost` is the pod's loopback, so servers bound to 127.0.0.1 in the pod are reachable.
 */
export interface PodPortDialer {
  /** connects to localhost:port in the pod; rejects with the reason (e.g. ECONNREFUSED) */
  dial(port: number): Promise<Duplex>;
  /** releases what the dialer holds; connections already made stay open */
  close(): void;
}

/**
 * Streaming access to containers: logs, exec, attach, port-forward. Optional on a runtime: the agent's
 * endpoint answers 503 for a runtime without it (the in-memory fake).
 */
export interface ContainerStreams {
  /** stdout and stderr interleaved as written (a TTY container's output as is) */
  logs(id: string, opts: LogStreamOptions): Promise<NodeJS.ReadableStream>;
  exec(id: string, opts: ExecOptions): Promise<ContainerProcess>;
  attach(id: string, opts: AttachOptions): Promise<ContainerProcess>;
  /** a dialer into the network namespace of a running infra container */
  portDialer(infraId: string): Promise<PodPortDialer>;
}

/**
 * What the agent needs from a container runtime. Implementations must be safe to call concurrently for
 * different containers; the agent serializes calls per pod.
 */
export interface ContainerRuntime {
  /** e.g. `docker://20.10.24` (Node.status.nodeInfo.containerRuntimeVersion) */
  version(): Promise<string>;
  /** Containers (any state) whose labels match every `key=value` filter. */
  list(filter: { labels: string[] }): Promise<ContainerSummary[]>;
  /** undefined when the container no longer exists */
  inspect(id: string): Promise<ContainerInfo | undefined>;
  /** Makes the image present per the policy; throws ImagePullError. Returns the local image. */
  ensureImage(image: string, policy: PullPolicy, hooks?: PullHooks): Promise<ImageRef>;
  /** Images on the node, largest first (Node status.images); optional for runtimes without a store. */
  listImages?(): Promise<NodeImage[]>;
  /** Loads a `docker save` tar stream (plain or gzip); resolves with the image names it brought. */
  loadImages?(tar: NodeJS.ReadableStream): Promise<string[]>;
  /** Local image, if present. */
  inspectImage(image: string): Promise<ImageRef | undefined>;
  /** Makes sure the infra (pause) image is present; runInfra does too, this lets startup do it early. */
  ensureInfraImage(): Promise<void>;
  /** Creates and starts the infra container from the runtime's pause image (idempotent by name). */
  runInfra(spec: InfraSpec): Promise<CreateResult>;
  /** Creates an app container (idempotent by name); start() runs it. */
  createApp(spec: AppSpec): Promise<CreateResult>;
  /** Starting a running container is a no-op. */
  start(id: string): Promise<void>;
  /** SIGTERM (or the image's stop signal), then SIGKILL after graceSeconds; a stopped or missing container is fine. */
  stop(id: string, graceSeconds: number): Promise<void>;
  /** Removes the container (forcibly if still running); a missing container is fine. */
  remove(id: string): Promise<void>;
  /**
   * Runs a command inside a running container and waits for it (exec probes, exec hooks). A command still
   * running after timeoutMs is abandoned and reported as timedOut; throws only when the exec cannot start.
   */
  runInContainer(id: string, opts: { cmd: string[]; timeoutMs: number; maxOutputBytes?: number }): Promise<ExecResult>;
  /** The last lines of a container's output (stdout and stderr), at most maxBytes from the end; '' if gone. */
  readLogs(id: string, opts: { tailLines: number; maxBytes: number }): Promise<string>;
  /**
   * Container lifecycle events for containers matching the label filters. `onEvent` gets each event;
   * `onError` is called once if the stream breaks or cannot be opened (the caller resubscribes and resyncs,
   * events may be lost); `onOpen` once the runtime accepted the subscription.
   */
  subscribe(filter: { labels: string[] }, onEvent: (ev: RuntimeEvent) => void, onError: (err: Error) => void, onOpen?: () => void): EventSubscription;
  /** Releases connections. */
  close(): void;
  /** logs / exec / attach (see ContainerStreams); absent on runtimes that cannot stream */
  streams?: ContainerStreams;
  /** named volumes (persistentVolumeClaim volumes); absent on runtimes without them */
  volumes?: VolumeRuntime;
  /** networks (the node's pod bridge); absent on runtimes the agent does not network itself */
  networks?: NetworkRuntime;
}
