// Billing usage per resource over time: billing's GET /billing/v1/usage (our
// addition; counts only), drawn as one small SVG bar chart per resource and
// meter on a shared time axis: the latest buckets of the period, ending now.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, Loading, Section, useLive, useLoad } from '../ui.js';

/** Each period's bucket: how many characters of an ISO time name it, how to step n buckets on, and how many are drawn. */
const PERIODS = {
  minute: { length: 16, suffix: ':00Z', step: (d, n) => d.setUTCMinutes(d.getUTCMinutes() + n), shown: 60 },
  hour: { length: 13, suffix: ':00:00Z', step: (d, n) => d.setUTCHours(d.getUTCHours() + n), shown: 48 },
  day: { length: 10, suffix: 'T00:00:00Z', step: (d, n) => d.setUTCDate(d.getUTCDate() + n), shown: 31 },
  month: { length: 7, suffix: '-01T00:00:00Z', step: (d, n) => d.setUTCMonth(d.getUTCMonth() + n), shown: 12 },
};
const REFRESH_MS = 10_000;
const BAR = 12;
const HEIGHT = 60;

/** The period's last `shown` buckets, the current one last. */
function timeAxis(period) {
  const { length, suffix, step, shown } = PERIODS[period];
  const d = new Date(new Date().toISOString().slice(0, length) + suffix);
  step(d, 1 - shown);
  const axis = [];
  for (; axis.length < shown; step(d, 1)) axis.push(d.toISOString().slice(0, length));
  return axis;
}

function BarChart({ series, axis, period }) {
  const max = Math.max(1, ...axis.map((b) => series.values.get(b) ?? 0));
  const total = axis.reduce((sum, bucket) => sum + (series.values.get(bucket) ?? 0), 0);
  return html`<figure class="usage" aria-label=${`usage of ${series.resource} (${series.meter})`} data-total=${total}>
    <figcaption><strong>${series.resource}</strong> <span class="muted">${series.meter}</span> · ${total} in these ${axis.length} ${period}s</figcaption>
    <svg viewBox=${`0 0 ${axis.length * BAR} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label=${`${series.resource}: ${total} ${series.meter}`}>
      ${axis.map((bucket, i) => {
        const quantity = series.values.get(bucket) ?? 0;
        const height = (quantity / max) * (HEIGHT - 4);
        return html`<rect class="bar" x=${i * BAR + 2} y=${HEIGHT - height} width=${BAR - 4} height=${height} data-bucket=${bucket} data-quantity=${quantity}
          ><title>${bucket}: ${quantity}</title></rect
        >`;
      })}
    </svg>
    <div class="axis muted"><span>${axis[0]}</span><span>${axis[axis.length - 1]}</span></div>
  </figure>`;
}

export function Usage() {
  const [period, setPeriod] = useState('minute');
  const usage = useLoad(() => api(`/api/billing/billing/v1/usage?period=${period}`), [period]);
  useLive(usage.reload, REFRESH_MS);
  const chart = (data) => {
    if (!data.usage.length) return html`<p class="muted">No usage reported yet: the containers report at their metering interval.</p>`;
    const axis = timeAxis(data.period);
    const series = new Map();
    for (const u of data.usage) {
      const key = `${u.resourceId} ${u.meter}`;
      if (!series.has(key)) series.set(key, { resource: u.resourceName, meter: u.meter, values: new Map() });
      series.get(key).values.set(u.period, u.quantity);
    }
    return html`<div class="usage-charts">${[...series.values()].map((s) => html`<${BarChart} series=${s} axis=${axis} period=${data.period} />`)}</div>`;
  };
  const actions = html`<div class="toolbar">
    <label for="usage-period">per</label>
    <select id="usage-period" value=${period} onChange=${(e) => setPeriod(e.currentTarget.value)}>
      ${Object.keys(PERIODS).map((p) => html`<option value=${p}>${p}</option>`)}
    </select>
    <button type="button" class="small" onClick=${usage.reload}>refresh</button>
  </div>`;
  return html`<${Section} title="Billing usage per resource" actions=${actions}>
    <${Loading} state=${usage}>${usage.data && chart(usage.data)}<//>
  <//>`;
}
