/**
 * Lease-based leader election against a real registry (in-memory SQLite) through LocalClient, each
 * candidate with its own manual clock: one leader at a time; a graceful stop hands over at the next
 * retry; a frozen leader (kill -9) is replaced only after leaseDuration by the candidate's own clock,
 * whatever the holder's clock says; a leader that cannot renew steps down at renewDeadline, also when
 * its requests hang; leaseTransitions counts holders; racing writes (Conflict, AlreadyExists) never
 * give two leaders. Also the --leader-elect flag parsing of src/cli.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../agent/clock.js';
import { errors } from '../../src/api/errors.js';
import type { KubeObject, Lease, MicroTime } from '../../src/api/types.js';
import type { Client, DeleteRequest, ListQuery, PatchRequest, ResourceRef, WatchHandle, WatchRequest } from '../../src/client/client.js';
import { LocalClient } from '../../src/client/local-client.js';
import { durationMs, explicitBoolean } from '../../src/cli.js';
import { CONTROLLER_MANAGER_LOCK, LeaderElector, validateLeaderElectionTimings } from '../../src/controllers/runtime/leader-election.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { Registry } from '../../src/registry/registry.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';
import { LEASES } from '../../src/api/identities.js';

/** A client in front of the registry that can fail or hang every call, or hold Lease writes until several are pending. */
class ControlledClient implements Client {
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  /** hold Lease creates/updates until this many are pending, then let them go together (once) */
  barrier = 0;
  conflicts = 0;
  private held: Array<() => void> = [];

  constructor(private readonly inner: Client) {}

  private async gate(): Promise<void> {
    if (this.mode === 'fail') throw errors.internal('store unavailable');
    if (this.mode === 'hang') return new Promise<void>(() => undefined);
  }

  private async write<T>(isLease: boolean, call: () => Promise<T>): Promise<T> {
    await this.gate();
    if (isLease && this.barrier > 1) {
      await new Promise<void>((resolve) => {
        this.held.push(resolve);
        if (this.held.length >= this.barrier) {
          this.barrier = 0;
          for (const go of this.held.splice(0)) go();
        }
      });
    }
    try {
      return await call();
    } catch (e) {
      const reason = (e as { reason?: string }).reason;
      if (reason === 'Conflict' || reason === 'AlreadyExists') this.conflicts++;
      throw e;
    }
  }

  async get<T extends KubeObject>(res: ResourceRef, req: { namespace?: string; name: string }): Promise<T> {
    await this.gate();
    return this.inner.get<T>(res, req);
  }
  async list<T extends KubeObject>(res: ResourceRef, query?: ListQuery) {
    await this.gate();
    return this.inner.list<T>(res, query);
  }
  create<T extends KubeObject>(res: ResourceRef, obj: T, opts?: { namespace?: string }): Promise<T> {
    return this.write(res.plural === 'leases', () => this.inner.create(res, obj, opts));
  }
  update<T extends KubeObject>(res: ResourceRef, obj: T): Promise<T> {
    return this.write(res.plural === 'leases', () => this.inner.update(res, obj));
  }
  patch<T extends KubeObject>(res: ResourceRef, req: PatchRequest): Promise<T> {
    return this.write(false, () => this.inner.patch<T>(res, req));
  }
  delete(res: ResourceRef, req: DeleteRequest): Promise<unknown> {
    return this.write(false, () => this.inner.delete(res, req));
  }
  watch<T extends KubeObject>(res: ResourceRef, req: WatchRequest<T>): WatchHandle {
    return this.inner.watch(res, req);
  }
}

