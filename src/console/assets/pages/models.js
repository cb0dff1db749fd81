// Models: sentiment of a text, and faces found in a photo drawn over it.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, ErrorLine, Section, formValues, useAction } from '../ui.js';

function Sentiment() {
  const score = useAction();
  const submit = (event) => {
    const { text, language } = formValues(event);
    score.run(() => api('/api/sentiment/text/analytics/v2.0/sentiment', { method: 'POST', json: { documents: [{ id: '1', language, text }] } }));
  };
  const doc = score.result?.documents?.[0];
  const docError = score.result?.errors?.[0];
  return html`<${Section} title="Sentiment">
    <form onSubmit=${submit} class="stack" aria-label="score a text">
      <label for="sentiment-text">Text</label>
      <textarea id="sentiment-text" name="text" rows="3" required>The room was clean and the staff were lovely.</textarea>
      <label for="sentiment-language">Language</label>
      <input id="sentiment-language" name="language" value="en" />
      <button type="submit" disabled=${score.busy}>Score</button>
    </form>
    <${ErrorLine} error=${score.error} />
    ${docError && html`<p class="error" role="alert">${docError.message}</p>`}
    ${doc && html`<div class="score"><meter min="0" max="1" value=${doc.score} aria-label="sentiment score"></meter> <strong>${doc.score.toFixed(3)}</strong> <span class="muted">(0 negative … 1 positive)</span></div>`}
  <//>`;
}

const FACE_ATTRIBUTES = 'age,gender,headPose,smile,glasses,emotion';

function Face() {
  const [photo, setPhoto] = useState(null);
  const detect = useAction();
  const take = (file) => {
    if (!file) return;
    setPhoto((old) => {
      if (old) URL.revokeObjectURL(old.url);
      return { url: URL.createObjectURL(file), file };
    });
    detect.run(() => api(`/api/face/face/v1.0/detect?returnFaceAttributes=${FACE_ATTRIBUTES}`, { method: 'POST', raw: file, contentType: 'application/octet-stream' }));
  };
  const onDrop = (event) => {
    event.preventDefault();
    take(event.dataTransfer.files[0]);
  };
  const faces = detect.result ?? [];
  return html`<${Section} title="Face">
    <div class="drop" onDragOver=${(e) => e.preventDefault()} onDrop=${onDrop}>
      <label for="face-file">Drop a photo here, or choose one</label>
      <input id="face-file" type="file" accept="image/*" onChange=${(e) => take(e.currentTarget.files[0])} />
    </div>
    <${ErrorLine} error=${detect.error} />
    ${photo && html`<figure class="photo">
      <img src=${photo.url} alt="the photo sent" onLoad=${(e) => setPhoto((p) => ({ ...p, width: e.currentTarget.naturalWidth, height: e.currentTarget.naturalHeight }))} />
      ${photo.width && html`<svg class="faces" viewBox=${`0 0 ${photo.width} ${photo.height}`} preserveAspectRatio="none" aria-label=${`${faces.length} faces`}>
        ${faces.map((f) => html`<rect class="face" x=${f.faceRectangle.left} y=${f.faceRectangle.top} width=${f.faceRectangle.width} height=${f.faceRectangle.height} />`)}
      </svg>`}
    </figure>`}
    ${detect.result && html`<p role="status">${faces.length} face${faces.length === 1 ? '' : 's'} found.</p>
      <ol class="attributes">${faces.map((f) => html`<li>${f.faceAttributes ? Object.entries(f.faceAttributes).filter(([, v]) => typeof v !== 'object').map(([k, v]) => `${k} ${v}`).join(' · ') : f.faceId}</li>`)}</ol>`}
  <//>`;
}

export function ModelsPage() {
  return html`<div class="columns"><${Sentiment} /><${Face} /></div>`;
}
