/** The index at `/`: every script with its URL and methods, as HTML for browsers or JSON. */
import type { FastifyReply } from 'fastify';
import type { Script } from './catalog.ts';

export interface IndexEntry {
  path: string;
  url: string;
  methods: string[];
  timeoutSeconds: number | null;
  concurrency: number | null;
  error?: string;
}

function entry(script: Script, base: string): IndexEntry {
  return {
    path: script.urlPath,
    url: base + script.urlPath,
    methods: script.settings.methods,
    timeoutSeconds: script.settings.timeoutMs ? script.settings.timeoutMs / 1000 : null,
    concurrency: script.settings.concurrency || null,
    ...(script.settingsError ? { error: script.settingsError } : {}),
  };
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** The page's "run" buttons: an EventSource per click, its lines shown as they come. */
const RUNNER = `const output = document.getElementById('output');
let source = null;
for (const button of document.querySelectorAll('button[data-path]')) {
  button.addEventListener('click', () => {
    if (source) source.close();
    output.textContent = '';
    const show = (line) => { output.textContent += line + '\\n'; };
    source = new EventSource(button.dataset.path);
    source.onmessage = (event) => show(event.data);
    source.addEventListener('stderr', (event) => show('[stderr] ' + event.data));
    source.addEventListener('exit', (event) => { show('[exit] ' + event.data); source.close(); });
    source.onerror = () => source.close();
  });
}`;

export function renderIndex(reply: FastifyReply, scripts: Script[], base: string, format: 'json' | 'html'): FastifyReply {
  const entries = scripts.map((script) => entry(script, base));
  if (format === 'json') return reply.type('application/json').send({ scripts: entries });
  const rows = entries
    .map((e) => {
      const run = e.methods.includes('GET') && !e.error ? `<button data-path="${escapeHtml(e.path)}">run</button>` : '';
      return `<tr><td>${escapeHtml(e.path)}</td><td>${escapeHtml(e.methods.join(', '))}</td><td>${run}</td><td>${escapeHtml(e.error ?? '')}</td></tr>`;
    })
    .join('\n');
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>scripts</title></head>
<body><h1>Scripts</h1>
<p>Each call streams the script's output as <code>data: </code> lines (text/event-stream); send <code>Accept: text/plain</code> for bare lines.</p>
<table><tr><th>URL</th><th>methods</th><th></th><th>problem</th></tr>
${rows}
</table>
<pre id="output"></pre>
<script>
${RUNNER}
</script>
</body></html>
`;
  return reply.type('text/html; charset=utf-8').send(html);
}
