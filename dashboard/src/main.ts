/**
 * The dashboard's entry: login (form or `#token=` in the URL), the header with navigation and the
 * namespace filter, and a hash router that swaps views, stopping the old view's watches.
 */
import { ApiError, liveCollection, request, session, setUnauthorizedHandler, type LiveCollection } from './api.js';
import { h, replace, throttledRender } from './dom.js';
import { eventsView, logsView, namespacesView, nodesView, podsView, podView, servicesView, workloadsView, yamlView, type View, type ViewContext } from './views.js';

const app = document.getElementById('app')!;
const ctx: ViewContext = { namespace: sessionStorage.getItem('berth-dashboard-namespace') ?? '' };
let current: View | undefined;
let namespaces: LiveCollection | undefined;

const NAV: Array<[string, string]> = [['pods', 'Pods'], ['workloads', 'Workloads'], ['services', 'Services'], ['events', 'Events'], ['nodes', 'Nodes'], ['namespaces', 'Namespaces']];

/** Who the token belongs to (SelfSubjectReview); a 401 means the token is not accepted. */
async function whoAmI(token: string): Promise<string> {
  const res = await request('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    method: 'POST', token, contentType: 'application/json',
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  });
  const review = (await res.json()) as { status?: { userInfo?: { username?: string } } };
  return review.status?.userInfo?.username ?? 'unknown user';
}

function showLogin(error?: string): void {
  stopAll();
  const input = h('input', { type: 'password', id: 'token', 'data-testid': 'login-token', placeholder: 'bearer token', autocomplete: 'off' }) as HTMLInputElement;
  const form = h('form', { class: 'login', 'data-testid': 'login-form', onsubmit: (ev: Event) => { ev.preventDefault(); void login(input.value.trim()); } },
    h('h1', {}, 'Berth'),
    h('p', {}, 'Sign in with a bearer token: the admin token, a user token, or a ServiceAccount token (', h('code', {}, 'kubectl create token NAME'), '). What you see is what that token may read.'),
    input,
    h('button', { type: 'submit', 'data-testid': 'login-submit' }, 'Sign in'),
    error ? h('p', { class: 'error', 'data-testid': 'login-error' }, error) : null);
  replace(app, form);
  input.focus();
}

async function login(token: string): Promise<void> {
  if (!token) return showLogin('enter a token');
  try {
    const user = await whoAmI(token);
    session.save(token);
    sessionStorage.setItem('berth-dashboard-user', user);
    if (!location.hash.startsWith('#/')) location.hash = '#/pods';
    showShell();
  } catch (err) {
    session.clear();
    const code = err instanceof ApiError ? err.code : 0;
    showLogin(code === 401 ? `token not accepted: ${(err as Error).message}` : (err as Error).message);
  }
}

function logout(): void {
  session.clear();
  sessionStorage.removeItem('berth-dashboard-user');
  history.replaceState(null, '', location.pathname);
  showLogin();
}

function stopAll(): void {
  current?.stop();
  current = undefined;
  namespaces?.stop();
  namespaces = undefined;
}

const main = h('main', { 'data-testid': 'view' });
// A text field with suggestions rather than a plain select: a token that may not list namespaces
// can still name the one it may read.
const nsList = h('datalist', { id: 'namespaces' });
const nsInput = h('input', { list: 'namespaces', placeholder: 'all', size: 14, 'data-testid': 'namespace-filter', onchange: (ev: Event) => {
  ctx.namespace = (ev.target as HTMLInputElement).value.trim();
  sessionStorage.setItem('berth-dashboard-namespace', ctx.namespace);
  route();
} }) as HTMLInputElement;

function showShell(): void {
  const nav = h('nav', {}, NAV.map(([id, label]) => h('a', { href: `#/${id}`, 'data-nav': id }, label)));
  replace(app, h('header', {}, h('strong', { class: 'brand' }, 'Berth'), nav,
    h('label', { class: 'ns' }, 'namespace ', nsInput, nsList),
    h('span', { class: 'user', 'data-testid': 'user' }, sessionStorage.getItem('berth-dashboard-user') ?? ''),
    h('button', { 'data-testid': 'logout', onclick: logout }, 'Log out')), main);
  const drawNamespaces = throttledRender(() => {
    replace(nsList, namespaces!.items().map((n) => n.metadata.name).sort().map((n) => h('option', { value: n })));
  });
  namespaces?.stop();
  nsInput.value = ctx.namespace;
  namespaces = liveCollection('/api/v1/namespaces', drawNamespaces);
  drawNamespaces();
  route();
}

function route(): void {
  if (!session.token()) return showLogin();
  const [pathPart, query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = (pathPart ?? '').split('/').map(decodeURIComponent);
  current?.stop();
  const [page = 'pods', a = '', b = ''] = parts;
  if (page === 'pod') current = podView(a, b);
  else if (page === 'logs') current = logsView(a, b, new URLSearchParams(query));
  else if (page === 'yaml') current = yamlView('/' + (pathPart ?? '').split('/').slice(1).join('/'));
  else if (page === 'nodes') current = nodesView();
  else if (page === 'namespaces') current = namespacesView();
  else if (page === 'workloads') current = workloadsView(ctx);
  else if (page === 'services') current = servicesView(ctx);
  else if (page === 'events') current = eventsView(ctx);
  else current = podsView(ctx);
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.getAttribute('data-nav') === page);
  replace(main, current.el);
}

function start(): void {
  window.addEventListener('hashchange', () => { if (session.token() && main.isConnected) route(); });
  setUnauthorizedHandler((err) => {
    session.clear();
    showLogin(`signed out: ${err.message}`);
  });
  // `#token=…` logs in directly; the fragment is cleared so the token leaves the address bar and history.
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const token = fragment.get('token');
  if (token) {
    history.replaceState(null, '', `${location.pathname}#/pods`);
    void login(token);
    return;
  }
  if (session.token()) showShell();
  else showLogin();
}

start();
