import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deleteStaleScript, fullScript, incrementalScript, mergeElements, renderService, type RenderedService } from '../../agent/proxy/nft-rules.js';
import { NftModel, type TableState } from './proxy-nft-model.js';
import { planServicePorts } from '../../agent/proxy/service-ports.js';
import { endpoint, HTTP_PORT, service, slice } from './proxy-fixtures.js';
import type { EndpointSlice, Service } from '../../src/api/types.js';

const NODE = 'n1';
const T = 'berth';

function rendered(entries: Array<[Service, EndpointSlice[]]>): Map<string, RenderedService> {
  const out = new Map<string, RenderedService>();
  for (const [svc, slices] of entries) {
    const plans = planServicePorts(svc, slices, NODE);
    if (plans.length) out.set(`default/${svc.metadata.name}`, renderService(plans, { clusterCidr: '10.1.0.0/16' }));
  }
  return out;
}

/**
 * Applies the incremental step old → next to `model`, then (unless `keepStale`) the later deletion of
 * what it left unused; returns the step's script.
 */
function step(model: NftModel, old: Map<string, RenderedService>, next: Map<string, RenderedService>, pending?: Set<string>): string {
  const changed = new Map<string, { old: RenderedService | undefined; next: RenderedService | undefined }>();
  for (const k of new Set([...old.keys(), ...next.keys()])) changed.set(k, { old: old.get(k), next: next.get(k) });
  const { script, staleChains, staleSets } = incrementalScript(T, { changed, oldElements: mergeElements(old), newElements: mergeElements(next), pendingDelete: pending });
  if (script) model.apply(script);
  if (pending) for (const ch of staleChains) pending.add(ch);
  const cleanup = deleteStaleScript(T, staleChains, staleSets);
  if (cleanup && !pending) model.apply(cleanup);
  return script;
}

function fullState(state: Map<string, RenderedService>): unknown {
  const m = new NftModel();
  m.apply(fullScript(T, state));
  return m.snapshot(T);
}

/** The one chain of `kind` whose name ends in `id` (names are `<kind>-<hash of its rules>-<id>`). */
function chain(t: TableState, kind: string, id: string): string {
  const found = [...t.chains.keys()].filter((n) => new RegExp(`^${kind}-[0-9a-f]{8}-`).test(n) && n.endsWith(`-${id}`));
  assert.equal(found.length, 1, `one ${kind} chain for ${id}: ${found.join(', ')}`);
  return found[0]!;
}
const KEY = 'default/web/tcp/http';

const web = (spec: Partial<Service['spec']> = {}) => service('web', { clusterIP: '10.96.0.20', ports: HTTP_PORT, ...spec });
const two = [slice('web', [endpoint('10.1.0.2', NODE), endpoint('10.1.0.3', 'n2')])];

test('a ClusterIP port: service-ips element → svc chain choosing by numgen among endpoint chains that DNAT and mark hairpin traffic', () => {
  const m = new NftModel();
  m.apply(fullScript(T, rendered([[web(), two]])));
  const t = m.tables.get(T)!;
  const svc = chain(t, 'svc', KEY);
  assert.equal(t.maps.get('service-ips')!.get('10.96.0.20 . tcp . 80'), `goto ${svc}`);
  const ep2 = chain(t, 'ep', `${KEY}__10.1.0.2/8080`);
  const ep3 = chain(t, 'ep', `${KEY}__10.1.0.3/8080`);
  assert.deepEqual(t.chains.get(svc), [`numgen random mod 2 0 goto ${ep2}`, `goto ${ep3}`]);
  assert.deepEqual(t.chains.get(ep2), ['ip saddr 10.1.0.2 meta mark set meta mark | 0x4000', 'meta l4proto tcp dnat to 10.1.0.2:8080']);
  // Only marked packets are masqueraded; nothing else in the table masquerades.
  assert.deepEqual(t.chains.get('masquerading'), ['meta mark & 0x4000 == 0 return', 'meta mark set meta mark ^ 0x4000', 'masquerade fully-random']);
  assert.equal(t.maps.get('no-endpoint-services')!.size, 0);
});

