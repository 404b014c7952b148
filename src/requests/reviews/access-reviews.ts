/**
 * authorization.k8s.io/v1: asking the authorizer who may do what, as kube-apiserver answers it.
 *  - SelfSubjectAccessReview: may I (the caller) do this? (`kubectl auth can-i`)
 *  - SubjectAccessReview: may this user/group do this? (webhooks, proxies)
 *  - LocalSubjectAccessReview: the same, limited to one namespace (grantable per namespace)
 *  - SelfSubjectRulesReview: what may I do in this namespace? (`kubectl auth can-i --list`)
 * Each is a virtual kind (nothing stored; src/requests/virtual-create.ts), validated as upstream's
 * pkg/apis/authorization/validation, and answered with the request echoed plus its status.
 */
import { errors, type FieldError } from '../../api/errors.js';
import type { KubeObject } from '../../api/types.js';
import type { UserInfo } from '../../api/user-info.js';
import { fieldErrors } from '../../api/validation.js';
import type { RequestAttributes } from '../../auth/authz.js';
import { nodeNameOf } from '../../auth/impersonation.js';
import type { UserRules } from '../../auth/rbac/rbac-authorizer.js';
import type { KindStrategy, VirtualCreateContext } from '../../registry/strategy.js';
import {
  LOCAL_SUBJECT_ACCESS_REVIEW_PROTOBUF,
  SELF_SUBJECT_ACCESS_REVIEW_PROTOBUF,
  SELF_SUBJECT_RULES_REVIEW_PROTOBUF,
  SUBJECT_ACCESS_REVIEW_PROTOBUF,
  normalizeExtra,
} from './protobuf.js';
import type { ResourceInfo } from '../../api/identities.js';

export const AUTHORIZATION_GROUP = 'authorization.k8s.io';

/** What is asked of the authorizer: a resource request, or (with `path`) a non-resource one. */
export type AccessAttributes = RequestAttributes;

/** What a user may do in a namespace, as SelfSubjectRulesReview's status shows it. */
export type SubjectRules = UserRules;

/** The server's authorizer as the reviews use it (src/auth/authz.ts's Authorizer fits). */
export interface ReviewAuthorizer {
  authorize(who: UserInfo & { nodeName?: string }, attrs: AccessAttributes): { allowed: boolean; reason?: string };
  /** what the user may do in a namespace; without it a rules review is answered empty and incomplete */
  rulesFor?(who: UserInfo, namespace: string): SubjectRules;
}

interface ResourceAttributesBody {
  namespace?: string;
  verb?: string;
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  fieldSelector?: { rawSelector?: string };
}

interface NonResourceAttributesBody {
  path?: string;
  verb?: string;
}

interface AccessReviewSpec {
  resourceAttributes?: ResourceAttributesBody;
  nonResourceAttributes?: NonResourceAttributesBody;
  user?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  uid?: string;
}

export interface AccessReview extends KubeObject {
  spec: AccessReviewSpec;
  status?: { allowed: boolean; denied?: boolean; reason?: string; evaluationError?: string };
}

export interface SelfSubjectRulesReview extends KubeObject {
  spec: { namespace?: string };
  status?: SubjectRules & { evaluationError?: string };
}

function reviewInfo(kind: string, namespaced = false): ResourceInfo {
  const plural = `${kind.toLowerCase()}s`;
  return { group: AUTHORIZATION_GROUP, version: 'v1', kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), namespaced, shortNames: [], verbs: ['create'], subresources: [], categories: [] };
}

export const SELF_SUBJECT_ACCESS_REVIEW_INFO = reviewInfo('SelfSubjectAccessReview');
export const SUBJECT_ACCESS_REVIEW_INFO = reviewInfo('SubjectAccessReview');
export const LOCAL_SUBJECT_ACCESS_REVIEW_INFO = reviewInfo('LocalSubjectAccessReview', true);
export const SELF_SUBJECT_RULES_REVIEW_INFO = reviewInfo('SelfSubjectRulesReview');

// ---------- validation ----------

