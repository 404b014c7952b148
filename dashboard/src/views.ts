/**
 * The dashboard's pages. Each view builds its element, keeps itself current from live collections
 * (watches) and returns a `stop` that ends its watches and timers when the user navigates away.
 */
import { ApiError, getJson, keyOf, liveCollection, readLines, request, type KubeObject, type LiveCollection } from './api.js';
import { lineChart, sampleMetrics } from './charts.js';
import { h, reloadAfterModuleFailure, replace, throttledRender, type Child } from './dom.js';
import { age, cpuCores, formatBytes, formatCpu, memoryBytes, podReady, podRestarts, podStatus, tone } from './format.js';

export interface View {
  el: HTMLElement;
  stop(): void;
}

/** The namespace picked in the header; '' is all namespaces. */
export interface ViewContext {
  namespace: string;
}

const nsPath = (ctx: ViewContext, group: string, resource: string) =>
  ctx.namespace ? `${group}/namespaces/${encodeURIComponent(ctx.namespace)}/${resource}` : `${group}/${resource}`;

const byName = (a: KubeObject, b: KubeObject) => keyOf(a).localeCompare(keyOf(b));

function badge(text: string): HTMLElement {
  return h('span', { class: `badge ${tone(text)}` }, text);
}

function errorBox(err: ApiError | undefined): HTMLElement | null {
  if (!err) return null;
  const hint = err.code === 403 ? ' (your token is not allowed to see this)' : '';
  return h('p', { class: 'error', 'data-testid': 'api-error' }, err.message + hint);
}