test('no endpoints: rejected; internalTrafficPolicy Local with none on this node: dropped', () => {
  const m = new NftModel();
  const remoteOnly = [slice('web', [endpoint('10.1.0.3', 'n2')])];
  m.apply(fullScript(T, rendered([[web(), []], [service('loc', { clusterIP: '10.96.0.21', ports: HTTP_PORT, internalTrafficPolicy: 'Local' }), remoteOnly.map((s) => ({ ...s, metadata: { ...s.metadata, labels: { 'kubernetes.io/service-name': 'loc' } } }))]])));
  const t = m.tables.get(T)!;
  assert.equal(t.maps.get('no-endpoint-services')!.get('10.96.0.20 . tcp . 80'), 'goto reject-chain');
  assert.equal(t.maps.get('no-endpoint-services')!.get('10.96.0.21 . tcp . 80'), 'drop');
  assert.equal(t.maps.get('service-ips')!.size, 0);
});

test('NodePort and LoadBalancer under the Cluster policy: external traffic not from this node is marked for masquerade', () => {
  const m = new NftModel();
  const svc = web({ type: 'LoadBalancer', ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }] });
  svc.status = { loadBalancer: { ingress: [{ ip: '192.0.2.2' }] } };
  m.apply(fullScript(T, rendered([[svc, two]])));
  const t = m.tables.get(T)!;
  const ext = chain(t, 'ext', KEY);
  assert.equal(t.maps.get('service-nodeports')!.get('tcp . 30080'), `goto ${ext}`);
  assert.equal(t.maps.get('service-ips')!.get('192.0.2.2 . tcp . 80'), `goto ${ext}`);
  assert.deepEqual(t.chains.get(ext), ['fib saddr type != local meta mark set meta mark | 0x4000', `goto ${chain(t, 'svc', KEY)}`]);
});

test('externalTrafficPolicy Local: outside traffic only to local endpoints, unmasqueraded; the node and pods go cluster-wide; no local endpoint → drop', () => {
  const m = new NftModel();
  const svc = web({ type: 'NodePort', externalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }] });
  m.apply(fullScript(T, rendered([[svc, two]])));
  const t = m.tables.get(T)!;
  const ext = chain(t, 'ext', KEY);
  const svcChain = chain(t, 'svc', KEY);
  const loc = chain(t, 'loc', KEY);
  assert.deepEqual(m.tables.get(T)!.chains.get(ext), [`fib saddr type local goto ${svcChain}`, `ip saddr 10.1.0.0/16 goto ${svcChain}`, `goto ${loc}`]);
  assert.deepEqual(m.tables.get(T)!.chains.get(loc), [`goto ${chain(t, 'ep', `${KEY}__10.1.0.2/8080`)}`]);
  const m2 = new NftModel();
  m2.apply(fullScript(T, rendered([[svc, [slice('web', [endpoint('10.1.0.3', 'n2')])]]])));
  const t2 = m2.tables.get(T)!;
  const svc2 = chain(t2, 'svc', KEY);
  assert.deepEqual(t2.chains.get(chain(t2, 'ext', KEY)), [`fib saddr type local goto ${svc2}`, `ip saddr 10.1.0.0/16 goto ${svc2}`, 'drop']);
});

test('ClientIP affinity: a timed set per endpoint, looked up before the random pick and refreshed in the endpoint chain', () => {
  const m = new NftModel();
  m.apply(fullScript(T, rendered([[web({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } } }), two]])));
  const t = m.tables.get(T)!;
  assert.equal(t.sets.size, 2);
  for (const body of t.sets.values()) assert.equal(body, '{ type ipv4_addr ; flags dynamic,timeout ; timeout 60s ; }');
  const rules = t.chains.get(chain(t, 'svc', KEY))!;
  assert.equal(rules.length, 4);
  assert.match(rules[0]!, /^ip saddr @aff-\S+ goto ep-/);
  const ep = t.chains.get(chain(t, 'ep', `${KEY}__10.1.0.2/8080`))!;
  assert.match(ep[1]!, /^update @aff-\S+ \{ ip saddr \}$/);
});

