// Gateway: services, routes, consumers and plugins as the admin API lists them;
// the last proxied requests and a consumer's rate-limit state from the admin
// API's offcloud calls (/_offcloud/…, docs/gateway.md), both kept live.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorLine, formValues, html, Json, Loading, Section, useLive, useLoad } from '../ui.js';

const KINDS = ['services', 'routes', 'consumers', 'plugins', 'upstreams'];
/** How often the live sections ask again, ms. */
const REFRESH_MS = 1500;
const RECENT_SHOWN = 50;

function RecentRequests() {
  const state = useLoad(() => api(`/api/gateway/_offcloud/requests?size=${RECENT_SHOWN}`));
  useLive(state.reload, REFRESH_MS);
  return html`<${Section} title="Recent requests">
    <${Loading} state=${state}
      >${
        state.data &&
        html` <table aria-label="recent requests">
            <thead>
              <tr>
                <th>time</th>
                <th>method</th>
                <th>path</th>
                <th>route</th>
                <th>service</th>
                <th>consumer</th>
                <th>status</th>
                <th>latency</th>
              </tr>
            </thead>
            <tbody>
              ${state.data.data.map(
                (r) =>
                  html`<tr key=${r.request_id} data-request-id=${r.request_id} title=${`request id ${r.request_id}`}>
                    <td>${new Date(r.time).toLocaleTimeString()}</td>
                    <td>${r.method}</td>
                    <td><code>${r.path}</code></td>
                    <td>${r.route ?? '-'}</td>
                    <td>${r.service ?? '-'}</td>
                    <td>${r.consumer ?? '-'}</td>
                    <td class=${r.status >= 400 ? 'error' : 'ok'}>${r.status}</td>
                    <td>${r.latency_ms} ms</td>
                  </tr>`,
              )}
            </tbody>
          </table>
          ${state.data.data.length === 0 && html`<p class="muted">No request has reached the proxy yet.</p>`}`
      }
    <//>
  <//>`;
}

/** Seconds for a short window; the end's date and time for a long one. */
function resetsIn(w) {
  return w.reset < 120 ? `${w.reset} s` : `at ${new Date(w.window_end).toLocaleString()}`;
}

function RateLimitState({ consumers }) {
  const [consumer, setConsumer] = useState(null);
  const state = useLoad(
    async () => (consumer === null ? null : api(`/api/gateway/_offcloud/consumers/${encodeURIComponent(consumer)}/rate-limits`)),
    [consumer],
  );
  useLive(state.reload, REFRESH_MS, consumer !== null && !state.error);
  const submit = (event) => {
    const { name } = formValues(event);
    if (name === consumer) state.reload();
    else setConsumer(name);
  };
  return html`<${Section} title="Rate-limit state of a consumer">
    <form class="inline" onSubmit=${submit} aria-label="rate-limit state">
      <label>Consumer (username or id) <input name="name" required list="gateway-consumers" /></label>
      <datalist id="gateway-consumers">${consumers.map((c) => html`<option value=${c.username ?? c.id} />`)}</datalist>
      <button type="submit">Show limits</button>
    </form>
    <${ErrorLine} error=${state.error} />
    ${
      state.data &&
      html` <table aria-label=${`rate limits of ${state.data.consumer.username ?? state.data.consumer.id}`}>
          <thead>
            <tr>
              <th>route</th>
              <th>service</th>
              <th>policy</th>
              <th>counted by</th>
              <th>window</th>
              <th>limit</th>
              <th>used</th>
              <th>remaining</th>
              <th>resets in</th>
            </tr>
          </thead>
          <tbody>
            ${state.data.data.map(
              (w) =>
                html`<tr key=${`${w.plugin.id} ${w.route.id} ${w.credential?.id} ${w.period}`} data-period=${w.period}>
                  <td>${w.route.name ?? w.route.id}</td>
                  <td>${w.service.name ?? w.service.id}</td>
                  <td>${w.policy}</td>
                  <td>${w.limit_by}${w.credential ? ` ${w.credential.id}` : ''}</td>
                  <td>${w.period}</td>
                  <td data-field="limit">${w.limit}</td>
                  <td data-field="used">${w.used}</td>
                  <td data-field="remaining">${w.remaining}</td>
                  <td title=${w.window_end}>${resetsIn(w)}</td>
                </tr>`,
            )}
          </tbody>
        </table>
        ${state.data.data.length === 0 && html`<p class="muted">No rate limit counts this consumer's requests.</p>`}`
    }
  <//>`;
}

/** Every page of a Kong listing (`{data, next}`). */
async function listAll(kind) {
  const out = [];
  let path = `/api/gateway/${kind}`;
  while (path) {
    const page = await api(path);
    out.push(...page.data);
    path = page.next
      ? `/api/gateway${new URL(page.next, location.origin).pathname.replace(/^\/api\/gateway/, '')}${new URL(page.next, location.origin).search}`
      : null;
  }
  return out;
}

function describe(kind, entity, byId) {
  switch (kind) {
    case 'services':
      return [entity.name ?? entity.id, `${entity.protocol}://${entity.host}:${entity.port}${entity.path ?? ''}`];
    case 'routes':
      return [entity.name ?? entity.id, `${(entity.methods ?? ['any']).join(',')} ${(entity.paths ?? []).join(' ')} → ${byId.get(entity.service?.id) ?? '-'}`];
    case 'consumers':
      return [entity.username ?? entity.custom_id, entity.custom_id ?? ''];
    case 'plugins':
      return [
        entity.name,
        `${entity.enabled ? 'on' : 'off'} · ${entity.route ? `route ${byId.get(entity.route.id) ?? entity.route.id}` : entity.service ? `service ${byId.get(entity.service.id) ?? entity.service.id}` : entity.consumer ? `consumer ${byId.get(entity.consumer.id) ?? entity.consumer.id}` : 'global'}`,
      ];
    default:
      return [entity.name ?? entity.id, ''];
  }
}

export function GatewayPage() {
  const state = useLoad(async () => {
    const [status, ...lists] = await Promise.all([api('/api/gateway/status'), ...KINDS.map(listAll)]);
    return { status, lists: Object.fromEntries(KINDS.map((k, i) => [k, lists[i]])) };
  });
  return html`<${Loading} state=${state}
    >${
      state.data &&
      (() => {
        const byId = new Map();
        for (const list of Object.values(state.data.lists)) for (const e of list) byId.set(e.id, e.name ?? e.username ?? e.id);
        return html` <p class="toolbar"><button type="button" class="small" onClick=${state.reload}>refresh</button></p>
          <div class="grid">
            ${KINDS.map(
              (kind) =>
                html`<${Section} title=${`${kind} (${state.data.lists[kind].length})`}>
                  <ul class="entities">
                    ${state.data.lists[kind].map((e) => {
                      const [name, detail] = describe(kind, e, byId);
                      return html`<li>
                        <details>
                          <summary><strong>${name}</strong> <span class="muted">${detail}</span></summary>
                          <${Json} value=${e} />
                        </details>
                      </li>`;
                    })}
                  </ul>
                <//>`,
            )}
          </div>
          <${RecentRequests} />
          <${RateLimitState} consumers=${state.data.lists.consumers} />
          <${Section} title="Status"><${Json} value=${state.data.status} /><//>`;
      })()
    }<//
  >`;
}
