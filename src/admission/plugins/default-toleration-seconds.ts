/**
 * DefaultTolerationSeconds admission (kube-apiserver's plugin of that name): every new pod tolerates the
 * not-ready and unreachable NoExecute taints for a bounded time, so pods leave a lost node after that
 * long. Pod defaulting already adds both with 300 s when a pod has no tolerations at all; this plugin
 * makes the time configurable (`berth server --default-toleration-seconds`) and adds the two tolerations
 * to pods that have other tolerations but not these.
 */
import { TAINT_NOT_READY, TAINT_UNREACHABLE } from '../../api/taints.js';
import type { Pod, Toleration } from '../../api/types.js';
import type { AdmissionPlugin } from '../chain.js';

/** The tolerationSeconds pod defaulting uses (src/registry/kinds/core.ts). */
const DEFAULTED_SECONDS = 300;

export function defaultTolerationSeconds(opts: { seconds: number }): AdmissionPlugin {
  return {
    name: 'DefaultTolerationSeconds',
    kind: 'mutating',
    admit(attrs) {
      if (attrs.operation !== 'CREATE' || attrs.info.kind !== 'Pod' || attrs.subresource) return;
      const spec = (attrs.object as Pod).spec;
      if (!spec) return;
      const tolerations: Toleration[] = spec.tolerations ?? [];
      // Exactly what defaulting put there (the user wrote no tolerations): use the configured time instead.
      if (tolerations.length === 2 && tolerations.every((t) => isDefaulted(t))) {
        for (const t of tolerations) t.tolerationSeconds = opts.seconds;
        return;
      }
      for (const key of [TAINT_NOT_READY, TAINT_UNREACHABLE]) {
        const covered = tolerations.some((t) => (t.effect === undefined || t.effect === 'NoExecute') && (t.key === key || (!t.key && t.operator === 'Exists')));
        if (!covered) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: opts.seconds });
      }
      spec.tolerations = tolerations;
    },
  };
}

function isDefaulted(t: Toleration): boolean {
  return (
    (t.key === TAINT_NOT_READY || t.key === TAINT_UNREACHABLE) &&
    t.operator === 'Exists' &&
    t.effect === 'NoExecute' &&
    t.tolerationSeconds === DEFAULTED_SECONDS &&
    t.value === undefined
  );
}
