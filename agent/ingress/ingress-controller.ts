/**
 * The node's ingress controller: Berth's built-in IngressClass `berth` (controller
 * berth.dev/ingress-nginx) served by an nginx this agent owns (nginx-process.ts), configured from the
 * Ingresses, Services, EndpointSlices and TLS Secrets of the cluster as ingress-nginx configures its
 * nginx. It owns the ingress directory under the agent's data dir and its node's
 * `ingress.berth.dev/ports` annotation; the control plane turns that annotation into the Ingresses'
 * status.loadBalancer (src/controllers/ingress-status).
 *
 * Start:
 * 1. find nginx (Debian's package; scripts/setup.sh installs it); without it the ingress stays off, said once;
 * 2. adopt a master a killed agent left running, or check that the HTTP and HTTPS ports are free: a
 *    taken port keeps nginx from starting, is logged and recorded as an event on the Node, and is
 *    published with error PortInUse; the check is repeated every `portRetryMs`;
 * 3. follow Ingresses, IngressClasses, Services and EndpointSlices through informers, and poll the
 *    referenced TLS Secrets (a node may only read those, one at a time) every `secretPollMs`.
 * Each change coalesces into one sync: build the routing table (routes.ts), write changed
 * certificates (0600), render nginx.conf, and apply it (nginx -t, then reload) only when the text
 * changed. An Ingress the table leaves out, or serves with the default certificate, gets a Warning
 * event once per distinct problem. stop() stops nginx gracefully and withdraws the annotation.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { isApiError } from '../../src/api/errors.js';
import { classControllers, NODE_INGRESS_PORTS_ANNOTATION, PORT_IN_USE, servedBy, tlsSecretNames } from '../../src/api/ingress.js';
import { INGRESSCLASSES, INGRESSES } from '../../src/api/identities.js';
import type { EndpointSlice, Ingress, IngressPortStatus, KubeObject, Secret, Service } from '../../src/api/types.js';
import { CORE, type Client, type ResourceRef } from '../../src/client/client.js';
import type { EventRecorder } from '../../src/client/events.js';
import { Informer, keyOf } from '../../src/client/informer.js';
import { buildRoutes, type IngressProblem } from './routes.js';
import { certificateFiles, renderNginxConfig } from './nginx-config.js';
import { ensureDefaultCertificate, findNginx, NginxProcess, portProblem } from './nginx-process.js';

const ENDPOINT_SLICES: ResourceRef = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' };
const SECRETS: ResourceRef = { plural: 'secrets' };
const SLICE_SERVICE_INDEX = 'service';

export interface IngressControllerOptions {
  client: Client;
  nodeName: string;
  /** the agent's Services informer, shared with the rest of the node */
  services: Informer<Service>;
  /** the ingress directory (the agent's data dir + /ingress) */
  dir: string;
  httpPort: number;
  httpsPort: number;
  recorder: EventRecorder;
  log: Logger;
  /** the nginx binary; default the one on PATH */
  nginxBinary?: string | undefined;
  /** how often referenced TLS Secrets are read again (default 2 s: a rotated Secret is served within seconds) */
  secretPollMs?: number;
  /** how often taken ports are checked again (default 10 s) */
  portRetryMs?: number;
  /** coalescing delay between a change and the sync it causes (default 100 ms) */
  debounceMs?: number;
  /** nginx worker processes (default auto) */
  workers?: number | 'auto';
}

export class IngressController {
  private readonly ingresses: Informer<Ingress>;
  private readonly classes: Informer<KubeObject>;
  private readonly slices: Informer<EndpointSlice>;
  private readonly secrets = new Map<string, Secret>();
  private readonly reported = new Set<string>();
  private nginx: NginxProcess | undefined;
  private timers: NodeJS.Timeout[] = [];
  private pending: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private serving = false;
  /** the last sync's outcome, for tests and logs */
  lastError: string | undefined;

  constructor(private readonly o: IngressControllerOptions) {
    const log = o.log;
    this.ingresses = new Informer<Ingress>({ client: o.client, resource: INGRESSES, log });
    this.classes = new Informer<KubeObject>({ client: o.client, resource: INGRESSCLASSES, log });
    this.slices = new Informer<EndpointSlice>({ client: o.client, resource: ENDPOINT_SLICES, log });
    this.slices.addIndex(SLICE_SERVICE_INDEX, (s) => {
      const svc = s.metadata.labels?.['kubernetes.io/service-name'];
      return svc ? [`${s.metadata.namespace}/${svc}`] : [];
    });
    const kick = () => this.kick();
    for (const inf of [this.ingresses, this.classes, this.slices, o.services] as Informer<KubeObject>[]) inf.addHandlers({ onAdd: kick, onUpdate: kick, onDelete: kick });
  }

