/**
 * The NetworkPolicy compiler (agent/network-policy/policy-rules.ts): policies and pods in, set elements,
 * group chains, map elements and nft transactions out — upstream's semantics checked on the data.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NetworkPolicy } from '../../src/api/types.js';
import { compilePolicies, diffScript, fullScript, ipBlockIntervals, policyTypesOf, type CompiledPolicies, type PolicyPod } from '../../agent/network-policy/policy-rules.js';
import { policyPod } from '../../agent/network-policy/enforcer.js';

const pod = (namespace: string, name: string, ip: string, labels: Record<string, string>, extra: Partial<PolicyPod> = {}): PolicyPod => ({
  namespace,
  name,
  ip,
  nodeName: 'n1',
  labels,
  hostNetwork: false,
  ports: [],
  ...extra,
});

const policy = (namespace: string, name: string, spec: NetworkPolicy['spec']): NetworkPolicy => ({ metadata: { namespace, name, uid: `${namespace}-${name}` }, spec });

const namespaces = new Map<string, Record<string, string>>([
  ['team-a', { 'kubernetes.io/metadata.name': 'team-a' }],
  ['team-b', { 'kubernetes.io/metadata.name': 'team-b', team: 'b' }],
]);

const PODS = [
  pod('team-a', 'server', '10.244.0.10', { app: 'server' }, { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] }),
  pod('team-a', 'other', '10.244.0.11', { app: 'other' }, { ports: [{ name: 'http', port: 9090, protocol: 'TCP' }] }),
  pod('team-b', 'web', '10.244.1.20', { app: 'web' }, { nodeName: 'n2' }),
  pod('team-b', 'db', '10.244.1.21', { app: 'db' }, { nodeName: 'n2' }),
  pod('team-a', 'host', '192.168.0.5', { app: 'server' }, { hostNetwork: true }),
  pod('team-a', 'pending', '', { app: 'server' }, { ip: undefined }),
];

function compile(policies: NetworkPolicy[], pods = PODS): CompiledPolicies {
  return compilePolicies({ nodeName: 'n1', policies, pods, namespaces });
}

/** The rules of the group chain a pod jumps to in one direction. */
function chainOf(c: CompiledPolicies, direction: 'ingress' | 'egress', ip: string): string[] | undefined {
  const name = c[direction].get(ip);
  return name === undefined ? undefined : c.chains.get(name);
}

/** The elements of the `kind` set (peer, port, named) the rule at `index` of a pod's group chain looks up. */
function setOf(c: CompiledPolicies, kind: 'peer' | 'port' | 'named', direction: 'ingress' | 'egress' = 'ingress', ip = '10.244.0.10', index = 0): string[] {
  const rule = chainOf(c, direction, ip)?.[index] ?? '';
  const name = new RegExp(`@(${kind}-[0-9a-f]{8})`).exec(rule)?.[1];
  assert.ok(name, `rule ${index} of ${ip} looks up a ${kind} set: ${rule}`);
  const set = c.sets.get(name);
  assert.ok(set, `set ${name} is declared`);
  return set.elements;
}

