// The device hub: devices and their connection state, live telemetry with
// property bags, a device's twin (desired editable), C2D messages and direct
// methods — all through the hub's REST API and its event stream.
import { useEffect, useState } from 'preact/hooks';
import { api, follow } from '../api.js';
import { html, ErrorLine, Json, Loading, Section, formValues, useAction, useLoad } from '../ui.js';

/** Telemetry kept on the page; older messages stay in the hub's log. */
const SHOWN_MESSAGES = 200;
/** Messages from the log shown when the page opens. */
const BACKLOG = 50;

const device = (id) => `/api/hub/devices/${encodeURIComponent(id)}`;
const twin = (id) => `/api/hub/twins/${encodeURIComponent(id)}`;

function Telemetry() {
  const [messages, setMessages] = useState([]);
  const [error, setError] = useState(null);
  const [following, setFollowing] = useState(false);
  useEffect(() => {
    let stop = () => {};
    let left = false;
    api('/api/hub/messages/events?limit=1').then(({ lastSeq }) => {
      if (left) return;
      stop = follow(`/api/hub/messages/events?since=${Math.max(0, lastSeq - BACKLOG)}`, {
        open: () => setFollowing(true),
        error: () => setFollowing(false),
        // A reconnect replays from `since`: a message already shown is not shown twice.
        telemetry: (event) => {
          const message = JSON.parse(event.data);
          setMessages((list) => (list.some((m) => m.seq === message.seq) ? list : [message, ...list].slice(0, SHOWN_MESSAGES)));
        },
      });
    }, setError);
    return () => {
      left = true;
      stop();
    };
  }, []);
  return html`<${Section} title="Live telemetry">
    <${ErrorLine} error=${error} />
    ${messages.length === 0 && !error && html`<p class="muted">Waiting for telemetry…</p>`}
    <ol class="telemetry" aria-live="polite" data-following=${following}>
      ${messages.map(
        (m) =>
          html`<li key=${m.seq} data-seq=${m.seq}>
            <span class="when">${m.enqueuedTimeUtc.slice(11, 23)}</span> <strong>${m.deviceId}${m.moduleId ? `/${m.moduleId}` : ''}</strong>
            <code class="body">${m.bodyEncoding === 'base64' ? `(base64) ${m.body}` : m.body}</code>
            ${Object.keys(m.properties).length > 0 && html`<span class="props">${Object.entries(m.properties).map(([k, v]) => html`<span class="tag">${k}=${v}</span>`)}</span>`}
            ${Object.keys(m.system).length > 0 && html`<span class="props">${Object.entries(m.system).map(([k, v]) => html`<span class="tag system">${k}=${v}</span>`)}</span>`}
          </li>`,
      )}
    </ol>
  <//>`;
}

function Twin({ id }) {
  const state = useLoad(() => api(twin(id)), [id]);
  const save = useAction();
  const submit = (event) => {
    const { desired } = formValues(event);
    save.run(async () => {
      let patch;
      try {
        patch = JSON.parse(desired);
      } catch (err) {
        throw new Error(`desired properties are JSON: ${err.message}`);
      }
      const answer = await api(twin(id), { method: 'PATCH', json: { properties: { desired: patch } }, headers: { 'if-match': '*' } });
      state.reload();
      return answer;
    });
  };
  return html`<${Section} title=${`Twin of ${id}`} actions=${html`<button type="button" class="small" onClick=${state.reload}>refresh</button>`}>
    <${Loading} state=${state}
      >${
        state.data &&
        html` <div class="columns">
            <div>
              <h3>Desired <span class="version">$version ${state.data.properties.desired.$version}</span></h3>
              <${Json} value=${state.data.properties.desired} />
            </div>
            <div>
              <h3>Reported <span class="version">$version ${state.data.properties.reported.$version}</span></h3>
              <${Json} value=${state.data.properties.reported} />
            </div>
          </div>
          <form onSubmit=${submit} class="stack" aria-label="update desired properties">
            <label for="desired">Desired properties to merge (JSON; null removes one)</label>
            <textarea id="desired" name="desired" rows="3" required>{"interval": 30}</textarea>
            <button type="submit" disabled=${save.busy}>Update desired</button>
            <${ErrorLine} error=${save.error} />
            ${save.result && html`<p class="ok">Desired properties now at version ${save.result.properties.desired.$version}.</p>`}
          </form>`
      }
    <//>
  <//>`;
}

