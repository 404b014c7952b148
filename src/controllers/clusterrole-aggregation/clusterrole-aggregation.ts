/**
 * The ClusterRole aggregation controller, as upstream's: a ClusterRole with an aggregationRule gets
 * as its rules the union of the rules of every other ClusterRole that one of its selectors matches,
 * in name order, each distinct rule once. Any ClusterRole change requeues every aggregated role, so
 * chains (view → edit → admin) settle as each role's new rules are written.
 */
import type { Logger } from 'pino';
import { isDeepStrictEqual } from 'node:util';
import { labelSelectorFromObject, matchesLabels } from '../../api/selectors.js';
import type { Client } from '../../client/client.js';
import { Controller, type Informer, type SharedInformers } from '../runtime/index.js';
import type { ClusterRole, PolicyRule } from '../../api/types.js';
import { CLUSTERROLES } from '../../api/identities.js';


export interface ClusterRoleAggregationOptions {
  client: Client;
  informers: SharedInformers;
  log: Logger;
}

/** The rules an aggregated role should hold, given every ClusterRole. */
export function aggregatedRules(role: ClusterRole, all: readonly ClusterRole[]): PolicyRule[] {
  const selectors = (role.aggregationRule?.clusterRoleSelectors ?? []).flatMap((s) => {
    try {
      return [labelSelectorFromObject(s)];
    } catch {
      // A selector that does not parse selects nothing (validation refuses most).
      return [];
    }
  });
  const rules: PolicyRule[] = [];
  const sources = all.filter((r) => r.metadata.name !== role.metadata.name).sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  for (const source of sources) {
    if (!selectors.some((sel) => matchesLabels(sel, source.metadata.labels))) continue;
    for (const rule of source.rules ?? []) if (!rules.some((r) => isDeepStrictEqual(r, rule))) rules.push(rule);
  }
  return rules;
}

export class ClusterRoleAggregationController {
  private readonly roles: Informer<ClusterRole>;
  private readonly controller: Controller;

  constructor(private readonly opts: ClusterRoleAggregationOptions) {
    this.roles = opts.informers.informerFor<ClusterRole>(CLUSTERROLES);
    this.controller = new Controller({ name: 'clusterrole-aggregation', reconcile: (key) => this.reconcile(key), log: opts.log });
    const requeueAggregated = () => {
      for (const r of this.roles.list()) if (r.aggregationRule) this.controller.queue.add(r.metadata.name ?? '');
    };
    this.roles.addHandlers({ onAdd: requeueAggregated, onUpdate: requeueAggregated, onDelete: requeueAggregated });
  }

  async start(): Promise<void> {
    await this.roles.start();
    this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async reconcile(name: string): Promise<void> {
    const role = this.roles.get(name);
    if (!role?.aggregationRule) return;
    const rules = aggregatedRules(role, this.roles.list());
    if (isDeepStrictEqual(role.rules ?? [], rules)) return;
    const copy = structuredClone(role);
    copy.rules = rules;
    // A Conflict (someone else wrote the role meanwhile) throws and is retried from the fresh cache.
    await this.opts.client.update(CLUSTERROLES, copy);
  }
}