describe('NetworkPolicy compiler', () => {
  it('a default-deny ingress policy isolates every selected local pod with a chain that only drops', () => {
    const c = compile([policy('team-a', 'deny', { podSelector: {}, policyTypes: ['Ingress'] })]);
    assert.deepEqual([...c.ingress.keys()].sort(), ['10.244.0.10', '10.244.0.11'], 'local pods only; host-network and unaddressed pods are never selected');
    assert.deepEqual(chainOf(c, 'ingress', '10.244.0.10'), ['drop']);
    assert.equal(c.egress.size, 0, 'egress stays open');
  });

  it('policyTypes defaults as upstream: Ingress always, Egress only with egress rules', () => {
    assert.deepEqual(policyTypesOf(policy('x', 'a', { podSelector: {} })), { ingress: true, egress: false });
    assert.deepEqual(policyTypesOf(policy('x', 'a', { podSelector: {}, egress: [{}] })), { ingress: true, egress: true });
    assert.deepEqual(policyTypesOf(policy('x', 'a', { podSelector: {}, policyTypes: ['Egress'] })), { ingress: false, egress: true });
  });

  it('namespaceSelector and podSelector in one peer mean both; in two peers either', () => {
    const both = compile([policy('team-a', 'p', { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } }, podSelector: { matchLabels: { app: 'web' } } }] }] })]);
    assert.deepEqual(setOf(both, 'peer'), ['10.244.1.20']);
    assert.match(chainOf(both, 'ingress', '10.244.0.10')!.join('\n'), /^ip saddr @peer-[0-9a-f]{8} goto egress-stage\ndrop$/);
    assert.equal(both.ingress.has('10.244.0.11'), false, 'a pod the policy does not select stays open');

    const either = compile([policy('team-a', 'p', { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }, { podSelector: { matchLabels: { app: 'other' } } }] }] })]);
    assert.deepEqual(setOf(either, 'peer'), ['10.244.0.11', '10.244.1.20-10.244.1.21']);

    const ownNamespace = compile([policy('team-a', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }] })]);
    assert.deepEqual(setOf(ownNamespace, 'peer'), [], 'a podSelector alone looks only in the policy namespace');
  });

  it('ipBlock cuts its excepts out, and the peer set holds merged intervals', () => {
    assert.deepEqual(ipBlockIntervals('10.0.0.0/24', ['10.0.0.128/25', '10.0.0.0/32']), [[167772161, 167772287]]);
    const c = compile([policy('team-a', 'p', { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.244.1.0/24', except: ['10.244.1.21/32'] } }] }] })]);
    assert.deepEqual(setOf(c, 'peer'), ['10.244.1.0-10.244.1.20', '10.244.1.22-10.244.1.255']);
  });

  it('ports: numbers, ranges with endPort, protocols, a protocol alone, and named ports resolved against the destination pod', () => {
    const c = compile([
      policy('team-a', 'p', {
        podSelector: {},
        ingress: [{ ports: [{ port: 53, protocol: 'UDP' }, { port: 8000, endPort: 8100 }, { port: 8050 }, { protocol: 'SCTP' }, { port: 'http' }] }],
      }),
    ]);
    assert.deepEqual(setOf(c, 'port'), ['sctp . 0-65535', 'tcp . 8000-8100', 'udp . 53']);
    assert.deepEqual(setOf(c, 'named', 'ingress', '10.244.0.10', 1), ['10.244.0.10 . tcp . 8080', '10.244.0.11 . tcp . 9090']);
    const rules = chainOf(c, 'ingress', '10.244.0.10')!;
    assert.equal(rules.length, 3);
    assert.match(rules[0]!, /^meta l4proto \. th dport @port-\w+ goto egress-stage$/);
    assert.match(rules[1]!, /^ip daddr \. meta l4proto \. th dport @named-\w+ goto egress-stage$/);
  });

  it('egress: allows accept, named ports resolve against peers, and a DNS exception is a port rule to anywhere', () => {
    const c = compile([
      policy('team-a', 'dns-only', { podSelector: { matchLabels: { app: 'server' } }, policyTypes: ['Egress'], egress: [{ ports: [{ port: 53, protocol: 'UDP' }, { port: 53, protocol: 'TCP' }] }] }),
      policy('team-a', 'to-other', { podSelector: { matchLabels: { app: 'server' } }, policyTypes: ['Egress'], egress: [{ to: [{ podSelector: { matchLabels: { app: 'other' } } }], ports: [{ port: 'http' }] }] }),
    ]);
    const rules = chainOf(c, 'egress', '10.244.0.10')!;
    assert.equal(rules.length, 3, 'rules of both policies add up, then drop');
    assert.equal(rules.at(-1), 'drop');
    assert.ok(rules.slice(0, 2).every((r) => r.endsWith(' accept')));
    const named = rules.findIndex((r) => /^ip daddr @peer-\w+ ip daddr \. meta l4proto \. th dport @named-\w+ accept$/.test(r));
    assert.ok(named >= 0, rules.join('\n'));
    assert.deepEqual(setOf(c, 'named', 'egress', '10.244.0.10', named), ['10.244.0.11 . tcp . 9090']);
    assert.deepEqual(setOf(c, 'peer', 'egress', '10.244.0.10', named), ['10.244.0.11']);
    assert.equal(c.ingress.size, 0);
  });

  it('rules of several policies that say the same share one set', () => {
    const rule = { from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }], ports: [{ port: 8080 }] };
    const c = compile([policy('team-a', 'one', { podSelector: { matchLabels: { app: 'server' } }, ingress: [rule] }), policy('team-a', 'two', { podSelector: { matchLabels: { app: 'other' } }, ingress: [rule] })]);
    assert.equal(c.sets.size, 2, [...c.sets.keys()].join(' '));
    assert.deepEqual(chainOf(c, 'ingress', '10.244.0.10'), chainOf(c, 'ingress', '10.244.0.11'));
  });

  it('an empty rule allows everything; no rules deny everything', () => {
    const c = compile([policy('team-a', 'all', { podSelector: {}, ingress: [{}] })]);
    assert.deepEqual(chainOf(c, 'ingress', '10.244.0.10'), ['goto egress-stage', 'drop']);
  });

  it('a label change moves set and map elements only; the transaction keeps chains as they are', () => {
    const p = policy('team-a', 'p', { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } }] }] });
    const before = compile([p]);
    const relabelled = PODS.map((x) => (x.name === 'db' ? { ...x, labels: { app: 'web' } } : x.name === 'other' ? { ...x, labels: { app: 'server' } } : x));
    const after = compile([p], relabelled);
    const script = diffScript('t', before, after);
    const peerSet = /@(peer-\w+)/.exec(chainOf(before, 'ingress', '10.244.0.10')![0]!)![1];
    assert.ok(script.includes(`delete element ip t ${peerSet} { 10.244.1.20 }`), script);
    assert.ok(script.includes(`add element ip t ${peerSet} { 10.244.1.20-10.244.1.21 }`), script);
    assert.ok(script.includes(`add element ip t ingress-pods { 10.244.0.11 : goto ${after.ingress.get('10.244.0.11')} }`));
    assert.ok(!/add chain|delete chain|flush/.test(script), script);
    assert.ok(script.indexOf('delete element ip t peer') < script.indexOf('add element ip t peer'), 'interval deletes before adds');
    assert.equal(diffScript('t', after, after), '');
  });

  it('a policy removed deletes its chain after the map stops pointing at it, and its sets last', () => {
    const p = policy('team-a', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] });
    const withIt = compile([p]);
    const script = diffScript('t', withIt, compile([]));
    const lines = script.trim().split('\n');
    assert.match(lines[0]!, /^delete element ip t ingress-pods \{ 10\.244\.0\.10 , 10\.244\.0\.11 \}$/);
    assert.match(lines[1]!, /^delete chain ip t in-\w+$/);
    assert.match(lines[2]!, /^delete set ip t peer-\w+$/);
  });

  it('the full script builds the table from nothing with both hooks after DNAT and conntrack first', () => {
    const script = fullScript('berth-np', compile([policy('team-a', 'deny', { podSelector: {} })]), { comment: 'berth cluster x' });
    const lines = script.split('\n');
    assert.deepEqual(lines.slice(0, 3), ['add table ip berth-np', 'delete table ip berth-np', 'add table ip berth-np { comment "berth cluster x" ; }']);
    const fwd = lines.findIndex((l) => l.includes('hook forward'));
    assert.match(lines[fwd]!, /priority -90/);
    assert.equal(lines[fwd + 1], 'add rule ip berth-np forward ct state established,related accept');
    assert.ok(lines.some((l) => /^add element ip berth-np ingress-pods \{ 10\.244\.0\.10 : goto in-\w+ , 10\.244\.0\.11 : goto in-\w+ \}$/.test(l)));
  });

  it('reads pods as the compiler needs them: finished pods have no address, named ports from containers', () => {
    const base = { metadata: { namespace: 'a', name: 'p', labels: { x: 'y' } }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i', ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { containerPort: 80 }] }] } };
    assert.deepEqual(policyPod({ ...base, status: { phase: 'Running', podIP: '10.0.0.1' } } as never), { namespace: 'a', name: 'p', ip: '10.0.0.1', nodeName: 'n1', labels: { x: 'y' }, hostNetwork: false, ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] });
    assert.equal(policyPod({ ...base, status: { phase: 'Succeeded', podIP: '10.0.0.1' } } as never).ip, undefined);
  });
});