function CloudToDevice({ id }) {
  const send = useAction();
  const submit = (event) => {
    const { body, properties } = formValues(event);
    send.run(() =>
      api(`${device(id)}/messages/devicebound`, { method: 'POST', json: { body, ...(properties ? { properties: parseProperties(properties) } : {}) } }),
    );
  };
  return html`<form onSubmit=${submit} class="stack" aria-label="send a cloud-to-device message">
    <h3>Cloud-to-device message</h3>
    <label for="c2d-body">Body</label>
    <input id="c2d-body" name="body" required />
    <label for="c2d-props">Properties (name=value&amp;…)</label>
    <input id="c2d-props" name="properties" />
    <button type="submit" disabled=${send.busy}>Send</button>
    <${ErrorLine} error=${send.error} />
    ${send.result && html`<p class="ok">Queued${send.result.messageId ? ` as ${send.result.messageId}` : ''}.</p>`}
  </form>`;
}

function parseProperties(text) {
  return Object.fromEntries(new URLSearchParams(text));
}

function DirectMethod({ id }) {
  const invoke = useAction();
  const submit = (event) => {
    const { methodName, payload, timeout } = formValues(event);
    invoke.run(async () => {
      let parsed = null;
      if (payload.trim()) {
        try {
          parsed = JSON.parse(payload);
        } catch (err) {
          throw new Error(`the payload is JSON: ${err.message}`);
        }
      }
      return api(`${twin(id)}/methods`, { method: 'POST', json: { methodName, payload: parsed, responseTimeoutInSeconds: Number(timeout) } });
    });
  };
  return html`<form onSubmit=${submit} class="stack" aria-label="invoke a direct method">
    <h3>Direct method</h3>
    <label for="method-name">Method name</label>
    <input id="method-name" name="methodName" required />
    <label for="method-payload">Payload (JSON)</label>
    <input id="method-payload" name="payload" />
    <label for="method-timeout">Timeout (seconds)</label>
    <input id="method-timeout" name="timeout" type="number" min="5" max="300" value="10" />
    <button type="submit" disabled=${invoke.busy}>Invoke</button>
    <${ErrorLine} error=${invoke.error} />
    ${invoke.result && html`<div class="ok">Status ${invoke.result.status}<${Json} value=${invoke.result.payload} /></div>`}
  </form>`;
}

export function HubPage() {
  const devices = useLoad(() => api('/api/hub/devices'));
  const [selected, setSelected] = useState(null);
  return html` <${Section} title="Devices" actions=${html`<button type="button" class="small" onClick=${devices.reload}>refresh</button>`}>
      <${Loading} state=${devices}
        >${
          devices.data &&
          html` <table class="devices">
              <thead>
                <tr>
                  <th>device</th>
                  <th>module</th>
                  <th>status</th>
                  <th>connection</th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                ${devices.data.map(
                  (d) =>
                    html`<tr key=${`${d.deviceId}/${d.moduleId ?? ''}`}>
                      <td>${d.deviceId}</td>
                      <td>${d.moduleId ?? ''}</td>
                      <td>${d.status}</td>
                      <td><span class=${d.connectionState === 'Connected' ? 'probe probe-up' : 'probe probe-down'}>${d.connectionState}</span></td>
                      <td>
                        <button type="button" class="small" aria-pressed=${selected === d.deviceId} onClick=${() => setSelected(d.deviceId)}>
                          open ${d.deviceId}
                        </button>
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>
            ${devices.data.length === 0 && html`<p class="muted">No devices yet: <code>offcloud hub device create d1</code>.</p>`}`
        }
      <//>
    <//>
    ${
      selected &&
      html`<${Twin} id=${selected} key=${`twin-${selected}`} />
        <${Section} title=${`Messages and methods for ${selected}`}
          ><div class="columns"><${CloudToDevice} id=${selected} /><${DirectMethod} id=${selected} /></div
        ><//>`
    }
    <${Telemetry} />`;
}
