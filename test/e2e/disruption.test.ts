/**
 * PodDisruptionBudgets end to end, with a real agent on Docker and each kubectl under test: kubectl
 * creates, lists and describes a budget, the disruption controller keeps its status, a direct
 * eviction that would break it answers 429 with Kubernetes' message, and `kubectl drain` is refused,
 * retries every 5 s as it does against Kubernetes, and finishes once the budget allows it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, it } from 'node:test';
import type { Pod, PodDisruptionBudget, Status } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { describeEachKubectl, needsKubectl, sleep, startCluster, waitFor, type Cluster, type Kubectl } from './harness.js';
import { PODDISRUPTIONBUDGETS } from '../../src/api/identities.js';

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: berth/busybox:test
        command: ["sleep", "3600"]
`;

const budgetManifest = (spec: string) => `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
${spec}`;

describeEachKubectl('PodDisruptionBudget and kubectl drain', (k: Kubectl) => {
  let c: Cluster;
  before(async () => {
    c = (await startCluster({ agents: ['pdb'] })).forKubectl(k);
  });
  after(async () => {
    await c?.stop();
  });

  const budget = () => c.client.get<PodDisruptionBudget>(PODDISRUPTIONBUDGETS, { namespace: 'default', name: 'web' });
  const webPods = async () => (await c.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: 'app=web' })).items;
  const readyWebPods = async () => (await webPods()).filter((p) => !p.metadata.deletionTimestamp && p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));

  it('discovery lists poddisruptionbudgets (shortName pdb) in policy/v1', async () => {
    const res = await c.kubectl(['api-resources', '--api-group=policy']);
    assert.match(res.stdout, /poddisruptionbudgets\s+pdb\s+policy\/v1\s+true\s+PodDisruptionBudget/);
  });

  it('refuses an invalid budget naming the field', async () => {
    const file = c.writeFile('bad-pdb.yaml', budgetManifest('  minAvailable: 1\n  maxUnavailable: 1\n  selector:\n    matchLabels: {app: web}\n'));
    const r = await c.kubectl(['apply', '-f', file], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec: Invalid value: .*minAvailable and maxUnavailable cannot be both set/);
    const pct = c.writeFile('bad-pct.yaml', budgetManifest('  maxUnavailable: "150%"\n  selector:\n    matchLabels: {app: web}\n'));
    const r2 = await c.kubectl(['apply', '-f', pct], { allowFail: true });
    assert.match(r2.stderr, /spec\.maxUnavailable: Invalid value: "150%": must not be greater than 100%/);
  });

  it('a budget over a Deployment of 2: the controller counts 2 healthy of 2 wanted, 0 disruptions allowed; get and describe show it', async () => {
    await c.kubectl(['apply', '-f', c.writeFile('web.yaml', deployment)]);
    if (needsKubectl(k, '1.22', 'policy/v1 in create pdb')) {
      // kubectl 1.20 creates policy/v1beta1 budgets, which a 1.32 apiserver no longer serves: apply a v1 manifest.
      await c.kubectl(['apply', '-f', c.writeFile('pdb.yaml', budgetManifest('  minAvailable: 2\n  selector:\n    matchLabels: {app: web}\n'))]);
    } else {
      assert.match((await c.kubectl(['create', 'pdb', 'web', '--selector=app=web', '--min-available=2'])).stdout, /poddisruptionbudget.policy\/web created/);
    }
    await waitFor(async () => (await readyWebPods()).length === 2, 60_000, 'two Ready pods');
    await waitFor(async () => {
      const s = (await budget()).status;
      return s?.currentHealthy === 2 && s.expectedPods === 2 && s.observedGeneration === 1;
    }, 30_000, 'the budget counted');
    const status = (await budget()).status!;
    assert.equal(status.desiredHealthy, 2);
    assert.equal(status.disruptionsAllowed, 0);
    assert.deepEqual(status.conditions?.map((x) => [x.type, x.status, x.reason]), [['DisruptionAllowed', 'False', 'InsufficientPods']]);

    const table = (await c.kubectl(['get', 'pdb'])).stdout;
    assert.match(table, /^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE/m);
    assert.match(table, /^web\s+2\s+N\/A\s+0\s+\S+/m);
    if (!needsKubectl(k, '1.22', 'the policy/v1 describer')) {
      const described = (await c.kubectl(['describe', 'pdb', 'web'])).stdout;
      assert.match(described, /Min available:\s+2/);
      assert.match(described, /Allowed disruptions:\s+0/);
      assert.match(described, /Current:\s+2/);
      assert.match(described, /Desired:\s+2/);
      assert.match(described, /Total:\s+2/);
    }
  });

  it('an eviction that would break the budget answers 429 with Kubernetes message and cause', async () => {
    const victim = (await readyWebPods())[0]!.metadata.name!;
    const res = await c.client.raw({
      method: 'POST',
      path: `/api/v1/namespaces/default/pods/${victim}/eviction`,
      body: Buffer.from(JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: victim, namespace: 'default' } })),
      headers: { 'content-type': 'application/json', accept: 'application/json' },
    });
    assert.equal(res.status, 429, res.body.toString());
    const status = JSON.parse(res.body.toString()) as Status;
    assert.equal(status.reason, 'TooManyRequests');
    assert.equal(status.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert.deepEqual(status.details?.causes, [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }]);
    assert.ok((await webPods()).some((p) => p.metadata.name === victim), 'the pod stays');
  });

  it('kubectl drain is refused and retries until the budget allows, then completes', async () => {
    const node = c.nodeNames[0]!;
    // Bounded: with the budget unchanged, drain gives up at its timeout, having evicted nothing.
    const refused = await c.kubectl(['drain', node, '--ignore-daemonsets', '--grace-period=1', '--timeout=7s'], { allowFail: true });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /error when evicting pods\/"web-[a-z0-9-]+" -n "default" \(will retry after 5s\): Cannot evict pod as it would violate the pod's disruption budget\./);
    assert.equal((await readyWebPods()).length, 2, 'nothing was evicted');

    // Again, in the background, while the budget is relaxed: first to one pod, then to none.
    const drain = runInBackground(c, ['drain', node, '--ignore-daemonsets', '--grace-period=1', '--timeout=120s']);
    await waitFor(() => /will retry after 5s/.test(drain.stderr()), 20_000, () => `drain to be refused; stderr: ${drain.stderr()}`);
    await c.kubectl(['patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":1}}']);
    // One pod may go; its replacement cannot be scheduled on the cordoned node, so the second stays.
    await waitFor(async () => (await readyWebPods()).length === 1, 30_000, 'one pod evicted');
    await sleep(6_000);
    assert.equal(drain.exitCode(), undefined, 'drain is still waiting for the budget');
    assert.equal((await readyWebPods()).length, 1, 'the budget keeps the last pod');
    assert.ok((await budget()).status!.disruptionsAllowed === 0);

    await c.kubectl(['patch', 'pdb', 'web', '--type=merge', '-p', '{"spec":{"minAvailable":0}}']);
    const code = await drain.done;
    assert.equal(code, 0, drain.stderr().slice(-3000));
    // kubectl 1.20 ends with "node/… evicted", newer ones with "node/… drained".
    assert.match(drain.stdout(), /node\/\S+ (drained|evicted)/);
    assert.equal((await webPods()).filter((p) => p.spec.nodeName === node).length, 0, 'the node is empty');
    await c.kubectl(['uncordon', node]);
  });
});

/** A kubectl run whose output can be read while it goes on. */
function runInBackground(c: Cluster, args: string[]) {
  const child = spawn(c.kubectlBin, args, { env: { ...process.env, KUBECONFIG: c.kubeconfig } });
  let stdout = '';
  let stderr = '';
  let exit: number | undefined;
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<number>((resolve) => child.on('close', (code) => resolve((exit = code ?? -1))));
  return { done, stdout: () => stdout, stderr: () => stderr, exitCode: () => exit };
}
