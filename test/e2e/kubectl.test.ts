/**
 * Stock kubectl (the binary on the machine, unchanged) against a running Berth with a real agent.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { REPO_ROOT, startCluster, waitFor, waitForPod, type Cluster } from './harness.js';

const manifest = (label: string) => `apiVersion: v1
kind: Pod
metadata:
  name: kc
  labels:
    app: kc
    version: "${label}"
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: berth/busybox:test
    command: ["sleep", "3600"]
    resources:
      limits: {cpu: 200m, memory: 32Mi}
`;

describe('stock kubectl against Berth', () => {
  let c: Cluster;
  let file: string;
  before(async () => {
    c = await startCluster({ agents: ['kc'] });
    file = path.join(c.dir, 'pod.yaml');
  });
  after(async () => {
    await c?.stop();
  });

  it('talks to the server with the generated kubeconfig unchanged', async () => {
    const v = await c.kubectl(['version', '-o', 'json']);
    assert.equal(JSON.parse(v.stdout).serverVersion.gitVersion, 'v1.32.0-berth');
    const nodes = await c.kubectl(['get', 'nodes']);
    assert.match(nodes.stdout, /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION/m);
    assert.match(nodes.stdout, new RegExp(`${c.nodeNames[0]}\\s+Ready\\s`));
    const res = await c.kubectl(['api-resources']);
    assert.match(res.stdout, /pods\s+po\s+v1\s+true\s+Pod/);
  });

  it('apply -f creates, re-applying a changed label updates, an unchanged file is unchanged', async () => {
    fs.writeFileSync(file, manifest('one'));
    assert.match((await c.kubectl(['apply', '-f', file])).stdout, /pod\/kc created/);
    await waitForPod(c.client, 'default', 'kc', (p) => p.status?.phase === 'Running');
    fs.writeFileSync(file, manifest('two'));
    assert.match((await c.kubectl(['apply', '-f', file])).stdout, /pod\/kc configured/);
    const pod = await c.client.get<Pod>(CORE.pods, { namespace: 'default', name: 'kc' });
    assert.equal(pod.metadata.labels?.version, 'two');
    assert.ok(pod.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']);
    assert.match((await c.kubectl(['apply', '-f', file])).stdout, /pod\/kc unchanged/);
  });

  it('get prints a table with READY, STATUS, RESTARTS, AGE, IP, NODE', async () => {
    const out = (await c.kubectl(['get', 'pods', '-o', 'wide'])).stdout;
    assert.match(out, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE/m);
    assert.match(out, new RegExp(`^kc\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+\\d+\\.\\d+\\.\\d+\\.\\d+\\s+${c.nodeNames[0]}`, 'm'));
  });

  it('get -o yaml and describe show the object and its status', async () => {
    const yaml = (await c.kubectl(['get', 'pod', 'kc', '-o', 'yaml'])).stdout;
    assert.match(yaml, /phase: Running/);
    assert.match(yaml, /containerID: docker:\/\//);
    const described = (await c.kubectl(['describe', 'pod', 'kc'])).stdout;
    assert.match(described, /Status:\s+Running/);
    assert.match(described, new RegExp(`Node:\\s+${c.nodeNames[0]}/`));
    assert.match(described, /Limits:\s+cpu:\s+200m\s+memory:\s+32Mi/);
    assert.match(described, /Scheduled/);
  });

  it('get -w streams changes; delete waits until the pod is gone', async () => {
    const watcher = spawn('kubectl', ['get', 'pods', '-w', '--request-timeout=20s'], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    let out = '';
    watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => /kc\s+1\/1\s+Running/.test(out), 10_000, 'initial row');
      const del = await c.kubectl(['delete', 'pod', 'kc']);
      assert.match(del.stdout, /pod "kc" deleted/);
      // kubectl delete waits for the object to disappear, so it is gone now.
      const left = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
      assert.equal(left.items.length, 0);
      await waitFor(() => /kc\s+\S+\s+Terminating/.test(out), 10_000, `Terminating row in:\n${out}`);
    } finally {
      watcher.kill();
    }
  });

  it('applies every example manifest in manifests/ as written', async () => {
    const dir = path.join(REPO_ROOT, 'manifests');
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.yaml'))) {
      const r = await c.kubectl(['apply', '-f', path.join(dir, f)]);
      assert.match(r.stdout, /created|configured|unchanged/, f);
      // They meet the baseline Pod Security level the cluster enforces by default.
      assert.doesNotMatch(r.stderr, /PodSecurity/, f);
    }
    await waitForPod(c.client, 'default', 'web', (p) => p.status?.phase === 'Running' && p.status.containerStatuses?.every((s) => s.ready) === true);
    await waitForPod(c.client, 'lab', 'once', (p) => p.status?.phase === 'Succeeded');
  });

  it('refuses kubectl without credentials', async () => {
    const kc = fs.readFileSync(c.kubeconfig, 'utf8').replace(/token: .*/, 'token: wrong');
    const bad = path.join(c.dir, 'bad-kubeconfig');
    fs.writeFileSync(bad, kc);
    const r = await c.kubectl(['--kubeconfig', bad, 'get', 'pods'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Unauthorized|must be logged in/i);
  });
});
