/**
 * NetworkPolicy (networking.k8s.io/v1) through the real API with stock clients, on one server-only
 * cluster: each kubectl under test applies a policy with ingress and egress rules, an ipBlock with
 * except, a named port and a port range; lists it with kubectl's columns; re-applies it unchanged;
 * has an invalid one refused with a 422 naming the field; explains the spec; finds the kind in
 * discovery; describes and deletes it. Debian's Python client creates and re-sends a policy with
 * `egress: [{}]` and `annotations: {}` as Ansible's k8s module does, and nothing changes.
 * The cluster has no agents, so nothing here is enforced: enforcement is
 * multihost/network-policy.test.ts's.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CORE } from '../../src/client/client.js';
import { NETWORKPOLICIES } from '../../src/api/identities.js';
import type { NetworkPolicy } from '../../src/registry/kinds/networking.js';
import { describeEachKubectl, startCluster, type Cluster, type Kubectl, type KubectlRunOptions } from './harness.js';

/** Debian's interpreter, which setup.sh --for-tests installs python3-kubernetes for. */
const DEBIAN_PYTHON = '/usr/bin/python3';

/**
 * Every port names its protocol: a port that leaves it to the server's default differs from the
 * stored one, and kubectl's three-way merge re-sends the whole (atomic) rule list, reporting
 * `configured` on every apply — against kube-apiserver as well.
 */
const WEB_POLICY = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web
spec:
  podSelector:
    matchLabels: {app: web}
  ingress:
  - from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except: [172.17.1.0/24]
    - namespaceSelector:
        matchLabels: {team: frontend}
      podSelector:
        matchLabels: {role: client}
    ports:
    - {protocol: TCP, port: http}
  egress:
  - to:
    - ipBlock: {cidr: 10.0.0.0/24}
    ports:
    - {protocol: TCP, port: 32000, endPort: 32768}
`;

const DENY_ALL = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
`;

const BAD_EXCEPT = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: bad
spec:
  podSelector: {}
  ingress:
  - from:
    - ipBlock: {cidr: 10.0.0.0/16, except: [10.1.0.0/24]}
`;

let cluster: Cluster;
before(async () => {
  cluster = await startCluster({ agents: [] });
});
after(async () => {
  await cluster?.stop();
});

describeEachKubectl('NetworkPolicy', (k: Kubectl) => {
  // One namespace per kubectl, and one HOME each so their discovery caches never meet.
  const ns = `netpol-${k.version.replace('.', '-')}`;
  let home: string;
  const kubectl = (args: string[], opts: KubectlRunOptions = {}) => cluster.forKubectl(k).kubectl([...args, '-n', ns], { ...opts, env: { HOME: home } });
  const file = (name: string, text: string) => cluster.writeFile(`${ns}-${name}`, text);
  const stored = (name: string) => cluster.client.get<NetworkPolicy>(NETWORKPOLICIES, { namespace: ns, name });

  before(async () => {
    home = path.join(cluster.dir, `home-${ns}`);
    fs.mkdirSync(home);
    await cluster.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  });

  it('discovery lists networkpolicies (short name netpol) in networking.k8s.io/v1 with every verb', async () => {
    const res = await kubectl(['api-resources', '--api-group=networking.k8s.io', '-o', 'wide']);
    // kubectl 1.20 prints the verbs as [a b …], newer ones as a,b,…
    assert.match(res.stdout, /^networkpolicies\s+netpol\s+networking\.k8s\.io\/v1\s+true\s+NetworkPolicy\s+\[?create[ ,]delete[ ,]deletecollection[ ,]get[ ,]list[ ,]patch[ ,]update[ ,]watch\]?\s/m);
  });

  it('apply creates a policy with ingress and egress, ipBlock except, a named port and endPort; a second apply is unchanged', async () => {
    const web = file('web.yaml', WEB_POLICY);
    assert.match((await kubectl(['apply', '-f', web])).stdout, /networkpolicy\.networking\.k8s\.io\/web created/);
    const np = await stored('web');
    assert.equal(np.metadata.generation, 1);
    assert.deepEqual(np.spec?.policyTypes, ['Ingress', 'Egress'], 'defaulted from the egress rules');
    assert.deepEqual(np.spec?.ingress?.[0]?.from?.[0], { ipBlock: { cidr: '172.17.0.0/16', except: ['172.17.1.0/24'] } });
    assert.deepEqual(np.spec?.ingress?.[0]?.ports, [{ protocol: 'TCP', port: 'http' }]);
    assert.deepEqual(np.spec?.egress?.[0]?.ports, [{ protocol: 'TCP', port: 32000, endPort: 32768 }]);

    assert.match((await kubectl(['apply', '-f', web])).stdout, /networkpolicy\.networking\.k8s\.io\/web unchanged/);
    const again = await stored('web');
    assert.equal(again.metadata.resourceVersion, np.metadata.resourceVersion);
  });

  it('a port without a protocol gets TCP, visible to kubectl', async () => {
    const open = file('open.yaml', 'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: open}\nspec:\n  podSelector: {}\n  ingress:\n  - ports:\n    - port: 8080\n');
    await kubectl(['apply', '-f', open]);
    const out = JSON.parse((await kubectl(['get', 'networkpolicy', 'open', '-o', 'json'])).stdout) as NetworkPolicy;
    assert.deepEqual(out.spec, { podSelector: {}, ingress: [{ ports: [{ protocol: 'TCP', port: 8080 }] }], policyTypes: ['Ingress'] });
  });

  it('kubectl get netpol shows NAME, POD-SELECTOR, AGE', async () => {
    await kubectl(['apply', '-f', file('deny-all.yaml', DENY_ALL)]);
    const out = (await kubectl(['get', 'netpol'])).stdout;
    assert.match(out, /^NAME\s+POD-SELECTOR\s+AGE\s*$/m);
    assert.match(out, /^web\s+app=web\s+\d+s\s*$/m);
    assert.match(out, /^deny-all\s+<none>\s+\d+s\s*$/m);
  });

  it('an invalid policy is refused with a 422 naming the field', async () => {
    const res = await kubectl(['apply', '-f', file('bad.yaml', BAD_EXCEPT)], { allowFail: true });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /The NetworkPolicy "bad" is invalid: spec\.ingress\[0\]\.from\[0\]\.ipBlock\.except\[0\]: Invalid value: "10\.1\.0\.0\/24": must be a strict subset of `cidr`/);
    const raw = await cluster.client.raw({
      method: 'POST',
      path: `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'bad' }, spec: { podSelector: {}, egress: [{ ports: [{ protocol: 'ICMP', port: 'http', endPort: 90 }] }] } }),
    });
    assert.equal(raw.status, 422);
    const status = JSON.parse(raw.body.toString()) as { reason: string; details: { causes: Array<{ field: string; reason: string }> } };
    assert.equal(status.reason, 'Invalid');
    assert.deepEqual(status.details.causes.map((cause) => `${cause.field} ${cause.reason}`), [
      'spec.egress[0].ports[0].protocol FieldValueNotSupported',
      'spec.egress[0].ports[0].endPort FieldValueInvalid',
    ]);
  });

  it('explain networkpolicy.spec lists its fields', async () => {
    const out = (await kubectl(['explain', 'networkpolicy.spec'])).stdout;
    assert.match(out, /KIND:\s+NetworkPolicy/);
    for (const field of ['podSelector', 'ingress', 'egress', 'policyTypes']) assert.match(out, new RegExp(`^\\s+${field}\\s+<`, 'm'), field);
  });

  it('describe shows the policy (typed client), delete removes it', async () => {
    const out = (await kubectl(['describe', 'networkpolicy', 'web'])).stdout;
    assert.match(out, /^Name:\s+web$/m);
    assert.match(out, /PodSelector:\s+app=web/);
    assert.match(out, /172\.17\.0\.0\/16/);
    assert.match((await kubectl(['delete', 'netpol', 'web'])).stdout, /networkpolicy\.networking\.k8s\.io "web" deleted/);
    assert.equal((await kubectl(['get', 'netpol', 'web'], { allowFail: true })).code, 1);
  });
});

