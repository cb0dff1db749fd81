// Scripts: the served scripts from the server's index, and a run with
// parameters whose data: lines are shown as they arrive.
import { useRef, useState } from 'preact/hooks';
import { api, streamEvents } from '../api.js';
import { html, ErrorLine, Loading, Section, formValues, useAction, useLoad } from '../ui.js';

function Run({ script }) {
  const [lines, setLines] = useState([]);
  const [exit, setExit] = useState(null);
  const run = useAction();
  const stop = useRef(null);
  const method = script.methods.includes('GET') ? 'GET' : script.methods[0];
  const submit = (event) => {
    const { params } = formValues(event);
    stop.current?.abort();
    const controller = new AbortController();
    stop.current = controller;
    setLines([]);
    setExit(null);
    const query = new URLSearchParams(
      params.trim()
        ? params
            .trim()
            .split(/\n|&/)
            .filter(Boolean)
            .map((p) => p.split('=').map((s) => s.trim()))
        : [],
    );
    const path = `/api/scripts${script.path}${query.size ? `?${query}` : ''}`;
    run.run(() =>
      streamEvents(path, { method, signal: controller.signal }, (e) => {
        if (e.event === 'exit') setExit(JSON.parse(e.data));
        else setLines((list) => [...list, { stream: e.event === 'stderr' ? 'stderr' : 'stdout', text: e.data }]);
      }),
    );
  };
  return html`<form onSubmit=${submit} class="stack" aria-label=${`run ${script.path}`}>
    <label for="params">Parameters (name=value, one a line)</label>
    <textarea id="params" name="params" rows="3"></textarea>
    <div>
      <button type="submit" disabled=${run.busy}>Run ${script.path} (${method})</button>
      ${run.busy && html` <button type="button" onClick=${() => stop.current?.abort()}>Stop</button>`}
    </div>
    <${ErrorLine} error=${run.error?.name === 'AbortError' ? null : run.error} />
    <pre class="output" aria-live="polite" aria-label="output">${lines.map((l) => html`<span class=${l.stream}>${`${l.text}\n`}</span>`)}</pre>
    ${exit && html`<p class=${exit.code === 0 ? 'ok exit' : 'error exit'}>exit ${exit.code ?? exit.signal} (${exit.reason})</p>`}
  </form>`;
}

export function ScriptsPage() {
  const index = useLoad(() => api('/api/scripts/', { headers: { accept: 'application/json' } }));
  const [selected, setSelected] = useState(null);
  return html` <${Section} title="Served scripts" actions=${html`<button type="button" class="small" onClick=${index.reload}>refresh</button>`}>
      <${Loading} state=${index}
        >${
          index.data &&
          html` <table class="scripts">
              <thead>
                <tr>
                  <th>path</th>
                  <th>methods</th>
                  <th>timeout</th>
                  <th>problem</th>
                  <th></th>
                </tr>
              </thead>
              <tbody>
                ${index.data.scripts.map(
                  (s) =>
                    html`<tr key=${s.path}>
                      <td><code>${s.path}</code></td>
                      <td>${s.methods.join(', ')}</td>
                      <td>${s.timeout ?? ''}</td>
                      <td class="error">${s.error ?? ''}</td>
                      <td>
                        <button type="button" class="small" aria-pressed=${selected?.path === s.path} onClick=${() => setSelected(s)}>open ${s.path}</button>
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>
            ${index.data.scripts.length === 0 && html`<p class="muted">No scripts in the folder.</p>`}`
        }
      <//>
    <//>
    ${selected && html`<${Section} title=${`Run ${selected.path}`}><${Run} script=${selected} key=${selected.path} /><//>`}`;
}
