/**
 * The one query-parameter parser (src/api/query-parameters.ts) against what kube-apiserver's
 * conversions and option validations do, and subresource bodies without apiVersion/kind
 * (Scale, Binding, TokenRequest, Eviction, status) through the request handlers on a real registry.
 * Expected values come from Kubernetes' source: runtime.Convert_Slice_string_To_bool,
 * runtime.Convert_Slice_string_To_int64 (strconv.ParseInt), validation.ValidateDeleteOptions,
 * ValidateCreateOptions, ValidatePatchOptions, core validation.ValidatePodLogOptions,
 * handlers.transformDecodeError.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/api/errors.js';
import {
  firstValues,
  goQuote,
  isWatch,
  parseInt64,
  parseQueryBool,
  parseStrictBool,
  podLogOptionsQuery,
  podPortForwardOptionsQuery,
  podStreamOptionsQuery,
  queryBool,
  queryLimit,
  readDeleteOptionsBody,
  readDeleteOptionsQuery,
  readPodLogOptions,
  readPodPortForwardOptions,
  readPodStreamOptions,
  readWriteOptions,
  resolveDeleteOptions,
} from '../../src/api/query-parameters.js';
import type { KubeObject, Pod } from '../../src/api/types.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import { readConsistency } from '../../src/registry/list-options.js';
import { Registry } from '../../src/registry/registry.js';
import { handleResourceRequest, type ApiRequest } from '../../src/requests/resource-handlers.js';
import { openSqliteBackend } from '../../src/storage/sqlite.js';

/** Every spelling strconv.ParseBool accepts; the apiserver's conversions read them alike. */
const TRUE_SPELLINGS = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const FALSE_SPELLINGS = ['0', 'f', 'F', 'FALSE', 'false', 'False'];

function refused(fn: () => unknown, code: number, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.message, message);
    return true;
  });
}

describe('booleans (runtime.Convert_Slice_string_To_bool)', () => {
  it('every ParseBool "true" spelling, and anything else but 0/false, is true', () => {
    for (const v of TRUE_SPELLINGS) assert.equal(parseQueryBool(v), true, v);
    for (const v of ['yes', 'on', 'maybe', '', '2']) assert.equal(parseQueryBool(v), true, `"${v}"`);
  });

  it('0 and false in any letter case are false, ParseBool\'s f/F too are not', () => {
    for (const v of ['0', 'false', 'False', 'FALSE', 'fAlSe']) assert.equal(parseQueryBool(v), false, v);
    // ParseBool's one-letter false spellings are NOT false in a query: the conversion knows only 0/false.
    assert.equal(parseQueryBool('f'), true);
    assert.equal(parseQueryBool('F'), true);
  });

  it('absent is unset; the first of repeated values counts', () => {
    assert.equal(queryBool(new URLSearchParams(''), 'watch'), undefined);
    assert.equal(queryBool(new URLSearchParams('watch=false&watch=true'), 'watch'), false);
    assert.deepEqual(firstValues({ watch: ['0', '1'], limit: '5' }), { watch: '0', limit: '5' });
    for (const v of TRUE_SPELLINGS) assert.equal(isWatch({ watch: v }), true, v);
    assert.equal(isWatch({ watch: 'False' }), false);
    assert.equal(isWatch({}), false);
  });

  it('strconv.ParseBool itself (pretty) accepts exactly its twelve spellings', () => {
    for (const v of TRUE_SPELLINGS) assert.equal(parseStrictBool(v), true, v);
    for (const v of FALSE_SPELLINGS) assert.equal(parseStrictBool(v), false, v);
    for (const v of ['tRUE', 'yes', '', ' true']) assert.equal(parseStrictBool(v), undefined, `"${v}"`);
  });
});