/**
 * The client-side round trip of Ansible's k8s module and Python scripts: create from a dict, then
 * send the same dict again as a strategic merge patch (the typed client's patch) and as a merge
 * patch (the dynamic client's, as kubernetes.core's apply sends it). Prints the object read back
 * after the create and after each patch.
 */
const PYTHON_ROUND_TRIP = `
import json, sys
from kubernetes import client, config, dynamic
config.load_kube_config(config_file=sys.argv[1])
ns = sys.argv[2]
api = client.ApiClient()
net = client.NetworkingV1Api(api)
body = {
    'apiVersion': 'networking.k8s.io/v1', 'kind': 'NetworkPolicy',
    'metadata': {'name': 'open-egress', 'annotations': {}},
    'spec': {'podSelector': {}, 'ingress': [{'ports': [{'port': 8080}]}], 'egress': [{}]},
}
net.create_namespaced_network_policy(ns, body)
read = lambda: api.sanitize_for_serialization(net.read_namespaced_network_policy('open-egress', ns))
out = {'created': read()}
net.patch_namespaced_network_policy('open-egress', ns, body)
out['strategic'] = read()
policies = dynamic.DynamicClient(api).resources.get(api_version='networking.k8s.io/v1', kind='NetworkPolicy')
policies.patch(body=body, namespace=ns, content_type='application/merge-patch+json')
out['merge'] = read()
print(json.dumps(out))
`;

describe('NetworkPolicy with the Python client', () => {
  it('egress: [{}] and annotations: {} round-trip: re-sending the same policy changes nothing', async () => {
    const ns = 'netpol-python';
    await cluster.client.create(CORE.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const script = cluster.writeFile('round-trip.py', PYTHON_ROUND_TRIP);
    const out = await new Promise<Record<string, NetworkPolicy>>((resolve, reject) =>
      execFile(DEBIAN_PYTHON, [script, cluster.kubeconfig, ns], { timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Record<string, NetworkPolicy>),
      ),
    );
    const created = out.created!;
    assert.deepEqual(created.spec, { podSelector: {}, ingress: [{ ports: [{ protocol: 'TCP', port: 8080 }] }], egress: [{}], policyTypes: ['Ingress', 'Egress'] });
    assert.equal(created.metadata.annotations, undefined, 'annotations: {} is not stored');
    assert.deepEqual(out.strategic, created, 'the strategic merge patch of the same policy is no change');
    assert.deepEqual(out.merge, created, 'the merge patch of the same policy is no change');
  });
});
