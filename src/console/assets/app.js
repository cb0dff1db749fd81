// The console's shell: the login form when one is needed, the navigation,
// and the page the location's hash names (#/hub, #/storage, …).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html, ErrorLine, formValues, useAction } from './ui.js';
import { OverviewPage } from './pages/overview.js';
import { HubPage } from './pages/hub.js';
import { StoragePage } from './pages/storage.js';
import { IdentityPage } from './pages/identity.js';
import { GatewayPage } from './pages/gateway.js';
import { ScriptsPage } from './pages/scripts.js';
import { ModelsPage } from './pages/models.js';
import { DevicesPage } from './pages/devices.js';

const PAGES = [
  ['overview', 'Overview', OverviewPage],
  ['hub', 'Device hub', HubPage],
  ['storage', 'Blob storage', StoragePage],
  ['identity', 'Identity', IdentityPage],
  ['gateway', 'Gateway', GatewayPage],
  ['scripts', 'Scripts', ScriptsPage],
  ['models', 'Models', ModelsPage],
  ['devices', 'Devices', DevicesPage],
];

function currentPage() {
  const name = location.hash.replace(/^#\/?/, '').split('/')[0];
  return PAGES.find(([id]) => id === name) ?? PAGES[0];
}

function Login({ onDone }) {
  const action = useAction();
  const submit = (event) => {
    const { token } = formValues(event);
    action.run(async () => {
      await api('/api/login', { method: 'POST', json: { token } });
      onDone();
    });
  };
  return html`<main class="login">
    <h1>offcloud console</h1>
    <form onSubmit=${submit} class="card">
      <label for="token">Login token (printed once when the console started)</label>
      <input id="token" name="token" type="password" autocomplete="current-password" required autofocus />
      <button type="submit" disabled=${action.busy}>Log in</button>
      <${ErrorLine} error=${action.error} />
    </form>
  </main>`;
}

function App() {
  const [session, setSession] = useState(null);
  const [page, setPage] = useState(currentPage);
  const [menuOpen, setMenuOpen] = useState(false);
  const check = () => api('/api/session').then(setSession, () => setSession({ loginRequired: true, loggedIn: false }));
  useEffect(() => {
    check();
    const onHash = () => {
      setPage(currentPage());
      setMenuOpen(false);
    };
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  if (!session) return html`<p class="muted">Loading…</p>`;
  if (session.loginRequired && !session.loggedIn) return html`<${Login} onDone=${check} />`;
  const [id, title, Page] = page;
  return html`<div class="shell">
    <a class="skip" href="#main">Skip to content</a>
    <nav aria-label="pages" class=${menuOpen ? 'open' : ''}>
      <div class="brand">offcloud <button type="button" class="menu small" aria-expanded=${menuOpen} onClick=${() => setMenuOpen(!menuOpen)}>menu</button></div>
      <ul>
        ${PAGES.map(([pid, ptitle]) => html`<li><a href=${`#/${pid}`} aria-current=${pid === id ? 'page' : undefined}>${ptitle}</a></li>`)}
      </ul>
    </nav>
    <main id="main" tabindex="-1" data-page=${id}>
      <h1>${title}</h1>
      <${Page} key=${id} />
    </main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('app'));
