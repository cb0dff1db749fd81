// Devices: the devices and their active flag (toggle), every DevSvc replica in
// the registry with its health and answers, and a device as DevSvc answers over
// gRPC and as the data service answers GET /data/<device>.
import { api } from '../api.js';
import { html, ErrorLine, Loading, Section, formValues, useAction, useLoad } from '../ui.js';

/** "<name> is active" kept on one line: htm drops the space before a line break in a template. */
function answerLine(device) {
  return html`<strong>${device.name}</strong> is <strong>${device.active ? 'active' : 'inactive'}</strong>`;
}

function Lookup() {
  const lookup = useAction();
  const submit = (event) => {
    const { device } = formValues(event);
    const name = encodeURIComponent(device);
    lookup.run(async () => {
      // Both answers, each with its own error: one service may answer while the other does not.
      const [devsvc, data] = await Promise.allSettled([
        api(`/api/devsvc/devices/${name}`),
        api(`/api/devdata/data/${name}`, { headers: { accept: 'text/plain' } }),
      ]);
      return { devsvc, data };
    });
  };
  const result = lookup.result;
  return html`<${Section} title="Look a device up">
    <form onSubmit=${submit} class="inline" aria-label="look up a device">
      <label for="device">Device</label> <input id="device" name="device" required />
      <button type="submit" disabled=${lookup.busy}>Look up</button>
    </form>
    <${ErrorLine} error=${lookup.error} />
    ${
      result &&
      html`<div class="columns">
        <div aria-label="DevSvc answer">
          <h3>DevSvc.Get (gRPC)</h3>
          ${
            result.devsvc.status === 'fulfilled' && !result.devsvc.value.device.name
              ? html`<p>replica <code>${result.devsvc.value.replica}</code> does not know this device (it answers an empty Device)</p>`
              : result.devsvc.status === 'fulfilled'
                ? html`<p>replica <code>${result.devsvc.value.replica}</code>: ${answerLine(result.devsvc.value.device)}</p>`
                : html`<${ErrorLine} error=${result.devsvc.reason} />`
          }
        </div>
        <div aria-label="data service answer">
          <h3>GET /data/… (device data service)</h3>
          ${result.data.status === 'fulfilled' ? html`<pre>${String(result.data.value)}</pre>` : html`<${ErrorLine} error=${result.data.reason} />`}
        </div>
      </div>`
    }
  <//>`;
}

function Replicas() {
  const found = useLoad(() => api('/api/devsvc/replicas'));
  const health = (r) => html`<span class=${`probe ${r.health === 'SERVING' ? 'probe-up' : 'probe-down'}`}>${r.health}</span>`;
  const devices = (r) => {
    const active = r.devices.filter((d) => d.answer === 'active').length;
    const unanswered = r.devices.filter((d) => d.answer.startsWith('no answer')).length;
    return html`<details>
      <summary>${active} active of ${r.devices.length}${unanswered ? html`, <span class="error">${unanswered} not answered</span>` : ''}</summary>
      <ul class="entities">
        ${r.devices.map((d) => html`<li>${d.name} ${d.answer}</li>`)}
      </ul>
    </details>`;
  };
  return html`<${Section} title="DevSvc replicas" actions=${html`<button type="button" class="small" onClick=${found.reload}>refresh replicas</button>`}>
    <${Loading} state=${found}
      >${
        found.data &&
        html` <p class="muted">
            Nodes of <code>${found.data.serviceName}</code> in the ${found.data.registry}; devices as each answers DevSvc.Get for the names in the file.
          </p>
          <table aria-label="replicas">
            <thead>
              <tr>
                <th>node</th>
                <th>address</th>
                <th>health</th>
                <th>devices</th>
              </tr>
            </thead>
            <tbody>
              ${found.data.replicas.map(
                (r) =>
                  html`<tr key=${r.id}>
                    <td>${r.id}</td>
                    <td><code>${r.address}</code></td>
                    <td>${health(r)}</td>
                    <td>${devices(r)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
          ${found.data.replicas.length === 0 && html`<p class="muted">No replica registered.</p>`}`
      }
    <//>
  <//>`;
}

export function DevicesPage() {
  const list = useLoad(() => api('/api/devices'));
  const toggle = useAction();
  const setActive = (name, active) =>
    toggle.run(async () => {
      await api(`/api/devices/${encodeURIComponent(name)}/active`, { method: 'PUT', json: { active } });
      await list.reload();
    });
  return html` <${Section} title="Devices" actions=${html`<button type="button" class="small" onClick=${list.reload}>refresh</button>`}>
      <${Loading} state=${list}
        >${
          list.data &&
          html` <p class="muted">From <code>${list.data.file}</code> (what DevSvc serves and <code>offcloud devices</code> edits).</p>
            <table aria-label="devices">
              <thead>
                <tr>
                  <th>device</th>
                  <th>active</th>
                </tr>
              </thead>
              <tbody>
                ${list.data.devices.map(
                  (d) =>
                    html`<tr key=${d.name}>
                      <td>${d.name}</td>
                      <td>
                        <label
                          ><input type="checkbox" checked=${d.active} disabled=${toggle.busy} onChange=${(e) => setActive(d.name, e.currentTarget.checked)} />
                          active <span class="sr-only">${d.name}</span></label
                        >
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>
            ${list.data.devices.length === 0 && html`<p class="muted">No devices: <code>offcloud devices add sensor-1</code>.</p>`}`
        }
      <//>
      <${ErrorLine} error=${toggle.error} />
    <//>
    <${Replicas} />
    <${Lookup} />`;
}
