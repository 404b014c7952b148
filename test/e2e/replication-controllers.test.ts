/**
 * ReplicationController, PodTemplate and APIService end to end: one cluster with one agent on real
 * Docker, every kubectl under test. Discovery and `kubectl explain` know the three kinds. kubectl
 * creates an RC (selector and labels defaulted from the template), its pods really start, `get`
 * and `get -o wide` print upstream's columns, `kubectl scale rc` goes through the scale
 * subresource, `describe` reads it, and deleting it lets the garbage collector remove its pods. A
 * PodTemplate is created and listed; `kubectl get apiservices` lists the local APIServices
 * Available, and a user APIService naming a missing Service shows `False (ServiceNotFound)`.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { APIService, Pod, ReplicationController } from '../../src/api/types.js';
import { CORE } from '../../src/client/client.js';
import { describeEachKubectl, startCluster, TEST_IMAGE, waitFor, type Cluster, type Kubectl } from './harness.js';
import { APISERVICES, REPLICATIONCONTROLLERS } from '../../src/api/identities.js';

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ agents: ['rc'] });
});
after(async () => {
  await cluster?.stop();
});

describeEachKubectl('ReplicationController, PodTemplate and APIService', (k: Kubectl) => {
  // Names per kubectl, since every kubectl's cases share the one cluster.
  const suffix = k.version.replace('.', '');
  const rcName = `web-${suffix}`;
  const c = () => cluster.forKubectl(k);
  const rc = () => cluster.client.get<ReplicationController>(REPLICATIONCONTROLLERS, { namespace: 'default', name: rcName });
  const pods = async () => (await cluster.client.list<Pod>(CORE.pods, { namespace: 'default', labelSelector: `app=${rcName}` })).items.filter((p) => !p.metadata.deletionTimestamp);

  it('lists the three kinds in discovery', async () => {
    const res = await c().kubectl(['api-resources']);
    assert.match(res.stdout, /^replicationcontrollers\s+rc\s+(v1\s+)?true\s+ReplicationController$/m);
    assert.match(res.stdout, /^podtemplates\s+(v1\s+)?true\s+PodTemplate$/m);
    assert.match(res.stdout, /^apiservices\s+(apiregistration\.k8s\.io(\/v1)?\s+)?false\s+APIService$/m);
  });

  it('explains them from the published OpenAPI', async () => {
    const rcSelector = (await c().kubectl(['explain', 'rc.spec.selector'])).stdout;
    assert.match(rcSelector, /KIND:\s+ReplicationController/);
    assert.match(rcSelector, /selector\s+<map\[string\]string>/);
    const template = (await c().kubectl(['explain', 'podtemplate.template'])).stdout;
    assert.match(template, /KIND:\s+PodTemplate/);
    assert.match(template, /template\s+<(Object|PodTemplateSpec)>/);
    const service = (await c().kubectl(['explain', 'apiservices.spec.service'])).stdout;
    assert.match(service, /KIND:\s+APIService/);
    assert.match(service, /port\s+<integer>/);
  });

  it('creates an RC whose pods start, prints its columns, scales it and describes it', async () => {
    const manifest = `apiVersion: v1
kind: ReplicationController
metadata:
  name: ${rcName}
spec:
  replicas: 2
  template:
    metadata:
      labels: {app: ${rcName}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: ${TEST_IMAGE}
        command: ["sleep", "3600"]
`;
    assert.match((await c().kubectl(['create', '-f', c().writeFile(`${rcName}.yaml`, manifest)])).stdout, new RegExp(`replicationcontroller/${rcName} created`));
    const created = await rc();
    assert.deepEqual(created.spec.selector, { app: rcName }, 'selector defaulted from the template labels');
    assert.deepEqual(created.metadata.labels, { app: rcName });
    await waitFor(async () => (await rc()).status?.readyReplicas === 2, 45_000, 'two ready replicas');
    const mine = await pods();
    assert.equal(mine.length, 2);
    for (const p of mine) assert.deepEqual(p.metadata.ownerReferences?.map((o) => `${o.apiVersion}/${o.kind}/${o.name}/${o.controller}`), [`v1/ReplicationController/${rcName}/true`]);

    const get = (await c().kubectl(['get', 'rc', rcName])).stdout.split('\n');
    assert.match(get[0]!, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE$/);
    assert.match(get[1]!, new RegExp(`^${rcName}\\s+2\\s+2\\s+2\\s+\\d+s$`));
    const wide = (await c().kubectl(['get', 'replicationcontrollers', rcName, '-o', 'wide'])).stdout.split('\n');
    assert.match(wide[0]!, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$/);
    assert.match(wide[1]!, new RegExp(`^${rcName}\\s+2\\s+2\\s+2\\s+\\d+s\\s+main\\s+${TEST_IMAGE.replace(/[/.]/g, '\\$&')}\\s+app=${rcName}$`));

    assert.match((await c().kubectl(['scale', 'rc', rcName, '--replicas=3'])).stdout, new RegExp(`replicationcontroller/${rcName} scaled`));
    await waitFor(async () => (await rc()).status?.readyReplicas === 3, 45_000, 'three ready replicas');
    const status = (await rc()).status!;
    assert.deepEqual({ r: status.replicas, f: status.fullyLabeledReplicas, a: status.availableReplicas, g: status.observedGeneration }, { r: 3, f: 3, a: 3, g: 2 });

    const described = (await c().kubectl(['describe', 'rc', rcName])).stdout;
    assert.match(described, new RegExp(`Name:\\s+${rcName}`));
    assert.match(described, new RegExp(`Selector:\\s+app=${rcName}`));
    assert.match(described, /Replicas:\s+3 current \/ 3 desired/);
    assert.match(described, /Pods Status:\s+3 Running \/ 0 Waiting \/ 0 Succeeded \/ 0 Failed/);
    assert.match(described, /SuccessfulCreate/);
  });

  it('deleting the RC lets the garbage collector remove its pods', async () => {
    assert.match((await c().kubectl(['delete', 'rc', rcName])).stdout, new RegExp(`replicationcontroller "${rcName}" deleted`));
    await waitFor(async () => (await pods()).length === 0, 30_000, 'the RC’s pods deleted');
  });

  it('creates and lists a PodTemplate', async () => {
    const name = `tpl-${suffix}`;
    const manifest = `apiVersion: v1
kind: PodTemplate
metadata:
  name: ${name}
template:
  metadata:
    labels: {app: tpl, tier: web}
  spec:
    containers:
    - name: main
      image: ${TEST_IMAGE}
`;
    assert.match((await c().kubectl(['create', '-f', c().writeFile(`${name}.yaml`, manifest)])).stdout, new RegExp(`podtemplate/${name} created`));
    const out = (await c().kubectl(['get', 'podtemplates'])).stdout.split('\n');
    assert.match(out[0]!, /^NAME\s+CONTAINERS\s+IMAGES\s+POD LABELS$/);
    assert.ok(out.some((l) => new RegExp(`^${name}\\s+main\\s+\\S+\\s+app=tpl,tier=web$`).test(l)), out.join('\n'));
    const bad = await c().kubectl(['create', '-f', c().writeFile(`${name}-bad.yaml`, manifest.replace(`name: ${name}`, `name: ${name}-bad`).replace(/    containers:[\s\S]*$/, '    containers: []\n'))], { allowFail: true });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /template\.spec\.containers: Required value/);
  });

  it('lists the local APIServices as Available, and a user APIService with a missing Service as False (ServiceNotFound)', async () => {
    await waitFor(async () => {
      const list = (await cluster.client.list<APIService>(APISERVICES)).items;
      const ok = (name: string) => list.find((s) => s.metadata.name === name)?.status?.conditions?.some((x) => x.type === 'Available' && x.status === 'True');
      return !!(ok('v1.') && ok('v1.apps'));
    }, 20_000, 'local APIServices Available');
    const out = (await c().kubectl(['get', 'apiservices'])).stdout.split('\n');
    assert.match(out[0]!, /^NAME\s+SERVICE\s+AVAILABLE\s+AGE$/);
    for (const name of ['v1.', 'v1.apps', 'v1.batch', 'v1.rbac.authorization.k8s.io']) {
      assert.ok(out.some((l) => new RegExp(`^${name.replace(/\./g, '\\.')}\\s+Local\\s+True\\s+\\S+$`).test(l)), `${name} in\n${out.join('\n')}`);
    }

    const name = `v1beta1.missing${suffix}.example.com`;
    const manifest = `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: ${name}
spec:
  group: missing${suffix}.example.com
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service:
    namespace: default
    name: missing-${suffix}
`;
    await c().kubectl(['create', '-f', c().writeFile(`${name}.yaml`, manifest)]);
    await waitFor(async () => (await cluster.client.get<APIService>(APISERVICES, { name })).status?.conditions?.some((x) => x.reason === 'ServiceNotFound') ?? false, 20_000, 'ServiceNotFound');
    const row = (await c().kubectl(['get', 'apiservice', name])).stdout.split('\n')[1]!;
    assert.match(row, new RegExp(`^${name.replace(/\./g, '\\.')}\\s+default/missing-${suffix}\\s+False \\(ServiceNotFound\\)\\s+\\S+$`));
    const wrongName = await c().kubectl(['create', '-f', c().writeFile(`${name}-bad.yaml`, manifest.replace(`name: ${name}`, 'name: v1.wrong'))], { allowFail: true });
    assert.notEqual(wrongName.code, 0);
    assert.match(wrongName.stderr, new RegExp(`metadata\\.name: Invalid value: "v1\\.wrong": must be \`spec\\.version\\+"\\."\\+spec\\.group\`: "${name.replace(/\./g, '\\.')}"`));
    await c().kubectl(['delete', 'apiservice', name]);
  });
});
