/**
 * hostPath volumes: the node path itself is mounted (nothing is copied and nothing is removed with the pod).
 * `type` checks what must be there first, or creates it, as the kubelet does.
 */
import fs from 'node:fs';
import path from 'node:path';

export type HostPathType = '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

const TYPES: readonly string[] = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'];

function statOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.statSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Checks (and for the *OrCreate types, creates) the host path; returns it normalized. Throws with the
 * kubelet's wording (`hostPath type check failed: /x is not a directory`).
 */
export function prepareHostPath(source: { path?: string; type?: string }): string {
  const raw = source.path ?? '';
  if (!path.isAbsolute(raw)) throw new Error(`hostPath path ${JSON.stringify(raw)} must be an absolute path`);
  const p = path.normalize(raw);
  const type = source.type ?? '';
  if (!TYPES.includes(type)) throw new Error(`hostPath type ${JSON.stringify(type)} is not supported`);
  const failed = (what: string) => new Error(`hostPath type check failed: ${p} is not ${what}`);
  let st = statOrUndefined(p);
  switch (type as HostPathType) {
    case '':
      return p;
    case 'DirectoryOrCreate':
      if (!st) {
        fs.mkdirSync(p, { recursive: true, mode: 0o755 });
        st = fs.statSync(p);
      }
      if (!st.isDirectory()) throw failed('a directory');
      return p;
    case 'Directory':
      if (!st?.isDirectory()) throw failed('a directory');
      return p;
    case 'FileOrCreate':
      if (!st) {
        // Like the kubelet: the file is created, its parent directory is not.
        fs.writeFileSync(p, '', { flag: 'a', mode: 0o644 });
        st = fs.statSync(p);
      }
      if (!st.isFile()) throw failed('a file');
      return p;
    case 'File':
      if (!st?.isFile()) throw failed('a file');
      return p;
    case 'Socket':
      if (!st?.isSocket()) throw failed('a socket file');
      return p;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) throw failed('a character device');
      return p;
    case 'BlockDevice':
      if (!st?.isBlockDevice()) throw failed('a block device');
      return p;
  }
}
