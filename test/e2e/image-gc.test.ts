/**
 * Image garbage collection and DiskPressure on a real image filesystem that fills up (agent/images/gc.ts).
 * A one-host lab (test/e2e/multihost/lab.ts) whose dockerd keeps its data root on a 256 MiB tmpfs; the
 * agent runs with the kubelet's thresholds (85 % high, 80 % low, DiskPressure under 15 % available) and
 * only the period and the minimum image age shortened. Images of random bytes fill the data root past
 * 88 % while the agent is stopped. Once it is back, the node reports DiskPressure and is tainted while
 * the images are too young to collect; once they are old enough, unused ones go until usage is under
 * 80 %, not all of them, and the pressure clears. The image a running pod uses and the pause image stay.
 * Outside multihost/ on purpose: one host is light enough to run beside other files.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Node } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { podManifest, TEST_IMAGE, waitFor, waitForPod } from './harness.js';
import { PAUSE_IMAGE, startLab, type Lab, type SimHost } from './multihost/lab.js';

const DATA_ROOT_MIB = 256;
const FILLER_MIB = 16;
const MIN_AGE_S = 20;

/** Percent of the filesystem at `dir` in use, as the agent's statfs sees it. */
function usedPercent(dir: string): number {
  const s = fs.statfsSync(dir);
  return (100 * (s.blocks - s.bavail)) / s.blocks;
}

/** A one-layer image of `mib` MiB of random bytes (random, so no two share a layer), imported on the host's engine. */
async function importFiller(lab: Lab, host: SimHost, name: string, mib: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(lab.dir, 'filler-'));
  fs.writeFileSync(path.join(dir, 'blob'), randomBytes(mib * 1024 * 1024));
  await new Promise<void>((resolve, reject) => {
    const tar = spawn('tar', ['-C', dir, '-cf', '-', 'blob'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const load = spawn('docker', ['-H', host.dockerHost, 'import', '-', name], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    load.stderr.on('data', (d: Buffer) => (err += d));
    tar.stdout.pipe(load.stdin);
    load.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`docker import ${name}: ${err}`))));
    load.on('error', reject);
  });
  fs.rmSync(dir, { recursive: true, force: true });
}

describe(`image GC on a ${DATA_ROOT_MIB} MiB image filesystem (a lab host whose dockerd data root is a tmpfs)`, () => {
  let lab: Lab;
  let host: SimHost;
  let dataRoot: string;

  before(async () => {
    lab = await startLab({ hosts: 1, dataRootTmpfsMiB: DATA_ROOT_MIB, agentArgs: ['--image-gc-period', '1s', '--image-minimum-gc-age', `${MIN_AGE_S}s`] });
    host = lab.hosts[0]!;
    dataRoot = path.join(lab.dir, 'docker-1');
  });
  after(async () => {
    await lab?.stop();
  });

  const node = () => lab.client.get<Node>(CORE.nodes, { name: host.nodeName });
  const diskPressure = async () => (await node()).status?.conditions?.find((c) => c.type === 'DiskPressure');
  const tainted = async () => ((await node()).spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/disk-pressure' && t.effect === 'NoSchedule');
  const images = async () => (await lab.docker(host, ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}'])).split('\n').filter(Boolean);

  it('past 85 % used: DiskPressure and its taint; unused images go until under 80 %, not all of them; the in-use and pause images stay; the pressure clears', async (t) => {
    assert.equal(fs.statfsSync(dataRoot).type, 0x01021994, 'the data root is a tmpfs');
    await lab.client.create(CORE.pods, podManifest('keeper', { nodeName: host.nodeName, terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: 'default' });
    await waitForPod(lab.client, 'default', 'keeper', (p) => p.status?.phase === 'Running', 60_000);
    assert.equal((await diskPressure())?.status, 'False', 'no pressure before the fill');

    // Fill to about 88 %: past the high threshold and under DiskPressure's 15 % available. The agent
    // is stopped meanwhile, so that its collector first sees every filler in one pass: images it saw
    // a pass apart would come of age a pass apart, and one old image removed alone could bring usage
    // under the high threshold (which ends collecting) but not under the low one.
    await lab.stopAgent(host, 'SIGTERM');
    const start = usedPercent(dataRoot);
    const count = Math.ceil(((88 - start) / 100) * DATA_ROOT_MIB / FILLER_MIB);
    const fillers = Array.from({ length: count }, (_, i) => `berth-filler/f${i}:1`);
    for (const name of fillers) await importFiller(lab, host, name, FILLER_MIB);
    await lab.startAgent(host);
    const filled = usedPercent(dataRoot);
    t.diagnostic(`data root ${start.toFixed(1)} % used before, ${filled.toFixed(1)} % after ${count} images of ${FILLER_MIB} MiB`);
    assert.ok(filled > 85, `filled to ${filled.toFixed(1)} %`);

    // The images are younger than the minimum age, so nothing can go yet: the node is under pressure.
    await waitFor(async () => (await diskPressure())?.status === 'True', 15_000, 'DiskPressure True');
    assert.match((await diskPressure())?.message ?? '', /imagefs\.available<15%/);
    await waitFor(tainted, 15_000, 'the disk-pressure taint');

    // Once they are old enough, collection brings usage under the low threshold and the pressure clears.
    await waitFor(async () => (await diskPressure())?.status === 'False', (MIN_AGE_S + 40) * 1000, () => `DiskPressure cleared; ${usedPercent(dataRoot).toFixed(1)} % used`);
    await waitFor(async () => !(await tainted()), 15_000, 'the disk-pressure taint removed');
    const after = usedPercent(dataRoot);
    const left = await images();
    const fillersLeft = fillers.filter((f) => left.includes(f));
    t.diagnostic(`after collection: ${after.toFixed(1)} % used, ${fillersLeft.length} of ${count} filler images left`);
    assert.ok(after < 80, `${after.toFixed(1)} % used after collection`);
    assert.ok(fillersLeft.length > 0 && fillersLeft.length < count, `collection stopped at the low threshold: ${fillersLeft.length} of ${count} unused images left`);
    assert.ok(left.includes(TEST_IMAGE), `the running pod's image kept: ${left.join(' ')}`);
    assert.ok(left.includes(PAUSE_IMAGE), `the pause image kept: ${left.join(' ')}`);
    assert.equal((await waitForPod(lab.client, 'default', 'keeper', () => true)).status?.phase, 'Running');
  });
});
