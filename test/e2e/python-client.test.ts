/**
 * Debian's kubernetes Python client (python3-kubernetes 22.6, which scripts/setup.sh --for-tests
 * installs) against one cluster with one agent on real Docker, called as its users call it:
 *   - `watch.Watch().stream`: the initial ADDED events of a list-less watch, then changes made while
 *     it runs; a watch from a list's resourceVersion sees only later changes; `timeout_seconds` ends
 *     one by itself;
 *   - `stream.stream(connect_get_namespaced_pod_exec)`: a one-shot command, and an interactive one
 *     with stdin, separate stdout and stderr, and the exit code read from the error channel;
 *   - a ReplicationController created, scaled through its scale subresource, its pods really run;
 *   - APIServices listed and read through ApiregistrationV1Api.
 * Port-forward with the same client is in port-forward-websocket.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { Pod } from '../../src/api/types.js';
import { CORE, type ResourceRef } from '../../src/client/client.js';
import { podManifest, startCluster, TEST_IMAGE, waitFor, waitForPod, type Cluster } from './harness.js';

/** Debian's interpreter, which the Debian package installs the client for. */
const DEBIAN_PYTHON = '/usr/bin/python3';
const NAMESPACE = 'default';
const CONFIGMAPS: ResourceRef = { plural: 'configmaps' };

/** One script, one mode per test; it prints one JSON object. */
const PYTHON_CLIENT = `
import json, sys, time
from kubernetes import client, config, watch
from kubernetes.stream import stream

config.load_kube_config(config_file=sys.argv[1])
mode, ns = sys.argv[2], sys.argv[3]
core = client.CoreV1Api()
out = {}

def brief(ev):
    return [ev['type'], ev['object'].metadata.name, (ev['object'].data or {}).get('k')]

if mode == 'watch':
    events = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, label_selector='watched=yes', timeout_seconds=60):
        events.append(brief(ev))
        if len(events) == 2:
            # Both initial events seen: change things while the watch runs.
            core.create_namespaced_config_map(ns, {'metadata': {'name': 'cm-c', 'labels': {'watched': 'yes'}}, 'data': {'k': 'c'}})
            core.patch_namespaced_config_map('cm-a', ns, {'data': {'k': 'a2'}})
            core.delete_namespaced_config_map('cm-b', ns)
        if len(events) == 5:
            w.stop()
    out['events'] = events

    listed = core.list_namespaced_config_map(ns, label_selector='watched=yes')
    out['listed'] = sorted(i.metadata.name for i in listed.items)
    core.patch_namespaced_config_map('cm-c', ns, {'data': {'k': 'c2'}})
    later = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, label_selector='watched=yes', resource_version=listed.metadata.resource_version, timeout_seconds=60):
        later.append(brief(ev))
        w.stop()
    out['fromResourceVersion'] = later

    started = time.time()
    quiet = [brief(ev) for ev in watch.Watch().stream(core.list_namespaced_config_map, ns, label_selector='nobody=here', timeout_seconds=1)]
    out['timedOut'] = {'events': quiet, 'seconds': round(time.time() - started, 1)}

elif mode == 'exec':
    pod = sys.argv[4]
    out['oneShot'] = stream(core.connect_get_namespaced_pod_exec, pod, ns, command=['echo', 'one shot'], stdout=True, stderr=True, stdin=False, tty=False)
    ws = stream(core.connect_get_namespaced_pod_exec, pod, ns,
                command=['sh', '-c', 'read line; echo "got $line"; echo "to stderr" >&2; exit 3'],
                stdout=True, stderr=True, stdin=True, tty=False, _preload_content=False)
    ws.write_stdin('hello\\n')
    ws.run_forever(timeout=30)
    out['stdout'] = ws.read_stdout(timeout=1)
    out['stderr'] = ws.read_stderr(timeout=1)
    out['returncode'] = ws.returncode

    # Copies into the pod as kubernetes.core's k8s_cp makes them: a tar on stdin, and the socket
    # closed right after its last bytes, without waiting for tar to finish.
    import io, tarfile
    names = ['/tmp/copied-%d.txt' % i for i in range(10)]
    for name in names:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w') as tar:
            info = tarfile.TarInfo(name.lstrip('/'))
            info.size = 6
            tar.addfile(info, io.BytesIO(b'hello\\n'))
        ws = stream(core.connect_get_namespaced_pod_exec, pod, ns, command=['tar', '-xmf', '-', '-C', '/'],
                    stdout=True, stderr=True, stdin=True, tty=False, _preload_content=False)
        ws.write_stdin(buf.getvalue())
        ws.close()
    time.sleep(1)
    listing = stream(core.connect_get_namespaced_pod_exec, pod, ns, command=['sh', '-c', 'cat /tmp/copied-*.txt | wc -l'], stdout=True, stderr=True, stdin=False, tty=False)
    out['copiedFiles'] = listing.strip()

elif mode == 'rc':
    name = sys.argv[4]
    template = {'metadata': {'labels': {'rc': name}}, 'spec': {'terminationGracePeriodSeconds': 1,
                'containers': [{'name': 'c', 'image': sys.argv[5], 'command': ['sleep', '3600']}]}}
    core.create_namespaced_replication_controller(ns, {'metadata': {'name': name}, 'spec': {'replicas': 1, 'template': template}})
    core.patch_namespaced_replication_controller_scale(name, ns, {'spec': {'replicas': 2}})
    deadline = time.time() + 90
    while time.time() < deadline:
        rc = core.read_namespaced_replication_controller(name, ns)
        if (rc.status.ready_replicas or 0) == 2:
            break
        time.sleep(0.5)
    scale = core.read_namespaced_replication_controller_scale(name, ns)
    out['selector'] = rc.spec.selector
    out['readyReplicas'] = rc.status.ready_replicas
    out['scale'] = {'spec': scale.spec.replicas, 'status': scale.status.replicas, 'selector': scale.status.selector}

elif mode == 'apiservices':
    reg = client.ApiregistrationV1Api()
    listed = reg.list_api_service()
    out['services'] = {s.metadata.name: [c.status for c in (s.status.conditions or []) if c.type == 'Available'] for s in listed.items}
    one = reg.read_api_service('v1.apps')
    out['apps'] = {'group': one.spec.group, 'version': one.spec.version, 'service': one.spec.service}

print(json.dumps(out))
`;

