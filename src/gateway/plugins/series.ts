/**
 * Counters that plugins keep under another product's metric names (the
 * prometheus plugin's `kong_*`): each series is a name, its labels and a
 * number that only grows, so the figures of several proxy processes add up
 * (a histogram is kept as its cumulative `_bucket`, `_sum` and `_count`
 * series). The admin API merges them and renders Prometheus' text format.
 */

export interface Series {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class PluginSeries {
  private readonly series = new Map<string, Series>();

  add(name: string, labels: Record<string, string>, value: number): void {
    let key = name;
    for (const label in labels) key += `\n${labels[label]}`;
    const found = this.series.get(key);
    if (found) found.value += value;
    else this.series.set(key, { name, labels, value });
  }

  snapshot(): Series[] {
    return [...this.series.values()].map((s) => ({ ...s }));
  }
}

/** Series with the same name and labels summed (the figures of every proxy process). */
export function mergeSeries(lists: Series[][]): Series[] {
  const merged = new PluginSeries();
  for (const list of lists) for (const s of list) merged.add(s.name, s.labels, s.value);
  return merged.snapshot();
}

const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/** Prometheus' text exposition format: `# HELP`/`# TYPE` per metric, one line per series. */
export function renderSeries(series: Series[], help: Record<string, { type: 'counter' | 'gauge' | 'histogram'; help: string }>): string {
  const byMetric = new Map<string, Series[]>();
  for (const s of series) {
    const metric = s.name.replace(/_(bucket|sum|count)$/, (suffix) => (help[s.name] ? suffix : ''));
    const list = byMetric.get(metric);
    if (list) list.push(s);
    else byMetric.set(metric, [s]);
  }
  let text = '';
  for (const [metric, list] of byMetric) {
    const about = help[metric];
    if (about) text += `# HELP ${metric} ${about.help}\n# TYPE ${metric} ${about.type}\n`;
    for (const s of list) {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${escape(v)}"`);
      text += `${s.name}${labels.length ? `{${labels.join(',')}}` : ''} ${s.value}\n`;
    }
  }
  return text;
}
