/**
 * DefaultIngressClass admission, as kube-apiserver's plugin of that name: an Ingress created without
 * spec.ingressClassName (and without the legacy `kubernetes.io/ingress.class` annotation) gets the
 * name of the IngressClass annotated `ingressclass.kubernetes.io/is-default-class: "true"`. With
 * several default classes the newest is chosen, as upstream does since 1.28 (it used to refuse the
 * Ingress); with none the Ingress is left without a class.
 */
import type { Ingress, KubeObject } from '../../api/types.js';
import { LEGACY_INGRESS_CLASS_ANNOTATION } from '../../api/validation.js';
import type { AdmissionPlugin } from '../chain.js';
import { DEFAULT_INGRESS_CLASS_ANNOTATION } from '../../api/ingress.js';

export { DEFAULT_INGRESS_CLASS_ANNOTATION };

/** The default class among `classes`: the newest of those annotated default, undefined when none is. */
export function defaultIngressClass(classes: readonly KubeObject[]): string | undefined {
  const defaults = classes.filter((c) => c.metadata.annotations?.[DEFAULT_INGRESS_CLASS_ANNOTATION] === 'true' && !c.metadata.deletionTimestamp);
  // Newest first; a tie on the (second-resolution) timestamp is broken by name, so the choice is stable.
  defaults.sort((a, b) => (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  return defaults[0]?.metadata.name;
}

export function defaultIngressClassAdmission(opts: { listIngressClasses: () => Promise<KubeObject[]> }): AdmissionPlugin {
  return {
    name: 'DefaultIngressClass',
    kind: 'mutating',
    async admit(attrs) {
      if (attrs.operation !== 'CREATE' || attrs.info.kind !== 'Ingress' || attrs.info.group !== 'networking.k8s.io' || attrs.subresource) return;
      const ing = attrs.object as Ingress;
      if (ing.spec?.ingressClassName || ing.metadata.annotations?.[LEGACY_INGRESS_CLASS_ANNOTATION] !== undefined) return;
      const name = defaultIngressClass(await opts.listIngressClasses());
      if (name !== undefined) ing.spec = { ...(ing.spec ?? {}), ingressClassName: name };
    },
  };
}
