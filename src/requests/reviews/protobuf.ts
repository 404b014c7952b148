/**
 * Protobuf messages of the review kinds (generated from Kubernetes' authorization/v1 and
 * authentication/v1 generated.proto): `kubectl auth can-i` and `kubectl auth whoami` post them
 * through client-go's typed clients, which speak protobuf. Each kind's table carries the messages
 * it reaches; the shared meta messages (ObjectMeta, LabelSelectorRequirement) are built in.
 */
import { protobufMessagesOf } from '../../api/protobuf/messages.js';

export const SELF_SUBJECT_ACCESS_REVIEW_PROTOBUF = protobufMessagesOf('authorization.k8s.io/v1', 'SelfSubjectAccessReview');
export const SUBJECT_ACCESS_REVIEW_PROTOBUF = protobufMessagesOf('authorization.k8s.io/v1', 'SubjectAccessReview');
export const LOCAL_SUBJECT_ACCESS_REVIEW_PROTOBUF = protobufMessagesOf('authorization.k8s.io/v1', 'LocalSubjectAccessReview');
export const SELF_SUBJECT_RULES_REVIEW_PROTOBUF = protobufMessagesOf('authorization.k8s.io/v1', 'SelfSubjectRulesReview');
export const TOKEN_REVIEW_PROTOBUF = protobufMessagesOf('authentication.k8s.io/v1', 'TokenReview');
export const SELF_SUBJECT_REVIEW_PROTOBUF = protobufMessagesOf('authentication.k8s.io/v1', 'SelfSubjectReview');

/** `extra` as JSON carries it (`{key: [values]}`), from either that form or protobuf's `{key: {items}}`. */
export function normalizeExtra(extra: unknown): unknown {
  if (!extra || typeof extra !== 'object' || Array.isArray(extra)) return extra;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(extra as Record<string, unknown>)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) ? ((v as { items?: unknown }).items ?? []) : v;
  }
  return out;
}
