/**
 * Usage charts from the Metrics API (metrics.k8s.io/v1beta1), which has no watch: samples are polled
 * every 15 s (the metrics resolution) and kept in memory, a short history per series.
 */
import { ApiError, getJson } from './api.js';
import { h } from './dom.js';

export const METRICS_POLL_MS = 15_000;
const HISTORY = 40;

export interface Series {
  /** printed after the latest value, e.g. "of 2000m" or the container's name */
  label: string;
  values: number[];
  /** the top of the chart (a node's allocatable); the series' own maximum when absent */
  max?: number;
}

/** A small inline SVG line chart of one series, with its latest value printed beside it. */
export function lineChart(series: Series, format: (v: number) => string, testId: string): HTMLElement {
  const width = 160;
  const height = 36;
  const max = Math.max(series.max ?? 0, ...series.values, 1e-9);
  const step = series.values.length > 1 ? width / (series.values.length - 1) : width;
  const points = series.values.map((v, i) => `${(i * step).toFixed(1)},${(height - (v / max) * (height - 2) - 1).toFixed(1)}`).join(' ');
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(height));
  svg.setAttribute('class', 'chart');
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  // One sample draws as a level line at its height.
  line.setAttribute('points', series.values.length === 1 ? `0${points.slice(points.indexOf(','))} ${width}${points.slice(points.indexOf(','))}` : points);
  svg.appendChild(line);
  const last = series.values[series.values.length - 1];
  return h('span', { class: 'usage', 'data-testid': testId }, svg, h('span', { class: 'usage-value' }, `${last === undefined ? '–' : format(last)} ${series.label}`));
}

export interface MetricsSampler {
  /** per object key (ns/name), per series name, the recent samples */
  history: Map<string, Map<string, number[]>>;
  /** set when the Metrics API answered 404/503 (not installed) or refused */
  unavailable?: string;
  stop(): void;
}

/**
 * Polls a metrics list (`/apis/metrics.k8s.io/v1beta1/nodes` or `…/namespaces/{ns}/pods`), turning
 * each item into named numbers with `extract`, and calls `onSample` after each poll.
 */
export function sampleMetrics(path: string, extract: (item: any) => Record<string, number>, onSample: () => void): MetricsSampler {
  const sampler: MetricsSampler = { history: new Map(), stop: () => clearInterval(timer) };
  const poll = async () => {
    try {
      const list = await getJson<{ items: any[] }>(path);
      sampler.unavailable = undefined;
      for (const item of list.items) {
        const key = `${item.metadata.namespace ?? ''}/${item.metadata.name}`;
        const series = sampler.history.get(key) ?? new Map<string, number[]>();
        sampler.history.set(key, series);
        for (const [name, value] of Object.entries(extract(item))) {
          const values = series.get(name) ?? [];
          values.push(value);
          if (values.length > HISTORY) values.shift();
          series.set(name, values);
        }
      }
    } catch (err) {
      sampler.unavailable = err instanceof ApiError && (err.code === 404 || err.code === 503) ? 'metrics not available' : `metrics not available (${(err as Error).message})`;
    }
    onSample();
  };
  const timer = setInterval(() => void poll(), METRICS_POLL_MS);
  void poll();
  return sampler;
}