describe("Debian's kubernetes Python client: watch, exec, ReplicationController scale, APIServices", () => {
  let c: Cluster;
  let script: string;

  before(async () => {
    c = await startCluster();
    script = c.writeFile('client.py', PYTHON_CLIENT);
  });
  after(async () => {
    await c?.stop();
  });

  function runPython(...args: string[]): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) =>
      execFile(DEBIAN_PYTHON, [script, c.kubeconfig, ...args], { timeout: 120_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Record<string, unknown>),
      ),
    );
  }

  it('watch: initial ADDED events, then ADDED/MODIFIED/DELETED as they happen; from a resourceVersion; timeout_seconds ends it', async () => {
    for (const [name, k] of [['cm-a', 'a'], ['cm-b', 'b']]) {
      await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { watched: 'yes' } }, data: { k } }, { namespace: NAMESPACE });
    }
    await c.client.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'not-watched' }, data: { k: 'x' } }, { namespace: NAMESPACE });
    const out = await runPython('watch', NAMESPACE);
    assert.deepEqual(out.events, [
      ['ADDED', 'cm-a', 'a'],
      ['ADDED', 'cm-b', 'b'],
      ['ADDED', 'cm-c', 'c'],
      ['MODIFIED', 'cm-a', 'a2'],
      ['DELETED', 'cm-b', 'b'],
    ]);
    assert.deepEqual(out.listed, ['cm-a', 'cm-c']);
    assert.deepEqual(out.fromResourceVersion, [['MODIFIED', 'cm-c', 'c2']]);
    const timedOut = out.timedOut as { events: unknown[]; seconds: number };
    assert.deepEqual(timedOut.events, []);
    assert.ok(timedOut.seconds < 10, `a 1 s watch ended after ${timedOut.seconds} s`);
  });

  it('exec over WebSocket: a one-shot command; stdin, stdout and stderr apart, and the exit code; stdin sent just before the client closes still arrives', async () => {
    await c.client.create(CORE.pods, podManifest('shell', { nodeName: c.nodeNames[0], terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: TEST_IMAGE, command: ['sleep', '3600'] }] }), { namespace: NAMESPACE });
    await waitForPod(c.client, NAMESPACE, 'shell', (p) => p.status?.phase === 'Running', 45_000);
    const out = await runPython('exec', NAMESPACE, 'shell');
    assert.equal(out.oneShot, 'one shot\n');
    assert.equal(out.stdout, 'got hello\n');
    assert.equal(out.stderr, 'to stderr\n');
    assert.equal(out.returncode, 3);
    assert.equal(out.copiedFiles, '10', 'each tar sent on stdin just before the client closed was unpacked in the pod');
  });

  it('a ReplicationController created and scaled to 2 through its scale subresource; both pods run', async () => {
    const out = await runPython('rc', NAMESPACE, 'py-rc', TEST_IMAGE);
    assert.deepEqual(out.selector, { rc: 'py-rc' }, 'the selector defaults to the template labels');
    assert.equal(out.readyReplicas, 2);
    assert.deepEqual(out.scale, { spec: 2, status: 2, selector: 'rc=py-rc' });
    let pods: Pod[] = [];
    await waitFor(async () => {
      const list = await c.client.list<Pod>(CORE.pods, { namespace: NAMESPACE, labelSelector: 'rc=py-rc' });
      pods = list.items.filter((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp);
      return pods.length === 2;
    }, 30_000, 'two Running pods of py-rc');
    for (const pod of pods) assert.equal(pod.metadata.ownerReferences?.[0]?.kind, 'ReplicationController');
  });

  it('APIServices: listed with Available=True for the built-in groups, one read by name', async () => {
    const out = await runPython('apiservices', NAMESPACE);
    const services = out.services as Record<string, string[]>;
    for (const name of ['v1.', 'v1.apps', 'v1.batch', 'v1.rbac.authorization.k8s.io', 'v1.certificates.k8s.io']) {
      assert.deepEqual(services[name], ['True'], `${name} is listed Available`);
    }
    assert.deepEqual(out.apps, { group: 'apps', version: 'v1', service: null });
  });
});