  /** Starts in the background; problems are logged and retried, never thrown. */
  start(): void {
    void this.run().catch((e: unknown) => this.o.log.error({ err: (e as Error).message }, 'ingress controller did not start'));
  }

  private async run(): Promise<void> {
    const binary = this.o.nginxBinary ?? findNginx();
    if (!binary) {
      this.o.log.error('ingress: nginx is not installed (apt-get install nginx, or scripts/setup.sh); the ingress is off on this node');
      await this.recordNodeEvent('IngressUnavailable', 'nginx is not installed on this node; the ingress is off');
      return;
    }
    fs.mkdirSync(this.o.dir, { recursive: true, mode: 0o700 });
    this.nginx = new NginxProcess({ dir: this.o.dir, binary });
    ensureDefaultCertificate(certificateFiles(this.o.dir, 'default'));
    while (!this.stopped && !(await this.portsFree())) await this.sleep(this.o.portRetryMs ?? 10_000);
    if (this.stopped) return;
    for (;;) {
      try {
        await Promise.all([this.ingresses.start(), this.classes.start(), this.slices.start(), this.o.services.start()]);
        break;
      } catch (e) {
        if (this.stopped) return;
        this.o.log.warn({ err: (e as Error).message }, 'ingress: cannot list what the ingress serves yet; retrying');
        await this.sleep(1000);
      }
    }
    this.serving = true;
    await this.syncNow();
    this.timers.push(setInterval(() => void this.pollSecrets(), this.o.secretPollMs ?? 2000));
    for (const t of this.timers) t.unref();
  }

