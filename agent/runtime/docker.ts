/**
 * The Docker implementation of ContainerRuntime (dockerode over the local socket). It owns the translation
 * between the runtime-neutral specs and Docker's create options / inspect output — the only place in the
 * agent that knows Docker's JSON shapes. The cri-dockerd conventions it follows are in the notes
 * (runtime-facts.md): pause container with shareable IPC, app containers joined to its namespaces, no
 * Docker restart policy, no image HEALTHCHECK, swap equal to the memory limit.
 */
import type Dockerode from 'dockerode';
import { loadDockerode } from './load-dockerode.js';
import type { Logger } from 'pino';
import type { PullPolicy } from '../../src/api/types.js';
import { DockerNetworkRuntime } from './docker-networks.js';
import { DockerStreams } from './docker-streams.js';
import { DockerVolumeRuntime } from './docker-volumes.js';
import { applyContainerOptions, applySandboxOptions } from './docker-options.js';
import { ensurePauseImage, PAUSE_IMAGE } from './pause-image.js';
import type { PullCredential } from '../images/keyring.js';
import { ImagePuller, type ImagePullerOptions } from '../images/puller.js';
import type { RegistriesConfig } from '../images/registries.js';
import {
  ImagePullError,
  withDefaultTag,
  type AppSpec,
  type ContainerInfo,
  type ContainerRunState,
  type ContainerRuntime,
  type ContainerSummary,
  type CreateResult,
  type EventSubscription,
  type ExecResult,
  type ImageRef,
  type InfraSpec,
  type NodeImage,
  type PullHooks,
  type RuntimeEvent,
} from './runtime.js';

export interface DockerRuntimeOptions {
  /** default /var/run/docker.sock */
  socketPath?: string;
  log: Logger;
  /** tag of the pause image (tests may use their own) */
  pauseImage?: string;
  /** the node's registries.yaml as read now (mirrors, logins) */
  registries?: () => RegistriesConfig;
  /** pulls at once: 1 serializes them (default, as the kubelet), 0 = no limit */
  maxParallelPulls?: number;
  /** how long a mirror may take before the next place is tried */
  mirrorTimeoutMs?: number;
}

/** Label of the throwaway container that finds out whether the daemon may lower oom_score_adj. */
export const OOM_PROBE_LABEL = 'io.berth.oom-score-adj-probe';

interface DockerError {
  statusCode?: number;
  message?: string;
  json?: { message?: string };
}

function statusOf(err: unknown): number | undefined {
  return (err as DockerError)?.statusCode;
}

function messageOf(err: unknown): string {
  const e = err as DockerError;
  return e?.json?.message ?? e?.message ?? String(err);
}

/**
 * The registry's answer as Docker's engine words it, without dockerode's `(HTTP code 500) server error - `
 * wrapper. Docker says "no basic auth credentials" exactly when the registry answered 401 with a Basic
 * challenge and it had no login to send; the status is named too, as containerd's message names it.
 */
function registryMessage(message: string): string {
  const text = message.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
  return /no basic auth credentials$/.test(text) ? `${text} (the registry answered 401 Unauthorized)` : text;
}

/** Docker reports "never" as the zero time. */
function dockerTime(s: string | undefined): string | undefined {
  return !s || s.startsWith('0001-01-01') ? undefined : s;
}

function runState(status: string | undefined): ContainerRunState {
  switch (status) {
    case 'created':
      return 'created';
    case 'running':
    case 'paused':
    case 'restarting':
      return 'running';
    case 'exited':
    case 'dead':
    case 'removing':
      return 'exited';
    default:
      return 'unknown';
  }
}

/**
 * Reassembles Docker's multiplexed stdout/stderr stream (8-byte frame headers: stream, 0, 0, 0, size
 * big-endian) into text, keeping at most `max` bytes. Frames may be split across chunks.
 */
class FrameCollector {
  private pending: Buffer = Buffer.alloc(0);
  private readonly parts: Buffer[] = [];
  private size = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 8) {
      const kind = this.pending[0]!;
      // Not a multiplexed stream (a TTY container): take the bytes as they are.
      if (kind > 2 || this.pending[1] !== 0 || this.pending[2] !== 0 || this.pending[3] !== 0) {
        this.keep(this.pending);
        this.pending = Buffer.alloc(0);
        return;
      }
      const len = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + len) return;
      this.keep(this.pending.subarray(8, 8 + len));
      this.pending = this.pending.subarray(8 + len);
    }
  }

  private keep(b: Buffer): void {
    if (this.size >= this.max) return;
    const part = b.subarray(0, this.max - this.size);
    this.parts.push(part);
    this.size += part.length;
  }

  text(): string {
    return Buffer.concat(this.parts).toString('utf8');
  }
}

