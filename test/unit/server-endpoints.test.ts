/**
 * Moving between control-plane replicas: ServerEndpoints' choice of server (fake timers for its
 * health check), and HttpClient plus Informer against two real in-process HTTP servers standing in
 * for replicas: a refused connection, a hung server, a dead watch stream, and a 410 from the new one.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { afterEach, describe, it, mock } from 'node:test';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { ServerEndpoints, parseServerList } from '../../src/client/endpoints.js';
import { HttpClient } from '../../src/client/http-client.js';
import { Informer } from '../../src/client/informer.js';

describe('ServerEndpoints', () => {
  afterEach(() => mock.timers.reset());

  it('parses --server lists, dropping duplicates and naming a bad entry', () => {
    assert.deepEqual(parseServerList('https://a:6443, https://b:6443/,https://a:6443'), ['https://a:6443', 'https://b:6443']);
    assert.deepEqual(parseServerList(['http://127.0.0.1:1']), ['http://127.0.0.1:1']);
    assert.throws(() => parseServerList('https://a:6443,b:6443'), /server "b:6443" must be an http:\/\/ or https:\/\/ URL/);
    assert.throws(() => parseServerList('https://a:6443,nonsense'), /server "nonsense" is not a URL/);
    assert.throws(() => parseServerList('https://a:6443/api'), /without a path/);
    assert.throws(() => parseServerList(' , '), /no server URL given/);
  });

  it('moves to the next server in order on a failure of the current one, wraps around, and ignores late failures of servers already left', () => {
    const e = new ServerEndpoints({ servers: ['https://a:1', 'https://b:1', 'https://c:1'] });
    const moves: string[] = [];
    e.onMove((m) => moves.push(`${m.from.host}->${m.to.host}`));
    const a = e.current();
    assert.equal(a.host, 'a:1');
    assert.equal(e.markFailed(a, 'refused'), true);
    assert.equal(e.current().host, 'b:1');
    // a second request that was also in flight to a reports its failure late: no second move
    assert.equal(e.markFailed(a, 'refused'), false);
    assert.equal(e.current().host, 'b:1');
    e.markFailed(e.current(), 'timeout');
    e.markFailed(e.current(), 'timeout');
    assert.equal(e.current().host, 'a:1');
    assert.deepEqual(moves, ['a:1->b:1', 'b:1->c:1', 'c:1->a:1']);
  });

  it('with one server never moves and never checks', () => {
    mock.timers.enable({ apis: ['setInterval'] });
    const e = new ServerEndpoints({ servers: ['https://only:1'], checkIntervalMs: 100 });
    let checks = 0;
    e.startChecking(async () => (checks++, false));
    mock.timers.tick(1000);
    assert.equal(checks, 0);
    assert.equal(e.markFailed(e.current(), 'refused'), false);
    assert.equal(e.current().host, 'only:1');
  });

  it('checks the current server every interval and moves when the check fails or throws', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    const e = new ServerEndpoints({ servers: ['https://a:1', 'https://b:1'], checkIntervalMs: 2000, checkTimeoutMs: 3000 });
    const checked: string[] = [];
    let healthy = true;
    e.startChecking(async (server, timeoutMs) => {
      assert.equal(timeoutMs, 3000);
      checked.push(server.host);
      if (!healthy) throw new Error('timed out');
      return true;
    });
    mock.timers.tick(1999);
    assert.deepEqual(checked, []);
    mock.timers.tick(1);
    await Promise.resolve();
    assert.deepEqual(checked, ['a:1']);
    assert.equal(e.current().host, 'a:1');
    healthy = false;
    mock.timers.tick(2000);
    for (let i = 0; i < 5; i++) await Promise.resolve();
    assert.equal(e.current().host, 'b:1', 'a failed check moves to b');
    mock.timers.tick(2000);
    await Promise.resolve();
    assert.deepEqual(checked, ['a:1', 'a:1', 'b:1'], 'the next check asks the new server');
    e.stopChecking();
  });
});

/** A stand-in replica: lists and watches pods, answers /readyz; `hang` stops it answering anything. */
class Replica {
  readonly server: http.Server;
  readonly sockets = new Set<net.Socket>();
  readonly watchesFrom: string[] = [];
  readonly lists: number[] = [];
  readonly watchers = new Set<http.ServerResponse>();
  pods: Pod[] = [];
  revision = 10;
  hang = false;
  /** answer the next watch with an ERROR 410 (history compacted) */
  expired = false;
  url = '';

  constructor() {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return this;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (this.hang) return;
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/readyz') return void res.end('ok');
    if (url.pathname !== '/api/v1/pods') return void res.writeHead(404).end('{}');
    if (url.searchParams.get('watch') !== 'true') {
      this.lists.push(this.revision);
      res.setHeader('content-type', 'application/json');
      return void res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(this.revision) }, items: this.pods }));
    }
    this.watchesFrom.push(url.searchParams.get('resourceVersion') ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    if (this.expired) {
      this.expired = false;
      res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message: 'too old resource version' } }) + '\n');
      return;
    }
    this.watchers.add(res);
    res.on('close', () => this.watchers.delete(res));
  }

  /** Stores and sends a change to every open watch. */
  emit(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod): void {
    const obj = { ...pod, metadata: { ...pod.metadata, resourceVersion: String(++this.revision) } };
    this.pods = type === 'DELETED' ? this.pods.filter((p) => p.metadata.name !== pod.metadata.name) : [...this.pods.filter((p) => p.metadata.name !== pod.metadata.name), obj];
    for (const w of this.watchers) w.write(JSON.stringify({ type, object: obj }) + '\n');
  }

  /** Dies as kill -9 leaves it: every connection cut, the port closed. */
  async kill(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }

  async close(): Promise<void> {
    this.hang = false;
    for (const s of this.sockets) s.destroy();
    if (this.server.listening) await new Promise((r) => this.server.close(r));
  }
}