test('incremental steps reach exactly the state a full rebuild gives, and the model (as nft) accepts every step', () => {
  const states: Array<Map<string, RenderedService>> = [
    rendered([]),
    rendered([[web(), []]]),
    rendered([[web(), two]]),
    rendered([[web(), [slice('web', [endpoint('10.1.0.3', 'n2'), endpoint('10.1.0.7', NODE)])]]]),
    rendered([[web({ sessionAffinity: 'ClientIP' }), two]]),
    rendered([[web({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 30 } } }), two]]),
    rendered([[web({ type: 'NodePort', externalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }] }), two]]),
    rendered([[web({ type: 'NodePort', ports: [{ name: 'http', port: 80, nodePort: 30081, protocol: 'TCP' }] }), []]]),
    rendered([[web(), two], [service('api', { clusterIP: '10.96.0.22', ports: HTTP_PORT }), [slice('api', [endpoint('10.1.0.9', NODE)])]]]),
    rendered([[service('api', { clusterIP: '10.96.0.22', ports: HTTP_PORT }), [slice('api', [endpoint('10.1.0.9', NODE)])]]]),
    rendered([]),
  ];
  const m = new NftModel();
  m.apply(fullScript(T, states[0]!));
  for (let i = 1; i < states.length; i++) {
    step(m, states[i - 1]!, states[i]!);
    assert.deepEqual(m.snapshot(T), fullState(states[i]!), `after step ${i}`);
  }
});

test('an incremental step names only what changed: one endpoint added to one of many Services touches that Service alone', () => {
  const many: Array<[Service, EndpointSlice[]]> = [];
  for (let i = 0; i < 50; i++) {
    const name = `s${i}`;
    many.push([service(name, { clusterIP: `10.96.1.${i}`, ports: HTTP_PORT }), [slice(name, [endpoint(`10.1.1.${i}`, NODE)])]]);
  }
  const before = rendered(many);
  const changedList = many.map(([s, sl]) => [s, sl] as [Service, EndpointSlice[]]);
  changedList[7] = [many[7]![0], [slice('s7', [endpoint('10.1.1.7', NODE), endpoint('10.1.2.7', 'n2')])]];
  const after = rendered(changedList);
  const m = new NftModel();
  m.apply(fullScript(T, before));
  const script = step(m, before, after);
  assert.doesNotMatch(script, /table|delete chain|flush/);
  for (const line of script.trim().split('\n')) assert.match(line, /default\/s7\/|10\.96\.1\.7 /, line);
  // a new endpoint chain and its 2 rules, a new svc chain and its 2 rules, the ClusterIP's element swapped
  assert.equal(script.trim().split('\n').length, 8, script);
});