const STRING_FIELDS_OF_RESOURCE = ['namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name'] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Values Go could not decode into the typed struct: a 400 there, a field error here. */
function typeErrors(spec: unknown, path: string, withSubject: boolean): FieldError[] {
  if (spec === undefined) return [];
  if (!isRecord(spec)) return [fieldErrors.typeInvalid(path, spec, 'must be an object')];
  const errs: FieldError[] = [];
  const strings = (obj: unknown, at: string, names: readonly string[]) => {
    if (obj === undefined || obj === null) return;
    if (!isRecord(obj)) return void errs.push(fieldErrors.typeInvalid(at, obj, 'must be an object'));
    for (const n of names) if (obj[n] !== undefined && typeof obj[n] !== 'string') errs.push(fieldErrors.typeInvalid(`${at}.${n}`, obj[n], 'must be a string'));
  };
  strings(spec.resourceAttributes, `${path}.resourceAttributes`, STRING_FIELDS_OF_RESOURCE);
  strings(spec.nonResourceAttributes, `${path}.nonResourceAttributes`, ['path', 'verb']);
  if (withSubject) {
    strings(spec, path, ['user', 'uid']);
    const groups = spec.groups;
    if (groups !== undefined && groups !== null && !(Array.isArray(groups) && groups.every((g) => typeof g === 'string'))) errs.push(fieldErrors.typeInvalid(`${path}.groups`, groups, 'must be a list of strings'));
    const extra = spec.extra;
    if (extra !== undefined && extra !== null && !(isRecord(extra) && Object.values(extra).every((v) => Array.isArray(v) && v.every((s) => typeof s === 'string')))) {
      errs.push(fieldErrors.typeInvalid(`${path}.extra`, extra, 'must map keys to lists of strings'));
    }
  }
  return errs;
}

/** Exactly one of resourceAttributes and nonResourceAttributes (ValidateSelfSubjectAccessReviewSpec). */
function attributeErrors(spec: AccessReviewSpec): FieldError[] {
  if (spec.resourceAttributes && spec.nonResourceAttributes) {
    return [fieldErrors.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'cannot be specified in combination with resourceAttributes')];
  }
  if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
    return [fieldErrors.invalid('spec.resourceAttributes', null, 'exactly one of nonResourceAttributes or resourceAttributes must be specified')];
  }
  return [];
}

/** metadata must be empty (managedFields aside; creationTimestamp: null is how clients send "unset"). */
function metadataErrors(obj: KubeObject, allowNamespace: boolean): FieldError[] {
  const meta = (obj.metadata ?? {}) as Record<string, unknown>;
  const set = Object.entries(meta).filter(([k, v]) => v !== null && v !== undefined && k !== 'managedFields' && !(allowNamespace && k === 'namespace'));
  if (set.length === 0) return [];
  return [fieldErrors.invalid('metadata', Object.fromEntries(set), allowNamespace ? 'must be empty except for namespace' : 'must be empty')];
}

/** Normalize the decoded body in place (protobuf extras) and return its spec, or [] with errors. */
function specOf(obj: KubeObject): AccessReviewSpec {
  const o = obj as AccessReview;
  if (o.spec === undefined || o.spec === null) o.spec = {};
  if (isRecord(o.spec) && o.spec.extra !== undefined) o.spec.extra = normalizeExtra(o.spec.extra) as Record<string, string[]>;
  return o.spec;
}

export function validateSelfSubjectAccessReview(obj: KubeObject): FieldError[] {
  const spec = specOf(obj);
  const typed = typeErrors(spec, 'spec', false);
  if (typed.length) return typed;
  return [...attributeErrors(spec), ...metadataErrors(obj, false)];
}

function subjectErrors(spec: AccessReviewSpec): FieldError[] {
  if (!spec.user && !(spec.groups ?? []).length) return [fieldErrors.invalid('spec.user', spec.user ?? '', 'at least one of user or group must be specified')];
  return [];
}

export function validateSubjectAccessReview(obj: KubeObject): FieldError[] {
  const spec = specOf(obj);
  const typed = typeErrors(spec, 'spec', true);
  if (typed.length) return typed;
  return [...attributeErrors(spec), ...subjectErrors(spec), ...metadataErrors(obj, false)];
}

export function validateLocalSubjectAccessReview(obj: KubeObject): FieldError[] {
  const spec = specOf(obj);
  const typed = typeErrors(spec, 'spec', true);
  if (typed.length) return typed;
  const errs = [...attributeErrors(spec), ...subjectErrors(spec), ...metadataErrors(obj, true)];
  const namespace = obj.metadata?.namespace ?? '';
  if (spec.resourceAttributes && (spec.resourceAttributes.namespace ?? '') !== namespace) {
    errs.push(fieldErrors.invalid('spec.resourceAttributes.namespace', spec.resourceAttributes.namespace ?? '', 'must match metadata.namespace'));
  }
  if (spec.nonResourceAttributes) errs.push(fieldErrors.invalid('spec.nonResourceAttributes', spec.nonResourceAttributes, 'disallowed on this kind of request'));
  return errs;
}

export function validateSelfSubjectRulesReview(obj: KubeObject): FieldError[] {
  const spec = (obj as SelfSubjectRulesReview).spec;
  if (spec !== undefined && spec !== null && !isRecord(spec)) return [fieldErrors.typeInvalid('spec', spec, 'must be an object')];
  const ns = spec?.namespace;
  if (ns !== undefined && typeof ns !== 'string') return [fieldErrors.typeInvalid('spec.namespace', ns, 'must be a string')];
  return [];
}

