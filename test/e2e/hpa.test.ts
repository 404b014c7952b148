/**
 * HorizontalPodAutoscaler end to end: a real cluster on Docker, the agent sampling cgroups every
 * second, the autoscaler syncing every 2 s with a 30 s scale-down window (flags). A Deployment of
 * one CPU-burning busybox pod (20m requested, 100m limit) is autoscaled with `kubectl autoscale`
 * at 50%: it must reach ≥ 2 replicas within 90 s, `kubectl get hpa` must show a `cpu: N%/50%`
 * target, and once the pods go idle it must come back to 1 — after the window, not before.
 * `kubectl autoscale` creates autoscaling/v1 (protobuf from 1.32, JSON from Debian's 1.20), stored
 * as v2 and read back as either.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { availableKubectls, compareVersions, startCluster, waitFor, type Cluster } from './harness.js';
import type { Deployment, HorizontalPodAutoscaler } from '../../src/api/types.js';
import { DEPLOYMENTS, HORIZONTALPODAUTOSCALERS } from '../../src/api/identities.js';

const DOWNSCALE_WINDOW_S = 30;
const SYNC_PERIOD_S = 2;
/**
 * kubectl describes an HPA through autoscaling/v2 from 1.23. Older ones ask for v2beta2, which
 * Kubernetes stopped serving in 1.26 and Berth does not serve, and describe the v1 object instead.
 */
const DESCRIBES_AUTOSCALING_V2 = '1.23';

