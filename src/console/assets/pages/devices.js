// Devices: what the device data service answers for a device.
import { api } from '../api.js';
import { html, ErrorLine, Json, Section, formValues, useAction } from '../ui.js';

export function DevicesPage() {
  const lookup = useAction();
  const submit = (event) => {
    const { device } = formValues(event);
    lookup.run(() => api(`/api/devdata/data/${encodeURIComponent(device)}`));
  };
  return html`<${Section} title="Device data (GET /data/<device>)">
    <form onSubmit=${submit} class="inline" aria-label="look up a device">
      <label for="device">Device</label> <input id="device" name="device" required />
      <button type="submit" disabled=${lookup.busy}>Look up</button>
    </form>
    <${ErrorLine} error=${lookup.error} />
    ${lookup.result !== undefined && html`<${Json} value=${lookup.result} />`}
  <//>`;
}
