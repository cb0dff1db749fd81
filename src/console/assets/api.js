// Calls to the console's /api. A component's error answer comes back as the
// component sent it; messageOf finds the message in each component's shape.
export const CONSOLE_HEADER = 'x-offcloud-console';

export function messageOf(body, status) {
  if (body && typeof body === 'object') {
    const error = body.error;
    if (error && typeof error === 'object' && error.message) return `${error.code ? `${error.code}: ` : ''}${error.message}`;
    if (typeof body.Message === 'string') return body.Message;
    if (typeof body.message === 'string') return body.message;
    if (typeof body.error_description === 'string') return `${body.error}: ${body.error_description}`;
    if (typeof body.apiStatusMessage === 'string') return body.apiStatusMessage;
  }
  if (typeof body === 'string' && body) return body.slice(0, 500);
  return `HTTP ${status}`;
}

export class ApiError extends Error {
  constructor(status, body) {
    super(messageOf(body, status));
    this.status = status;
    this.body = body;
  }
}

/** fetch with the console's header; JSON in and out unless `raw` is given. */
export async function api(path, { method = 'GET', json, raw, contentType, headers = {} } = {}) {
  const init = { method, headers: { [CONSOLE_HEADER]: '1', ...headers } };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers['content-type'] = 'application/json';
  } else if (raw !== undefined) {
    init.body = raw;
    init.headers['content-type'] = contentType || 'application/octet-stream';
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let body = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // Not JSON: the text itself is the answer (or the error message).
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/** Follows a Server-Sent Events URL; returns a function that stops it. */
export function follow(path, handlers) {
  const source = new EventSource(path);
  for (const [event, handler] of Object.entries(handlers)) source.addEventListener(event, handler);
  return () => source.close();
}

/**
 * Runs a call whose answer is Server-Sent Events and hands each event to
 * `onEvent({event, data, id})`. Unlike EventSource it sees an error answer,
 * so the component's message can be shown, and it never reconnects.
 */
export async function streamEvents(path, { method = 'GET', signal } = {}, onEvent) {
  const response = await fetch(path, { method, signal, headers: { accept: 'text/event-stream', [CONSOLE_HEADER]: '1' } });
  if (!response.ok) {
    const text = await response.text();
    let body = text;
    try {
      body = JSON.parse(text);
    } catch {
      // The error answer is plain text.
    }
    throw new ApiError(response.status, body);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { event: 'message', data: [], id: '' };
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon === 0) continue;
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') event.data.push(text);
        else if (field === 'event') event.event = text;
        else if (field === 'id') event.id = text;
      }
      if (event.data.length) onEvent({ ...event, data: event.data.join('\n') });
    }
  }
}
