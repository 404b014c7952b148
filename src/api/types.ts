/**
 * Owns the one import point for the Kubernetes JSON shapes Berth serves: the generated kinds and
 * the few types that are Berth's own (KubeObject, KubeList, WatchEvent, value unions).
 */

// The Kubernetes shapes (Pod, PodSpec, Container, ObjectMeta, …) are generated from the API facts
// (src/api/generated/types.ts, by `npm run gen`); this module is the one place that exports them,
// beside the few types that are Berth's own. A name declared here takes the place of a generated
// one of the same name (WatchEvent: the generated one types its object as a raw extension).
export * from './generated/types.js';
import type {
  AutoscalingV2CrossVersionObjectReference,
  AutoscalingV2HorizontalPodAutoscaler,
  AutoscalingV2HorizontalPodAutoscalerSpec,
  AutoscalingV2HorizontalPodAutoscalerStatus,
  ListMeta,
  MutatingWebhook,
  MutatingWebhookConfiguration,
  ObjectMeta,
  ValidatingWebhook,
  ValidatingWebhookConfiguration,
} from './generated/types.js';

/**
 * Any API object, typed or not (a custom resource, an object the registry handles by kind only):
 * apiVersion, kind and metadata; the fields its kind carries are not part of this type. Every
 * generated kind (Pod, Deployment, …) is one, so typed and generic code meet without casts.
 * A type alias, not an interface, so any object is also a JSON map (Record<string, unknown>):
 * code that handles objects by kind only reads their other fields through that view.
 */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
};

/**
 * An object's fields as a JSON map, the same object (no copy): how code that handles objects by
 * kind only (the registry's status split, field management) reads and writes spec, status or
 * any field its kind may carry.
 */
export function objectFields(obj: KubeObject): Record<string, unknown> {
  return obj;
}

/** A list of any kind, as the registry and the client return it. */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion: string;
  kind: string;
  metadata: ListMeta;
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** A watch event with its object typed (meta/v1 WatchEvent). */
export interface WatchEvent<T = KubeObject> {
  type: WatchEventType;
  object: T;
}

// Values Berth acts on, where the facts type the field as a plain string.
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';
export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

// Short names for shapes that more than one served version defines (the generator prefixes every
// holder of a shared name): the short name means the version Berth stores.
export type HorizontalPodAutoscaler = AutoscalingV2HorizontalPodAutoscaler;
export type HorizontalPodAutoscalerSpec = AutoscalingV2HorizontalPodAutoscalerSpec;
export type HorizontalPodAutoscalerStatus = AutoscalingV2HorizontalPodAutoscalerStatus;
export type CrossVersionObjectReference = AutoscalingV2CrossVersionObjectReference;

/** Either kind of webhook configuration: the admission plugin calls both kinds' webhooks alike. */
export type WebhookConfiguration = MutatingWebhookConfiguration | ValidatingWebhookConfiguration;
export type Webhook = MutatingWebhook | ValidatingWebhook;
