/**
 * Remembers the EndpointSlice writes the controller made and has not yet seen come back through
 * its informer (EndpointSliceTracker upstream): a Service whose cached slices are older than its
 * own last writes is not reconciled (it would duplicate or undo them), and the informer events of
 * its own writes do not queue the Service again. Keyed by Service, then slice name; the expected
 * value is a resourceVersion (Berth's are store revisions, so later ones compare greater) or a
 * deletion.
 */
import type { EndpointSlice } from '../../api/types.js';

const DELETED = 'deleted';

function revision(rv: string | undefined): bigint {
  try {
    return BigInt(rv ?? '0');
  } catch {
    return 0n;
  }
}

export class SliceTracker {
  /** service key → slice name → resourceVersion expected, or DELETED */
  private readonly expected = new Map<string, Map<string, string>>();

  private forService(serviceKey: string): Map<string, string> {
    let m = this.expected.get(serviceKey);
    if (!m) this.expected.set(serviceKey, (m = new Map()));
    return m;
  }

  /** The controller wrote this slice (create or update) and got it back at this resourceVersion. */
  wrote(serviceKey: string, slice: EndpointSlice): void {
    this.forService(serviceKey).set(slice.metadata.name ?? '', slice.metadata.resourceVersion ?? '0');
  }

  /** The controller deleted this slice. */
  deleted(serviceKey: string, name: string): void {
    this.forService(serviceKey).set(name, DELETED);
  }

  /**
   * Whether the cached slices of the Service are behind the controller's own writes. Expectations
   * the cache has met are dropped here too (an informer event can arrive before the write's reply,
   * leaving one that no later event would clear).
   */
  stale(serviceKey: string, cached: EndpointSlice[]): boolean {
    const m = this.expected.get(serviceKey);
    if (!m) return false;
    const byName = new Map(cached.map((s) => [s.metadata.name ?? '', s]));
    let behind = false;
    for (const [name, want] of m) {
      const have = byName.get(name);
      const met = want === DELETED ? !have : !!have && revision(have.metadata.resourceVersion) >= revision(want);
      if (met) m.delete(name);
      else behind = true;
    }
    if (m.size === 0) this.expected.delete(serviceKey);
    return behind;
  }

  /** How many writes are still expected back (tests). */
  pending(): number {
    let n = 0;
    for (const m of this.expected.values()) n += m.size;
    return n;
  }

  /**
   * An informer event for a slice: true when the Service must be synced (a change the controller
   * did not make); an event that catches up with the controller's own write clears its expectation.
   */
  observe(serviceKey: string, slice: EndpointSlice, deleted: boolean): boolean {
    const m = this.expected.get(serviceKey);
    const name = slice.metadata.name ?? '';
    const want = m?.get(name);
    if (want === undefined) return true;
    if (deleted) {
      m!.delete(name);
      if (m!.size === 0) this.expected.delete(serviceKey);
      return want !== DELETED;
    }
    if (want === DELETED) return true;
    const rv = revision(slice.metadata.resourceVersion);
    if (rv < revision(want)) return false;
    m!.delete(name);
    if (m!.size === 0) this.expected.delete(serviceKey);
    return rv > revision(want);
  }

  /** The Service is gone: forget what was expected of its slices. */
  forget(serviceKey: string): void {
    this.expected.delete(serviceKey);
  }
}
