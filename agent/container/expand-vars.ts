/**
 * `$(NAME)` expansion as Kubernetes defines it for env values, command, args and subPathExpr. A leaf:
 * the container spec translation, the environment and the volume mounts all use it.
 */

/**
 * Expands `$(NAME)` from `vars`: `$$` escapes a `$`, and references to unknown names stay as written.
 */
export function expandVars(input: string, vars: ReadonlyMap<string, string>): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const v = vars.get(name);
      out += v ?? `$(${name})`;
      i = close;
    } else {
      out += ch;
    }
  }
  return out;
}
