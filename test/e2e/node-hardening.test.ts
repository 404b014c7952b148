/**
 * Node hardening on the real system (one cluster, one agent, short heartbeats): a Bidirectional mount
 * is refused with 422 unless its container is privileged (pods and Deployment templates alike); a
 * privileged one gets an rshared mount, and where the daemon can run privileged containers, a mount
 * made inside reaches the host. The agent puts back a Node's overwritten status.addresses with its
 * next status sync. An agent whose credential was replaced by a join under its name after its Node
 * was deleted exits with status 3, leaving its containers running; that case ends the agent, so it
 * runs last.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import YAML from 'yaml';
import type { Node, Pod } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { HttpClient } from '../../src/client/http-client.js';
import { REJECTED_HEARTBEATS } from '../../agent/node/node-status.js';
import { availableKubectls, docker, dockerInspect, needsKubectl, podContainers, podManifest, runKubectl, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster, type Kubectl } from './harness.js';

const execFileP = promisify(execFile);

/** The agent's heartbeat (its status sync) in these tests; production's is 10 s. */
const HEARTBEAT_MS = 1_000;
/** How long a stopping agent may take once it has given up (its loops end; containers are not touched). */
const AGENT_STOP_MS = 15_000;
/** Slack for a loaded machine (other clusters beside this one) on top of a number of heartbeats. */
const SLACK_MS = 5_000;
const NAMESPACE = 'hardening';
const running = (p: Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((s) => s.state?.running);

const BIDIRECTIONAL_FORBIDDEN = 'Forbidden: Bidirectional mount propagation is available only to privileged containers';

describe('node hardening', () => {
  let c: Cluster;
  let nodeName: string;
  /** every kubectl the e2e tests run with, newest first */
  let kubectls: Kubectl[];
  /** a directory bind-mounted onto itself and made shared, as / is on a systemd host */
  let sharedHostDir: string;

  const kubectlWith = (k: Kubectl, args: string[]) => runKubectl(c.kubeconfig, args, { bin: k.path, allowFail: true });

  before(async () => {
    kubectls = availableKubectls();
    c = await startCluster({ agentArgs: ['--heartbeat-interval-ms', String(HEARTBEAT_MS)] });
    nodeName = c.nodeNames[0]!;
    await c.kubectl(['create', 'namespace', NAMESPACE]);
    // Pod Security would refuse the hostPath volume itself: here only the mount's propagation is judged.
    await c.kubectl(['label', 'namespace', NAMESPACE, 'pod-security.kubernetes.io/enforce=privileged']);
    sharedHostDir = path.join(c.dir, 'shared-host');
    fs.mkdirSync(path.join(sharedHostDir, 'inner'), { recursive: true });
    // Docker binds with rshared only from a shared mount; this host's / is private (no systemd).
    await execFileP('mount', ['--bind', sharedHostDir, sharedHostDir]);
    await execFileP('mount', ['--make-shared', sharedHostDir]);
  });
  after(async () => {
    if (!c) return;
    await c.client.delete(CORE.pods, { namespace: NAMESPACE, name: 'bidi' }).catch(() => undefined);
    // Inner first: the container's tmpfs reached the host through the shared mount.
    for (const dir of [path.join(sharedHostDir, 'inner'), sharedHostDir]) await execFileP('umount', ['-l', dir]).catch(() => undefined);
    await c.stop();
  });

  const bidirectionalPod = (name: string, privileged: boolean) =>
    podManifest(
      name,
      {
        nodeName,
        terminationGracePeriodSeconds: 1,
        volumes: [{ name: 'host', hostPath: { path: sharedHostDir, type: 'Directory' } }],
        containers: [
          {
            name: 'main',
            image: TEST_IMAGE,
            command: ['sleep', '3600'],
            ...(privileged ? { securityContext: { privileged: true } } : {}),
            volumeMounts: [{ name: 'host', mountPath: '/host', mountPropagation: 'Bidirectional' }],
          },
        ],
      } as unknown as Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>,
      { namespace: NAMESPACE },
    );

  it('refuses an unprivileged container a Bidirectional mount with 422 naming the field, in a pod and in a Deployment template', async () => {
    const podFile = c.writeFile('bidi-unprivileged.yaml', YAML.stringify(bidirectionalPod('bidi', false)));
    const privilegedMain = bidirectionalPod('x', true).spec.containers[0]!;
    // Privilege is per container: the privileged first one is fine, the unprivileged second one is not.
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'bidi', namespace: NAMESPACE },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'bidi' } },
        template: {
          metadata: { labels: { app: 'bidi' } },
          spec: {
            volumes: [{ name: 'host', hostPath: { path: sharedHostDir, type: 'Directory' } }],
            containers: [privilegedMain, { ...privilegedMain, name: 'helper', securityContext: { privileged: false } }],
          },
        },
      },
    };
    const deploymentFile = c.writeFile('bidi-deployment.yaml', YAML.stringify(deployment));
    for (const k of kubectls) {
      const pod = await kubectlWith(k, ['create', '-f', podFile]);
      assert.equal(pod.code, 1, `kubectl ${k.version}: ${pod.stdout}${pod.stderr}`);
      assert.equal(pod.stderr.trim(), `The Pod "bidi" is invalid: spec.containers[0].volumeMounts[0].mountPropagation: ${BIDIRECTIONAL_FORBIDDEN}`, `kubectl ${k.version}`);
      const dep = await kubectlWith(k, ['create', '-f', deploymentFile]);
      assert.equal(dep.code, 1, `kubectl ${k.version}: ${dep.stdout}${dep.stderr}`);
      assert.equal(dep.stderr.trim(), `The Deployment "bidi" is invalid: spec.template.spec.containers[1].volumeMounts[0].mountPropagation: ${BIDIRECTIONAL_FORBIDDEN}`, `kubectl ${k.version}`);
    }
    // The Status itself: 422 Invalid, the cause naming the field. In a baseline namespace too, where
    // Pod Security would refuse the hostPath: objects are validated before validating admission runs.
    for (const namespace of [NAMESPACE, 'default']) {
      const manifest = { ...bidirectionalPod('bidi', false), metadata: { name: 'bidi', namespace } };
      const raw = await c.client.raw({ method: 'POST', path: `/api/v1/namespaces/${namespace}/pods`, body: JSON.stringify(manifest), headers: { 'content-type': 'application/json' } });
      assert.equal(raw.status, 422, `${namespace}: ${raw.body.toString()}`);
      const status = JSON.parse(raw.body.toString()) as { reason: string; details: { causes: Array<{ field: string; reason: string }> } };
      assert.equal(status.reason, 'Invalid');
      assert.deepEqual(status.details.causes.map((x) => [x.reason, x.field]), [['FieldValueForbidden', 'spec.containers[0].volumeMounts[0].mountPropagation']]);
    }
    for (const kind of ['pod', 'deployment']) {
      const got = await c.kubectl(['get', kind, 'bidi', '-n', NAMESPACE], { allowFail: true });
      assert.match(got.stderr, /NotFound/, `no ${kind} was stored`);
    }
  });

  it('accepts the same pod with a privileged container: Docker gets a privileged container with the hostPath mounted rshared', async () => {
    const file = c.writeFile('bidi-privileged.yaml', YAML.stringify(bidirectionalPod('bidi', true)));
    assert.match((await c.kubectl(['create', '-f', file])).stdout, /pod\/bidi created/);
    const pod = await waitForPod(c.client, NAMESPACE, 'bidi', (p) => !!p.status?.containerStatuses?.[0]?.containerID, 60_000);
    const container = await dockerInspect(pod.status!.containerStatuses![0]!.containerID!.replace(/^docker:\/\//, ''));
    assert.equal(container.HostConfig.Privileged, true);
    const mount = (container.Mounts as Array<{ Source: string; Destination: string; Propagation: string }>).find((m) => m.Destination === '/host');
    assert.equal(mount?.Source, sharedHostDir);
    assert.equal(mount?.Propagation, 'rshared');
  });

  it('runs it, and a mount made inside the container reaches the host', async (t) => {
    try {
      // Some daemons (this one inside a VM or container) cannot grant every capability a privileged
      // container gets, so none starts there; what the agent asked Docker for was checked above.
      const refusal = await docker(['run', '--rm', '--privileged', TEST_IMAGE, 'true']).then(
        () => undefined,
        (err: Error) => err.message.split('\n').find((l) => l.includes('Error response')) ?? err.message,
      );
      if (refusal !== undefined) return t.skip(`this Docker daemon runs no privileged container: ${refusal}`);
      const pod = await waitForPod(c.client, NAMESPACE, 'bidi', running, 60_000);
      assert.equal(pod.status?.phase, 'Running');
      // What Bidirectional is for: a mount made inside the container shows on the host.
      await c.kubectl(['exec', '-n', NAMESPACE, 'bidi', '--', 'mount', '-t', 'tmpfs', 'bidi-probe', '/host/inner']);
      const hostMounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
      assert.ok(hostMounts.some((l) => l.split(' ')[4] === path.join(sharedHostDir, 'inner') && l.includes(' - tmpfs bidi-probe ')), 'the tmpfs mounted in the container is mounted on the host');
      await execFileP('umount', [path.join(sharedHostDir, 'inner')]);
    } finally {
      await c.client.delete(CORE.pods, { namespace: NAMESPACE, name: 'bidi', gracePeriodSeconds: 0 }).catch(() => undefined);
    }
  });

  it("puts back the node's addresses within a few heartbeats after an admin overwrote them", { skip: needsKubectl(availableKubectls()[0]!, '1.24', 'patch --subresource=status') }, async () => {
    const real = (await c.client.get<Node>(CORE.nodes, { name: nodeName })).status?.addresses;
    assert.ok(real?.some((a) => a.type === 'InternalIP'), `the agent reported an InternalIP: ${JSON.stringify(real)}`);
    const bogus = [{ type: 'InternalIP', address: '203.0.113.66' }];
    assert.ok(!real!.some((a) => a.address === bogus[0]!.address));
    const patched = await kubectlWith(kubectls[0]!, ['patch', 'node', nodeName, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { addresses: bogus } }), '-o', 'json']);
    assert.equal(patched.code, 0, patched.stderr);
    assert.deepEqual((JSON.parse(patched.stdout) as Node).status?.addresses, bogus, 'the overwrite was stored');
    let now: unknown;
    await waitFor(async () => {
      now = (await c.client.get<Node>(CORE.nodes, { name: nodeName })).status?.addresses;
      return JSON.stringify(now) === JSON.stringify(real);
    }, 3 * HEARTBEAT_MS + SLACK_MS, () => `the real addresses back; now ${JSON.stringify(now)}`);
  });

  it('an agent whose credential was replaced (Node deleted, the name joined anew) exits with status 3 and leaves its containers running', async () => {
    await c.client.create(CORE.pods, podManifest('keeper', { nodeName, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: NAMESPACE });
    const pod = await waitForPod(c.client, NAMESPACE, 'keeper', running, 60_000);
    const containersBefore = (await podContainers(pod.metadata.uid!)).map((x) => x.id).sort();
    assert.equal(containersBefore.length, 2, 'the infra container and main');
    assert.equal(c.agentExit(nodeName), undefined, 'the agent runs');

    // The operator's way to give a node's name to a new host: delete the Node, then the new host joins
    // under the name with its own node password, which replaces the old host's credential. The old agent
    // may register the Node again between the two steps (its heartbeat finds it gone): then again.
    const joinSecret = fs.readFileSync(path.join(c.dir, 'server', 'node-token'), 'utf8').trim().split('::')[2]!;
    const newcomer = new HttpClient({ server: c.url, ca: fs.readFileSync(path.join(c.dir, 'server', 'pki', 'ca.crt'), 'utf8') });
    let joined: { status: number; body: string } | undefined;
    for (let attempt = 0; attempt < 5 && joined?.status !== 200; attempt++) {
      await c.kubectl(['delete', 'node', nodeName]);
      const r = await newcomer.raw({ method: 'POST', path: '/berth/v1/join', body: JSON.stringify({ nodeName, nodePassword: 'n'.repeat(43) }), headers: { authorization: `Bearer ${joinSecret}`, 'content-type': 'application/json' } });
      joined = { status: r.status, body: r.body.toString() };
    }
    newcomer.close();
    assert.equal(joined?.status, 200, `the new host joins under the name: ${joined?.body}`);

    const bound = (REJECTED_HEARTBEATS + 1) * HEARTBEAT_MS + AGENT_STOP_MS;
    await waitFor(() => c.agentExit(nodeName) !== undefined, bound, () => `the agent to exit; log:\n${c.agentLog(nodeName).slice(-3000)}`);
    assert.deepEqual(c.agentExit(nodeName), { code: 3, signal: null }, c.agentLog(nodeName).slice(-3000));
    const log = c.agentLog(nodeName);
    assert.match(log, /node credential rejected: stopping the agent and leaving its containers as they are/);
    assert.match(
      log,
      new RegExp(`berth agent: the control plane no longer accepts this node's credential \\(401 on ${REJECTED_HEARTBEATS} heartbeats in a row\\): it was revoked, or another agent joined as node "${nodeName}"\\. The agent stopped; its containers were left as they are\\.`),
    );

    const containersAfter = (await podContainers(pod.metadata.uid!)).map((x) => x.id).sort();
    assert.deepEqual(containersAfter, containersBefore, 'the same containers');
    for (const id of containersAfter) assert.equal((await dockerInspect(id)).State.Running, true, `container ${id} still runs`);
    await docker(['rm', '-f', ...containersAfter]);
    assert.deepEqual(await podContainers(pod.metadata.uid!), [], 'cleaned up');
  });
});
