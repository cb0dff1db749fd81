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

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

export function renderIndex(reply: FastifyReply, scripts: Script[], base: string, format: 'json' | 'html'): FastifyReply {
  const entries = scripts.map((script) => entry(script, base));
  if (format === 'json') return reply.type('application/json').send({ scripts: entries });
  const rows = entries
    .map((e) => {
      const link = e.methods.includes('GET') ? `<a href="${escapeHtml(e.path)}">${escapeHtml(e.path)}</a>` : escapeHtml(e.path);
      return `<tr><td>${link}</td><td>${escapeHtml(e.methods.join(', '))}</td><td>${escapeHtml(e.error ?? '')}</td></tr>`;
    })
    .join('\n');
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>scripts</title></head>
<body><h1>Scripts</h1>
<p>Each call streams the script's output as <code>data: </code> lines (text/event-stream); send <code>Accept: text/plain</code> for bare lines.</p>
<table><tr><th>URL</th><th>methods</th><th>problem</th></tr>
${rows}
</table></body></html>
`;
  return reply.type('text/html; charset=utf-8').send(html);
}