export class DockerRuntime implements ContainerRuntime {
  readonly docker: Dockerode;
  /** logs / exec / attach (docker-streams.ts) */
  readonly streams: DockerStreams;
  /** named volumes for persistentVolumeClaims (docker-volumes.ts) */
  readonly volumes: DockerVolumeRuntime;
  /** the pod bridge network (docker-networks.ts) */
  readonly networks: DockerNetworkRuntime;
  private readonly log: Logger;
  private readonly pauseImage: string;
  private pauseReady: Promise<void> | undefined;
  /** -998 as the kubelet sets it; 0 once the daemon turned out unable to apply it */
  private infraOomScoreAdj = -998;
  /** whether the daemon's oom_score_adj ability was probed (once per runtime instance) */
  private oomProbed = false;
  private readonly puller: ImagePuller;
  /** image id → repo digest ('' when none); images are immutable, so entries never go stale */
  private readonly digests = new Map<string, string>();

  constructor(opts: DockerRuntimeOptions) {
    const Docker = loadDockerode();
    this.docker = new Docker({ socketPath: opts.socketPath ?? '/var/run/docker.sock' });
    this.log = opts.log;
    this.pauseImage = opts.pauseImage ?? PAUSE_IMAGE;
    this.streams = new DockerStreams({ docker: this.docker, log: opts.log });
    this.volumes = new DockerVolumeRuntime(this.docker);
    this.networks = new DockerNetworkRuntime(this.docker);
    const pullerOpts: ImagePullerOptions = {
      log: opts.log,
      engine: {
        pullOnce: (ref, o) => this.pullOnce(ref, o),
        tag: async (source, target) => {
          const at = target.lastIndexOf(':');
          await this.docker.getImage(source).tag({ repo: target.slice(0, at), tag: target.slice(at + 1) });
        },
        untag: async (ref) => {
          await this.docker.getImage(ref).remove({ noprune: true });
        },
      },
    };
    if (opts.registries) pullerOpts.registries = opts.registries;
    if (opts.maxParallelPulls !== undefined) pullerOpts.maxParallel = opts.maxParallelPulls;
    if (opts.mirrorTimeoutMs !== undefined) pullerOpts.mirrorTimeoutMs = opts.mirrorTimeoutMs;
    this.puller = new ImagePuller(pullerOpts);
  }

  async version(): Promise<string> {
    const v = await this.docker.version();
    return `docker://${v.Version}`;
  }

