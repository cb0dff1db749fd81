// Small shared pieces of the pages: the html tag, loading state, error lines,
// copy buttons, JSON views.
import { h } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

/** Loads with `load()` on mount and on `reload()`; keeps the last error. */
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const reload = useCallback(() => {
    setState((s) => ({ ...s, loading: true }));
    return load().then(
      (data) => setState({ data, error: null, loading: false }),
      (error) => setState({ data: undefined, error, loading: false }),
    );
  }, deps);
  useEffect(() => {
    reload();
  }, [reload]);
  return { ...state, reload };
}

/** Calls `reload` every `ms` while `on` (a live section). */
export function useLive(reload, ms, on = true) {
  useEffect(() => {
    if (!on) return undefined;
    const timer = setInterval(reload, ms);
    return () => clearInterval(timer);
  }, [reload, ms, on]);
}

/** Runs an action, remembering its error or result for the form that started it. */
export function useAction() {
  const [state, setState] = useState({ busy: false, error: null, result: undefined });
  const run = async (action) => {
    setState({ busy: true, error: null, result: undefined });
    try {
      const result = await action();
      setState({ busy: false, error: null, result });
      return result;
    } catch (error) {
      setState({ busy: false, error, result: undefined });
      return undefined;
    }
  };
  return { ...state, run };
}

export function ErrorLine({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.status ? `${error.status} · ` : ''}${error.message}</p>`;
}

export function Loading({ state, children }) {
  if (state.error) return html`<${ErrorLine} error=${state.error} />`;
  if (state.data === undefined) return html`<p class="muted">Loading…</p>`;
  return children;
}

export function CopyButton({ text, label = 'copy' }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // No clipboard permission (a page not on a secure origin): select the text instead.
      const area = document.createElement('textarea');
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    setDone(true);
    setTimeout(() => setDone(false), 1200);
  };
  return html`<button type="button" class="small" onClick=${copy} aria-label=${`${label}: ${text.slice(0, 40)}`}>${done ? 'copied' : label}</button>`;
}

export function Json({ value }) {
  return html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;
}

export function Section({ title, children, actions }) {
  return html`<section class="card">
    <header>
      <h2>${title}</h2>
      ${actions}
    </header>
    ${children}
  </section>`;
}

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 ** 2).toFixed(1)} MiB`;
}

/** Reads a form's fields by name. */
export function formValues(event) {
  event.preventDefault();
  return Object.fromEntries(new FormData(event.currentTarget).entries());
}