interface Candidate {
  name: string;
  elector: LeaderElector;
  clock: ManualClock;
  client: ControlledClient;
  /** its clock stands still: a process stopped dead (kill -9) */
  frozen: boolean;
  /** between onStartedLeading and onStoppedLeading */
  running: boolean;
  starts: number;
  stops: number;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');

async function flush(): Promise<void> {
  for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
}

async function bench() {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }), clock: { now: () => T0 } });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(registry.lookup('', 'namespaces')!.info, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } } as KubeObject);
  const local = new LocalClient(registry);
  const candidates: Candidate[] = [];
  /** order of leadership changes, e.g. ['a+', 'a-', 'b+'] */
  const log: string[] = [];
  let maxRunning = 0;

  const add = (name: string, o: { clockOffsetMs?: number; client?: ControlledClient } = {}): Candidate => {
    const clock = new ManualClock(T0 + (o.clockOffsetMs ?? 0));
    const client = o.client ?? new ControlledClient(local);
    const c: Candidate = {
      name,
      clock,
      client,
      frozen: false,
      running: false,
      starts: 0,
      stops: 0,
      elector: new LeaderElector({
        client,
        identity: name,
        clock,
        random: () => 0,
        onStartedLeading: () => {
          c.running = true;
          c.starts++;
          log.push(`${name}+`);
          maxRunning = Math.max(maxRunning, candidates.filter((x) => x.running && !x.frozen).length);
        },
        onStoppedLeading: () => {
          c.running = false;
          c.stops++;
          log.push(`${name}-`);
        },
      }),
    };
    candidates.push(c);
    return c;
  };

  /** Advance every unfrozen candidate's clock by ms, in 100 ms steps, letting their requests complete between steps. */
  const step = async (ms: number) => {
    for (let t = 0; t < ms; t += 100) {
      for (const c of candidates) if (!c.frozen) c.clock.advance(Math.min(100, ms - t));
      await flush();
      const live = candidates.filter((x) => x.running && !x.frozen).length;
      maxRunning = Math.max(maxRunning, live);
    }
  };

  const lease = async () => local.get<Lease>(LEASES, CONTROLLER_MANAGER_LOCK);
  const leaders = () => candidates.filter((c) => c.elector.isLeader() && !c.frozen).map((c) => c.name);

  return { registry, local, add, step, lease, leaders, log, maxRunning: () => maxRunning, candidates };
}

