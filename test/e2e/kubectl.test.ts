/**
 * Stock kubectl (the binaries on the machine, unchanged) against a running Berth with a real agent:
 * every case runs once with each kubectl under test (the one on PATH and Debian's 1.20), each
 * against a cluster of its own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Job, KubeObject, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { describeEachKubectl, needsKubectl, REPO_ROOT, startCluster, waitFor, waitForPod, type Cluster, type Kubectl } from './harness.js';
import { CRONJOBS, JOBS } from '../../src/api/identities.js';

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

describeEachKubectl('stock kubectl against Berth', (k: Kubectl) => {
  let c: Cluster;
  let file: string;
  before(async () => {
    c = (await startCluster({ agents: ['kc'] })).forKubectl(k);
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

  it('apply --server-side creates and re-applies; the field manager is kubectl', async () => {
    const cm = (v: string) => c.writeFile(`ssa-${v}.yaml`, `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {v: "${v}"}\n`);
    assert.match((await c.kubectl(['apply', '--server-side', '-f', cm('1')])).stdout, /configmap\/ssa serverside-applied/);
    assert.match((await c.kubectl(['apply', '--server-side', '-f', cm('2')])).stdout, /configmap\/ssa serverside-applied/);
    const live = await c.client.get<KubeObject & { data: Record<string, string> }>({ plural: 'configmaps' }, { namespace: 'default', name: 'ssa' });
    assert.equal(live.data.v, '2');
    const managers = (live.metadata.managedFields as Array<{ manager: string; operation: string }>).map((m) => `${m.manager}/${m.operation}`);
    assert.deepEqual(managers, ['kubectl/Apply']);
  });

  it('logs prints the container output; logs -f follows it', async () => {
    await c.kubectl(['run', 'talker', '--image=berth/busybox:test', '--restart=Never', '--', 'sh', '-c', 'echo first; sleep 2; echo second; sleep 3600']);
    await waitFor(async () => (await c.kubectl(['logs', 'talker'], { allowFail: true })).stdout.includes('first'), 30_000, 'first log line');
    const follower = spawn(k.path, ['logs', '-f', 'talker'], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    let out = '';
    follower.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => /first\nsecond\n/.test(out), 20_000, () => `followed output, got ${JSON.stringify(out)}`);
    } finally {
      follower.kill();
    }
    assert.equal((await c.kubectl(['logs', '-l', 'run=talker', '--tail=1'])).stdout, 'second\n');
  });

  it('typed creates of ConfigMaps and Secrets (sent as protobuf) are stored as written', async () => {
    await c.kubectl(['create', 'configmap', 'typed', '--from-literal=a=1', '--from-literal=b=two words']);
    await c.kubectl(['create', 'secret', 'generic', 'typed', '--from-literal=password=hunter2']);
    const cm = JSON.parse((await c.kubectl(['get', 'configmap', 'typed', '-o', 'json'])).stdout) as { data: Record<string, string> };
    assert.deepEqual(cm.data, { a: '1', b: 'two words' });
    const secret = JSON.parse((await c.kubectl(['get', 'secret', 'typed', '-o', 'json'])).stdout) as { data: Record<string, string> };
    assert.equal(Buffer.from(secret.data.password ?? '', 'base64').toString(), 'hunter2');
    await c.kubectl(['delete', 'configmap/typed', 'secret/typed']);
  });

  it('explain, set env, rollout pause|resume|restart and wait on a Deployment', async () => {
    assert.match((await c.kubectl(['explain', 'deployment.spec.replicas'])).stdout, /FIELD:\s+replicas <integer>/);
    await c.kubectl(['create', 'deployment', 'tool', '--image=berth/busybox:test', '--', 'sleep', '3600']);
    await c.kubectl(['rollout', 'status', 'deployment/tool', '--timeout=60s']);
    assert.match((await c.kubectl(['rollout', 'pause', 'deployment/tool'])).stdout, /paused/);
    assert.match((await c.kubectl(['set', 'env', 'deployment/tool', 'PHASE=paused'])).stdout, /deployment\.apps\/tool env updated/);
    assert.match((await c.kubectl(['rollout', 'resume', 'deployment/tool'])).stdout, /resumed/);
    assert.match((await c.kubectl(['rollout', 'restart', 'deployment/tool'])).stdout, /restarted/);
    await c.kubectl(['rollout', 'status', 'deployment/tool', '--timeout=90s']);
    assert.match((await c.kubectl(['wait', '--for=condition=available', 'deployment/tool', '--timeout=60s'])).stdout, /condition met/);
    const history = (await c.kubectl(['rollout', 'history', 'deployment/tool'])).stdout;
    assert.match(history, /^3\s/m, 'the change made while paused and the restart made revisions 2 and 3');
    await c.kubectl(['delete', 'deployment', 'tool']);
  });

  it('exec runs a command in the container and passes its exit code; cp copies both ways', async () => {
    await waitForPod(c.client, 'default', 'talker', (p) => p.status?.phase === 'Running');
    const ok = await c.kubectl(['exec', 'talker', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'], { allowFail: true });
    assert.equal(ok.stdout, 'out\n', ok.stderr);
    assert.match(ok.stderr, /err/);
    assert.equal(ok.code, 3);
    const piped = await c.kubectl(['exec', '-i', 'talker', '--', 'cat'], { input: 'through stdin\n' });
    assert.equal(piped.stdout, 'through stdin\n');
    // cp is tar through exec, in both directions.
    const local = c.writeFile('copied.txt', 'copied into the pod\n');
    await c.kubectl(['cp', local, 'talker:/tmp/copied.txt']);
    assert.equal((await c.kubectl(['exec', 'talker', '--', 'cat', '/tmp/copied.txt'])).stdout, 'copied into the pod\n');
    const back = path.join(c.dir, 'back.txt');
    await c.kubectl(['cp', 'talker:/tmp/copied.txt', back]);
    assert.equal(fs.readFileSync(back, 'utf8'), 'copied into the pod\n');
  });

  it('create cronjob, and create job --from it (batch/v1beta1 for kubectl 1.20) runs the template as a manual Job', async () => {
    // kubectl 1.20 posts a batch/v1beta1 CronJob; it is stored as batch/v1.
    await c.kubectl(['create', 'cronjob', 'nightly', '--image=berth/busybox:test', '--schedule=0 3 * * *', '--', 'echo', 'from-cron']);
    assert.equal((await c.client.get<KubeObject>(CRONJOBS, { namespace: 'default', name: 'nightly' })).apiVersion, 'batch/v1');
    // kubectl ≤ 1.20 decodes CronJobs only as batch/v1beta1, so it must name that version.
    const from = needsKubectl(k, '1.21', 'CronJob at batch/v1') ? 'cronjob.v1beta1.batch/nightly' : 'cronjob/nightly';
    assert.match((await c.kubectl(['create', 'job', 'manual', `--from=${from}`])).stdout, /job\.batch\/manual created/);
    const job = await c.client.get<Job>(JOBS, { namespace: 'default', name: 'manual' });
    assert.equal(job.metadata.annotations?.['cronjob.kubernetes.io/instantiate'], 'manual');
    assert.equal(job.metadata.ownerReferences?.[0]?.name, 'nightly');
    await waitFor(async () => (await c.client.get<Job>(JOBS, { namespace: 'default', name: 'manual' })).status?.succeeded === 1, 60_000, 'the manual Job to succeed');
  });

  it('applies a batch/v1beta1 CronJob manifest and re-applies it unchanged, without patch warnings', async () => {
    const f = c.writeFile('cj-v1beta1.yaml', `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: legacy}
spec:
  schedule: "0 4 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: main, image: berth/busybox:test, command: ["true"]}]
`);
    assert.match((await c.kubectl(['apply', '-f', f])).stdout, /cronjob\.batch\/legacy created/);
    const again = await c.kubectl(['apply', '-f', f]);
    assert.match(again.stdout, /cronjob\.batch\/legacy unchanged/);
    assert.doesNotMatch(again.stderr, /warning/i);
    assert.equal((await c.client.get<KubeObject>(CRONJOBS, { namespace: 'default', name: 'legacy' })).apiVersion, 'batch/v1');
  });

  it('create job --from=cronjob/x (CronJob at batch/v1)', { skip: needsKubectl(k, '1.21', 'CronJob at batch/v1; kubectl 1.20 fails with \'no kind "CronJob" is registered for version "batch/v1"\' against any Kubernetes ≥ 1.21 and needs --from=cronjob.v1beta1.batch/x') }, async () => {
    assert.match((await c.kubectl(['create', 'job', 'manual-short', '--from=cronjob/nightly'])).stdout, /job\.batch\/manual-short created/);
  });

  it('get -w streams changes; delete waits until the pod is gone', async () => {
    const watcher = spawn(k.path, ['get', 'pods', '-w', '--request-timeout=20s'], { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
    let out = '';
    watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(() => /kc\s+1\/1\s+Running/.test(out), 10_000, 'initial row');
      const del = await c.kubectl(['delete', 'pod', 'kc']);
      assert.match(del.stdout, /pod "kc" deleted/);
      // kubectl delete waits for the object to disappear, so it is gone now.
      const left = await c.client.list<Pod>(CORE.pods, { namespace: 'default' });
      assert.deepEqual(left.items.filter((p) => p.metadata.name === 'kc'), []);
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

  it('cordon marks the node unschedulable; drain evicts its pods through pods/eviction', async () => {
    const node = c.nodeNames[0]!;
    await c.kubectl(['run', 'evictee', '--image=berth/busybox:test', '--restart=Never', '--', 'sleep', '3600']);
    await waitForPod(c.client, 'default', 'evictee', (p) => p.status?.phase === 'Running');
    assert.match((await c.kubectl(['cordon', node])).stdout, /cordoned/);
    assert.match((await c.kubectl(['get', 'nodes'])).stdout, new RegExp(`${node}\\s+Ready,SchedulingDisabled`));
    const out = await c.kubectl(['drain', node, '--force', '--ignore-daemonsets', '--grace-period=1', '--timeout=60s', '-v=6']);
    // Evicted, not deleted: kubectl 1.20 only evicts when discovery lists the policy group.
    assert.match(out.stderr, /POST \S+\/pods\/evictee\/eviction 201/, out.stderr.slice(-3000));
    assert.match(out.stdout, /pod\/evictee evicted/);
    await waitFor(async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', fieldSelector: `spec.nodeName=${node}` })).items.length === 0, 60_000, 'the node empty');
    await c.kubectl(['uncordon', node]);
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