function table(testId: string, headers: string[], rows: HTMLElement[], empty = 'none'): HTMLElement {
  return h('table', { 'data-testid': testId },
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', {}, t)))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, empty))));
}

const podLink = (p: KubeObject) => `#/pod/${encodeURIComponent(p.metadata.namespace ?? '')}/${encodeURIComponent(p.metadata.name)}`;
export const yamlLink = (apiPath: string) => `#/yaml${apiPath}`;
const selfPath = (group: string, resource: string, o: KubeObject) =>
  `${group}${o.metadata.namespace ? `/namespaces/${encodeURIComponent(o.metadata.namespace)}` : ''}/${resource}/${encodeURIComponent(o.metadata.name)}`;

const AGE_REDRAW_MS = 10_000;

/** One or more live collections rendered together; `render` gets their items in order. */
function liveView(title: string, paths: string[], render: (lists: KubeObject[][], errors: (ApiError | undefined)[]) => Child, extra?: { header?: HTMLElement }): View {
  const body = h('div', {});
  const el = h('section', {}, h('h2', {}, title), extra?.header ?? null, body);
  const draw = throttledRender(() => replace(body, render(collections.map((c) => c.items().sort(byName)), collections.map((c) => c.error()))));
  const collections: LiveCollection[] = paths.map((p) => liveCollection(p, draw));
  // Non-watch inputs (filters, metrics samples) ask for a redraw with this event.
  el.addEventListener('redraw', draw);
  // Ages advance without any change to watch: redraw locally now and then (no request is made).
  const ageTimer = setInterval(draw, AGE_REDRAW_MS);
  return { el, stop: () => { clearInterval(ageTimer); collections.forEach((c) => c.stop()); } };
}

export function podsView(ctx: ViewContext): View {
  return liveView('Pods', [nsPath(ctx, '/api/v1', 'pods')], ([pods], [err]) => [
    errorBox(err),
    table('pod-list', ['Namespace', 'Name', 'Ready', 'Status', 'Restarts', 'Age', 'Node', 'IP', ''], pods!.map((p) => {
      const status = podStatus(p);
      return h('tr', { 'data-testid': 'pod-row', 'data-name': p.metadata.name, 'data-namespace': p.metadata.namespace ?? '' },
        h('td', {}, p.metadata.namespace ?? ''),
        h('td', {}, h('a', { href: podLink(p), 'data-testid': 'pod-link' }, p.metadata.name)),
        h('td', {}, podReady(p)),
        h('td', { 'data-testid': 'pod-status' }, badge(status)),
        h('td', {}, podRestarts(p)),
        h('td', {}, age(p.metadata.creationTimestamp)),
        h('td', {}, p.spec?.nodeName ?? ''),
        h('td', {}, p.status?.podIP ?? ''),
        h('td', { class: 'actions' },
          h('a', { href: `#/logs/${encodeURIComponent(p.metadata.namespace ?? '')}/${encodeURIComponent(p.metadata.name)}` }, 'logs'), ' ',
          h('a', { href: yamlLink(selfPath('/api/v1', 'pods', p)) }, 'yaml')));
    }), 'no pods'),
  ]);
}

export function nodesView(): View {
  let sampler: ReturnType<typeof sampleMetrics> | undefined;
  let redraw = () => undefined as void;
  const view = liveView('Nodes', ['/api/v1/nodes'], ([nodes], [err]) => [
    errorBox(err),
    sampler?.unavailable ? h('p', { class: 'muted', 'data-testid': 'metrics-unavailable' }, sampler.unavailable) : null,
    table('node-list', ['Name', 'Status', 'Conditions', 'CPU', 'Memory', 'Version', 'Age'], nodes!.map((n) => {
      const conditions: any[] = n.status?.conditions ?? [];
      const ready = conditions.find((c) => c.type === 'Ready');
      const series = sampler?.history.get(`/${n.metadata.name}`);
      const capacityCpu = cpuCores(n.status?.allocatable?.cpu ?? n.status?.capacity?.cpu);
      const capacityMem = memoryBytes(n.status?.allocatable?.memory ?? n.status?.capacity?.memory);
      return h('tr', { 'data-testid': 'node-row', 'data-name': n.metadata.name },
        h('td', {}, h('a', { href: yamlLink(selfPath('/api/v1', 'nodes', n)) }, n.metadata.name)),
        h('td', {}, badge(ready?.status === 'True' ? 'Ready' : 'NotReady')),
        h('td', {}, conditions.filter((c) => c.type !== 'Ready').map((c) => h('span', { class: `cond ${c.status === 'False' ? 'ok' : 'bad'}`, title: c.message ?? '' }, `${c.type}=${c.status}`))),
        h('td', {}, series?.get('cpu') ? lineChart({ label: `of ${formatCpu(capacityCpu)}`, values: series.get('cpu')!, max: capacityCpu }, formatCpu, 'node-cpu-chart') : '–'),
        h('td', {}, series?.get('memory') ? lineChart({ label: `of ${formatBytes(capacityMem)}`, values: series.get('memory')!, max: capacityMem }, formatBytes, 'node-memory-chart') : '–'),
        h('td', {}, n.status?.nodeInfo?.kubeletVersion ?? ''),
        h('td', {}, age(n.metadata.creationTimestamp)));
    })),
  ]);
  redraw = () => view.el.dispatchEvent(new CustomEvent('redraw'));
  sampler = sampleMetrics('/apis/metrics.k8s.io/v1beta1/nodes', (m) => ({ cpu: cpuCores(m.usage?.cpu), memory: memoryBytes(m.usage?.memory) }), () => redraw());
  return { el: view.el, stop: () => { sampler?.stop(); view.stop(); } };
}

export function namespacesView(): View {
  return liveView('Namespaces', ['/api/v1/namespaces'], ([namespaces], [err]) => [
    errorBox(err),
    table('namespace-list', ['Name', 'Status', 'Age'], namespaces!.map((n) => h('tr', {},
      h('td', {}, h('a', { href: yamlLink(selfPath('/api/v1', 'namespaces', n)) }, n.metadata.name)),
      h('td', {}, badge(n.status?.phase ?? '')),
      h('td', {}, age(n.metadata.creationTimestamp))))),
  ]);
}

const WORKLOADS: Array<{ kind: string; group: string; resource: string; rollout: (o: KubeObject) => { desired: number; ready: number; updated?: number; available?: number; done: boolean } }> = [
  { kind: 'Deployment', group: '/apis/apps/v1', resource: 'deployments', rollout: (o) => ({ desired: o.spec?.replicas ?? 1, ready: o.status?.readyReplicas ?? 0, updated: o.status?.updatedReplicas ?? 0, available: o.status?.availableReplicas ?? 0, done: (o.status?.updatedReplicas ?? 0) === (o.spec?.replicas ?? 1) && (o.status?.availableReplicas ?? 0) === (o.spec?.replicas ?? 1) && (o.status?.observedGeneration ?? 0) >= (o.metadata.generation ?? 0) }) },
  { kind: 'StatefulSet', group: '/apis/apps/v1', resource: 'statefulsets', rollout: (o) => ({ desired: o.spec?.replicas ?? 1, ready: o.status?.readyReplicas ?? 0, updated: o.status?.updatedReplicas ?? 0, available: o.status?.availableReplicas ?? 0, done: (o.status?.readyReplicas ?? 0) === (o.spec?.replicas ?? 1) && (o.status?.updatedReplicas ?? 0) === (o.spec?.replicas ?? 1) }) },
  { kind: 'DaemonSet', group: '/apis/apps/v1', resource: 'daemonsets', rollout: (o) => ({ desired: o.status?.desiredNumberScheduled ?? 0, ready: o.status?.numberReady ?? 0, updated: o.status?.updatedNumberScheduled ?? 0, available: o.status?.numberAvailable ?? 0, done: (o.status?.numberReady ?? 0) === (o.status?.desiredNumberScheduled ?? 0) && (o.status?.updatedNumberScheduled ?? 0) === (o.status?.desiredNumberScheduled ?? 0) }) },
  { kind: 'ReplicaSet', group: '/apis/apps/v1', resource: 'replicasets', rollout: (o) => ({ desired: o.spec?.replicas ?? 1, ready: o.status?.readyReplicas ?? 0, available: o.status?.availableReplicas ?? 0, done: (o.status?.readyReplicas ?? 0) === (o.spec?.replicas ?? 1) }) },
  { kind: 'Job', group: '/apis/batch/v1', resource: 'jobs', rollout: (o) => ({ desired: o.spec?.completions ?? 1, ready: o.status?.succeeded ?? 0, done: (o.status?.conditions ?? []).some((c: any) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') }) },
];

export function workloadsView(ctx: ViewContext): View {
  return liveView('Workloads', WORKLOADS.map((w) => nsPath(ctx, w.group, w.resource)), (lists, errors) => {
    const rows: HTMLElement[] = [];
    WORKLOADS.forEach((w, i) => {
      for (const o of lists[i]!) {
        const r = w.rollout(o);
        rows.push(h('tr', { 'data-testid': 'workload-row', 'data-kind': w.kind, 'data-name': o.metadata.name },
          h('td', {}, w.kind),
          h('td', {}, o.metadata.namespace ?? ''),
          h('td', {}, h('a', { href: yamlLink(selfPath(w.group, w.resource, o)) }, o.metadata.name)),
          h('td', {}, `${r.ready}/${r.desired}`),
          h('td', {}, r.updated ?? '–'),
          h('td', {}, r.available ?? '–'),
          h('td', {}, badge(r.done ? (w.kind === 'Job' ? 'Complete' : 'Ready') : 'Progressing')),
          h('td', {}, age(o.metadata.creationTimestamp))));
      }
    });
    const shownErrors = errors.filter((e) => e && e.code !== 404);
    return [shownErrors.map((e) => errorBox(e)), table('workload-list', ['Kind', 'Namespace', 'Name', 'Ready', 'Up-to-date', 'Available', 'Rollout', 'Age'], rows, 'no workloads')];
  });
}

export function servicesView(ctx: ViewContext): View {
  return liveView('Services', [nsPath(ctx, '/api/v1', 'services'), nsPath(ctx, '/apis/discovery.k8s.io/v1', 'endpointslices')], ([services, slices], errors) => {
    const endpointsOf = (svc: KubeObject) => slices!
      .filter((s) => s.metadata.namespace === svc.metadata.namespace && s.metadata.labels?.['kubernetes.io/service-name'] === svc.metadata.name)
      .flatMap((s) => (s.endpoints ?? []).flatMap((e: any) => (e.addresses ?? []).map((a: string) => ({ address: a, ready: e.conditions?.ready !== false, ports: (s.ports ?? []).map((p: any) => p.port) }))));
    return [errors.map((e) => errorBox(e)), table('service-list', ['Namespace', 'Name', 'Type', 'Cluster IP', 'Ports', 'Endpoints', 'Age'], services!.map((s) => h('tr', { 'data-testid': 'service-row', 'data-name': s.metadata.name },
      h('td', {}, s.metadata.namespace ?? ''),
      h('td', {}, h('a', { href: yamlLink(selfPath('/api/v1', 'services', s)) }, s.metadata.name)),
      h('td', {}, s.spec?.type ?? 'ClusterIP'),
      h('td', {}, s.spec?.clusterIP ?? ''),
      h('td', {}, (s.spec?.ports ?? []).map((p: any) => `${p.port}/${p.protocol ?? 'TCP'}`).join(', ')),
      h('td', {}, endpointsOf(s).map((e) => h('span', { class: `endpoint ${e.ready ? 'ok' : 'warn'}` }, `${e.address}:${e.ports.join(',')}`))),
      h('td', {}, age(s.metadata.creationTimestamp)))), 'no services')];
  });
}

function eventRows(events: KubeObject[]): HTMLElement[] {
  const last = (e: KubeObject) => e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
  return [...events].sort((a, b) => Date.parse(last(b) ?? '') - Date.parse(last(a) ?? '')).map((e) => h('tr', { 'data-testid': 'event-row', 'data-reason': e.reason ?? '' },
    h('td', {}, badge(e.type ?? 'Normal')),
    h('td', {}, e.reason ?? ''),
    h('td', {}, `${e.involvedObject?.kind ?? ''}/${e.involvedObject?.name ?? ''}`),
    h('td', { class: 'num' }, e.count ?? 1),
    h('td', {}, age(last(e))),
    h('td', { class: 'message' }, e.message ?? '')));
}

export function eventsView(ctx: ViewContext): View {
  const filters = { type: '', reason: '', object: '' };
  let redraw = () => undefined as void;
  const onInput = (field: keyof typeof filters) => (ev: Event) => { filters[field] = (ev.target as HTMLInputElement).value; redraw(); };
  const header = h('div', { class: 'filters' },
    h('select', { 'data-testid': 'event-type-filter', onchange: onInput('type') }, h('option', { value: '' }, 'all types'), h('option', { value: 'Normal' }, 'Normal'), h('option', { value: 'Warning' }, 'Warning')),
    h('input', { placeholder: 'reason', 'data-testid': 'event-reason-filter', oninput: onInput('reason') }),
    h('input', { placeholder: 'object (kind/name)', 'data-testid': 'event-object-filter', oninput: onInput('object') }));
  const view = liveView('Events', [nsPath(ctx, '/api/v1', 'events')], ([events], [err]) => {
    const shown = events!.filter((e) => (!filters.type || e.type === filters.type)
      && (!filters.reason || (e.reason ?? '').toLowerCase().includes(filters.reason.toLowerCase()))
      && (!filters.object || `${e.involvedObject?.kind}/${e.involvedObject?.name}`.toLowerCase().includes(filters.object.toLowerCase())));
    const warnings = events!.filter((e) => e.type === 'Warning').reduce((n, e) => n + (e.count ?? 1), 0);
    return [errorBox(err), h('p', { class: 'muted', 'data-testid': 'event-counts' }, `${shown.length} of ${events!.length} events · ${warnings} warnings`),
      table('event-list', ['Type', 'Reason', 'Object', 'Count', 'Last seen', 'Message'], eventRows(shown), 'no events')];
  }, { header });
  redraw = () => view.el.dispatchEvent(new CustomEvent('redraw'));
  return view;
}

/** How many log lines of each container the diagnostics page shows. */
const DIAGNOSTIC_LOG_LINES = 20;

/**
 * Everything about one pod on one page: status, conditions, containers with their last termination,
 * probe failures and other recent events, usage, and the last log lines of each container.
 */
export function podView(namespace: string, name: string): View {
  const ns = encodeURIComponent(namespace);
  const podPath = `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(name)}`;
  const logs = h('div', { 'data-testid': 'pod-logs' }, h('p', { class: 'muted' }, 'loading logs…'));
  const usage = h('div', { 'data-testid': 'pod-usage' });
  let logsFetched = '';
  let pod: KubeObject | undefined;

  const fetchLogs = async (p: KubeObject) => {
    // Fetch again only when a container started or restarted (its id changed).
    const ids = (p.status?.containerStatuses ?? []).map((c: any) => c.containerID ?? '').join(',');
    if (ids === logsFetched) return;
    logsFetched = ids;
    const blocks = await Promise.all((p.spec?.containers ?? []).map(async (c: any) => {
      let text: string;
      try {
        text = await (await request(`${podPath}/log?container=${encodeURIComponent(c.name)}&tailLines=${DIAGNOSTIC_LOG_LINES}`)).text();
      } catch (err) {
        text = `(${(err as Error).message})`;
      }
      return h('div', { class: 'log-block' }, h('h4', {}, c.name, ' ', h('a', { href: `#/logs/${ns}/${encodeURIComponent(name)}?container=${encodeURIComponent(c.name)}` }, 'follow')),
        h('pre', { class: 'log', 'data-testid': 'pod-log-tail', 'data-container': c.name }, text || '(no output)'));
    }));
    replace(logs, blocks);
  };

  const view = liveView(`Pod ${namespace}/${name}`, [`/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`, `/api/v1/namespaces/${ns}/events`], ([pods, events], errors) => {
    pod = pods![0];
    if (!pod) return [errors.map((e) => errorBox(e)), h('p', { class: 'error' }, 'pod not found (deleted?)')];
    void fetchLogs(pod);
    const mine = events!.filter((e) => e.involvedObject?.name === name && (e.involvedObject?.kind ?? 'Pod') === 'Pod');
    const probeFailures = mine.filter((e) => e.reason === 'Unhealthy');
    const status = podStatus(pod);
    const statuses = new Map<string, any>((pod.status?.containerStatuses ?? []).map((c: any) => [c.name, c]));
    return [
      errors.map((e) => errorBox(e)),
      h('div', { class: 'summary', 'data-testid': 'pod-summary' },
        h('span', {}, 'Status ', h('span', { 'data-testid': 'pod-diagnostics-status' }, badge(status))),
        h('span', {}, `Ready ${podReady(pod)}`), h('span', {}, `Restarts ${podRestarts(pod)}`),
        h('span', {}, `Node ${pod.spec?.nodeName ?? '–'}`), h('span', {}, `IP ${pod.status?.podIP ?? '–'}`),
        h('span', {}, `Age ${age(pod.metadata.creationTimestamp)}`),
        h('a', { href: yamlLink(podPath) }, 'yaml'), h('a', { href: `#/logs/${ns}/${encodeURIComponent(name)}` }, 'logs')),
      pod.status?.message ? h('p', { class: 'error' }, `${pod.status.reason ?? ''} ${pod.status.message}`) : null,
      h('h3', {}, 'Conditions'),
      table('pod-conditions', ['Type', 'Status', 'Reason', 'Last transition'], (pod.status?.conditions ?? []).map((c: any) => h('tr', {},
        h('td', {}, c.type), h('td', {}, badge(c.status)), h('td', {}, [c.reason, c.message].filter(Boolean).join(': ')), h('td', {}, age(c.lastTransitionTime))))),
      h('h3', {}, 'Containers'),
      table('pod-containers', ['Name', 'Image', 'State', 'Ready', 'Restarts', 'Last termination'], (pod.spec?.containers ?? []).map((c: any) => {
        const s = statuses.get(c.name);
        const state = s?.state?.running ? `Running since ${age(s.state.running.startedAt)}` : s?.state?.waiting ? `Waiting: ${s.state.waiting.reason ?? ''} ${s.state.waiting.message ?? ''}` : s?.state?.terminated ? `Terminated: ${s.state.terminated.reason ?? ''} (exit ${s.state.terminated.exitCode})` : 'not started';
        const lastTerm = s?.lastState?.terminated;
        return h('tr', { 'data-testid': 'container-row', 'data-name': c.name },
          h('td', {}, c.name), h('td', {}, c.image), h('td', {}, state), h('td', {}, s?.ready ? 'yes' : 'no'), h('td', {}, s?.restartCount ?? 0),
          h('td', {}, lastTerm ? `${lastTerm.reason ?? ''} exit ${lastTerm.exitCode} ${age(lastTerm.finishedAt)} ago` : '–'));
      })),
      h('h3', {}, `Probe failures (${probeFailures.reduce((n, e) => n + (e.count ?? 1), 0)})`),
      probeFailures.length ? table('pod-probe-failures', ['Count', 'Last seen', 'Message'], probeFailures.map((e) => h('tr', {}, h('td', {}, e.count ?? 1), h('td', {}, age(e.lastTimestamp)), h('td', { class: 'message' }, e.message ?? '')))) : h('p', { class: 'muted' }, 'none'),
      h('h3', {}, 'Recent events'),
      h('div', { 'data-testid': 'pod-events' }, table('pod-event-list', ['Type', 'Reason', 'Object', 'Count', 'Last seen', 'Message'], eventRows(mine).slice(0, 20), 'no events')),
      h('h3', {}, 'Usage'), usage,
      h('h3', {}, `Last ${DIAGNOSTIC_LOG_LINES} log lines`), logs,
    ];
  });
  const sampler = sampleMetrics(`/apis/metrics.k8s.io/v1beta1/namespaces/${ns}/pods`, (m) => m.metadata.name !== name ? {} : Object.fromEntries((m.containers ?? []).flatMap((c: any) => [[`cpu:${c.name}`, cpuCores(c.usage?.cpu)], [`memory:${c.name}`, memoryBytes(c.usage?.memory)]])), () => {
    const series = sampler.history.get(`${namespace}/${name}`);
    if (sampler.unavailable || !series) return replace(usage, h('p', { class: 'muted', 'data-testid': 'metrics-unavailable' }, sampler.unavailable ?? 'no samples yet'));
    replace(usage, [...series.entries()].map(([key, values]) => key.startsWith('cpu:') ? lineChart({ label: `CPU, ${key.slice(4)}`, values }, formatCpu, 'pod-cpu-chart') : lineChart({ label: `memory, ${key.slice(7)}`, values }, formatBytes, 'pod-memory-chart')));
  });
  return { el: view.el, stop: () => { sampler.stop(); view.stop(); } };
}

/** Streams a container's log (`follow=true`), with a container picker and previous-instance switch. */
export function logsView(namespace: string, name: string, params: URLSearchParams): View {
  const podPath = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
  const abort = new AbortController();
  const out = h('pre', { class: 'log log-stream', 'data-testid': 'log-stream' });
  const state = h('p', { class: 'muted', 'data-testid': 'log-state' }, 'connecting…');
  const picker = h('select', { 'data-testid': 'log-container' }) as HTMLSelectElement;
  const previous = h('input', { type: 'checkbox', 'data-testid': 'log-previous' }) as HTMLInputElement;
  let stream: AbortController | undefined;

  const start = () => {
    stream?.abort();
    stream = new AbortController();
    abort.signal.addEventListener('abort', () => stream?.abort());
    out.textContent = '';
    const follow = !previous.checked;
    const q = new URLSearchParams({ container: picker.value, tailLines: '500', ...(follow ? { follow: 'true' } : { previous: 'true' }) });
    state.textContent = follow ? 'following…' : 'previous instance';
    const signal = stream.signal;
    void request(`${podPath}/log?${q}`, { signal }).then((res) => readLines(res, (line) => {
      const atBottom = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
      out.append(line + '\n');
      if (atBottom) out.scrollTop = out.scrollHeight;
    })).then(() => { if (!signal.aborted) state.textContent = 'stream ended'; }, (err) => {
      if (signal.aborted) return;
      state.textContent = (err as Error).message;
      // A dropped connection (not an API refusal) reconnects; the tail shows the lines missed meanwhile.
      if (!(err instanceof ApiError)) setTimeout(() => { if (!signal.aborted) start(); }, 1000);
    });
  };
  picker.addEventListener('change', start);
  previous.addEventListener('change', start);
  void getJson(podPath).then((pod) => {
    for (const c of pod.spec?.containers ?? []) picker.append(h('option', { value: c.name }, c.name));
    if (params.get('container')) picker.value = params.get('container')!;
    start();
  }, (err) => { state.textContent = (err as Error).message; });
  const el = h('section', {}, h('h2', {}, `Logs ${namespace}/${name}`),
    h('div', { class: 'filters' }, h('label', {}, 'container ', picker), h('label', {}, previous, ' previous'), h('a', { href: `#/pod/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}` }, 'diagnostics')),
    state, out);
  return { el, stop: () => abort.abort() };
}

/** Objects as YAML, edited and saved with server-side apply under the dashboard's field manager. */
export const FIELD_MANAGER = 'berth-dashboard';

export function yamlView(apiPath: string): View {
  const text = h('textarea', { class: 'yaml', spellcheck: 'false', 'data-testid': 'yaml-text' }) as HTMLTextAreaElement;
  const message = h('p', { 'data-testid': 'yaml-message' });
  const actions = h('div', { class: 'filters' });
  // The YAML library loads with the first YAML page, not with the dashboard.
  const yaml = import('yaml');
  yaml.catch(reloadAfterModuleFailure);
  const show = async (o: KubeObject) => {
    delete o.metadata.managedFields;
    text.value = (await yaml).stringify(o);
  };
  const load = () => getJson(apiPath).then(show).catch( (err) => { message.className = 'error'; message.textContent = (err as Error).message; });
  const save = async (force: boolean) => {
    message.className = 'muted';
    message.textContent = 'saving…';
    let doc: KubeObject;
    const { parse, stringify } = await yaml;
    try {
      doc = parse(text.value) as KubeObject;
    } catch (err) {
      message.className = 'error';
      message.textContent = `YAML: ${(err as Error).message}`;
      return;
    }
    // The applied configuration is what the user sees, minus fields the server owns.
    delete doc.status;
    delete doc.metadata.resourceVersion;
    delete doc.metadata.managedFields;
    try {
      const res = await request(`${apiPath}?fieldManager=${FIELD_MANAGER}${force ? '&force=true' : ''}`, { method: 'PATCH', contentType: 'application/apply-patch+yaml', body: stringify(doc) });
      await show(await res.json());
      message.className = 'ok';
      message.textContent = 'saved';
      replace(actions, saveButton);
    } catch (err) {
      message.className = 'error';
      message.textContent = (err as Error).message;
      if (err instanceof ApiError && err.code === 409) replace(actions, saveButton, h('button', { 'data-testid': 'yaml-force', onclick: () => void save(true) }, 'Apply anyway (take ownership of the conflicting fields)'));
    }
  };
  const saveButton = h('button', { 'data-testid': 'yaml-save', onclick: () => void save(false) }, 'Save (server-side apply)');
  replace(actions, saveButton, h('button', { onclick: () => void load() }, 'Reload'));
  void load();
  return { el: h('section', {}, h('h2', {}, apiPath), actions, message, text), stop: () => undefined };
}
