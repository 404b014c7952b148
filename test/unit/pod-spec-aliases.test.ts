import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../src/api/types.js';
import { defaultPodTemplate } from '../../src/registry/kinds/apps.js';
import { podStrategy } from '../../src/registry/kinds/core.js';

describe('the deprecated serviceAccount alias', () => {
  it('gives a pod that names only serviceAccount that account as serviceAccountName', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { serviceAccount: 'builder', containers: [{ name: 'c', image: 'x' }] } } as unknown as Pod;
    podStrategy.applyDefaults!(pod);
    assert.equal(pod.spec!.serviceAccountName, 'builder');
  });

  it('keeps serviceAccountName when both are given, as kube-apiserver', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { serviceAccount: 'old', serviceAccountName: 'new', containers: [{ name: 'c', image: 'x' }] } } as unknown as Pod;
    podStrategy.applyDefaults!(pod);
    assert.equal(pod.spec!.serviceAccountName, 'new');
  });

  it('does the same inside templates, so a workload\'s pods are checked against the account it names', () => {
    const template = { metadata: {}, spec: { serviceAccount: 'apply-deploy', containers: [{ name: 'c', image: 'x' }] } };
    defaultPodTemplate(template as never);
    assert.equal((template.spec as Record<string, unknown>).serviceAccountName, 'apply-deploy');
  });
});
