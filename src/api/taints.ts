/**
 * Well-known taint keys the control plane itself puts on nodes (node lifecycle) and that admission
 * and pod defaulting tolerate on every pod's behalf.
 */

/** The node's Ready condition is Unknown: its agent stopped reporting. */
export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
/** The node's Ready condition is False. */
export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';
/** The node reports DiskPressure=True (NoSchedule, as the node lifecycle controller's TaintNodesByCondition). */
export const TAINT_DISK_PRESSURE = 'node.kubernetes.io/disk-pressure';
/** The node reports MemoryPressure=True. */
export const TAINT_MEMORY_PRESSURE = 'node.kubernetes.io/memory-pressure';
/** The node reports PIDPressure=True. */
export const TAINT_PID_PRESSURE = 'node.kubernetes.io/pid-pressure';