const deployment = (name: string, command: string[]) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
spec:
  replicas: 1
  selector:
    matchLabels: {app: ${name}}
  template:
    metadata:
      labels: {app: ${name}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: berth/busybox:test
        command: ${JSON.stringify(command)}
        resources:
          requests: {cpu: 20m}
          limits: {cpu: 100m}
`;

describe('HorizontalPodAutoscaler (real Docker, Metrics API, kubectl autoscale)', () => {
  let c: Cluster;
  before(async () => {
    c = await startCluster({
      agents: ['hpa'],
      agentArgs: ['--metrics-sample-interval', '1s'],
      serverArgs: ['--metric-resolution', '1s', '--horizontal-pod-autoscaler-sync-period', `${SYNC_PERIOD_S}s`, '--horizontal-pod-autoscaler-downscale-stabilization', `${DOWNSCALE_WINDOW_S}s`],
    });
  });
  after(async () => {
    await c?.stop();
  });

  const replicasOf = async (name: string) => (await c.client.get<Deployment>(DEPLOYMENTS, { namespace: 'default', name })).spec.replicas ?? 0;

  it('scales a CPU-burning Deployment up to ≥ 2 within 90 s, shows the target, and back to 1 after the scale-down window', async () => {
    await c.kubectl(['apply', '-f', c.writeFile('burn.yaml', deployment('burn', ['sh', '-c', 'while :; do :; done']))]);
    await c.kubectl(['autoscale', 'deployment', 'burn', '--cpu-percent=50', '--min=1', '--max=3']);
    const stored = await c.client.get<HorizontalPodAutoscaler>(HORIZONTALPODAUTOSCALERS, { namespace: 'default', name: 'burn' });
    assert.deepEqual(stored.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }]);

    const started = Date.now();
    await waitFor(async () => (await replicasOf('burn')) >= 2, 90_000, 'the HPA to scale burn to ≥ 2 replicas');
    const scaledUpAfterMs = Date.now() - started;

    // What each kubectl under test shows of it.
    for (const k of availableKubectls()) {
      const ck = c.forKubectl(k);
      await waitFor(async () => /cpu: \d+%\/50%/.test((await ck.kubectl(['get', 'hpa', 'burn'])).stdout), 30_000, `a cpu: N%/50% target in kubectl ${k.version}'s table`);
      const table = (await ck.kubectl(['get', 'hpa', 'burn'])).stdout;
      assert.match(table, /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE/m);
      assert.match(table, /^burn\s+Deployment\/burn\s+cpu: \d+%\/50%\s+1\s+3\s+\d\s+/m);
      const described = (await ck.kubectl(['describe', 'hpa', 'burn'])).stdout;
      if (compareVersions(k.version, DESCRIBES_AUTOSCALING_V2) >= 0) {
        assert.match(described, /resource cpu on pods\s+\(as a percentage of request\):\s+\d+% \(\d+m\) \/ 50%/);
        assert.match(described, /ScalingActive\s+True\s+ValidMetricFound/);
      } else {
        // autoscaling/v1's layout: the utilization only, and the v2 fields (conditions, behavior)
        // carried in annotations.
        assert.match(described, /^Target CPU utilization:\s+50%$/m);
        assert.match(described, /^Current CPU utilization:\s+\d+%$/m);
        assert.match(described, /autoscaling\.alpha\.kubernetes\.io\/conditions:/);
        assert.match(described, /SuccessfulRescale/);
      }
    }
    const events = (await c.kubectl(['get', 'events', '--field-selector', 'involvedObject.kind=HorizontalPodAutoscaler', '-o', 'jsonpath={.items[*].reason}'])).stdout;
    assert.match(events, /SuccessfulRescale/);

    // Stop the burn: the new pods only sleep.
    const patch = JSON.stringify([{ op: 'replace', path: '/spec/template/spec/containers/0/command', value: ['sleep', '3600'] }]);
    await c.kubectl(['patch', 'deployment', 'burn', '--type=json', '-p', patch]);
    const idleFrom = Date.now();
    await waitFor(async () => (await replicasOf('burn')) === 1, 150_000, 'the HPA to scale burn back to 1');
    const downAfterMs = Date.now() - idleFrom;
    // The last high recommendation was made about one sync period before the patch (allow two); the
    // window holds it that long. Without a window the count would drop within a few syncs.
    assert.ok(downAfterMs >= (DOWNSCALE_WINDOW_S - 2 * SYNC_PERIOD_S) * 1000, `scaled down ${downAfterMs} ms after the burn stopped, inside the ${DOWNSCALE_WINDOW_S} s window`);
    // The controller writes the scale first and its own status after, as upstream's does.
    let desired: number | undefined;
    await waitFor(async () => {
      desired = (await c.client.get<HorizontalPodAutoscaler>(HORIZONTALPODAUTOSCALERS, { namespace: 'default', name: 'burn' })).status?.desiredReplicas;
      return desired === 1;
    }, 10_000, () => `the HPA's status.desiredReplicas to follow the scale to 1; it says ${desired}`);
    console.log(`# scaled up after ${scaledUpAfterMs} ms; down ${downAfterMs} ms after the burn stopped (window ${DOWNSCALE_WINDOW_S} s)`);
  });

  it('kubectl 1.20 autoscale creates an autoscaling/v1 HPA, served as v1 and v2', async (t) => {
    const old = availableKubectls().find((k) => compareVersions(k.version, '1.22') <= 0);
    if (!old) return t.skip('no kubectl ≤ 1.22 here');
    const c120 = c.forKubectl(old);
    await c120.kubectl(['apply', '-f', c120.writeFile('idle.yaml', deployment('idle', ['sleep', '3600']))]);
    await c120.kubectl(['autoscale', 'deployment', 'idle', '--cpu-percent=60', '--min=1', '--max=4']);
    const v1 = JSON.parse((await c120.kubectl(['get', 'hpa.v1.autoscaling', 'idle', '-o', 'json'])).stdout) as { apiVersion: string; spec: Record<string, unknown> };
    assert.equal(v1.apiVersion, 'autoscaling/v1');
    assert.equal(v1.spec.targetCPUUtilizationPercentage, 60);
    assert.equal(v1.spec.maxReplicas, 4);
    const v2 = await c.client.get<HorizontalPodAutoscaler>(HORIZONTALPODAUTOSCALERS, { namespace: 'default', name: 'idle' });
    assert.deepEqual(v2.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }]);
    await waitFor(async () => /cpu: \d+%\/60%/.test((await c120.kubectl(['get', 'hpa', 'idle'])).stdout), 60_000, 'kubectl 1.20 get hpa showing cpu: N%/60%');
  });
});