// ---------- evaluation ----------

/**
 * The attributes a review asks about (ResourceAttributesFrom / NonResourceAttributesFrom upstream).
 * Empty strings mean "unset" in the API, so they are dropped.
 */
export function accessAttributesOf(spec: AccessReviewSpec): AccessAttributes {
  const r = spec.resourceAttributes;
  if (!r) {
    const n = spec.nonResourceAttributes ?? {};
    return { verb: n.verb ?? '', group: '', resource: '', path: n.path ?? '' };
  }
  const attrs: AccessAttributes = { verb: r.verb ?? '', group: r.group ?? '', resource: r.resource ?? '' };
  if (r.subresource) attrs.subresource = r.subresource;
  if (r.namespace) attrs.namespace = r.namespace;
  if (r.name) attrs.name = r.name;
  if (r.fieldSelector?.rawSelector) attrs.fieldSelector = r.fieldSelector.rawSelector;
  return attrs;
}

/**
 * The user a SubjectAccessReview names. A node's user name and group make it that node to the Node
 * authorizer, as upstream's NodeIdentifier reads them.
 */
export function subjectOf(spec: AccessReviewSpec): UserInfo & { nodeName?: string } {
  const who: UserInfo & { nodeName?: string } = { username: spec.user ?? '', groups: [...(spec.groups ?? [])] };
  if (spec.uid) who.uid = spec.uid;
  if (spec.extra && Object.keys(spec.extra).length) who.extra = spec.extra;
  const nodeName = nodeNameOf(who);
  if (nodeName !== undefined) who.nodeName = nodeName;
  return who;
}

function answer(review: AccessReview, decision: { allowed: boolean; reason?: string }): AccessReview {
  const status: NonNullable<AccessReview['status']> = { allowed: decision.allowed };
  if (decision.reason) status.reason = decision.reason;
  return { ...review, metadata: { ...review.metadata, creationTimestamp: null }, status };
}

function callerOf(ctx: VirtualCreateContext): UserInfo {
  if (!ctx.user) throw errors.badRequest('no user present on request');
  return ctx.user;
}

function strategy(info: ResourceInfo, validate: (obj: KubeObject) => FieldError[], protobuf: KindStrategy['protobuf'], create: (obj: KubeObject, ctx: VirtualCreateContext) => KubeObject): KindStrategy {
  return { info, validate, protobuf, hasStatus: false, virtualCreate: async (obj, ctx) => create(obj, ctx) };
}

/** The four authorization.k8s.io/v1 review kinds, answered by `authorizer`. */
export function accessReviewStrategies(authorizer: ReviewAuthorizer): KindStrategy[] {
  return [
    strategy(SELF_SUBJECT_ACCESS_REVIEW_INFO, validateSelfSubjectAccessReview, SELF_SUBJECT_ACCESS_REVIEW_PROTOBUF, (obj, ctx) => {
      const review = obj as AccessReview;
      return answer(review, authorizer.authorize(callerOf(ctx), accessAttributesOf(review.spec)));
    }),
    strategy(SUBJECT_ACCESS_REVIEW_INFO, validateSubjectAccessReview, SUBJECT_ACCESS_REVIEW_PROTOBUF, (obj) => {
      const review = obj as AccessReview;
      return answer(review, authorizer.authorize(subjectOf(review.spec), accessAttributesOf(review.spec)));
    }),
    strategy(LOCAL_SUBJECT_ACCESS_REVIEW_INFO, validateLocalSubjectAccessReview, LOCAL_SUBJECT_ACCESS_REVIEW_PROTOBUF, (obj) => {
      const review = obj as AccessReview;
      return answer(review, authorizer.authorize(subjectOf(review.spec), accessAttributesOf(review.spec)));
    }),
    strategy(SELF_SUBJECT_RULES_REVIEW_INFO, validateSelfSubjectRulesReview, SELF_SUBJECT_RULES_REVIEW_PROTOBUF, (obj, ctx) => {
      const namespace = (obj as SelfSubjectRulesReview).spec?.namespace;
      if (!namespace) throw errors.badRequest('no namespace on request');
      const user = callerOf(ctx);
      const rules: SubjectRules = authorizer.rulesFor ? authorizer.rulesFor(user, namespace) : { resourceRules: [], nonResourceRules: [], incomplete: true };
      // Upstream answers with the status alone: the spec is not echoed.
      const out: SelfSubjectRulesReview = {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: { creationTimestamp: null },
        spec: {},
        status: { resourceRules: rules.resourceRules, nonResourceRules: rules.nonResourceRules, incomplete: rules.incomplete },
      };
      return out;
    }),
  ];
}
