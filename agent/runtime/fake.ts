/**
 * An in-memory ContainerRuntime for unit tests: containers, images and events without Docker. It owns a
 * call log (what the agent asked for) and knobs to make containers exit, images fail to pull, or creates
 * fail, so tests can drive every branch of the pod worker deterministically.
 */
import type { PullPolicy } from '../../src/api/types.js';
import { systemClock, type Clock } from '../clock.js';
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from '../node/labels.js';
import {
  ImagePullError,
  withDefaultTag,
  type AppSpec,
  type ContainerInfo,
  type ContainerRuntime,
  type ContainerSummary,
  type CreateResult,
  type EventSubscription,
  type ExecResult,
  type ImageRef,
  type InfraSpec,
  type PullHooks,
  type RuntimeEvent,
} from './runtime.js';
import type { NetworkRuntime } from './networks.js';
import type { VolumeRuntime } from './volumes.js';

export interface FakeContainer {
  info: ContainerInfo;
  kind: 'infra' | 'app';
  spec: InfraSpec | AppSpec;
}

export interface FakeCall {
  op: 'runInfra' | 'createApp' | 'start' | 'stop' | 'remove' | 'pull' | 'exec';
  target: string;
  /** exec: the command */
  cmd?: string[];
}

export class FakeRuntime implements ContainerRuntime {
  readonly containers = new Map<string, FakeContainer>();
  readonly calls: FakeCall[] = [];
  /** images present locally (normalized with a default tag) */
  readonly images = new Set<string>();
  /** images a pull can fetch; a pull of anything else fails */
  readonly pullable = new Set<string>();
  /** exit code a stopped container reports */
  stopExitCode = 137;
  /** when set, createApp throws this */
  createError: Error | undefined;
  /** answers runInContainer (exec probes and hooks); default: exit 0, no output */
  execHandler: (id: string, cmd: string[]) => ExecResult | Promise<ExecResult> = () => ({ exitCode: 0, output: '', timedOut: false });
  /** what readLogs returns per container id */
  readonly logs = new Map<string, string>();
  private seq = 0;
  private ipSeq = 1;
  private readonly subscribers = new Set<{ labels: string[]; onEvent: (ev: RuntimeEvent) => void; onError: (err: Error) => void }>();
  /** set while the daemon is "gone": every call rejects with it and event streams break (goDown / comeBack) */
  private unreachable: Error | undefined;
  /** one-shot failures of the next call of an operation (e.g. a reset connection during a list) */
  readonly failNext = new Map<'list' | 'inspect' | 'version', Error>();
  /** subscriptions opened so far (event stream reconnects) */
  subscribeCount = 0;
  /** none unless a test gives it some (FakeVolumeRuntime): without them the agent has no claim volumes */
  volumes?: VolumeRuntime;
  /** none unless a test gives it some (FakeNetworkRuntime): without them the agent makes no pod network */
  networks?: NetworkRuntime;

  constructor(private readonly clock: Clock = systemClock) {}

  private iso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  private emit(action: string, c: ContainerInfo): void {
    for (const s of this.subscribers) {
      if (matches(c.labels, s.labels)) s.onEvent({ action, containerId: c.id, name: c.name, labels: { ...c.labels } });
    }
  }

  /** Test knob: the daemon went away (connections refused); its event streams break. */
  goDown(err: Error = Object.assign(new Error('connect ENOENT /var/run/docker.sock'), { code: 'ENOENT', syscall: 'connect' })): void {
    this.unreachable = err;
    const subs = [...this.subscribers];
    this.subscribers.clear();
    for (const s of subs) s.onError(new Error('event stream ended'));
  }

  /** Test knob: the daemon answers again; with `killAll`, every container ended as a daemon restart leaves them. */
  comeBack(o: { killAll?: boolean; exitCode?: number } = {}): void {
    this.unreachable = undefined;
    if (!o.killAll) return;
    for (const c of this.containers.values()) {
      if (c.info.state !== 'running') continue;
      c.info.state = 'exited';
      c.info.exit = { exitCode: o.exitCode ?? 137, oomKilled: false, error: '', finishedAt: this.iso() };
      if (c.info.startedAt) c.info.exit.startedAt = c.info.startedAt;
    }
  }

