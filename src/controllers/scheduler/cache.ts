/**
 * Owns the scheduler's cache: one NodeInfo per node, kept up to date from the pod and node informers
 * as events arrive (so an attempt never scans every pod), the pods the scheduler has bound but whose
 * binding the informer has not shown yet ("assumed"), and pods nominated to a node by preemption.
 */
import type { Node, Pod } from '../../api/types.js';
import { NodeInfo, podInfoOf, Snapshot, type PodInfo } from './framework.js';

const isTerminal = (pod: Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

export class SchedulerCache {
  /** every node name seen, existing or only referenced by pods so far */
  private readonly infos = new Map<string, NodeInfo>();
  private readonly existing = new Set<string>();
  /** pod key → the node it counts on */
  private readonly podNode = new Map<string, string>();
  /** pod key → node, for pods the scheduler bound ahead of the informer */
  readonly assumed = new Map<string, { node: string; uid: string }>();
  /** node → pods nominated to it (preemptors waiting for their victims to go) */
  private readonly nominated = new Map<string, Map<string, PodInfo>>();
  private readonly nominatedNode = new Map<string, string>();
  private snapshot?: Snapshot;

  constructor(private readonly namespaceLabels: (ns: string) => Record<string, string> | undefined = () => undefined) {}

  /** Start over from full lists (at start, or when the informers were filled without events); assumed pods stay assumed. */
  rebuild(nodes: readonly Node[], pods: readonly { key: string; pod: Pod }[]): void {
    const assumed = [...this.assumed].map(([key, a]) => ({ key, a, info: this.infos.get(a.node)?.pods.get(key) }));
    this.infos.clear();
    this.existing.clear();
    this.podNode.clear();
    this.assumed.clear();
    this.nominated.clear();
    this.nominatedNode.clear();
    this.snapshot = undefined;
    for (const n of nodes) this.setNode(n);
    for (const { key, pod } of pods) this.setPod(key, pod);
    const present = new Set(pods.map((p) => p.key));
    for (const { key, a, info } of assumed) {
      // Gone pods are forgotten; bound ones are counted from the list already.
      if (!present.has(key) || this.podNode.has(key) || !info) continue;
      this.assumed.set(key, a);
      this.infoFor(a.node).addPod(info);
      this.podNode.set(key, a.node);
    }
  }

  private infoFor(name: string): NodeInfo {
    let info = this.infos.get(name);
    if (!info) {
      info = new NodeInfo({ metadata: { name } } as Node);
      this.infos.set(name, info);
    }
    return info;
  }

  setNode(node: Node): void {
    const name = node.metadata.name ?? '';
    this.infoFor(name).node = node;
    this.existing.add(name);
    this.snapshot = undefined;
  }

  deleteNode(name: string): void {
    this.existing.delete(name);
    this.snapshot = undefined;
  }

  /** A pod as the informer shows it now (added or updated). */
  setPod(key: string, pod: Pod): void {
    const a = this.assumed.get(key);
    if (a && (pod.spec.nodeName || a.uid !== pod.metadata.uid)) this.assumed.delete(key);
    this.setNominated(key, pod);
    if (this.assumed.has(key)) return;
    const node = pod.spec.nodeName;
    if (!node || isTerminal(pod)) return void this.removeCounted(key);
    const prev = this.podNode.get(key);
    if (prev && prev !== node) this.infos.get(prev)?.removePod(key);
    this.infoFor(node).addPod(podInfoOf(key, pod));
    this.podNode.set(key, node);
  }

  deletePod(key: string): void {
    this.assumed.delete(key);
    this.removeCounted(key);
    this.setNominated(key, undefined);
  }

  /** Count the pod on `node` now, before its binding comes back. */
  assume(key: string, pod: Pod, node: string): void {
    this.removeCounted(key);
    this.setNominated(key, undefined);
    this.assumed.set(key, { node, uid: pod.metadata.uid ?? '' });
    this.infoFor(node).addPod(podInfoOf(key, { ...pod, spec: { ...pod.spec, nodeName: node } }));
    this.podNode.set(key, node);
  }

  /** The binding failed: stop counting the pod. */
  forget(key: string): void {
    if (!this.assumed.delete(key)) return;
    this.removeCounted(key);
  }

  isAssumed(key: string): boolean {
    return this.assumed.has(key);
  }

  private removeCounted(key: string): void {
    const prev = this.podNode.get(key);
    if (prev === undefined) return;
    this.infos.get(prev)?.removePod(key);
    this.podNode.delete(key);
  }

  private setNominated(key: string, pod: Pod | undefined): void {
    const prev = this.nominatedNode.get(key);
    if (prev) this.nominated.get(prev)?.delete(key);
    this.nominatedNode.delete(key);
    const node = pod?.status?.nominatedNodeName;
    if (!pod || !node || pod.spec.nodeName || pod.metadata.deletionTimestamp) return;
    let m = this.nominated.get(node);
    if (!m) this.nominated.set(node, (m = new Map()));
    m.set(key, podInfoOf(key, pod));
    this.nominatedNode.set(key, node);
  }

  /** Existing nodes with their pods; shared by attempts until a node changes. */
  currentSnapshot(): Snapshot {
    if (!this.snapshot) {
      const nodes = [...this.existing].sort().map((n) => this.infos.get(n)!);
      this.snapshot = new Snapshot(nodes, this.namespaceLabels);
    }
    return this.snapshot;
  }

  /**
   * The snapshot as `pod` must see it: pods nominated to a node with at least its priority count
   * there already, so a lower-priority pod does not take the room preemption made for them.
   */
  snapshotFor(key: string, priority: number): Snapshot {
    let snap = this.currentSnapshot();
    for (const [node, pods] of this.nominated) {
      const ahead = [...pods.values()].filter((p) => p.key !== key && p.priority >= priority);
      const info = snap.byName.get(node);
      if (!ahead.length || !info) continue;
      const copy = info.clone();
      for (const p of ahead) copy.addPod(p);
      snap = snap.withNode(copy);
    }
    return snap;
  }
}
