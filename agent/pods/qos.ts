/**
 * Owns the pod QoS class (status.qosClass) the agent reports: Kubernetes' computation, shared with
 * the API server (src/api/pod-qos.ts).
 */
export { podQosClass as qosClassOf, type QosClass } from '../../src/api/pod-qos.js';
