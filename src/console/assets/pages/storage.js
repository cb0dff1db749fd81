// Blob storage: containers and their blobs — list (a page at a time),
// upload, download, delete, properties — through the storage SDK on the
// console's side, signed with the account's Shared Key.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, ErrorLine, Json, Loading, Section, formatBytes, formValues, useAction, useLoad } from '../ui.js';

const containerPath = (name) => `/api/storage/containers/${encodeURIComponent(name)}`;
// The blob's name goes in the query: in a path, a browser resolves `.` and `..` segments (`%2E%2E` too) away.
const blobPath = (container, blob, kind = 'blob') => `${containerPath(container)}/${kind}?name=${encodeURIComponent(blob)}`;

function Blobs({ container }) {
  const [pages, setPages] = useState([]);
  const [prefix, setPrefix] = useState('');
  const listing = useLoad(async () => {
    const first = await api(`${containerPath(container)}/blobs?prefix=${encodeURIComponent(prefix)}`);
    setPages([first]);
    return first;
  }, [container, prefix]);
  const more = useAction();
  const upload = useAction();
  const remove = useAction();
  const details = useAction();
  const next = pages.length ? pages[pages.length - 1].next : null;
  const blobs = pages.flatMap((p) => p.blobs);

  const loadMore = () =>
    more.run(async () => {
      const page = await api(`${containerPath(container)}/blobs?prefix=${encodeURIComponent(prefix)}&marker=${encodeURIComponent(next)}`);
      setPages((list) => [...list, page]);
    });
  const submitUpload = (event) => {
    const form = event.currentTarget;
    const { name } = formValues(event);
    const file = form.elements.file.files[0];
    if (!file) return;
    upload.run(async () => {
      const answer = await api(blobPath(container, name || file.name), { method: 'PUT', raw: file, contentType: file.type || 'application/octet-stream' });
      form.reset();
      listing.reload();
      return answer;
    });
  };
  const deleteBlob = (name) =>
    remove.run(async () => {
      await api(blobPath(container, name), { method: 'DELETE' });
      listing.reload();
    });

  return html`<${Section} title=${`Blobs in ${container}`} actions=${html`<button type="button" class="small" onClick=${listing.reload}>refresh</button>`}>
    <form class="inline" onSubmit=${(e) => setPrefix(formValues(e).prefix)} aria-label="filter blobs by prefix">
      <label for="prefix">Prefix</label> <input id="prefix" name="prefix" value=${prefix} /> <button type="submit" class="small">filter</button>
    </form>
    <form class="inline" onSubmit=${submitUpload} aria-label="upload a blob">
      <label for="upload-file">File</label> <input id="upload-file" name="file" type="file" required /> <label for="upload-name">Blob name</label>
      <input id="upload-name" name="name" placeholder="(the file's name)" />
      <button type="submit" disabled=${upload.busy}>Upload</button>
    </form>
    <${ErrorLine} error=${upload.error} /><${ErrorLine} error=${remove.error} />
    ${upload.result && html`<p class="ok">Uploaded ${upload.result.name} (${formatBytes(upload.result.size)}).</p>`}
    <${Loading} state=${listing}>
      <table class="blobs">
        <thead>
          <tr>
            <th>name</th>
            <th>size</th>
            <th>type</th>
            <th>modified</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${blobs.map(
            (b) =>
              html`<tr key=${b.name}>
                <td><a href=${blobPath(container, b.name)} download=${b.name.split('/').pop()}>${b.name}</a></td>
                <td>${formatBytes(b.size)}</td>
                <td>${b.contentType}</td>
                <td>${b.lastModified.replace('T', ' ').slice(0, 19)}</td>
                <td class="actions">
                  <button
                    type="button"
                    class="small"
                    onClick=${() => details.run(() => api(blobPath(container, b.name, 'properties')).then((p) => ({ name: b.name, ...p })))}
                  >
                    properties
                  </button>
                  <button type="button" class="small danger" onClick=${() => deleteBlob(b.name)} aria-label=${`delete ${b.name}`}>delete</button>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
      ${blobs.length === 0 && html`<p class="muted">No blobs${prefix ? ` under ${prefix}` : ''}.</p>`}
      ${next && html`<button type="button" onClick=${loadMore} disabled=${more.busy}>Load more</button>`}
      <${ErrorLine} error=${more.error} />
    <//>
    <${ErrorLine} error=${details.error} />
    ${
      details.result &&
      html`<div class="details">
        <h3>Properties of ${details.result.name}</h3>
        <${Json} value=${details.result} />
      </div>`
    }
  <//>`;
}

export function StoragePage() {
  const containers = useLoad(() => api('/api/storage/containers'));
  const [selected, setSelected] = useState(null);
  const create = useAction();
  const remove = useAction();
  const submitCreate = (event) => {
    const form = event.currentTarget;
    const { name } = formValues(event);
    create.run(async () => {
      await api(containerPath(name), { method: 'PUT' });
      form.reset();
      containers.reload();
      setSelected(name);
    });
  };
  const deleteContainer = (name) =>
    remove.run(async () => {
      await api(containerPath(name), { method: 'DELETE' });
      if (selected === name) setSelected(null);
      containers.reload();
    });
  return html` <${Section} title="Containers" actions=${html`<button type="button" class="small" onClick=${containers.reload}>refresh</button>`}>
      <form class="inline" onSubmit=${submitCreate} aria-label="create a container">
        <label for="container-name">New container</label> <input id="container-name" name="name" required />
        <button type="submit" disabled=${create.busy}>Create</button>
      </form>
      <${ErrorLine} error=${create.error} /><${ErrorLine} error=${remove.error} />
      <${Loading} state=${containers}
        >${
          containers.data &&
          html` <ul class="containers">
              ${containers.data.map(
                (c) =>
                  html`<li key=${c.name}>
                    <button type="button" class="link" aria-pressed=${selected === c.name} onClick=${() => setSelected(c.name)}>${c.name}</button>
                    <span class="muted">${c.lastModified.replace('T', ' ').slice(0, 19)}</span>
                    <button type="button" class="small danger" onClick=${() => deleteContainer(c.name)} aria-label=${`delete container ${c.name}`}>
                      delete
                    </button>
                  </li>`,
              )}
            </ul>
            ${containers.data.length === 0 && html`<p class="muted">No containers yet.</p>`}`
        }
      <//>
    <//>
    ${selected && html`<${Blobs} container=${selected} key=${selected} />`}`;
}
