/**
 * Object validation in Kubernetes' terms: every function returns FieldError[] (empty = valid)
 * with Kubernetes' field paths, error types and message wording, ready for errors.invalid().
 * The rules live in src/api/validation/*; this module is the one import point.
 */
export {
  child,
  entriesOf,
  expectArray,
  expectInteger,
  expectObject,
  expectString,
  expectStringMap,
  fieldErrors,
  formatBadValue,
  index,
  invalidEach,
  isRecord,
  key,
  listOf,
} from './validation/field-errors.js';
export {
  DNS1123_LABEL_MAX_LENGTH,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  LABEL_VALUE_MAX_LENGTH,
  QUALIFIED_NAME_MAX_LENGTH,
  dns1035LabelErrors,
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  emptyError,
  envVarNameErrors,
  inclusiveRangeError,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  labelValueErrors,
  maxLenError,
  portNameErrors,
  portNumberErrors,
  qualifiedNameErrors,
  regexError,
} from './validation/names.js';
export {
  TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
  nameErrors,
  validateAnnotations,
  validateFinalizers,
  validateLabelName,
  validateLabels,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validateOwnerReferences,
  type NameRule,
  type ObjectMetaRules,
} from './validation/meta.js';
export { validateNodeResourceList, validateResourceQuantityValue, validateResourceRequirements } from './validation/resources.js';
export { PORT_PROTOCOLS, PULL_POLICIES, validateContainer, validateEnum } from './validation/container.js';
export {
  DNS_POLICIES,
  RESTART_POLICIES,
  TAINT_EFFECTS,
  validatePod,
  validatePodSpec,
  validateTaintEffect,
  validateTolerations,
  validateVolumes,
} from './validation/pod.js';
export { POD_UPDATE_FORBIDDEN_MESSAGE, validatePodSpecUpdate, validatePodUpdate } from './validation/pod-update.js';
export { validateNode, validateNodeUpdate, validateTaints } from './validation/node.js';
export { STANDARD_FINALIZERS, validateNamespace } from './validation/namespace.js';
export { validateLabelSelectorObject } from './validation/selector.js';
export { domainPrefixedPathErrors, validateIngressClass, validateIngressClassUpdate } from './validation/networking-ingressclass.js';
export { LEGACY_INGRESS_CLASS_ANNOTATION, PATH_TYPES, validateIngressBackend, validateIngressClassAnnotation, validateIngressSpec, validateIngressStatus, wildcardSubdomainErrors } from './validation/networking-ingress.js';
