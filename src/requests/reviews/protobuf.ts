/**
 * Protobuf field numbers of the review kinds (Kubernetes 1.32's authorization/v1 and
 * authentication/v1 generated.proto): `kubectl auth can-i` and `kubectl auth whoami` post them
 * through client-go's typed clients, which speak protobuf. Each kind's table carries the messages
 * it reaches; the shared meta messages (ObjectMeta, LabelSelectorRequirement) come from meta.ts.
 */
import type { MessageTable } from '../../api/protobuf/schema.js';

/** `map<string, ExtraValue>` decodes to `{key: {items: [...]}}`; normalizeExtra turns it into the JSON form. */
const EXTRA_VALUE: MessageTable = { ExtraValue: { items: [1, '[]string'] } };

const ACCESS_ATTRIBUTES: MessageTable = {
  ResourceAttributes: {
    namespace: [1, 'string'],
    verb: [2, 'string'],
    group: [3, 'string'],
    version: [4, 'string'],
    resource: [5, 'string'],
    subresource: [6, 'string'],
    name: [7, 'string'],
    fieldSelector: [8, 'FieldSelectorAttributes'],
    labelSelector: [9, 'LabelSelectorAttributes'],
  },
  FieldSelectorAttributes: { rawSelector: [1, 'string'], requirements: [2, '[]FieldSelectorRequirement'] },
  FieldSelectorRequirement: { key: [1, 'string'], operator: [2, 'string'], values: [3, '[]string'] },
  LabelSelectorAttributes: { rawSelector: [1, 'string'], requirements: [2, '[]LabelSelectorRequirement'] },
  NonResourceAttributes: { path: [1, 'string'], verb: [2, 'string'] },
  SubjectAccessReviewStatus: { allowed: [1, 'bool'], denied: [4, 'bool'], reason: [2, 'string'], evaluationError: [3, 'string'] },
};

const SUBJECT_SPEC: MessageTable = {
  ...ACCESS_ATTRIBUTES,
  ...EXTRA_VALUE,
  SubjectAccessReviewSpec: {
    resourceAttributes: [1, 'ResourceAttributes'],
    nonResourceAttributes: [2, 'NonResourceAttributes'],
    user: [3, 'string'],
    groups: [4, '[]string'],
    extra: [5, 'map<ExtraValue>'],
    uid: [6, 'string'],
  },
};

const REVIEW_ENVELOPE = (spec: string, status: string) => ({ metadata: [1, 'ObjectMeta'], spec: [2, spec], status: [3, status] }) as const;

export const SELF_SUBJECT_ACCESS_REVIEW_PROTOBUF: MessageTable = {
  ...ACCESS_ATTRIBUTES,
  SelfSubjectAccessReview: REVIEW_ENVELOPE('SelfSubjectAccessReviewSpec', 'SubjectAccessReviewStatus'),
  SelfSubjectAccessReviewSpec: { resourceAttributes: [1, 'ResourceAttributes'], nonResourceAttributes: [2, 'NonResourceAttributes'] },
};

export const SUBJECT_ACCESS_REVIEW_PROTOBUF: MessageTable = {
  ...SUBJECT_SPEC,
  SubjectAccessReview: REVIEW_ENVELOPE('SubjectAccessReviewSpec', 'SubjectAccessReviewStatus'),
};

export const LOCAL_SUBJECT_ACCESS_REVIEW_PROTOBUF: MessageTable = {
  ...SUBJECT_SPEC,
  LocalSubjectAccessReview: REVIEW_ENVELOPE('SubjectAccessReviewSpec', 'SubjectAccessReviewStatus'),
};

export const SELF_SUBJECT_RULES_REVIEW_PROTOBUF: MessageTable = {
  SelfSubjectRulesReview: REVIEW_ENVELOPE('SelfSubjectRulesReviewSpec', 'SubjectRulesReviewStatus'),
  SelfSubjectRulesReviewSpec: { namespace: [1, 'string'] },
  SubjectRulesReviewStatus: {
    resourceRules: [1, '[]ResourceRule'],
    nonResourceRules: [2, '[]NonResourceRule'],
    incomplete: [3, 'bool'],
    evaluationError: [4, 'string'],
  },
  ResourceRule: { verbs: [1, '[]string'], apiGroups: [2, '[]string'], resources: [3, '[]string'], resourceNames: [4, '[]string'] },
  NonResourceRule: { verbs: [1, '[]string'], nonResourceURLs: [2, '[]string'] },
};

const USER_INFO: MessageTable = {
  ...EXTRA_VALUE,
  UserInfo: { username: [1, 'string'], uid: [2, 'string'], groups: [3, '[]string'], extra: [4, 'map<ExtraValue>'] },
};

export const TOKEN_REVIEW_PROTOBUF: MessageTable = {
  ...USER_INFO,
  TokenReview: REVIEW_ENVELOPE('TokenReviewSpec', 'TokenReviewStatus'),
  TokenReviewSpec: { token: [1, 'string'], audiences: [2, '[]string'] },
  TokenReviewStatus: { authenticated: [1, 'bool'], user: [2, 'UserInfo'], audiences: [4, '[]string'], error: [3, 'string'] },
};

export const SELF_SUBJECT_REVIEW_PROTOBUF: MessageTable = {
  ...USER_INFO,
  SelfSubjectReview: { metadata: [1, 'ObjectMeta'], status: [2, 'SelfSubjectReviewStatus'] },
  SelfSubjectReviewStatus: { userInfo: [1, 'UserInfo'] },
};

/** `extra` as JSON carries it (`{key: [values]}`), from either that form or protobuf's `{key: {items}}`. */
export function normalizeExtra(extra: unknown): unknown {
  if (!extra || typeof extra !== 'object' || Array.isArray(extra)) return extra;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(extra as Record<string, unknown>)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) ? ((v as { items?: unknown }).items ?? []) : v;
  }
  return out;
}
