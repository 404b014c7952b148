/** Node validation: metadata, taints, pod CIDRs (fixed once set) and reported resource quantities. */
import { isIP } from 'node:net';
import type { FieldError } from '../errors.js';
import type { Node } from '../types.js';
import { child, expectArray, expectString, fieldErrors, index, isRecord, listOf } from './field-errors.js';
import { validateLabelName, validateObjectMeta } from './meta.js';
import { labelValueErrors } from './names.js';
import { validateTaintEffect } from './pod.js';
import { validateNodeResourceList } from './resources.js';

/** Full validation of a Node on create or update (nodes are cluster-scoped, names are DNS subdomains). */
export function validateNode(node: Node): FieldError[] {
  const errs = validateObjectMeta(node.metadata, { namespaced: false, nameRule: 'subdomain' });
  if (isRecord(node.spec)) {
    errs.push(...validateTaints(node.spec.taints, 'spec.taints'));
    errs.push(...validatePodCIDRs(node.spec.podCIDR, node.spec.podCIDRs, 'spec'));
  }
  if (isRecord(node.status)) {
    errs.push(...validateNodeResourceList(node.status.capacity, 'status.capacity'));
    errs.push(...validateNodeResourceList(node.status.allocatable, 'status.allocatable'));
  }
  return errs;
}

/**
 * An update: everything a create checks, and the pod CIDRs fixed once set (they may only go from
 * unset to a value, as kube-apiserver's ValidateNodeUpdate allows node IPAM). Other nodes route that
 * range to this node, so a node moving it could take over another's or the services' addresses.
 */
export function validateNodeUpdate(node: Node, old: Node): FieldError[] {
  const errs = validateNode(node);
  const before = podCIDRsOf(old);
  if (before.length) {
    const after = podCIDRsOf(node);
    const moved = before.length !== after.length || before.some((cidr, i) => cidr !== after[i]) || (old.spec?.podCIDR ?? '') !== (node.spec?.podCIDR ?? '');
    if (moved) errs.push(fieldErrors.forbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid'));
  }
  return errs;
}

/** spec.podCIDRs, or the single spec.podCIDR when only that is set (as the v1 conversion reads them). */
function podCIDRsOf(node: Node): string[] {
  const list = node.spec?.podCIDRs;
  if (Array.isArray(list) && list.length) return list.map(String);
  return typeof node.spec?.podCIDR === 'string' && node.spec.podCIDR ? [node.spec.podCIDR] : [];
}

/** Taints: key a qualified name, value a label value, effect required; unique per (key, effect). */
export function validateTaints(taints: unknown, path: string): FieldError[] {
  const errs = expectArray(path, taints);
  const seen = new Set<string>();
  listOf(taints).forEach((taint, i) => {
    const at = index(path, i);
    if (!isRecord(taint)) {
      errs.push(fieldErrors.typeInvalid(at, taint, 'must be an object'));
      return;
    }
    const key = typeof taint.key === 'string' ? taint.key : '';
    const value = typeof taint.value === 'string' ? taint.value : '';
    errs.push(...expectString(child(at, 'key'), taint.key), ...expectString(child(at, 'value'), taint.value));
    errs.push(...validateLabelName(key, child(at, 'key')));
    const valueProblems = labelValueErrors(value);
    if (valueProblems.length) errs.push(fieldErrors.invalid(child(at, 'value'), value, valueProblems.join(';')));
    errs.push(...validateTaintEffect(taint.effect, child(at, 'effect')));
    const identity = JSON.stringify([key, taint.effect ?? '']);
    if (seen.has(identity)) errs.push(fieldErrors.duplicate(at, taint, 'taints must be unique by key and effect pair'));
    seen.add(identity);
  });
  return errs;
}

const CIDR_MESSAGE = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';

/** Family (4 or 6) of a CIDR string, or 0 when it is not one. */
function cidrFamily(cidr: string): 0 | 4 | 6 {
  const slash = cidr.indexOf('/');
  if (slash < 0) return 0;
  const family = isIP(cidr.slice(0, slash)) as 0 | 4 | 6;
  const bits = cidr.slice(slash + 1);
  if (family === 0 || !/^[0-9]{1,3}$/.test(bits)) return 0;
  return Number(bits) <= (family === 4 ? 32 : 128) ? family : 0;
}

function validatePodCIDRs(podCIDR: unknown, podCIDRs: unknown, path: string): FieldError[] {
  const errs = [...expectString(child(path, 'podCIDR'), podCIDR), ...expectArray(child(path, 'podCIDRs'), podCIDRs)];
  if (typeof podCIDR === 'string' && podCIDR && cidrFamily(podCIDR) === 0) errs.push(fieldErrors.invalid(child(path, 'podCIDR'), podCIDR, CIDR_MESSAGE));
  const families: number[] = [];
  listOf(podCIDRs).forEach((cidr, i) => {
    const family = typeof cidr === 'string' ? cidrFamily(cidr) : 0;
    if (family === 0) errs.push(fieldErrors.invalid(index(child(path, 'podCIDRs'), i), cidr, CIDR_MESSAGE));
    families.push(family);
  });
  // Dual-stack allows one range per IP family, never two of the same.
  if (families.length > 2 || (families.length === 2 && families[0] === families[1])) {
    errs.push(fieldErrors.invalid(child(path, 'podCIDRs'), podCIDRs, 'may specify no more than one CIDR for each IP family'));
  }
  return errs;
}
