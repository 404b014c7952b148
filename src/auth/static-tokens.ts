/**
 * Owns kube-apiserver's static token file (`--token-auth-file`): a CSV file of
 * `token,user,uid,"group1,group2"` lines (the groups column optional) whose bearer tokens
 * authenticate as those users. It gives people and tests non-admin identities without
 * certificates or ServiceAccounts. The file is read once, at start, as upstream; every user it
 * names is also in system:authenticated.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { UserInfo } from '../api/user-info.js';

export interface StaticTokenFileOptions {
  file: string;
}

/** One CSV record: fields split on commas outside double quotes, `""` an escaped quote. */
function parseCsvLine(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  if (quoted) throw new Error('unterminated quoted field');
  fields.push(field);
  return fields;
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** Parses the file's text into token digest → user; throws naming the line of a malformed record. */
export function parseStaticTokens(text: string, file = 'token file'): Map<string, UserInfo> {
  const users = new Map<string, UserInfo>();
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim() || line.trimStart().startsWith('#')) return;
    let record: string[];
    try {
      record = parseCsvLine(line);
    } catch (e) {
      throw new Error(`token file '${file}' line ${i + 1}: ${(e as Error).message}`);
    }
    if (record.length < 3) throw new Error(`token file '${file}' must have at least 3 columns (token, user name, user uid), found ${record.length}`);
    const [token, username, uid] = record.map((f) => f.trim()) as [string, string, string];
    // As upstream, a record without a token authenticates no one.
    if (!token || !username) return;
    const groups = (record[3] ?? '').split(',').map((g) => g.trim()).filter(Boolean);
    if (!groups.includes('system:authenticated')) groups.push('system:authenticated');
    users.set(digest(token), { username, uid: uid || undefined, groups });
  });
  return users;
}

export class StaticTokenAuthenticator {
  private readonly users: Map<string, UserInfo>;

  constructor(users: Map<string, UserInfo>) {
    this.users = users;
  }

  static fromFile(opts: StaticTokenFileOptions): StaticTokenAuthenticator {
    return new StaticTokenAuthenticator(parseStaticTokens(fs.readFileSync(opts.file, 'utf8'), opts.file));
  }

  /** The user a `Bearer` Authorization header names, or undefined. */
  authenticate(authorization: string | undefined): UserInfo | undefined {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return undefined;
    const user = this.users.get(digest(m[1]!));
    return user && { ...user, groups: [...user.groups] };
  }
}