describe('leader election', () => {
  it('two candidates on one Lease: exactly one leads, named in the Lease, with a LeaderElection event', async () => {
    const b = await bench();
    const x = b.add('x');
    const y = b.add('y');
    x.elector.start();
    y.elector.start();
    await b.step(10_000);
    assert.deepEqual(b.leaders(), ['x']);
    assert.equal(x.running, true);
    assert.equal(y.running, false);
    const lease = await b.lease();
    assert.equal(lease.spec?.holderIdentity, 'x');
    assert.equal(lease.spec?.leaseDurationSeconds, 15);
    assert.equal(lease.spec?.leaseTransitions, 0);
    assert.ok(lease.spec?.acquireTime && lease.spec.renewTime);
    // Renewed every retryPeriod: renewTime is at most 2 s old by the leader's clock.
    assert.ok(x.clock.now() - Date.parse(lease.spec.renewTime) <= 2_000, `renewTime ${lease.spec.renewTime}`);
    assert.equal(y.elector.leader(), 'x');
    const events = await b.local.list<KubeObject & { reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } }>({ plural: 'events' }, { namespace: 'kube-system' });
    const election = events.items.filter((e) => e.reason === 'LeaderElection');
    assert.deepEqual(election.map((e) => [e.message, e.involvedObject?.kind, e.involvedObject?.name]), [['x became leader', 'Lease', 'berth-controller-manager']]);
    await y.elector.stop();
    await x.elector.stop();
  });

  it('a leader stopped gracefully stops its work, then releases the Lease; the other leads at its next retry', async () => {
    const b = await bench();
    const x = b.add('x');
    x.elector.start();
    await b.step(500);
    const y = b.add('y');
    y.elector.start();
    await b.step(3_000);
    assert.deepEqual(b.leaders(), ['x']);
    await x.elector.stop();
    const released = await b.lease();
    assert.equal(released.spec?.holderIdentity, '');
    assert.equal(released.spec?.leaseDurationSeconds, 1);
    assert.deepEqual(b.log, ['x+', 'x-'], 'the work stopped before the Lease was released');
    // y retries every 2 s (no jitter here): it leads within one retry period, not after 15 s.
    await b.step(2_100);
    assert.deepEqual(b.leaders(), ['y']);
    assert.deepEqual(b.log, ['x+', 'x-', 'y+']);
    assert.equal((await b.lease()).spec?.leaseTransitions, 1);
    await y.elector.stop();
  });

  it('a frozen leader (kill -9) is replaced only after leaseDuration on the candidate\'s own clock, whatever the holder\'s clock says', async () => {
    const b = await bench();
    // The holder's clock runs an hour behind: its renewTime looks long expired to anyone comparing clocks.
    const x = b.add('x', { clockOffsetMs: -3_600_000 });
    x.elector.start();
    await b.step(500);
    const y = b.add('y');
    y.elector.start();
    await b.step(20_000);
    assert.deepEqual(b.leaders(), ['x'], 'a live leader keeps the Lease however skewed its clock');
    // Freeze x right after one of its renewals.
    const before = (await b.lease()).spec?.renewTime;
    for (let i = 0; i < 30 && (await b.lease()).spec?.renewTime === before; i++) await b.step(100);
    assert.notEqual((await b.lease()).spec?.renewTime, before);
    x.frozen = true;
    await b.step(14_800);
    assert.equal(y.running, false, 'took over before leaseDuration had passed');
    // x froze within 100 ms of its last renewal: by 17.1 s, leaseDuration + retryPeriod after it has passed.
    await b.step(2_300);
    assert.equal(y.running, true, 'did not take over within leaseDuration + retryPeriod');
    const lease = await b.lease();
    assert.equal(lease.spec?.holderIdentity, 'y');
    assert.equal(lease.spec?.leaseTransitions, 1);
    assert.equal(b.maxRunning(), 1);
  });

  it('a leader whose renewals fail steps down at renewDeadline, before anyone may take over', async () => {
    const b = await bench();
    const x = b.add('x');
    x.elector.start();
    await b.step(500);
    const y = b.add('y');
    y.elector.start();
    await b.step(4_000);
    const before = (await b.lease()).spec?.renewTime;
    for (let i = 0; i < 30 && (await b.lease()).spec?.renewTime === before; i++) await b.step(100);
    x.client.mode = 'fail';
    await b.step(9_700);
    assert.equal(x.running, true, 'stepped down before renewDeadline');
    await b.step(500);
    assert.equal(x.running, false, 'still leading after renewDeadline without a renewal');
    assert.equal(y.running, false, 'y must wait out leaseDuration');
    // y, counting from when it last saw the record change, takes over; x, back, finds it held.
    await b.step(8_000);
    assert.deepEqual(b.leaders(), ['y']);
    x.client.mode = 'ok';
    await b.step(6_000);
    assert.deepEqual(b.leaders(), ['y']);
    assert.equal(b.maxRunning(), 1);
    assert.deepEqual(b.log, ['x+', 'x-', 'y+']);
    await x.elector.stop();
    await y.elector.stop();
  });

  it('a leader whose renewal hangs steps down at renewDeadline all the same', async () => {
    const b = await bench();
    const x = b.add('x');
    x.elector.start();
    await b.step(2_500);
    assert.equal(x.running, true);
    x.client.mode = 'hang';
    await b.step(12_000);
    assert.equal(x.running, false);
    assert.equal(x.elector.isLeader(), false);
  });

  it('a leader whose work fails to start gives the Lease up and competes again', async () => {
    const b = await bench();
    const x = b.add('x');
    let failures = 1;
    const elector = new LeaderElector({
      client: x.client,
      identity: 'flaky',
      clock: x.clock,
      random: () => 0,
      onStartedLeading: () => {
        if (failures-- > 0) throw new Error('informers did not sync');
        x.running = true;
      },
      onStoppedLeading: () => {
        x.running = false;
        x.stops++;
      },
    });
    elector.start();
    await b.step(300);
    assert.equal(elector.isLeader(), false);
    assert.equal(x.stops, 1, 'what started is stopped');
    assert.equal((await b.lease()).spec?.holderIdentity, '', 'released for others');
    await b.step(4_500);
    assert.equal(elector.isLeader(), true);
    assert.equal(x.running, true);
    await elector.stop();
  });

  it('leaseTransitions counts changes of holder; acquireTime is when the holder took the Lease', async () => {
    const b = await bench();
    const holders: Array<[string | undefined, number | undefined, MicroTime | undefined]> = [];
    for (const [i, name] of ['a', 'b', 'a2', 'c'].entries()) {
      const c = b.add(name, { clockOffsetMs: i * 60_000 });
      c.elector.start();
      await b.step(2_100);
      await b.step(4_000); // renewals keep acquireTime and the count
      const lease = await b.lease();
      holders.push([lease.spec?.holderIdentity, lease.spec?.leaseTransitions, lease.spec?.acquireTime]);
      await c.elector.stop();
    }
    assert.deepEqual(holders.map((h) => [h[0], h[1]]), [['a', 0], ['b', 1], ['a2', 2], ['c', 3]]);
    assert.equal(new Set(holders.map((h) => h[2])).size, 4);
  });

  it('candidates racing for an unheld or expired Lease: one wins, the others see Conflict/AlreadyExists and stay candidates', async () => {
    const b = await bench();
    const racers: Candidate[] = [];
    // One shared client whose barrier lets three Lease writes through only together: all read the same version.
    const shared = new ControlledClient(b.local);
    shared.barrier = 3;
    for (const name of ['p', 'q', 'r']) racers.push(b.add(name, { client: shared }));
    for (const r of racers) r.elector.start();
    await b.step(3_000);
    assert.equal(b.leaders().length, 1, `leaders: ${b.leaders().join(',')}`);
    assert.ok(shared.conflicts >= 2, `conflicts: ${shared.conflicts}`);
    // The winner stops gracefully; the remaining two race for the released Lease (an update race).
    const winner = racers.find((r) => r.elector.isLeader())!;
    await winner.elector.stop();
    shared.barrier = 2;
    shared.conflicts = 0;
    await b.step(3_000);
    assert.equal(b.leaders().length, 1, `leaders: ${b.leaders().join(',')}`);
    assert.ok(shared.conflicts >= 1, `conflicts: ${shared.conflicts}`);
    assert.equal(b.maxRunning(), 1);
    for (const r of racers) await r.elector.stop();
  });

  it('timings: renewDeadline < leaseDuration and retryPeriod < renewDeadline, else the flag is named', () => {
    validateLeaderElectionTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    assert.throws(() => validateLeaderElectionTimings({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), /--leader-elect-renew-deadline must be less than --leader-elect-lease-duration/);
    assert.throws(() => validateLeaderElectionTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }), /--leader-elect-retry-period must be less than --leader-elect-renew-deadline/);
    assert.throws(() => new LeaderElector({ client: new ControlledClient({} as Client), identity: 'z', leaseDurationMs: 5_000, renewDeadlineMs: 6_000, onStartedLeading: () => undefined, onStoppedLeading: () => undefined }), /renew-deadline/);
  });

  it('flags: Go durations in milliseconds, --leader-elect=true|false', () => {
    assert.equal(durationMs('15s', 'x'), 15_000);
    assert.equal(durationMs('1m30s', 'x'), 90_000);
    assert.equal(durationMs('500ms', 'x'), 500);
    assert.equal(durationMs('2.5s', 'x'), 2_500);
    assert.deepEqual(explicitBoolean(['--port', '1', '--leader-elect=false'], 'leader-elect'), { argv: ['--port', '1'], value: false });
    assert.deepEqual(explicitBoolean(['--leader-elect=true'], 'leader-elect'), { argv: [], value: true });
    assert.deepEqual(explicitBoolean(['--leader-elect'], 'leader-elect'), { argv: ['--leader-elect'], value: undefined });
  });
});
