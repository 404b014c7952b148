/**
 * The LimitRanger admission plugin: applies the namespace's LimitRanges to pods and claims, as
 * Kubernetes' plugin of that name. Its mutating half gives containers and init containers the
 * default requests and limits they do not state (and says so in the pod's
 * `kubernetes.io/limit-ranger` annotation); its validating half refuses, 403 with Kubernetes'
 * message, a pod or claim outside a range's min, max or maxLimitRequestRatio. It runs early in the
 * chain, so ResourceQuota (last) charges the defaulted requests.
 *
 * Pods are handled on create only (their resources cannot change afterwards), claims on create and
 * update; subresources never.
 */
import { errors } from '../../api/errors.js';
import { aggregateMessages, applyPodDefaults, claimLimitViolations, podLimitViolations } from '../../api/limit-range.js';
import type { LimitRange, Pod } from '../../api/types.js';
import type { AdmissionAttributes, AdmissionPlugin } from '../chain.js';

export interface LimitRangerOptions {
  /** the LimitRanges of a namespace, read fresh for each request */
  limitRanges: (namespace: string) => Promise<LimitRange[]>;
}

const PLUGIN = 'LimitRanger';

function handles(attrs: AdmissionAttributes): 'pod' | 'claim' | undefined {
  if (attrs.subresource || attrs.info.group !== '') return undefined;
  if (attrs.info.plural === 'pods' && attrs.operation === 'CREATE') return 'pod';
  if (attrs.info.plural === 'persistentvolumeclaims' && (attrs.operation === 'CREATE' || attrs.operation === 'UPDATE')) return 'claim';
  return undefined;
}

/** The two halves of LimitRanger: register the first with the mutating plugins, the second with the validating ones. */
export function limitRanger(opts: LimitRangerOptions): [AdmissionPlugin, AdmissionPlugin] {
  const mutating: AdmissionPlugin = {
    name: PLUGIN,
    kind: 'mutating',
    async admit(attrs) {
      if (handles(attrs) !== 'pod') return;
      const ranges = await opts.limitRanges(attrs.object.metadata.namespace ?? '');
      if (ranges.length) applyPodDefaults(attrs.object as Pod, ranges);
    },
  };
  const validating: AdmissionPlugin = {
    name: PLUGIN,
    kind: 'validating',
    completeMessages: true,
    async admit(attrs) {
      const what = handles(attrs);
      if (!what) return;
      const ranges = await opts.limitRanges(attrs.object.metadata.namespace ?? '');
      // As upstream, the first range the object breaks answers, with all of that range's complaints.
      for (const range of ranges) {
        const violations = what === 'pod' ? podLimitViolations(attrs.object as Pod, range) : claimLimitViolations(attrs.object as Parameters<typeof claimLimitViolations>[0], range);
        if (violations.length) {
          const name = attrs.object.metadata.name ?? '';
          throw errors.forbidden(`${attrs.info.plural} "${name}" is forbidden: ${aggregateMessages(violations)}`, { name, kind: attrs.info.plural });
        }
      }
    },
  };
  return [mutating, validating];
}
