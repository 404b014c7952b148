/**
 * Priority admission (kube-apiserver's plugin of that name): a new pod's priorityClassName becomes
 * spec.priority and spec.preemptionPolicy (the globalDefault class, or priority 0, when it names
 * none); an unknown class, or a priority or policy that disagrees with the class, is refused in
 * Kubernetes' words. For PriorityClasses: only one may be the global default.
 */
import { errors } from '../../api/errors.js';
import type { Pod, PriorityClass } from '../../api/types.js';
import type { AdmissionPlugin } from '../chain.js';

export interface PriorityAdmissionOptions {
  getClass(name: string): Promise<PriorityClass | undefined>;
  listClasses(): Promise<PriorityClass[]>;
}

export function priorityAdmission(opts: PriorityAdmissionOptions): AdmissionPlugin {
  const defaultClass = async () => (await opts.listClasses()).find((c) => c.globalDefault);
  return {
    name: 'Priority',
    kind: 'mutating',
    completeMessages: true,
    async admit(attrs) {
      if (attrs.subresource) return;
      const forbidden = (message: string) => errors.forbidden(`${attrs.info.plural} "${attrs.object.metadata.name ?? ''}" is forbidden: ${message}`, { name: attrs.object.metadata.name, kind: attrs.info.plural });
      if (attrs.info.kind === 'PriorityClass' && attrs.info.group === 'scheduling.k8s.io' && attrs.operation !== 'DELETE') {
        const pc = attrs.object as PriorityClass;
        if (!pc.globalDefault) return;
        const current = await defaultClass();
        if (current && (attrs.operation === 'CREATE' || current.metadata.name !== pc.metadata.name)) {
          throw forbidden(`PriorityClass ${current.metadata.name} is already marked as default. Only one default can exist`);
        }
        return;
      }
      if (attrs.operation !== 'CREATE' || attrs.info.kind !== 'Pod' || attrs.info.group !== '') return;
      const spec = (attrs.object as Pod).spec;
      if (!spec) return;
      let priority = 0;
      let policy = 'PreemptLowerPriority';
      if (!spec.priorityClassName) {
        const dflt = await defaultClass();
        if (dflt) {
          spec.priorityClassName = dflt.metadata.name;
          priority = dflt.value ?? 0;
          policy = dflt.preemptionPolicy ?? policy;
        }
      } else {
        const pc = await opts.getClass(spec.priorityClassName);
        if (!pc) throw forbidden(`no PriorityClass with name ${spec.priorityClassName} was found`);
        priority = pc.value ?? 0;
        policy = pc.preemptionPolicy ?? policy;
      }
      if (spec.priority !== undefined && spec.priority !== null && spec.priority !== priority) {
        throw forbidden(`the integer value of priority (${spec.priority}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`);
      }
      spec.priority = priority;
      if (spec.preemptionPolicy && spec.preemptionPolicy !== policy) {
        throw forbidden(`the string value of PreemptionPolicy (${spec.preemptionPolicy}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`);
      }
      spec.preemptionPolicy = policy;
    },
  };
}
