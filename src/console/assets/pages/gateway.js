// Gateway: services, routes, consumers and plugins as the admin API lists them.
import { api } from '../api.js';
import { html, Json, Loading, Section, useLoad } from '../ui.js';

const KINDS = ['services', 'routes', 'consumers', 'plugins', 'upstreams'];

/** Every page of a Kong listing (`{data, next}`). */
async function listAll(kind) {
  const out = [];
  let path = `/api/gateway/${kind}`;
  while (path) {
    const page = await api(path);
    out.push(...page.data);
    path = page.next ? `/api/gateway${new URL(page.next, location.origin).pathname.replace(/^\/api\/gateway/, '')}${new URL(page.next, location.origin).search}` : null;
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
      return [entity.name, `${entity.enabled ? 'on' : 'off'} · ${entity.route ? `route ${byId.get(entity.route.id) ?? entity.route.id}` : entity.service ? `service ${byId.get(entity.service.id) ?? entity.service.id}` : entity.consumer ? `consumer ${byId.get(entity.consumer.id) ?? entity.consumer.id}` : 'global'}`];
    default:
      return [entity.name ?? entity.id, ''];
  }
}

export function GatewayPage() {
  const state = useLoad(async () => {
    const [status, ...lists] = await Promise.all([api('/api/gateway/status'), ...KINDS.map(listAll)]);
    return { status, lists: Object.fromEntries(KINDS.map((k, i) => [k, lists[i]])) };
  });
  return html`<${Loading} state=${state}>${state.data && (() => {
    const byId = new Map();
    for (const list of Object.values(state.data.lists)) for (const e of list) byId.set(e.id, e.name ?? e.username ?? e.id);
    return html`
      <p class="toolbar"><button type="button" class="small" onClick=${state.reload}>refresh</button></p>
      <div class="grid">
        ${KINDS.map((kind) => html`<${Section} title=${`${kind} (${state.data.lists[kind].length})`}>
          <ul class="entities">${state.data.lists[kind].map((e) => {
            const [name, detail] = describe(kind, e, byId);
            return html`<li><details><summary><strong>${name}</strong> <span class="muted">${detail}</span></summary><${Json} value=${e} /></details></li>`;
          })}</ul>
        <//>`)}
      </div>
      <${Section} title="Status"><${Json} value=${state.data.status} /><//>`;
  })()}<//>`;
}