  async list(filter: { labels: string[] }): Promise<ContainerSummary[]> {
    const items = await this.docker.listContainers({ all: true, filters: { label: filter.labels } });
    return items.map((c) => ({
      id: c.Id,
      name: (c.Names?.[0] ?? '').replace(/^\//, ''),
      labels: c.Labels ?? {},
      state: runState(c.State),
      createdAt: c.Created * 1000,
    }));
  }

  async inspect(id: string): Promise<ContainerInfo | undefined> {
    let c: Dockerode.ContainerInspectInfo;
    try {
      c = await this.docker.getContainer(id).inspect();
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
    let state = runState(c.State?.Status);
    // A start that failed (bad entrypoint) leaves a "created" container with an error and exit code: it ended.
    if (state === 'created' && (c.State?.Error || c.State?.ExitCode)) state = 'exited';
    const ips: Record<string, string> = {};
    for (const [net, cfg] of Object.entries(c.NetworkSettings?.Networks ?? {})) {
      if (cfg?.IPAddress) ips[net] = cfg.IPAddress;
    }
    const info: ContainerInfo = {
      id: c.Id,
      name: c.Name.replace(/^\//, ''),
      labels: c.Config?.Labels ?? {},
      state,
      createdAt: Date.parse(c.Created),
      image: c.Config?.Image ?? '',
      imageId: c.Image,
      ips,
    };
    const digest = await this.digestOf(c.Image);
    if (digest) info.imageDigest = digest;
    if (state === 'running' && c.State?.Pid) info.pid = c.State.Pid;
    const startedAt = dockerTime(c.State?.StartedAt);
    if (startedAt) info.startedAt = startedAt;
    if (state === 'exited') {
      info.exit = {
        exitCode: c.State.ExitCode,
        oomKilled: c.State.OOMKilled === true,
        error: c.State.Error ?? '',
      };
      if (startedAt) info.exit.startedAt = startedAt;
      const finishedAt = dockerTime(c.State.FinishedAt);
      if (finishedAt) info.exit.finishedAt = finishedAt;
    }
    return info;
  }

  private async digestOf(imageId: string): Promise<string> {
    const known = this.digests.get(imageId);
    if (known !== undefined) return known;
    const ref = await this.inspectImage(imageId);
    const digest = ref?.repoDigests[0] ?? '';
    if (this.digests.size > 512) this.digests.clear(); // bounded; refilled on demand
    this.digests.set(imageId, digest);
    return digest;
  }

  async inspectImage(image: string): Promise<ImageRef | undefined> {
    try {
      const info = await this.docker.getImage(image).inspect();
      return { id: info.Id, repoDigests: info.RepoDigests ?? [], size: info.Size, user: info.Config?.User ?? '' };
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  async ensureImage(image: string, policy: PullPolicy, hooks?: PullHooks): Promise<ImageRef> {
    const ref = withDefaultTag(image);
    if (policy !== 'Always') {
      const present = await this.inspectImage(ref);
      if (present) return present;
      if (policy === 'Never') {
        throw new ImagePullError(image, `Container image "${image}" is not present with pull policy of Never`, true);
      }
    }
    hooks?.onPulling?.();
    const credentials = (await hooks?.credentials?.()) ?? [];
    try {
      await this.puller.pull(ref, credentials);
    } catch (err) {
      throw new ImagePullError(ref, `failed to pull image "${ref}": ${registryMessage(messageOf(err))}`);
    }
    const pulled = await this.inspectImage(ref);
    if (!pulled) throw new ImagePullError(image, `image "${image}" is missing after a successful pull`);
    return { ...pulled, pulled: true };
  }

  /** One pull of exactly `ref`; the login goes in this request's X-Registry-Auth header, never to a file. */
  private async pullOnce(ref: string, opts: { credential?: PullCredential | undefined; signal?: AbortSignal | undefined }): Promise<void> {
    this.log.info({ image: ref, login: opts.credential?.source }, 'pulling image');
    const pullOpts: Record<string, unknown> = {};
    if (opts.credential) {
      const { username, password, serveraddress, email } = opts.credential;
      pullOpts.authconfig = email ? { username, password, serveraddress, email } : { username, password, serveraddress };
    }
    if (opts.signal) pullOpts.abortSignal = opts.signal;
    const stream = await this.docker.pull(ref, pullOpts);
    const events = await new Promise<Array<{ error?: string; errorDetail?: { message?: string } }>>((resolve, reject) => {
      opts.signal?.addEventListener('abort', () => (stream as NodeJS.ReadableStream & { destroy?(): void }).destroy?.(), { once: true });
      this.docker.modem.followProgress(stream, (err, output) => (err ? reject(err) : resolve(output ?? [])));
    });
    // Docker answers 200 and reports failures inside the progress stream.
    const failure = events.find((e) => e.error !== undefined || e.errorDetail !== undefined);
    if (failure) throw new Error(failure.errorDetail?.message ?? failure.error ?? 'pull failed');
  }

  /** Loads a `docker save` tar stream (plain or gzip); resolves with the names (or ids) it brought. */
  async loadImages(tar: NodeJS.ReadableStream): Promise<string[]> {
    const stream = await this.docker.loadImage(tar, { quiet: true });
    const events = await new Promise<Array<{ stream?: string; error?: string; errorDetail?: { message?: string } }>>((resolve, reject) => {
      tar.on('error', reject);
      this.docker.modem.followProgress(stream, (err, output) => (err ? reject(err) : resolve(output ?? [])));
    });
    const failure = events.find((e) => e.error !== undefined || e.errorDetail !== undefined);
    if (failure) throw new Error(failure.errorDetail?.message ?? failure.error ?? 'load failed');
    return events.flatMap((e) => /Loaded image(?: ID)?: (\S+)/.exec(e.stream ?? '')?.[1] ?? []);
  }

  /** Every image on the engine, for image garbage collection. */
  async imageInventory(): Promise<Array<{ id: string; names: string[]; sizeBytes: number }>> {
    const images = await this.docker.listImages();
    return images.map((i) => ({ id: i.Id, names: (i.RepoTags ?? []).filter((n) => !n.startsWith('<none>')), sizeBytes: i.Size }));
  }

  /** Ids of the images any container on the engine was made from, whatever its state or owner. */
  async imageIdsInUse(): Promise<Set<string>> {
    const containers = await this.docker.listContainers({ all: true });
    return new Set(containers.map((c) => c.ImageID));
  }

  /**
   * Removes an image by id with all its names: each tag is dropped, the last one deletes the image (the
   * engine refuses a removal by id while several repositories name it). Never forced: the engine still
   * refuses an image a container uses.
   */
  async removeImage(id: string): Promise<void> {
    const info = await this.docker.getImage(id).inspect();
    const tags = (info.RepoTags ?? []).filter((t) => !t.startsWith('<none>'));
    if (tags.length <= 1) return void (await this.docker.getImage(id).remove({ force: false }));
    for (const tag of tags) await this.docker.getImage(tag).remove({ force: false });
  }

  /** Where the engine keeps images (the image filesystem the kubelet's image GC measures). */
  async imageFsPath(): Promise<string> {
    const info = (await this.docker.info()) as { DockerRootDir?: string };
    return info.DockerRootDir ?? '/var/lib/docker';
  }

  /** the pause image's reference (image GC keeps it) */
  get infraImage(): string {
    return this.pauseImage;
  }

  async listImages(): Promise<NodeImage[]> {
    const images = await this.docker.listImages();
    return images
      .map((i) => ({
        names: [...(i.RepoDigests ?? []), ...(i.RepoTags ?? [])].filter((n) => !n.startsWith('<none>')),
        sizeBytes: i.Size,
      }))
      .filter((i) => i.names.length > 0)
      .sort((a, b) => b.sizeBytes - a.sizeBytes);
  }

  async ensureInfraImage(): Promise<void> {
    // Once present, later pods skip the check; a failure is retried by the next pod.
    this.pauseReady ??= ensurePauseImage(this.docker, { log: this.log, image: this.pauseImage })
      .then(() => this.probeOomScoreAdj())
      .catch((err: unknown) => {
        this.pauseReady = undefined;
        throw err;
      });
    return this.pauseReady;
  }

  /**
   * Finds out once per agent start whether the daemon may lower oom_score_adj (it needs CAP_SYS_RESOURCE,
   * which a daemon in a VM or a container may lack: runc then refuses to start the container). A throwaway
   * pause container with no network tries it, so no pod's infra container is the one that fails.
   */
  private async probeOomScoreAdj(): Promise<void> {
    if (this.oomProbed || this.infraOomScoreAdj === 0) return;
    try {
      // What an agent that died mid-probe left behind.
      const leftovers = await this.docker.listContainers({ all: true, filters: { label: [OOM_PROBE_LABEL] } });
      await Promise.all(leftovers.map((c) => this.remove(c.Id)));
      const wanted = this.infraOomScoreAdj;
      const refused = await this.probeStartFails(wanted);
      // runc's error does not name oom_score_adj: only a probe without it that starts tells it was the cause.
      if (refused !== undefined && (await this.probeStartFails(0)) === undefined) {
        this.log.warn({ err: refused, oomScoreAdj: wanted }, 'the daemon may not lower oom_score_adj; running pause containers without it');
        this.infraOomScoreAdj = 0;
      }
      this.oomProbed = true;
    } catch (err) {
      // Not known yet: the first infra container finds out instead (runInfra falls back on its own).
      this.log.warn({ err: messageOf(err) }, 'cannot tell whether the daemon may lower oom_score_adj');
    }
  }

  /** Starts and removes a throwaway pause container; the start error, undefined when it started. */
  private async probeStartFails(oomScoreAdj: number): Promise<string | undefined> {
    const probe = await this.docker.createContainer({
      name: `berth-oom-probe-${process.pid}-${Date.now().toString(36)}-${oomScoreAdj < 0 ? 'n' : 'z'}`,
      Image: this.pauseImage,
      Labels: { [OOM_PROBE_LABEL]: 'true' },
      HostConfig: { NetworkMode: 'none', OomScoreAdj: oomScoreAdj, RestartPolicy: { Name: 'no' } },
    });
    try {
      await probe.start();
      return undefined;
    } catch (err) {
      return messageOf(err);
    } finally {
      await this.remove(probe.id);
    }
  }

  async runInfra(spec: InfraSpec): Promise<CreateResult> {
    await this.ensureInfraImage();
    const create = (oomScoreAdj: number) =>
      this.createIdempotent(spec.name, applySandboxOptions({ // host namespaces, sysctls
        name: spec.name,
        Image: this.pauseImage,
        Hostname: spec.hostname,
        Labels: spec.labels,
        HostConfig: {
          // Shareable so app containers can join with IpcMode container:<id>.
          IpcMode: 'shareable',
          NetworkMode: spec.network,
          // The pause process needs next to no CPU and must be the last thing the OOM killer picks.
          CpuShares: 2,
          OomScoreAdj: oomScoreAdj,
          RestartPolicy: { Name: 'no' },
        },
        ...(spec.address === undefined ? {} : { NetworkingConfig: { EndpointsConfig: { [spec.network]: { IPAMConfig: { IPv4Address: spec.address } } } } }),
      }, spec.sandbox));
    const oomScoreAdj = this.infraOomScoreAdj;
    let result = await create(oomScoreAdj);
    try {
      await this.start(result.id);
    } catch (err) {
      if (oomScoreAdj === 0) throw err;
      // Lowering oom_score_adj needs CAP_SYS_RESOURCE, which a daemon in a VM or container may lack; runc
      // then fails the start. Run pause containers without it from now on rather than run no pods at all.
      if (this.infraOomScoreAdj !== 0) {
        this.log.warn({ err: messageOf(err), oomScoreAdj }, 'infra container failed to start with a negative oom_score_adj; running pause containers without it');
        this.infraOomScoreAdj = 0;
      }
      await this.remove(result.id);
      try {
        result = await create(0);
        await this.start(result.id);
      } catch (again) {
        this.infraOomScoreAdj = oomScoreAdj; // failed either way: oom_score_adj was not the cause
        throw again;
      }
    }
    return result;
  }

  createApp(spec: AppSpec): Promise<CreateResult> {
    const joined = `container:${spec.infraId}`;
    const hostConfig: Dockerode.HostConfig = {
      NetworkMode: joined,
      IpcMode: joined,
      RestartPolicy: { Name: 'no' },
    };
    if (spec.sharePid) hostConfig.PidMode = joined;
    if (spec.memoryBytes !== undefined) {
      hostConfig.Memory = spec.memoryBytes;
      hostConfig.MemorySwap = spec.memoryBytes;
    }
    if (spec.nanoCpus !== undefined) hostConfig.NanoCpus = spec.nanoCpus;
    if (spec.cpuShares !== undefined) hostConfig.CpuShares = spec.cpuShares;
    const create: Dockerode.ContainerCreateOptions = {
      name: spec.name,
      Image: spec.image,
      Labels: spec.labels,
      Env: spec.env,
      // The agent restarts containers and (later) runs probes; the image's own HEALTHCHECK stays off.
      Healthcheck: { Test: ['NONE'] },
      HostConfig: hostConfig,
    };
    if (spec.entrypoint) create.Entrypoint = spec.entrypoint;
    if (spec.cmd) create.Cmd = spec.cmd;
    if (spec.workingDir) create.WorkingDir = spec.workingDir;
    applyContainerOptions(create, spec.options);
    return this.createIdempotent(spec.name, create);
  }

  /** A 409 on the name means an earlier create went through unacknowledged: adopt it, never make a second. */
  private async createIdempotent(name: string, opts: Dockerode.ContainerCreateOptions): Promise<CreateResult> {
    try {
      const c = await this.docker.createContainer(opts);
      return { id: c.id, adopted: false };
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      const existing = await this.docker.getContainer(name).inspect();
      this.log.info({ container: name, id: existing.Id }, 'adopted existing container after a name conflict');
      return { id: existing.Id, adopted: true };
    }
  }

  async start(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).start();
    } catch (err) {
      if (statusOf(err) === 304) return; // already running
      throw err;
    }
  }

  async stop(id: string, graceSeconds: number): Promise<void> {
    try {
      await this.docker.getContainer(id).stop({ t: Math.max(0, Math.floor(graceSeconds)) });
    } catch (err) {
      const code = statusOf(err);
      if (code === 304 || code === 404) return; // already stopped / gone
      throw err;
    }
  }

  async remove(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).remove({ force: true, v: true });
    } catch (err) {
      const code = statusOf(err);
      if (code === 404) return;
      if (code === 409 && /already in progress/.test(messageOf(err))) return;
      throw err;
    }
  }

  async runInContainer(id: string, opts: { cmd: string[]; timeoutMs: number; maxOutputBytes?: number }): Promise<ExecResult> {
    const max = opts.maxOutputBytes ?? 10 * 1024;
    const exec = await this.docker.getContainer(id).exec({ Cmd: opts.cmd, AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({ hijack: true, stdin: false });
    const frames = new FrameCollector(max);
    const ended = new Promise<boolean>((resolve) => {
      stream.on('data', (chunk: Buffer) => frames.push(chunk));
      stream.on('end', () => resolve(true));
      stream.on('close', () => resolve(true));
      stream.on('error', () => resolve(true));
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      ended.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), Math.max(1, opts.timeoutMs));
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      // The process keeps running inside the container (Docker cannot kill an exec); only our wait ends.
      stream.destroy();
      return { exitCode: -1, output: frames.text(), timedOut: true };
    }
    const info = await exec.inspect();
    return { exitCode: typeof info.ExitCode === 'number' ? info.ExitCode : -1, output: frames.text(), timedOut: false };
  }

  async readLogs(id: string, opts: { tailLines: number; maxBytes: number }): Promise<string> {
    let buf: Buffer;
    try {
      buf = (await this.docker.getContainer(id).logs({ stdout: true, stderr: true, follow: false, tail: opts.tailLines })) as Buffer;
    } catch (err) {
      if (statusOf(err) === 404) return '';
      throw err;
    }
    const frames = new FrameCollector(Number.MAX_SAFE_INTEGER);
    frames.push(Buffer.isBuffer(buf) ? buf : Buffer.from(String(buf)));
    const all = Buffer.from(frames.text(), 'utf8');
    return all.subarray(Math.max(0, all.length - opts.maxBytes)).toString('utf8');
  }

  subscribe(filter: { labels: string[] }, onEvent: (ev: RuntimeEvent) => void, onError: (err: Error) => void, onOpen?: () => void): EventSubscription {
    let stream: NodeJS.ReadableStream | undefined;
    let closed = false;
    let failed = false;
    const fail = (err: Error) => {
      if (closed || failed) return;
      failed = true;
      onError(err);
    };
    this.docker
      .getEvents({
        filters: {
          type: ['container'],
          label: filter.labels,
          event: ['start', 'die', 'oom', 'destroy'],
        },
      })
      .then((s) => {
        if (closed) {
          (s as unknown as { destroy(): void }).destroy();
          return;
        }
        stream = s;
        // Handlers first: a stream that breaks at once must not emit an unheard 'error'.
        s.on('end', () => fail(new Error('docker event stream ended')));
        s.on('close', () => fail(new Error('docker event stream closed')));
        s.on('error', (e: Error) => fail(e));
        let buffered = '';
        s.setEncoding('utf8');
        s.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (!line) continue;
            let ev: { Action?: string; status?: string; id?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } };
            try {
              ev = JSON.parse(line) as typeof ev;
            } catch {
              continue;
            }
            const attributes = ev.Actor?.Attributes ?? {};
            const event: RuntimeEvent = { action: ev.Action ?? ev.status ?? '', containerId: ev.Actor?.ID ?? ev.id ?? '', labels: attributes };
            if (attributes.name) event.name = attributes.name;
            onEvent(event);
          }
        });
        onOpen?.();
      })
      .catch((e: unknown) => fail(e instanceof Error ? e : new Error(String(e))));
    return {
      close: () => {
        closed = true;
        (stream as unknown as { destroy?: () => void } | undefined)?.destroy?.();
      },
    };
  }

  close(): void {
    // dockerode keeps no pooled connections of its own beyond Node's global agent.
  }
}
