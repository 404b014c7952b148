/**
 * Owns what the control plane and the node agent agree on about Berth's built-in ingress controller:
 * its IngressClass and controller names, which Ingresses it serves, the node annotation through which
 * an agent says on which ports its ingress listens (or why it cannot), and the TLS Secrets an Ingress
 * names. Pure data and functions; no I/O.
 */
import type { Ingress, IngressPortStatus, KubeObject } from './types.js';
import { isRecord } from './validation.js';

/** The IngressClass Berth creates (default class) and its spec.controller. */
export const BERTH_INGRESS_CLASS = 'berth';
export const BERTH_INGRESS_CONTROLLER = 'berth.dev/ingress-nginx';

/** On an IngressClass: "true" makes it the default class (the DefaultIngressClass admission). */
export const DEFAULT_INGRESS_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';

/**
 * On a Node, written by its agent: the ports its ingress listens on, as a JSON list of
 * networking/v1 IngressPortStatus; a port it could not take carries `error` (PortInUse). A node
 * without it runs no ingress.
 */
export const NODE_INGRESS_PORTS_ANNOTATION = 'ingress.berth.dev/ports';

/** The error an IngressPortStatus carries for a port another process holds. */
export const PORT_IN_USE = 'PortInUse';

/** The controller of each IngressClass, by class name. */
export function classControllers(classes: readonly KubeObject[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of classes) {
    const spec = (c as { spec?: unknown }).spec;
    if (c.metadata.name && isRecord(spec) && typeof spec.controller === 'string') out.set(c.metadata.name, spec.controller);
  }
  return out;
}

/**
 * Is the Ingress served by `controller`? Its spec.ingressClassName (or, for old objects, the legacy
 * annotation) must name a class of that controller. An Ingress with no class is served by nobody, as
 * ingress-nginx leaves class-less Ingresses alone by default; the DefaultIngressClass admission gives
 * new ones the default class.
 */
export function servedBy(ing: Ingress, controllers: ReadonlyMap<string, string>, controller = BERTH_INGRESS_CONTROLLER): boolean {
  const className = ing.spec?.ingressClassName ?? ing.metadata.annotations?.['kubernetes.io/ingress.class'];
  return className !== undefined && controllers.get(className) === controller;
}

/** The names of the Secrets the Ingress's spec.tls names (in its namespace). */
export function tlsSecretNames(ing: Ingress): string[] {
  const names = new Set<string>();
  for (const t of ing.spec?.tls ?? []) if (typeof t?.secretName === 'string' && t.secretName) names.add(t.secretName);
  return [...names];
}

/** The ports a node's annotation lists; undefined when it has none or it cannot be read. */
export function nodeIngressPorts(node: KubeObject): IngressPortStatus[] | undefined {
  const raw = node.metadata.annotations?.[NODE_INGRESS_PORTS_ANNOTATION];
  if (raw === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (!Array.isArray(parsed)) return undefined;
    return parsed.filter((p): p is IngressPortStatus => isRecord(p) && typeof p.port === 'number' && typeof p.protocol === 'string');
  } catch {
    return undefined;
  }
}
