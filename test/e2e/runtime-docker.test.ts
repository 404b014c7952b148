/**
 * The Docker runtime against the real engine: a pod's infra container plus two app containers sharing its
 * network namespace, resource settings, labels, graceful stop, OOM detection, events and cleanup.
 * Needs a running Docker daemon and the images from scripts/images/build-images.sh.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import pino from 'pino';
import { appSpec, infraSpec } from '../../agent/pods/container-config.js';
import { labelFilter } from '../../agent/node/labels.js';
import { DockerRuntime } from '../../agent/runtime/docker.js';
import { ImagePullError, type RuntimeEvent } from '../../agent/runtime/runtime.js';
import type { Container, Pod } from '../../src/api/types.js';

const execFileP = promisify(execFile);
const IMAGE = 'berth/busybox:test';
const suffix = randomBytes(3).toString('hex');
const NODE = `rt-e2e-${suffix}`;
const log = pino({ level: 'silent' });

async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execFileP('docker', args, { timeout: 30_000 });
  return stdout.trim();
}

function pod(name: string, containers: Container[], extra: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `${name}-${suffix}` },
    spec: { nodeName: NODE, containers, terminationGracePeriodSeconds: 5, ...extra },
  };
}

describe('Docker runtime (real engine)', { timeout: 120_000 }, () => {
  let runtime: DockerRuntime;

  before(async () => {
    runtime = new DockerRuntime({ log });
    await runtime.ensureImage(IMAGE, 'IfNotPresent').catch(() => {
      throw new Error(`${IMAGE} is missing: run scripts/images/build-images.sh first`);
    });
    await runtime.ensureInfraImage();
  });

  // Runs even when a test failed: nothing labeled with this test's node name may survive.
  after(async () => {
    const leftovers = await runtime.list({ labels: labelFilter({ nodeName: NODE }) });
    await Promise.all(leftovers.map((c) => runtime.remove(c.id)));
    const remaining = await runtime.list({ labels: labelFilter({ nodeName: NODE }) });
    runtime.close();
    assert.equal(remaining.length, 0, 'cleanup removes every container of the test node');
  });

  it('runs a pod: infra + two app containers sharing its IP, with limits, labels and no Docker restarts', async () => {
    const p = pod('web', [
      { name: 'a', image: IMAGE, command: ['sleep', '3600'], resources: { limits: { memory: '64Mi', cpu: '500m' } } },
      { name: 'b', image: IMAGE, command: ['sh', '-c'], args: ['echo $(MSG); exec sleep 3600'], env: [{ name: 'MSG', value: 'hi' }], resources: { requests: { cpu: '250m' } } },
    ]);
    const infra = await runtime.runInfra(infraSpec({ pod: p, nodeName: NODE, network: 'bridge', attempt: 0 }));
    assert.equal(infra.adopted, false);
    const ids: string[] = [];
    for (const c of p.spec.containers) {
      const created = await runtime.createApp(appSpec({ pod: p, container: c, nodeName: NODE, infraId: infra.id, restartCount: 0 }));
      await runtime.start(created.id);
      ids.push(created.id);
    }

    const infraInfo = (await runtime.inspect(infra.id))!;
    assert.equal(infraInfo.state, 'running');
    const podIP = infraInfo.ips.bridge;
    assert.match(podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
    for (const id of ids) {
      const ip = await docker('exec', id, 'sh', '-c', "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1");
      assert.equal(ip, podIP, 'app containers live in the infra container network namespace');
      assert.equal(await docker('exec', id, 'hostname'), 'web');
    }

    const [a, b] = await Promise.all(ids.map(async (id) => JSON.parse(await docker('inspect', id))[0]));
    assert.equal(a.HostConfig.Memory, 64 * 1024 * 1024);
    assert.equal(a.HostConfig.MemorySwap, 64 * 1024 * 1024);
    assert.equal(a.HostConfig.NanoCpus, 500_000_000);
    assert.equal(a.HostConfig.CpuShares, 512);
    assert.equal(b.HostConfig.CpuShares, 256);
    assert.equal(b.HostConfig.NanoCpus, 0);
    for (const c of [a, b]) {
      assert.equal(c.HostConfig.NetworkMode, `container:${infra.id}`);
      assert.equal(c.HostConfig.IpcMode, `container:${infra.id}`);
      assert.equal(c.HostConfig.RestartPolicy.Name, 'no');
      assert.deepEqual(c.Config.Healthcheck.Test, ['NONE']);
      assert.equal(c.Config.Labels['berth.dev/pod-uid'], p.metadata.uid);
      assert.equal(c.Config.Labels['berth.dev/node-name'], NODE);
      assert.equal(c.Config.Labels['berth.dev/container-type'], 'app');
      assert.match(c.Config.Labels['berth.dev/container-hash'], /^[0-9a-f]{16}$/);
      assert.equal(c.Config.Labels['berth.dev/restart-count'], '0');
      assert.equal(c.Config.Labels['berth.dev/termination-grace-period'], '5');
    }
    assert.equal(a.Name, `/berth_a_web_default_${p.metadata.uid}_0`);
    assert.deepEqual(b.Config.Entrypoint, ['sh', '-c']);
    assert.deepEqual(b.Config.Cmd, ['echo hi; exec sleep 3600']);
    const i = JSON.parse(await docker('inspect', infra.id))[0];
    assert.equal(i.HostConfig.IpcMode, 'shareable');
    assert.equal(i.HostConfig.CpuShares, 2);
    // -998 as the kubelet sets it, or 0 where the daemon lacks CAP_SYS_RESOURCE (the runtime falls back).
    assert.ok([-998, 0].includes(i.HostConfig.OomScoreAdj), `OomScoreAdj ${i.HostConfig.OomScoreAdj}`);
    assert.equal(i.Config.Hostname, 'web');
    assert.equal(i.Config.Labels['berth.dev/container-type'], 'infra');
    assert.equal(i.Config.Labels['berth.dev/container-name'], 'POD');

    const listed = await runtime.list({ labels: labelFilter({ nodeName: NODE, podUid: p.metadata.uid! }) });
    assert.equal(listed.length, 3);
    assert.ok(listed.every((c) => c.state === 'running'));
  });

  it('adopts an existing container on a name conflict instead of creating a second', async () => {
    const p = pod('adopt', [{ name: 'a', image: IMAGE, command: ['sleep', '3600'] }]);
    const infra = await runtime.runInfra(infraSpec({ pod: p, nodeName: NODE, network: 'bridge', attempt: 0 }));
    const again = await runtime.runInfra(infraSpec({ pod: p, nodeName: NODE, network: 'bridge', attempt: 0 }));
    assert.equal(again.id, infra.id);
    assert.equal(again.adopted, true);
    const spec = appSpec({ pod: p, container: p.spec.containers[0]!, nodeName: NODE, infraId: infra.id, restartCount: 0 });
    const first = await runtime.createApp(spec);
    const second = await runtime.createApp(spec);
    assert.deepEqual([second.id, second.adopted], [first.id, true]);
    assert.equal((await runtime.list({ labels: labelFilter({ nodeName: NODE, podUid: p.metadata.uid! }) })).length, 2);
  });

  it('stops with a grace period: SIGTERM first, SIGKILL when ignored; reports exits and events', async () => {
    const p = pod('stop', [
      { name: 'polite', image: IMAGE, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 0.1; done'] },
      // PID 1 without a handler ignores SIGTERM: only SIGKILL ends it.
      { name: 'stubborn', image: IMAGE, command: ['sleep', '3600'] },
    ]);
    const infra = await runtime.runInfra(infraSpec({ pod: p, nodeName: NODE, network: 'bridge', attempt: 0 }));
    const ids: string[] = [];
    for (const c of p.spec.containers) {
      const created = await runtime.createApp(appSpec({ pod: p, container: c, nodeName: NODE, infraId: infra.id, restartCount: 0 }));
      await runtime.start(created.id);
      ids.push(created.id);
    }
    const events: RuntimeEvent[] = [];
    const sub = runtime.subscribe({ labels: labelFilter({ nodeName: NODE, podUid: p.metadata.uid! }) }, (e) => events.push(e), () => undefined);
    await new Promise((r) => setTimeout(r, 200)); // let the event stream connect
    try {
      let t = Date.now();
      await runtime.stop(ids[0]!, 10);
      assert.ok(Date.now() - t < 5000, 'a container that handles SIGTERM stops well before the grace period');
      const polite = (await runtime.inspect(ids[0]!))!;
      assert.equal(polite.state, 'exited');
      assert.equal(polite.exit?.exitCode, 0);
      assert.equal(polite.exit?.oomKilled, false);
      assert.ok(polite.exit?.finishedAt);

      t = Date.now();
      await runtime.stop(ids[1]!, 1);
      const took = Date.now() - t;
      assert.ok(took >= 900 && took < 10_000, `SIGKILL after the 1 s grace (took ${took} ms)`);
      const stubborn = (await runtime.inspect(ids[1]!))!;
      assert.equal(stubborn.exit?.exitCode, 137);
      await runtime.stop(ids[1]!, 1); // stopping a stopped container is fine

      await new Promise((r) => setTimeout(r, 300));
      const dies = events.filter((e) => e.action === 'die').map((e) => e.containerId);
      assert.ok(dies.includes(ids[0]!) && dies.includes(ids[1]!), 'die events arrive for both containers');
      assert.ok(events.every((e) => e.labels['berth.dev/pod-uid'] === p.metadata.uid));
    } finally {
      sub.close();
    }
    for (const id of [...ids, infra.id]) await runtime.remove(id);
    assert.equal(await runtime.inspect(ids[0]!), undefined);
    await runtime.remove(ids[0]!); // removing a missing container is fine
  });

  it('reports OOMKilled from Docker when a container exceeds its memory limit', async () => {
    const p = pod('oom', [
      // The shell grows a variable until the 16 MiB limit (no swap) is hit.
      { name: 'hog', image: IMAGE, command: ['sh', '-c', 'x=a; while true; do x="$x$x"; done'], resources: { limits: { memory: '16Mi' } } },
    ]);
    const infra = await runtime.runInfra(infraSpec({ pod: p, nodeName: NODE, network: 'bridge', attempt: 0 }));
    const created = await runtime.createApp(appSpec({ pod: p, container: p.spec.containers[0]!, nodeName: NODE, infraId: infra.id, restartCount: 0 }));
    await runtime.start(created.id);
    let info = await runtime.inspect(created.id);
    for (let i = 0; i < 100 && info?.state !== 'exited'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      info = await runtime.inspect(created.id);
    }
    assert.equal(info?.state, 'exited');
    assert.equal(info?.exit?.oomKilled, true);
    assert.equal(info?.exit?.exitCode, 137);
  });

  it('reports a missing entrypoint as an ended container with the runtime error', async () => {
    const p = pod('badcmd', [{ name: 'x', image: IMAGE, command: ['/no/such/binary'] }]);
    const infra = await runtime.runInfra(infraSpec({ pod: p, nodeName: NODE, network: 'bridge', attempt: 0 }));
    const created = await runtime.createApp(appSpec({ pod: p, container: p.spec.containers[0]!, nodeName: NODE, infraId: infra.id, restartCount: 0 }));
    await assert.rejects(runtime.start(created.id));
    const info = (await runtime.inspect(created.id))!;
    assert.equal(info.state, 'exited');
    assert.ok(info.exit?.error, 'Docker records why it could not run');
    assert.notEqual(info.exit?.exitCode, 0);
  });

  it('applies pull policy Never without touching a registry', async () => {
    const present = await runtime.ensureImage(IMAGE, 'Never');
    assert.match(present.id, /^sha256:/);
    await assert.rejects(runtime.ensureImage('berth/not-there:1', 'Never'), (e: unknown) => e instanceof ImagePullError && e.neverPull);
    // (No IfNotPresent/Always case: a real pull would reach out to a registry, which tests must not do.)
  });

  it('never lists containers of other nodes', async () => {
    const other = await runtime.list({ labels: labelFilter({ nodeName: `${NODE}-other` }) });
    assert.equal(other.length, 0);
    assert.match(await runtime.version(), /^docker:\/\/\d+\.\d+/);
  });
});