test('chains an endpoint change leaves unused are deleted by a later transaction; an endpoint that returns first reuses its chain', () => {
  const a = rendered([[web(), two]]);
  const b = rendered([[web(), [slice('web', [endpoint('10.1.0.2', NODE)])]]]);
  const m = new NftModel();
  m.apply(fullScript(T, a));
  const gone = chain(m.tables.get(T)!, 'ep', `${KEY}__10.1.0.3/8080`);
  const oldSvc = chain(m.tables.get(T)!, 'svc', KEY);
  const pending = new Set<string>();
  const script = step(m, a, b, pending);
  assert.doesNotMatch(script, /delete chain|flush chain/);
  assert.deepEqual([...pending].sort(), [gone, oldSvc].sort());
  // Nothing reachable leads to them any more: no map element, no chain other than each other.
  const t = m.tables.get(T)!;
  const live = [...t.chains].filter(([n]) => !pending.has(n));
  assert.ok(!live.flatMap(([, rules]) => rules).some((r) => r.includes(gone) || r.includes(oldSvc)));
  assert.ok(![...t.maps.values()].some((mp) => [...mp.values()].some((v) => v.includes(gone) || v.includes(oldSvc))));
  // Back before the deletion ran: the waiting chains are used as they are (no chain added, no doubled
  // rules), and once the rest is deleted the state is a full rebuild's.
  const back = step(m, b, a, pending);
  assert.doesNotMatch(back, /add chain/);
  const inUse = new Set(a.get('default/web')!.chains.keys());
  m.apply(deleteStaleScript(T, [...pending].filter((n) => !inUse.has(n)), []));
  assert.deepEqual(m.snapshot(T), fullState(a));
});

test('deleting what a deleted Service left works in one transaction: referring chains go before the chains they refer to', () => {
  const a = rendered([[web({ type: 'NodePort', sessionAffinity: 'ClientIP', externalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }] }), two]]);
  const m = new NftModel();
  m.apply(fullScript(T, a));
  const changed = new Map([['default/web', { old: a.get('default/web'), next: undefined }]]);
  const inc = incrementalScript(T, { changed, oldElements: mergeElements(a), newElements: mergeElements(new Map()) });
  m.apply(inc.script);
  m.apply(deleteStaleScript(T, [...inc.staleChains].reverse(), inc.staleSets));
  assert.deepEqual(m.snapshot(T), fullState(new Map()));
});

test('deleting a Service removes its chains, sets and map elements', () => {
  const withAffinity = rendered([[web({ type: 'NodePort', sessionAffinity: 'ClientIP', ports: [{ name: 'http', port: 80, nodePort: 30080, protocol: 'TCP' }] }), two]]);
  const m = new NftModel();
  m.apply(fullScript(T, withAffinity));
  step(m, withAffinity, new Map());
  const t = m.tables.get(T)!;
  assert.deepEqual([...t.chains.keys()].filter((c) => c.includes('default/web')), []);
  assert.equal(t.sets.size, 0);
  for (const mp of t.maps.values()) assert.equal(mp.size, 0);
});

test('two Services claiming one external address and port: the first by name keeps it and the table stays loadable', () => {
  const a = service('a', { type: 'LoadBalancer', clusterIP: '10.96.0.31', ports: [{ name: 'http', port: 80, nodePort: 30001, protocol: 'TCP' }] }, { status: { loadBalancer: { ingress: [{ ip: '192.0.2.2' }] } } });
  const b = service('b', { type: 'LoadBalancer', clusterIP: '10.96.0.32', ports: [{ name: 'http', port: 80, nodePort: 30002, protocol: 'TCP' }] }, { status: { loadBalancer: { ingress: [{ ip: '192.0.2.2' }] } } });
  const label = (s: EndpointSlice, n: string) => ({ ...s, metadata: { ...s.metadata, name: n, labels: { 'kubernetes.io/service-name': n } } });
  const m = new NftModel();
  m.apply(fullScript(T, rendered([[a, [label(two[0]!, 'a')]], [b, [label(two[0]!, 'b')]]])));
  assert.equal(m.tables.get(T)!.maps.get('service-ips')!.get('192.0.2.2 . tcp . 80'), `goto ${chain(m.tables.get(T)!, 'ext', 'default/a/tcp/http')}`);
});

test('the full script replaces only its own table: it starts by deleting and re-adding that table and names no other', () => {
  const script = fullScript(T, rendered([[web(), two]]));
  const lines = script.trim().split('\n');
  assert.deepEqual(lines.slice(0, 3), ['add table ip berth', 'delete table ip berth', 'add table ip berth']);
  for (const l of lines) assert.match(l, / ip berth( |$)/);
});