  private reachable(op?: 'list' | 'inspect' | 'version'): void {
    if (this.unreachable) throw this.unreachable;
    const once = op && this.failNext.get(op);
    if (once) {
      this.failNext.delete(op);
      throw once;
    }
  }

  addImage(image: string): void {
    this.images.add(withDefaultTag(image));
  }

  async version(): Promise<string> {
    this.reachable('version');
    return 'docker://20.10.24';
  }

  async list(filter: { labels: string[] }): Promise<ContainerSummary[]> {
    // A real list answers after a round trip: inspects started beside it may settle first.
    await new Promise((r) => setImmediate(r));
    this.reachable('list');
    const out: ContainerSummary[] = [];
    for (const c of this.containers.values()) {
      if (matches(c.info.labels, filter.labels)) out.push({ id: c.info.id, name: c.info.name, labels: { ...c.info.labels }, state: c.info.state, createdAt: c.info.createdAt });
    }
    return out;
  }

  async inspect(id: string): Promise<ContainerInfo | undefined> {
    this.reachable('inspect');
    const c = this.containers.get(id);
    return c ? structuredClone(c.info) : undefined;
  }

  /** the logins each reference's last pull was given (tests check which Secrets reached the runtime) */
  readonly pullLogins = new Map<string, Array<{ username: string; serveraddress: string }>>();

  async inspectImage(image: string): Promise<ImageRef | undefined> {
    this.reachable();
    const ref = withDefaultTag(image);
    return this.images.has(ref) ? { id: `sha256:${ref}`, repoDigests: [] } : undefined;
  }

  async ensureImage(image: string, policy: PullPolicy, hooks?: PullHooks): Promise<ImageRef> {
    this.reachable();
    const ref = withDefaultTag(image);
    if (policy !== 'Always' && this.images.has(ref)) return { id: `sha256:${ref}`, repoDigests: [] };
    if (policy === 'Never') throw new ImagePullError(image, `Container image "${image}" is not present with pull policy of Never`, true);
    hooks?.onPulling?.();
    // Asked as the Docker runtime asks it, so the pod's pull Secrets are read (and reported) the same way.
    this.pullLogins.set(ref, (await hooks?.credentials?.()) ?? []);
    this.calls.push({ op: 'pull', target: ref });
    if (!this.pullable.has(ref)) throw new ImagePullError(ref, `failed to pull image "${ref}": not found`);
    this.images.add(ref);
    return { id: `sha256:${ref}`, repoDigests: [`${ref.split(':')[0]}@sha256:fake`], pulled: true, size: 1024 };
  }

  async ensureInfraImage(): Promise<void> {}

  private byName(name: string): FakeContainer | undefined {
    for (const c of this.containers.values()) if (c.info.name === name) return c;
    return undefined;
  }

  private add(kind: 'infra' | 'app', spec: InfraSpec | AppSpec, image: string): CreateResult {
    const existing = this.byName(spec.name);
    if (existing) return { id: existing.info.id, adopted: true };
    const id = `c${String(++this.seq).padStart(4, '0')}`;
    const info: ContainerInfo = {
      id,
      name: spec.name,
      labels: { ...spec.labels },
      state: 'created',
      createdAt: this.clock.now(),
      image,
      imageId: `sha256:${withDefaultTag(image)}`,
      ips: {},
    };
    this.containers.set(id, { info, kind, spec });
    this.emit('create', info);
    return { id, adopted: false };
  }

  async runInfra(spec: InfraSpec): Promise<CreateResult> {
    this.reachable();
    this.calls.push({ op: 'runInfra', target: spec.name });
    const r = this.add('infra', spec, 'berth/pause:fake');
    const c = this.containers.get(r.id)!;
    if (c.info.state !== 'running') {
      c.info.ips = { [spec.network]: spec.address ?? `10.88.0.${++this.ipSeq}` };
      await this.start(r.id);
    }
    return r;
  }

