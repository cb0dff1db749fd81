// Models: scoring of a photo, sentiment of a text, faces found in a photo drawn
// over it, and the containers' billed usage over time.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, ErrorLine, Section, formValues, useAction } from '../ui.js';
import { Usage } from './usage.js';

/** The scoring model's input side, pixels per edge. */
const SCORING_SIDE = 224;
const TOP = 5;

/** The photo scaled to 224×224 as {"data": [1, 3, 224, 224]} integers 0..255, channels first. */
async function scoringBody(file) {
  const bitmap = await createImageBitmap(file);
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = SCORING_SIDE;
  const context = canvas.getContext('2d');
  context.drawImage(bitmap, 0, 0, SCORING_SIDE, SCORING_SIDE);
  const { data } = context.getImageData(0, 0, SCORING_SIDE, SCORING_SIDE);
  const channels = [0, 1, 2].map((channel) =>
    Array.from({ length: SCORING_SIDE }, (_, y) => Array.from({ length: SCORING_SIDE }, (_, x) => data[(y * SCORING_SIDE + x) * 4 + channel])),
  );
  return { data: [channels] };
}

function PhotoInput({ id, onFile }) {
  const onDrop = (event) => {
    event.preventDefault();
    onFile(event.dataTransfer.files[0]);
  };
  return html`<div class="drop" data-drop=${id} onDragOver=${(e) => e.preventDefault()} onDrop=${onDrop}>
    <label for=${id}>Drop a photo here, or choose one</label>
    <input id=${id} type="file" accept="image/*" onChange=${(e) => onFile(e.currentTarget.files[0])} />
  </div>`;
}

function Scoring() {
  const score = useAction();
  const take = (file) => {
    if (!file) return;
    score.run(async () => {
      let body;
      try {
        body = await scoringBody(file);
      } catch {
        throw new Error(`${file.name} is not an image the browser can read`);
      }
      const [labels, answer] = await Promise.all([api('/api/scoring/labels'), api('/api/scoring/', { method: 'POST', json: body })]);
      const top = answer.result
        .map((probability, index) => ({ probability, index }))
        .sort((a, b) => b.probability - a.probability)
        .slice(0, TOP);
      return { time: answer.time, top: top.map((c) => ({ ...c, name: labels[String(c.index)]?.[1] ?? `class ${c.index}` })) };
    });
  };
  return html`<${Section} title="Scoring (ImageNet)">
    <${PhotoInput} id="scoring-file" onFile=${take} />
    <${ErrorLine} error=${score.error} />
    ${score.busy && html`<p class="muted">Scoring…</p>`}
    ${
      score.result &&
      html`<table class="classes" aria-label="top classes">
          <tbody>
            ${score.result.top.map(
              (c) =>
                html`<tr>
                  <td>${c.name}</td>
                  <td><meter min="0" max="1" value=${c.probability}></meter></td>
                  <td>${(c.probability * 100).toFixed(1)} %</td>
                </tr>`,
            )}
          </tbody>
        </table>
        <p class="muted" role="status">inference ${(score.result.time * 1000).toFixed(1)} ms in the container</p>`
    }
  <//>`;
}

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
    detect.run(() =>
      api(`/api/face/face/v1.0/detect?returnFaceAttributes=${FACE_ATTRIBUTES}`, { method: 'POST', raw: file, contentType: 'application/octet-stream' }),
    );
  };
  const faces = detect.result ?? [];
  return html`<${Section} title="Face">
    <${PhotoInput} id="face-file" onFile=${take} />
    <${ErrorLine} error=${detect.error} />
    ${
      photo &&
      html`<figure class="photo">
        <img
          src=${photo.url}
          alt="the photo sent"
          onLoad=${(e) => setPhoto((p) => ({ ...p, width: e.currentTarget.naturalWidth, height: e.currentTarget.naturalHeight }))}
        />
        ${
          photo.width &&
          html`<svg class="faces" viewBox=${`0 0 ${photo.width} ${photo.height}`} preserveAspectRatio="none" aria-label=${`${faces.length} faces`}>
            ${faces.map(
              (f, i) =>
                html`<rect class="face" x=${f.faceRectangle.left} y=${f.faceRectangle.top} width=${f.faceRectangle.width} height=${f.faceRectangle.height} />
                  <text class="face-number" x=${f.faceRectangle.left + 4} y=${f.faceRectangle.top + f.faceRectangle.height - 6}>${i + 1}</text>`,
            )}
          </svg>`
        }
      </figure>`
    }
    ${
      detect.result &&
      html`<p role="status">${faces.length} face${faces.length === 1 ? '' : 's'} found.</p>
        <ol class="attributes">
          ${faces.map(
            (f) =>
              html`<li>
                ${
                  f.faceAttributes
                    ? Object.entries(f.faceAttributes)
                        .filter(([, v]) => typeof v !== 'object')
                        .map(([k, v]) => `${k} ${v}`)
                        .join(' · ')
                    : f.faceId
                }
              </li>`,
          )}
        </ol>`
    }
  <//>`;
}

export function ModelsPage() {
  return html`<div class="columns"><${Scoring} /><${Sentiment} /></div>
    <${Face} /><${Usage} />`;
}
