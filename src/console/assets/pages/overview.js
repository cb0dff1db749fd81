// Every component with live health and readiness, its URLs and keys, the CA
// file, and client snippets filled with the real values.
import { api } from '../api.js';
import { html, CopyButton, Loading, Section, useLive, useLoad } from '../ui.js';

const REFRESH_MS = 5000;

function Probe({ label, value }) {
  return html`<span class=${`probe probe-${value.replace(' ', '-')}`} title=${`${label}: ${value}`}>${label} ${value}</span>`;
}

function snippets(settings, caFile) {
  const out = [];
  const ca = caFile ?? '<CA file>';
  if (settings.hubDeviceConnectionString) {
    out.push([
      'Device (azure-iot-device, MQTT)',
      `import { Client, Message } from 'azure-iot-device';
import { Mqtt } from 'azure-iot-device-mqtt';
import { readFileSync } from 'node:fs';
const client = Client.fromConnectionString('${settings.hubDeviceConnectionString}', Mqtt);
await client.setOptions({ ca: readFileSync('${ca}', 'utf8') });
await client.open();
await client.sendEvent(new Message(JSON.stringify({ temperature: 21.5 })));`,
    ]);
  }
  if (settings.storageConnectionString) {
    out.push([
      'Blob storage (@azure/storage-blob)',
      `// NODE_EXTRA_CA_CERTS=${ca}
import { BlobServiceClient } from '@azure/storage-blob';
const service = BlobServiceClient.fromConnectionString('${settings.storageConnectionString}');
await service.getContainerClient('photos').createIfNotExists();`,
    ]);
  }
  if (settings.identityUrl) {
    out.push([
      'Token (@azure/identity)',
      `// NODE_EXTRA_CA_CERTS=${ca}
import { ClientSecretCredential } from '@azure/identity';
const credential = new ClientSecretCredential('${settings.identityTenant}', '<client id>', '<client secret>',
  { authorityHost: '${settings.identityUrl}', disableInstanceDiscovery: true });
const token = await credential.getToken('https://storage.azure.com/.default');`,
    ]);
    out.push([
      'Token (curl)',
      `curl --cacert ${ca} -d grant_type=client_credentials -d client_id=<client id> \\
  -d client_secret=<client secret> -d scope=https://storage.azure.com/.default \\
  ${settings.identityUrl}/${settings.identityTenant}/oauth2/v2.0/token`,
    ]);
  }
  if (settings.gatewayProxyUrl) out.push(['Gateway (curl)', `curl '${settings.gatewayProxyUrl}/calc/v1/add/2/3?apikey=<consumer key>'`]);
  if (settings.scriptsUrl) out.push(['Scripts (curl)', `curl -N '${settings.scriptsUrl}'  # the index; each script is a URL streaming data: lines`]);
  return out;
}

export function OverviewPage() {
  const state = useLoad(() => api('/api/overview'));
  useLive(state.reload, REFRESH_MS);
  return html`<${Loading} state=${state}
    >${
      state.data &&
      html` <p class="toolbar">
          ${state.data.caFile ? html`<a class="button" href="/api/ca.crt" download="offcloud-ca.crt">Download the CA file</a> <code>${state.data.caFile}</code>` : html`<span class="muted">No CA file given.</span>`}
        </p>
        <div class="grid">
          ${state.data.components.map(
            (c) =>
              html` <${Section}
                title=${c.name}
                actions=${html`<span class="probes"><${Probe} label="health" value=${c.health} /> <${Probe} label="ready" value=${c.ready} /></span>`}
              >
                <dl class="endpoints">
                  ${c.endpoints.map(
                    (e) =>
                      html`<dt>${e.label}</dt>
                        <dd><code>${e.url}</code> <${CopyButton} text=${e.url} /></dd>`,
                  )}
                </dl>
                ${
                  c.credentials.length > 0 &&
                  html`<ul class="credentials">
                    ${c.credentials.map((line) => html`<li><code>${line}</code> <${CopyButton} text=${line.includes(': ') ? line.slice(line.indexOf(': ') + 2) : line} /></li>`)}
                  </ul>`
                }
              <//>`,
          )}
        </div>
        <${Section} title="Client snippets">
          ${snippets(state.data.settings, state.data.caFile).map(
            ([title, code]) =>
              html`<div class="snippet">
                <h3>${title} <${CopyButton} text=${code} /></h3>
                <pre>${code}</pre>
              </div>`,
          )}
        <//>`
    }
  <//>`;
}