function pod(name: string, rv = '1'): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: rv }, spec: { containers: [{ name: 'c', image: 'i' }] } } as Pod;
}

async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('HttpClient over several servers', () => {
  const open: Array<{ close(): unknown }> = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });
  const replica = async () => {
    const r = await new Replica().listen();
    open.push(r);
    return r;
  };
  const client = (servers: string[], extra: Partial<ConstructorParameters<typeof HttpClient>[0]> = {}) => {
    const c = new HttpClient({ server: servers, timeoutMs: 2000, ...extra });
    open.push(c);
    return c;
  };

  it('sends a request refused by the first server to the next, and stays there', async () => {
    const a = await replica();
    const b = await replica();
    b.pods = [pod('on-b')];
    await a.kill();
    const c = client([a.url, b.url], { checkIntervalMs: 0 });
    const list = await c.list<Pod>(CORE.pods);
    assert.deepEqual(list.items.map((p) => p.metadata.name), ['on-b']);
    assert.equal(c.server, b.url);
    await c.list<Pod>(CORE.pods);
    assert.deepEqual(b.lists.length, 2);
  });

  it('with one server, a refused request fails as before', async () => {
    const a = await replica();
    await a.kill();
    const c = client([a.url]);
    await assert.rejects(c.list(CORE.pods), (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED');
  });

  it('leaves a hung server on a failed health check: a GET in flight to it is answered by the next one', async () => {
    const a = await replica();
    const b = await replica();
    b.pods = [pod('on-b')];
    const c = client([a.url, b.url], { checkIntervalMs: 100, checkTimeoutMs: 200, timeoutMs: 30_000 });
    a.hang = true;
    const started = Date.now();
    const list = await c.list<Pod>(CORE.pods);
    const tookMs = Date.now() - started;
    assert.deepEqual(list.items.map((p) => p.metadata.name), ['on-b']);
    assert.equal(c.server, b.url);
    assert.ok(tookMs < 2000, `answered in ${tookMs} ms, long before the 30 s request timeout`);
  });

  it('an informer resumes on the next server from its last resourceVersion: no event lost, none replayed as new', async () => {
    const a = await replica();
    const b = await replica();
    a.pods = [pod('p1', '5'), pod('p2', '6')];
    const c = client([a.url, b.url], { checkIntervalMs: 0 });
    const seen: string[] = [];
    const inf = new Informer<Pod>({ client: c, resource: CORE.pods, retryDelayMs: 50 });
    open.push({ close: () => inf.stop() });
    inf.addHandlers({
      onAdd: (p) => seen.push(`add ${p.metadata.name}@${p.metadata.resourceVersion}`),
      onUpdate: (p) => seen.push(`update ${p.metadata.name}@${p.metadata.resourceVersion}`),
      onDelete: (p) => seen.push(`delete ${p.metadata.name}`),
    });
    await inf.start();
    await until(() => a.watchers.size === 1, 'the watch on A');
    a.emit('MODIFIED', pod('p1')); // rv 11
    await until(() => seen.length === 3, 'the update from A');
    // B shares the store: it holds what A wrote, and goes on from there.
    b.revision = a.revision;
    b.pods = a.pods;
    await a.kill();
    await until(() => b.watchers.size === 1, 'the watch re-established on B');
    assert.deepEqual(b.watchesFrom, ['11'], 'resumed from the last revision seen on A');
    assert.deepEqual(b.lists, [], 'no relist: the watch resumed');
    b.emit('DELETED', pod('p2')); // rv 12
    b.emit('ADDED', pod('p3')); // rv 13
    await until(() => seen.length === 5, 'the events from B');
    assert.deepEqual(seen, ['add p1@5', 'add p2@6', 'update p1@11', 'delete p2', 'add p3@13']);
    assert.equal(c.server, b.url);
  });

  it('a 410 from the new server relists there, reporting only what changed: unchanged objects cause no event', async () => {
    const a = await replica();
    const b = await replica();
    a.pods = [pod('keep', '5'), pod('gone', '6'), pod('changed', '7')];
    const c = client([a.url, b.url], { checkIntervalMs: 0 });
    const seen: string[] = [];
    const inf = new Informer<Pod>({ client: c, resource: CORE.pods, retryDelayMs: 50 });
    open.push({ close: () => inf.stop() });
    await inf.start();
    inf.addHandlers({
      onAdd: (p) => seen.push(`add ${p.metadata.name}`),
      onUpdate: (p) => seen.push(`update ${p.metadata.name}@${p.metadata.resourceVersion}`),
      onDelete: (p) => seen.push(`delete ${p.metadata.name}`),
    });
    seen.length = 0; // late handlers get the cache as adds; only what follows counts
    await until(() => a.watchers.size === 1, 'the watch on A');
    // While the agent moves, B's history has been compacted past the agent's revision.
    b.expired = true;
    b.revision = 40;
    b.pods = [pod('keep', '5'), pod('changed', '33'), pod('new', '35')];
    await a.kill();
    await until(() => b.lists.length === 1, 'the relist on B');
    await until(() => b.watchers.size === 1, 'the watch after the relist');
    assert.deepEqual(seen.sort(), ['add new', 'delete gone', 'update changed@33']);
    assert.deepEqual(b.watchesFrom, ['10', '40'], 'first resumed from A\'s revision, then from the relist');
    assert.deepEqual(b.lists, [40], 'one relist');
  });
});
