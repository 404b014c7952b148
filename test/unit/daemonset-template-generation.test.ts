import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daemonSetStrategy, DAEMONSET_TEMPLATE_GENERATION_ANNOTATION as ANNOTATION } from '../../src/registry/kinds/apps-sets.js';

describe("a DaemonSet's template generation annotation", () => {
  it('is 1 at creation and grows with template changes only, as kube-apiserver keeps it', () => {
        const ds = {
      apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'd' },
      spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
    } as never as Parameters<NonNullable<typeof daemonSetStrategy.prepareForCreate>>[0];
    daemonSetStrategy.prepareForCreate!(ds, { user: undefined });
    daemonSetStrategy.applyDefaults!(ds);
    assert.equal(ds.metadata.annotations?.[ANNOTATION], '1');
    const sameTemplate = structuredClone(ds);
    delete sameTemplate.metadata.annotations;
    (sameTemplate.spec as unknown as Record<string, unknown>).minReadySeconds = 5;
    daemonSetStrategy.prepareForUpdate!(sameTemplate, ds);
    assert.equal(sameTemplate.metadata.annotations?.[ANNOTATION], '1', 'a spec change outside the template');
    const newImage = structuredClone(sameTemplate);
    (newImage.spec as { template: { spec: { containers: Array<{ image: string }> } } }).template.spec.containers[0]!.image = 'y';
    daemonSetStrategy.prepareForUpdate!(newImage, sameTemplate);
    assert.equal(newImage.metadata.annotations?.[ANNOTATION], '2');
  });
});