  async createApp(spec: AppSpec): Promise<CreateResult> {
    this.reachable();
    this.calls.push({ op: 'createApp', target: spec.name });
    if (this.createError) throw this.createError;
    return this.add('app', spec, spec.image);
  }

  async start(id: string): Promise<void> {
    this.reachable();
    this.calls.push({ op: 'start', target: id });
    const c = this.containers.get(id);
    if (!c) throw new Error(`no such container ${id}`);
    if (c.info.state === 'running') return;
    c.info.state = 'running';
    c.info.startedAt = this.iso();
    delete c.info.exit;
    this.emit('start', c.info);
  }

  /** Test knob: the container's process ended on its own. */
  exit(id: string, result: { exitCode: number; oomKilled?: boolean; error?: string }): void {
    const c = this.containers.get(id);
    if (!c || c.info.state !== 'running') return;
    c.info.state = 'exited';
    c.info.exit = {
      exitCode: result.exitCode,
      oomKilled: result.oomKilled ?? false,
      error: result.error ?? '',
      finishedAt: this.iso(),
    };
    if (c.info.startedAt) c.info.exit.startedAt = c.info.startedAt;
    if (result.oomKilled) this.emit('oom', c.info);
    this.emit('die', c.info);
  }

  async stop(id: string, _graceSeconds: number): Promise<void> {
    this.reachable();
    this.calls.push({ op: 'stop', target: id });
    this.exit(id, { exitCode: this.stopExitCode });
  }

  async remove(id: string): Promise<void> {
    this.reachable();
    this.calls.push({ op: 'remove', target: id });
    const c = this.containers.get(id);
    if (!c) return;
    this.containers.delete(id);
    this.emit('destroy', c.info);
  }

  async runInContainer(id: string, opts: { cmd: string[]; timeoutMs: number }): Promise<ExecResult> {
    this.reachable();
    this.calls.push({ op: 'exec', target: id, cmd: opts.cmd });
    const c = this.containers.get(id);
    if (!c || c.info.state !== 'running') throw new Error(`container ${id} is not running`);
    return this.execHandler(id, opts.cmd);
  }

  async readLogs(id: string, opts: { tailLines: number; maxBytes: number }): Promise<string> {
    this.reachable();
    const text = this.logs.get(id) ?? '';
    const lines = text.split('\n');
    const tail = lines.slice(Math.max(0, lines.length - opts.tailLines)).join('\n');
    return tail.slice(Math.max(0, tail.length - opts.maxBytes));
  }

  subscribe(filter: { labels: string[] }, onEvent: (ev: RuntimeEvent) => void, onError: (err: Error) => void, onOpen?: () => void): EventSubscription {
    this.subscribeCount++;
    const sub = { labels: filter.labels, onEvent, onError };
    let closed = false;
    queueMicrotask(() => {
      if (closed) return;
      if (this.unreachable) onError(this.unreachable);
      else {
        this.subscribers.add(sub);
        onOpen?.();
      }
    });
    return {
      close: () => {
        closed = true;
        this.subscribers.delete(sub);
      },
    };
  }

  close(): void {
    this.subscribers.clear();
  }

  /** Containers of one pod (by uid label), optionally of one container name. */
  podContainers(podUid: string, containerName?: string): ContainerInfo[] {
    return [...this.containers.values()]
      .map((c) => c.info)
      .filter((i) => i.labels[LABEL_POD_UID] === podUid && (containerName === undefined || i.labels[LABEL_CONTAINER_NAME] === containerName));
  }
}

/** Docker `label=` filter semantics: `key` must exist, `key=value` must match. */
function matches(labels: Record<string, string>, filters: string[]): boolean {
  return filters.every((f) => {
    const eq = f.indexOf('=');
    return eq < 0 ? f in labels : labels[f.slice(0, eq)] === f.slice(eq + 1);
  });
}
