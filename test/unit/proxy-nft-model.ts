/**
 * A model of one nftables table for the service proxy's unit tests: applies the commands the proxy
 * writes (add/flush/delete of tables, chains, sets, maps, rules and map elements) in order, and refuses
 * what the kernel refuses — a rule or element pointing at a chain or set that does not exist, deleting a
 * chain or set that is still referenced (a deleted chain's own rules go with it), adding an element whose key exists, deleting one that
 * does not. A refused transaction changes nothing, as with nft.
 */
export interface TableState {
  chains: Map<string, string[]>;
  sets: Map<string, string>;
  maps: Map<string, Map<string, string>>;
}

function emptyState(): TableState {
  return { chains: new Map(), sets: new Map(), maps: new Map() };
}

function clone(s: TableState): TableState {
  return { chains: new Map([...s.chains].map(([k, v]) => [k, [...v]])), sets: new Map(s.sets), maps: new Map([...s.maps].map(([k, v]) => [k, new Map(v)])) };
}

export class NftModel {
  tables = new Map<string, TableState>();
  /** every transaction applied, in order */
  readonly scripts: string[] = [];

  apply(script: string): void {
    const work = new Map([...this.tables].map(([k, v]) => [k, clone(v)]));
    for (const line of script.split('\n')) {
      if (line.trim()) this.exec(work, line.trim());
    }
    this.tables = work;
    this.scripts.push(script);
  }

  /** A comparable picture of one table (sorted), or undefined when it does not exist. */
  snapshot(table: string): unknown {
    const t = this.tables.get(table);
    if (!t) return undefined;
    return {
      chains: [...t.chains].sort(([a], [b]) => a.localeCompare(b)),
      sets: [...t.sets].sort(([a], [b]) => a.localeCompare(b)),
      maps: [...t.maps].sort(([a], [b]) => a.localeCompare(b)).map(([k, m]) => [k, [...m].sort(([a], [b]) => a.localeCompare(b))]),
    };
  }

  private exec(tables: Map<string, TableState>, line: string): void {
    const m = /^(add|delete|flush) (table|chain|rule|set|map|element) ip (\S+)(?: (\S+))?(?: (.*))?$/.exec(line);
    if (!m) throw new Error(`model: cannot parse "${line}"`);
    const [, verb, what, table, name = '', rest = ''] = m;
    if (what === 'table') {
      if (verb === 'add') {
        if (!tables.has(table!)) tables.set(table!, emptyState());
      } else if (verb === 'delete') {
        if (!tables.delete(table!)) throw new Error(`model: no table ${table}`);
      }
      return;
    }
    const t = tables.get(table!);
    if (!t) throw new Error(`model: no table ${table} for "${line}"`);
    const requireRefs = (text: string) => {
      for (const r of text.matchAll(/(?:goto|jump) (\S+)/g)) if (!t.chains.has(r[1]!)) throw new Error(`model: "${line}" points at missing chain ${r[1]}`);
      for (const r of text.matchAll(/@(\S+)/g)) if (!t.sets.has(r[1]!) && !t.maps.has(r[1]!)) throw new Error(`model: "${line}" points at missing set ${r[1]}`);
    };
    const referenced = (target: string, pattern: RegExp) => {
      for (const rules of t.chains.values()) for (const r of rules) if (pattern.test(r)) return true;
      for (const mp of t.maps.values()) for (const v of mp.values()) if (pattern.test(v)) return true;
      return false;
    };
    switch (`${verb} ${what}`) {
      case 'add map':
        if (!t.maps.has(name)) t.maps.set(name, new Map());
        return;
      case 'add set':
        // nft: adding a set that exists with the same definition is a no-op.
        if (t.sets.has(name) && t.sets.get(name) !== rest) throw new Error(`model: set ${name} exists with another definition`);
        t.sets.set(name, rest);
        return;
      case 'delete set':
        if (!t.sets.has(name)) throw new Error(`model: no set ${name}`);
        if (referenced(name, new RegExp(`@${escape(name)}(\\s|$)`))) throw new Error(`model: set ${name} is in use`);
        t.sets.delete(name);
        return;
      case 'add chain':
        // nft: adding a chain that exists is a no-op (its rules stay).
        if (!t.chains.has(name)) t.chains.set(name, []);
        return;
      case 'flush chain':
        if (!t.chains.has(name)) throw new Error(`model: no chain ${name}`);
        t.chains.set(name, []);
        return;
      case 'delete chain':
        if (!t.chains.has(name)) throw new Error(`model: no chain ${name}`);
        if (referenced(name, new RegExp(`(goto|jump) ${escape(name)}(\\s|$)`))) throw new Error(`model: chain ${name} is in use`);
        t.chains.delete(name);
        return;
      case 'add rule':
        if (!t.chains.has(name)) throw new Error(`model: no chain ${name} for rule`);
        requireRefs(rest);
        t.chains.get(name)!.push(rest);
        return;
      case 'add element':
      case 'delete element': {
        const mp = t.maps.get(name);
        if (!mp) throw new Error(`model: no map ${name}`);
        const body = /^\{ (.*) \}$/.exec(rest)?.[1];
        if (!body) throw new Error(`model: bad element list "${rest}"`);
        for (const item of body.split(' , ')) {
          if (verb === 'add') {
            const [k, v] = item.split(' : ');
            if (mp.has(k!)) throw new Error(`model: element ${k} exists in ${name}`);
            requireRefs(v!);
            mp.set(k!, v!);
          } else {
            if (!mp.delete(item)) throw new Error(`model: no element ${item} in ${name}`);
          }
        }
        return;
      }
      default:
        throw new Error(`model: unsupported "${line}"`);
    }
  }
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
