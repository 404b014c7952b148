/** scheduling.k8s.io/v1 PriorityClass validation and the Priority admission plugin. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod, PriorityClass } from '../../src/api/types.js';
import { priorityAdmission } from '../../src/admission/plugins/priority.js';
import { SYSTEM_PRIORITY_CLASSES, validatePriorityClass, validatePriorityClassUpdate } from '../../src/api/validation/scheduling.js';
import { PRIORITYCLASS_INFO, priorityClassStrategy } from '../../src/registry/kinds/scheduling.js';
import { ALL_STRATEGIES } from '../../src/registry/kinds/index.js';
import type { AdmissionAttributes } from '../../src/registry/admission-attributes.js';

const pc = (name: string, value: number, o: Partial<PriorityClass> = {}): PriorityClass => ({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value, preemptionPolicy: 'PreemptLowerPriority', ...o });
const messages = (errs: { field: string; message: string }[]) => errs.map((e) => `${e.field}: ${e.message}`);

describe('PriorityClass', () => {
  it('is served cluster-scoped with short name pc, and defaults preemptionPolicy', () => {
    assert.ok(ALL_STRATEGIES.some((s) => s.info === PRIORITYCLASS_INFO));
    assert.deepEqual(PRIORITYCLASS_INFO.shortNames, ['pc']);
    const obj = pc('x', 1, { preemptionPolicy: undefined });
    priorityClassStrategy.applyDefaults!(obj);
    assert.equal(obj.preemptionPolicy, 'PreemptLowerPriority');
  });

  it('validates in Kubernetes\' words: reserved system- names, the user ceiling, preemptionPolicy', () => {
    assert.deepEqual(validatePriorityClass(pc('high', 1000)), []);
    for (const s of SYSTEM_PRIORITY_CLASSES) assert.deepEqual(validatePriorityClass(s), [], s.metadata.name);
    assert.deepEqual(SYSTEM_PRIORITY_CLASSES.map((s) => [s.metadata.name, s.value]), [['system-node-critical', 2000001000], ['system-cluster-critical', 2000000000]]);
    assert.deepEqual(messages(validatePriorityClass(pc('system-mine', 5))), ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"]);
    assert.deepEqual(messages(validatePriorityClass(pc('huge', 1_000_000_001))), ['value: Forbidden: maximum allowed value of a user defined priority is 1000000000']);
    assert.deepEqual(messages(validatePriorityClass(pc('p', 1, { preemptionPolicy: 'Sometimes' }))), ['preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"']);
  });

  it('value and preemptionPolicy are immutable', () => {
    const old = pc('p', 1);
    assert.deepEqual(messages(validatePriorityClassUpdate(pc('p', 2), old)), ['value: Forbidden: may not be changed in an update.']);
    assert.deepEqual(messages(validatePriorityClassUpdate(pc('p', 1, { preemptionPolicy: 'Never' }), old)), ['preemptionPolicy: Invalid value: "Never": field is immutable']);
    assert.deepEqual(validatePriorityClassUpdate(pc('p', 1, { globalDefault: true }), old), []);
  });
});

describe('Priority admission', () => {
  const classes = [pc('high', 1000), pc('quiet', 500, { preemptionPolicy: 'Never' })];
  const plugin = (all: PriorityClass[]) => priorityAdmission({ getClass: async (n) => all.find((c) => c.metadata.name === n), listClasses: async () => all });
  const podAttrs = (spec: Partial<Pod['spec']>): AdmissionAttributes => ({
    operation: 'CREATE',
    info: ALL_STRATEGIES.find((s) => s.info.kind === 'Pod')!.info,
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [], ...spec } } as Pod,
    dryRun: false,
  });
  const specOf = (a: AdmissionAttributes) => (a.object as Pod).spec;

  it('resolves priorityClassName into priority and preemptionPolicy', async () => {
    const a = podAttrs({ priorityClassName: 'quiet' });
    await plugin(classes).admit(a);
    assert.deepEqual([specOf(a).priority, specOf(a).preemptionPolicy], [500, 'Never']);
  });

  it('applies the globalDefault class to pods without one, else priority 0', async () => {
    const a = podAttrs({});
    await plugin([...classes, pc('dflt', 7, { globalDefault: true })]).admit(a);
    assert.deepEqual([specOf(a).priorityClassName, specOf(a).priority, specOf(a).preemptionPolicy], ['dflt', 7, 'PreemptLowerPriority']);
    const b = podAttrs({});
    await plugin(classes).admit(b);
    assert.deepEqual([specOf(b).priorityClassName, specOf(b).priority], [undefined, 0]);
  });

  it('refuses an unknown class and a priority that disagrees with the class, in upstream\'s words', async () => {
    await assert.rejects(async () => plugin(classes).admit(podAttrs({ priorityClassName: 'nope' })), { message: 'pods "p" is forbidden: no PriorityClass with name nope was found', code: 403 });
    await assert.rejects(async () => plugin(classes).admit(podAttrs({ priorityClassName: 'high', priority: 5 })), { message: 'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name' });
  });

  it('allows only one globalDefault class', async () => {
    const withDefault = [...classes, pc('dflt', 7, { globalDefault: true })];
    const attrs = (name: string, operation: 'CREATE' | 'UPDATE'): AdmissionAttributes => ({ operation, info: PRIORITYCLASS_INFO, object: pc(name, 1, { globalDefault: true }), dryRun: false });
    await assert.rejects(async () => plugin(withDefault).admit(attrs('other', 'CREATE')), { message: 'priorityclasses "other" is forbidden: PriorityClass dflt is already marked as default. Only one default can exist' });
    await plugin(withDefault).admit(attrs('dflt', 'UPDATE'));
    await plugin(classes).admit(attrs('other', 'CREATE'));
  });
});
