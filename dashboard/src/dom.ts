/** A tiny element builder: no framework, just DOM nodes with attributes, handlers and children. */

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | undefined | ((ev: any) => void)>;

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (name === 'value' && 'value' in el) (el as HTMLInputElement).value = String(value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** Coalesces bursts of watch events into one render per animation frame. */
export function throttledRender(render: () => void): () => void {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      render();
    });
  };
}

/**
 * A module that failed to load stays failed until the page reloads (the same rule index.html
 * applies to the dashboard's first load): reload a few times, then give up.
 */
export function reloadAfterModuleFailure(err: unknown): void {
  const key = 'berth-dashboard-load-attempts';
  const attempts = Number(sessionStorage.getItem(key) ?? '0') + 1;
  sessionStorage.setItem(key, String(attempts));
  if (attempts <= 5) setTimeout(() => location.reload(), 300 * attempts);
  else console.error('module failed to load', err);
}
