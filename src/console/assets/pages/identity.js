// Identity: the directory (applications and their roles, clients, grants,
// managed identities, data-plane roles), a token decoder that verifies
// against the issuer's JWKS, and a client-credentials token in one click.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, CopyButton, ErrorLine, Json, Loading, Section, formValues, useAction, useLoad } from '../ui.js';

function Table({ head, rows, label }) {
  if (!rows.length) return html`<p class="muted">None.</p>`;
  return html`<table aria-label=${label}>
    <thead>
      <tr>
        ${head.map((h) => html`<th>${h}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr>
            ${r.map((cell) => html`<td>${cell}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function Directory({ directory }) {
  const names = new Map([...directory.apis, ...directory.clients].map((a) => [a.servicePrincipalId, a.displayName]));
  for (const m of directory.managedIdentities) names.set(m.principalId, m.name);
  const roleName = (apiId, roleId) => directory.apis.find((a) => a.appId === apiId)?.appRoles.find((r) => r.id === roleId)?.value ?? roleId;
  return html` <${Section} title="Applications (APIs) and their roles">
      <${Table}
        label="applications"
        head=${['name', 'app id', 'identifier URIs', 'roles', 'token version']}
        rows=${directory.apis.map((a) => [a.displayName, html`<code>${a.appId}</code>`, a.identifierUris.join(' '), a.appRoles.map((r) => r.value).join(', '), a.accessTokenAcceptedVersion ?? 1])}
      />
    <//>
    <${Section} title="Clients">
      <${Table}
        label="clients"
        head=${['name', 'app id', 'secrets', 'certificates']}
        rows=${directory.clients.map((c) => [c.displayName, html`<code>${c.appId}</code> <${CopyButton} text=${c.appId} />`, c.secrets.map((s) => `${s.hint}… until ${s.expiresAt.slice(0, 10)}`).join(', '), c.certificates.map((x) => x.thumbprint).join(', ')])}
      />
    <//>
    <${Section} title="Grants (app role assignments)">
      <${Table}
        label="grants"
        head=${['principal', 'API', 'role']}
        rows=${directory.appRoleAssignments.map((g) => [names.get(g.principalId) ?? g.principalId, directory.apis.find((a) => a.appId === g.resourceAppId)?.displayName ?? g.resourceAppId, roleName(g.resourceAppId, g.appRoleId)])}
      />
    <//>
    <${Section} title="Managed identities">
      <${Table}
        label="managed identities"
        head=${['name', 'kind', 'client id', 'principal id']}
        rows=${directory.managedIdentities.map((m) => [m.name, m.kind, html`<code>${m.clientId}</code>`, html`<code>${m.principalId}</code>`])}
      />
    <//>
    <${Section} title="Data-plane roles">
      <${Table}
        label="data roles"
        head=${['principal', 'role', 'scope']}
        rows=${directory.dataRoleAssignments.map((d) => [names.get(d.principalId) ?? d.principalId, d.role, d.scope])}
      />
    <//>`;
}

function Decoder({ token, setToken }) {
  const decode = useAction();
  const submit = (event) => {
    event.preventDefault();
    decode.run(() => api('/api/identity/decode', { method: 'POST', json: { token } }));
  };
  const result = decode.result;
  return html`<${Section} title="Token decoder">
    <form onSubmit=${submit} class="stack" aria-label="decode a token">
      <label for="jwt">Token (JWT)</label>
      <textarea id="jwt" name="token" rows="4" value=${token} onInput=${(e) => setToken(e.currentTarget.value)} required></textarea>
      <button type="submit" disabled=${decode.busy}>Decode and verify</button>
    </form>
    <${ErrorLine} error=${decode.error} />
    ${
      result &&
      html` <p class=${result.verified ? 'ok verdict' : 'error verdict'} role="status">${result.verified ? 'Verifies' : 'Does not verify'}: ${result.reason}</p>
        <div class="columns">
          <div>
            <h3>Header</h3>
            <${Json} value=${result.header} />
          </div>
          <div>
            <h3>Claims</h3>
            <${Json} value=${result.claims} />
          </div>
        </div>`
    }
  <//>`;
}

function GetToken({ directory, onToken }) {
  const get = useAction();
  const submit = (event) => {
    const { clientId, clientSecret, scope } = formValues(event);
    get.run(async () => {
      const answer = await api('/api/identity/token', { method: 'POST', json: { clientId, clientSecret, scope } });
      onToken(answer.access_token);
      return answer;
    });
  };
  const firstScope = directory.apis.find((a) => a.identifierUris.length)?.identifierUris[0];
  return html`<${Section} title="Get a token (client credentials)">
    <form onSubmit=${submit} class="stack" aria-label="get a token">
      <label for="client-id">Client</label>
      <select id="client-id" name="clientId">
        ${directory.clients.map((c) => html`<option value=${c.appId}>${c.displayName} (${c.appId})</option>`)}
      </select>
      <label for="client-secret">Client secret</label>
      <input id="client-secret" name="clientSecret" type="password" required />
      <label for="scope">Scope</label>
      <input id="scope" name="scope" value=${firstScope ? `${firstScope}/.default` : 'https://storage.azure.com/.default'} required />
      <button type="submit" disabled=${get.busy}>Get token</button>
    </form>
    <${ErrorLine} error=${get.error} />
    ${get.result && html`<p class="ok">Token issued, valid ${get.result.expires_in} s; decoded above.</p>`}
  <//>`;
}

export function IdentityPage() {
  const directory = useLoad(() => api('/api/identity/directory'));
  const [token, setToken] = useState('');
  return html` <${Decoder} token=${token} setToken=${setToken} />
    <${Loading} state=${directory}
      >${
        directory.data &&
        html` <${GetToken} directory=${directory.data} onToken=${setToken} />
          <${Directory} directory=${directory.data} />`
      }
    <//>`;
}