describe('integers (strconv.ParseInt(s, 10, 64))', () => {
  it('signed decimals within int64', () => {
    assert.equal(parseInt64('42'), 42);
    assert.equal(parseInt64('+7'), 7);
    assert.equal(parseInt64('-3'), -3);
    assert.equal(parseInt64('007'), 7);
  });

  it('anything else is 400 with Go\'s error text', () => {
    refused(() => parseInt64('abc'), 400, 'strconv.ParseInt: parsing "abc": invalid syntax');
    refused(() => parseInt64(''), 400, 'strconv.ParseInt: parsing "": invalid syntax');
    refused(() => parseInt64('1.5'), 400, 'strconv.ParseInt: parsing "1.5": invalid syntax');
    refused(() => parseInt64('0x10'), 400, 'strconv.ParseInt: parsing "0x10": invalid syntax');
    refused(() => parseInt64('1_000'), 400, 'strconv.ParseInt: parsing "1_000": invalid syntax');
    refused(() => parseInt64('9223372036854775808'), 400, 'strconv.ParseInt: parsing "9223372036854775808": value out of range');
    assert.equal(goQuote('a"b\\c\n\u0001\u0007é'), '"a\\"b\\\\c\\n\\x01\\aé"');
  });

  it('limit: zero and negative ask for no limit; timeoutSeconds and limit are decoded before ListOptions are validated', () => {
    assert.equal(queryLimit({ limit: '5' }), 5);
    assert.equal(queryLimit({ limit: '0' }), undefined);
    assert.equal(queryLimit({ limit: '-1' }), undefined);
    refused(() => readConsistency({ limit: 'ten' }, { watch: false }), 400, 'strconv.ParseInt: parsing "ten": invalid syntax');
    refused(() => readConsistency({ timeoutSeconds: '1s' }, { watch: true }), 400, 'strconv.ParseInt: parsing "1s": invalid syntax');
    assert.equal(readConsistency({ timeoutSeconds: '30' }, { watch: true }).timeoutSeconds, 30);
    for (const v of TRUE_SPELLINGS) assert.equal(readConsistency({ allowWatchBookmarks: v }, { watch: true }).allowWatchBookmarks, true, v);
    refused(() => readConsistency({ sendInitialEvents: 'True' }, { watch: false }), 422, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list');
  });
});

describe('write options (ValidateCreateOptions, ValidateUpdateOptions, ValidatePatchOptions)', () => {
  it('dryRun=All, fieldValidation and fieldManager', () => {
    assert.deepEqual(readWriteOptions({ dryRun: 'All', fieldValidation: 'Strict', fieldManager: 'me' }, 'CreateOptions'), { dryRun: true, fieldValidation: 'Strict', fieldManager: 'me' });
    assert.deepEqual(readWriteOptions({}, 'UpdateOptions'), { dryRun: false, fieldValidation: 'Warn' });
    assert.deepEqual(readWriteOptions(new URLSearchParams('dryRun=All&dryRun=All'), 'CreateOptions').dryRun, true);
  });

  it('refuses values Kubernetes refuses, 422 on the options kind', () => {
    refused(() => readWriteOptions({ dryRun: 'true' }, 'CreateOptions'), 422, 'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"true"}: supported values: "All"');
    refused(() => readWriteOptions(new URLSearchParams('dryRun=All&dryRun=x'), 'UpdateOptions'), 422, 'UpdateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"All", "x"}: supported values: "All"');
    refused(() => readWriteOptions({ fieldValidation: 'strict' }, 'CreateOptions'), 422, 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"');
    refused(() => readWriteOptions({ fieldManager: 'x'.repeat(129) }, 'CreateOptions'), 422, 'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes');
    refused(() => readWriteOptions({ fieldManager: 'a\u0007' }, 'CreateOptions'), 422, 'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\a": invalid character U+0007 (at position 1)');
  });

  it('force belongs to apply patches, which need a fieldManager', () => {
    for (const v of TRUE_SPELLINGS) assert.equal(readWriteOptions({ force: v, fieldManager: 'm' }, 'PatchOptions', { apply: true }).force, true, v);
    assert.equal(readWriteOptions({ force: 'false', fieldManager: 'm' }, 'PatchOptions', { apply: true }).force, false);
    refused(() => readWriteOptions({ force: 'true' }, 'PatchOptions'), 422, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch');
    refused(() => readWriteOptions({}, 'PatchOptions', { apply: true }), 422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
  });
});

describe('DeleteOptions (ValidateDeleteOptions, rest.BeforeDelete)', () => {
  it('from the query: grace period, policy, orphanDependents, dryRun', () => {
    assert.deepEqual(resolveDeleteOptions(readDeleteOptionsQuery({ gracePeriodSeconds: '0', propagationPolicy: 'Foreground', dryRun: 'All' })), { dryRun: true, gracePeriodSeconds: 0, propagationPolicy: 'Foreground' });
    assert.equal(resolveDeleteOptions(readDeleteOptionsQuery({ orphanDependents: 'True' })).propagationPolicy, 'Orphan');
    assert.equal(resolveDeleteOptions(readDeleteOptionsQuery({ orphanDependents: '0' })).propagationPolicy, 'Background');
    assert.equal(resolveDeleteOptions(readDeleteOptionsQuery({ gracePeriodSeconds: '-10' })).gracePeriodSeconds, 1);
    refused(() => readDeleteOptionsQuery({ gracePeriodSeconds: 'now' }), 400, 'strconv.ParseInt: parsing "now": invalid syntax');
  });

  it('refusals are 422 on DeleteOptions.meta.k8s.io', () => {
    refused(() => resolveDeleteOptions(readDeleteOptionsQuery({ propagationPolicy: 'background' })), 422, 'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "background": supported values: "Foreground", "Background", "Orphan", "nil"');
    refused(
      () => resolveDeleteOptions(readDeleteOptionsQuery({ propagationPolicy: 'Orphan', orphanDependents: 'true' })),
      422,
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set',
    );
    refused(() => resolveDeleteOptions(readDeleteOptionsQuery({ dryRun: 'Yes' })), 422, 'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Yes"}: supported values: "All"');
  });

  it('from a body, with its JSON types checked', () => {
    const body = { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 5, propagationPolicy: 'Background', dryRun: ['All'], preconditions: { uid: 'u' } };
    assert.deepEqual(resolveDeleteOptions(readDeleteOptionsBody(body)), { dryRun: true, gracePeriodSeconds: 5, propagationPolicy: 'Background', preconditions: { uid: 'u' } });
    refused(() => readDeleteOptionsBody({ gracePeriodSeconds: '5' }), 400, 'json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64');
    refused(() => readDeleteOptionsBody({ dryRun: 'All' }), 400, 'json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type []string');
  });
});

describe('pods/log and exec options', () => {
  it('PodLogOptions: every boolean spelling, integers, and the validation messages', () => {
    for (const v of TRUE_SPELLINGS) {
      const o = readPodLogOptions(new URLSearchParams(`follow=${v}&timestamps=${v}&previous=${v}&insecureSkipTLSVerifyBackend=${v}`), 'p');
      assert.deepEqual([o.follow, o.timestamps, o.previous, o.insecureSkipTLSVerifyBackend], [true, true, true, true], v);
    }
    const o = readPodLogOptions(new URLSearchParams('follow=False&tailLines=3&limitBytes=10&sinceSeconds=60&container=c'), 'p');
    assert.deepEqual(o, { follow: false, previous: false, timestamps: false, insecureSkipTLSVerifyBackend: false, container: 'c', tailLines: 3, sinceSeconds: 60, limitBytes: 10 });
    assert.equal(podLogOptionsQuery(o).toString(), 'tailLines=3&sinceSeconds=60&limitBytes=10');
    refused(() => readPodLogOptions(new URLSearchParams('tailLines=ten'), 'p'), 400, 'strconv.ParseInt: parsing "ten": invalid syntax');
    refused(() => readPodLogOptions(new URLSearchParams('tailLines=-1'), 'p'), 422, 'PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0');
    refused(() => readPodLogOptions(new URLSearchParams('limitBytes=0'), 'p'), 422, 'PodLogOptions "p" is invalid: limitBytes: Invalid value: 0: must be greater than 0');
    refused(() => readPodLogOptions(new URLSearchParams('sinceSeconds=0'), 'p'), 422, 'PodLogOptions "p" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0');
    refused(() => readPodLogOptions(new URLSearchParams('sinceSeconds=1&sinceTime=2024-01-01T00:00:00Z'), 'p'), 422, 'PodLogOptions "p" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  });

  it('exec/attach streams: every spelling, forwarded as the kubelet reads them', () => {
    for (const v of TRUE_SPELLINGS) {
      const o = readPodStreamOptions(new URLSearchParams(`command=ls&command=-l&stdin=${v}&stdout=${v}&stderr=${v}&tty=${v}`));
      assert.deepEqual(o, { stdin: true, stdout: true, stderr: true, tty: true, command: ['ls', '-l'] }, v);
    }
    const off = readPodStreamOptions(new URLSearchParams('command=ls&stdout=1&stderr=False&stdin=0'));
    assert.deepEqual(off, { stdin: false, stdout: true, stderr: false, tty: false, command: ['ls'] });
    assert.equal(podStreamOptionsQuery(off).toString(), 'command=ls&stdout=1');
  });

  it('port-forward ports (runtime.Convert_Slice_string_To_Slice_int32): repeated and comma lists, forwarded as one `port`', () => {
    const o = readPodPortForwardOptions(new URLSearchParams('ports=80&ports=8080,9090'));
    assert.deepEqual(o, { ports: [80, 8080, 9090] });
    assert.equal(podPortForwardOptionsQuery(o).toString(), 'port=80%2C8080%2C9090');
    assert.deepEqual(readPodPortForwardOptions(new URLSearchParams('')), { ports: [] });
    assert.equal(podPortForwardOptionsQuery({ ports: [] }).toString(), '');
    // 0 decodes (the kubelet refuses it); what does not parse as a uint16 is a 400 in Go's words.
    assert.deepEqual(readPodPortForwardOptions(new URLSearchParams('ports=0')), { ports: [0] });
    for (const [query, message] of [
      ['ports=http', 'cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax'],
      ['ports=80,', 'cannot convert to []int32: strconv.ParseUint: parsing "": invalid syntax'],
      ['ports=-1', 'cannot convert to []int32: strconv.ParseUint: parsing "-1": invalid syntax'],
      ['ports=65536', 'cannot convert to []int32: strconv.ParseUint: parsing "65536": value out of range'],
    ]) {
      assert.throws(
        () => readPodPortForwardOptions(new URLSearchParams(query)),
        (e: unknown) => e instanceof ApiError && e.code === 400 && e.message === message,
        query,
      );
    }
  });
});

// ---------- subresource bodies without apiVersion/kind ----------

const SETUP = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
for (const s of ALL_STRATEGIES) SETUP.register(s);
const info = (group: string, plural: string) => SETUP.lookup(group, plural)!.info;
const PODS = info('', 'pods');
const DEPLOYMENTS = info('apps', 'deployments');

async function cluster(): Promise<Registry> {
  const registry = new Registry({ backend: openSqliteBackend({ file: ':memory:' }) });
  for (const s of ALL_STRATEGIES) registry.register(s);
  await registry.create(info('', 'namespaces'), undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  await registry.create(PODS, 'default', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } as Pod);
  const labels = { app: 'd' };
  await registry.create(DEPLOYMENTS, 'default', {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd' },
    spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
  } as KubeObject);
  return registry;
}

function request(method: string, target: ApiRequest['target'], body: unknown, query: Record<string, string> = {}): ApiRequest {
  return { method, target, query, contentType: 'application/json', body: Buffer.from(JSON.stringify(body)) };
}

async function refusedAsync(promise: Promise<unknown>, code: number, message: string | RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.equal(e.code, code, e.message);
    if (typeof message === 'string') assert.equal(e.message, message);
    else assert.match(e.message, message);
    return true;
  });
}

describe('subresource bodies without apiVersion/kind are typed by the endpoint', () => {
  it('scale: a kind-less Scale is an autoscaling/v1 Scale; another kind is refused', async () => {
    const registry = await cluster();
    const target = { info: DEPLOYMENTS, namespace: 'default', name: 'd', subresource: 'scale' };
    const r = await handleResourceRequest(registry, request('PUT', target, { metadata: { name: 'd' }, spec: { replicas: 3 } }));
    assert.equal(r.code, 200);
    assert.equal((r.body as { spec: { replicas: number } }).spec.replicas, 3);
    await refusedAsync(handleResourceRequest(registry, request('PUT', target, { kind: 'Deployment', metadata: { name: 'd' }, spec: { replicas: 2 } })), 400, /^Deployment in version "v1" cannot be handled as a Scale: /);
    await refusedAsync(handleResourceRequest(registry, request('PUT', target, { apiVersion: 'autoscaling/v2', kind: 'Scale', spec: { replicas: 2 } })), 400, 'the API version in the data (autoscaling/v2) does not match the expected API version (autoscaling/v1)');
    // dryRun=All on the scale subresource changes nothing.
    await handleResourceRequest(registry, request('PUT', target, { spec: { replicas: 5 } }, { dryRun: 'All' }));
    assert.equal(((await registry.get(DEPLOYMENTS, 'default', 'd')) as unknown as { spec: { replicas: number } }).spec.replicas, 3);
  });

  it('binding: a kind-less Binding binds; a body of another kind is refused', async () => {
    const registry = await cluster();
    const target = { info: PODS, namespace: 'default', name: 'p', subresource: 'binding' };
    await refusedAsync(handleResourceRequest(registry, request('POST', target, { kind: 'Pod', metadata: { name: 'p' }, target: { name: 'n1' } })), 400, 'Pod in version "v1" cannot be handled as a Binding: converting (v1.Pod) to (core.Binding): unknown conversion');
    const r = await handleResourceRequest(registry, request('POST', target, { metadata: { name: 'p' }, target: { name: 'n1' } }));
    assert.equal(r.code, 201);
    assert.equal(((await registry.get(PODS, 'default', 'p')) as Pod).spec.nodeName, 'n1');
  });

  it('eviction: a kind-less Eviction evicts', async () => {
    const registry = await cluster();
    const r = await handleResourceRequest(registry, request('POST', { info: PODS, namespace: 'default', name: 'p', subresource: 'eviction' }, { metadata: { name: 'p' } }));
    assert.equal(r.code, 201);
  });

  it('status: a kind-less Pod status update is a Pod', async () => {
    const registry = await cluster();
    const pod = (await registry.get(PODS, 'default', 'p')) as Pod;
    const { apiVersion: _a, kind: _k, ...kindless } = pod;
    const r = await handleResourceRequest(registry, request('PUT', { info: PODS, namespace: 'default', name: 'p', subresource: 'status' }, { ...kindless, status: { phase: 'Running' } }));
    assert.equal(((r.body as Pod).status ?? {}).phase, 'Running');
    await refusedAsync(
      handleResourceRequest(registry, request('PUT', { info: PODS, namespace: 'default', name: 'p', subresource: 'status' }, { ...kindless, kind: 'Service' })),
      400,
      'Service in version "v1" cannot be handled as a Pod: converting (v1.Service) to (core.Pod): unknown conversion',
    );
  });

  it('delete: DeleteOptions from the query, and from a body in place of the query', async () => {
    const registry = await cluster();
    const target = { info: PODS, namespace: 'default', name: 'p' };
    await refusedAsync(handleResourceRequest(registry, { method: 'DELETE', target, query: { propagationPolicy: 'Sideways' }, contentType: undefined, body: undefined }), 422, /^DeleteOptions\.meta\.k8s\.io "" is invalid: propagationPolicy: Unsupported value: "Sideways"/);
    await handleResourceRequest(registry, { method: 'DELETE', target, query: { dryRun: 'All' }, contentType: undefined, body: undefined });
    assert.ok(await registry.get(PODS, 'default', 'p'), 'dry run deletes nothing');
    // A body's options replace the query's: the query's bad policy is not read.
    await handleResourceRequest(registry, { ...request('DELETE', target, { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 }), query: { propagationPolicy: 'Sideways' } });
    await refusedAsync(registry.get(PODS, 'default', 'p'), 404, 'pods "p" not found');
  });
});