  /** True when nginx may start: one of ours already runs, or both ports are free (else published as PortInUse). */
  private async portsFree(): Promise<boolean> {
    if (this.nginx?.pid() !== undefined) return true;
    const ports: IngressPortStatus[] = [];
    const taken: string[] = [];
    for (const [port, flag] of [[this.o.httpPort, '--ingress-http-port'], [this.o.httpsPort, '--ingress-https-port']] as const) {
      const problem = await portProblem(port);
      if (problem) {
        taken.push(`port ${port} (${flag}) cannot be listened on: ${problem === 'EADDRINUSE' ? 'another process holds it' : problem}`);
        ports.push({ port, protocol: 'TCP', error: PORT_IN_USE });
      } else ports.push({ port, protocol: 'TCP' });
    }
    if (taken.length === 0) return true;
    const message = `ingress not started: ${taken.join('; ')}. Free the port, choose others with --ingress-http-port/--ingress-https-port, or turn the ingress off with --ingress=false`;
    if (!this.reported.has(message)) {
      this.reported.add(message);
      this.o.log.error(message);
      await this.recordNodeEvent('IngressPortInUse', message);
    }
    await this.publishPorts(ports);
    return false;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      t.unref();
      this.timers.push(t);
    });
  }

  private async recordNodeEvent(reason: string, message: string): Promise<void> {
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: this.o.nodeName, uid: this.o.nodeName } } as KubeObject;
    await this.o.recorder.record({ about: node, type: 'Warning', reason, message });
  }

  private async publishPorts(ports: IngressPortStatus[] | null): Promise<void> {
    try {
      await this.o.client.patch(CORE.nodes, { name: this.o.nodeName, type: 'merge', patch: { metadata: { annotations: { [NODE_INGRESS_PORTS_ANNOTATION]: ports === null ? null : JSON.stringify(ports) } } } });
    } catch (e) {
      this.o.log.warn({ err: (e as Error).message }, 'ingress: cannot publish the node\'s ingress ports');
    }
  }

  private kick(): void {
    if (!this.serving || this.stopped || this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      void this.syncNow();
    }, this.o.debounceMs ?? 100);
  }

  /** One sync, or a second one after the running one when changes came meanwhile. Resolves when done. */
  async syncNow(): Promise<void> {
    if (this.syncing) {
      this.again = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      do {
        this.again = false;
        try {
          await this.sync();
          this.lastError = undefined;
        } catch (e) {
          this.lastError = (e as Error).message;
          this.o.log.error({ err: this.lastError }, 'ingress: configuration not applied');
          // Another process took a port between the check and nginx's start: say so as the check would.
          if (/Address already in use/.test(this.lastError)) await this.portsFree();
        }
      } while (this.again && !this.stopped);
    })().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  /** The Ingresses of a class served by this controller. */
  private served(): Ingress[] {
    const controllers = classControllers(this.classes.list());
    return this.ingresses.list().filter((i) => servedBy(i, controllers) && !i.metadata.deletionTimestamp);
  }

  /** Reads every referenced TLS Secret again; a changed one (or one gone or back) brings a sync. */
  private async pollSecrets(): Promise<void> {
    if (this.stopped) return;
    const wanted = new Set<string>();
    for (const ing of this.served()) for (const name of tlsSecretNames(ing)) wanted.add(`${ing.metadata.namespace}/${name}`);
    let changed = false;
    for (const key of [...this.secrets.keys()]) if (!wanted.has(key)) this.secrets.delete(key);
    for (const key of wanted) {
      const [namespace, name] = key.split('/') as [string, string];
      let secret: Secret | undefined;
      try {
        secret = await this.o.client.get<Secret>(SECRETS, { namespace, name });
      } catch (e) {
        if (!(isApiError(e) && (e.reason === 'NotFound' || e.reason === 'Forbidden'))) continue; // the server is away: keep what we have
      }
      const before = this.secrets.get(key)?.metadata.resourceVersion;
      if (secret) this.secrets.set(key, secret);
      else this.secrets.delete(key);
      if (before !== secret?.metadata.resourceVersion) changed = true;
    }
    if (changed) this.kick();
  }

  private async sync(): Promise<void> {
    const nginx = this.nginx;
    if (!nginx || this.stopped) return;
    const ingresses = this.served();
    // Secrets named by an Ingress the poller has not read yet are read now, so a new Ingress starts with its certificate.
    const missing = ingresses.flatMap((i) => tlsSecretNames(i).map((n) => `${i.metadata.namespace}/${n}`)).filter((k) => !this.secrets.has(k));
    if (missing.length) await this.pollSecrets();
    const services = new Map(this.o.services.list().map((s) => [keyOf(s), s]));
    const slices = new Map<string, EndpointSlice[]>();
    for (const s of this.slices.list()) {
      const svc = s.metadata.labels?.['kubernetes.io/service-name'];
      if (!svc) continue;
      const key = `${s.metadata.namespace}/${svc}`;
      slices.set(key, [...(slices.get(key) ?? []), s]);
    }
    const table = buildRoutes({ ingresses, services, slices, secrets: this.secrets });
    this.writeCertificates(table.certificates);
    const text = renderNginxConfig(table, { dir: this.o.dir, httpPort: this.o.httpPort, httpsPort: this.o.httpsPort, workers: this.o.workers });
    const firstStart = nginx.pid() === undefined;
    const applied = await nginx.apply(text);
    if (applied) this.o.log.info({ hosts: table.hosts.length, upstreams: table.upstreams.length }, firstStart ? 'ingress: nginx started' : 'ingress: nginx reloaded');
    if (firstStart) await this.publishPorts([{ port: this.o.httpPort, protocol: 'TCP' }, { port: this.o.httpsPort, protocol: 'TCP' }]);
    await this.report(table.problems, ingresses);
  }

  /** Certificates the table uses, written 0600 when their content changed; files of certificates no longer used are removed. */
  private writeCertificates(certs: ReadonlyArray<{ key: string; cert: string; privateKey: string }>): void {
    const keep = new Set(['default.crt', 'default.key']);
    for (const c of certs) {
      const files = certificateFiles(this.o.dir, c.key);
      keep.add(path.basename(files.cert)).add(path.basename(files.key));
      for (const [file, content] of [[files.cert, c.cert], [files.key, c.privateKey]] as const) {
        let old: string | undefined;
        try {
          old = fs.readFileSync(file, 'utf8');
        } catch {
          // new
        }
        if (old !== content) fs.writeFileSync(file, content, { mode: 0o600 });
      }
    }
    const certDir = path.join(this.o.dir, 'certs');
    for (const f of fs.readdirSync(certDir)) if (!keep.has(f)) fs.rmSync(path.join(certDir, f), { force: true });
  }

  /** A Warning event on each Ingress per new problem; a problem seen before is not reported again. */
  private async report(problems: IngressProblem[], ingresses: Ingress[]): Promise<void> {
    const byKey = new Map(ingresses.map((i) => [keyOf(i), i]));
    for (const p of problems) {
      const ing = byKey.get(p.ingress);
      const id = `${ing?.metadata.uid}|${p.reason}|${p.message}`;
      if (!ing || this.reported.has(id)) continue;
      this.reported.add(id);
      this.o.log.warn({ ingress: p.ingress, reason: p.reason }, p.message);
      await this.o.recorder.record({ about: ing as KubeObject, type: 'Warning', reason: p.reason, message: p.message });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    if (this.pending) clearTimeout(this.pending);
    this.ingresses.stop();
    this.classes.stop();
    this.slices.stop();
    await this.syncing;
    if (this.nginx) {
      await this.nginx.stop();
      await this.publishPorts(null);
    }
  }
}
