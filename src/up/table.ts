/**
 * The table `offcloud up` (and `offcloud <component>`) prints: one block per
 * component, its URLs beside it and its keys under it (and, under `up --only`,
 * which chosen component a dependency was started for), grouped vertically so
 * it fits a 100-column terminal; a component that failed shows why and the
 * command that fixes it. Long values wrap at spaces (or at `;` inside a
 * connection string); `offcloud env` gives every value unbroken.
 */
import type { RunningComponent } from '../common/component.ts';
import { envHint } from './container.ts';

export const TABLE_WIDTH = 100;
const NAME_WIDTH = 18;
const LABEL_WIDTH = 30;
const INDENT = ' '.repeat(NAME_WIDTH);

export interface FailedComponent {
  reason: string;
  fix: string;
}

/** Splits text into lines of at most `width`, at spaces, else after a `;`, `,`, `/` or `=` inside a long token; a longer piece stays whole. */
export function wrap(text: string, width: number): string[] {
  // Each piece remembers whether a space came before it, so a token split at `;` joins back without one.
  const pieces = text
    .split(' ')
    .flatMap((word) => (word.length <= width ? [word] : word.split(/(?<=[;,/])|(?<==)(?=[^=])/)).map((piece, i) => ({ piece, spaced: i === 0 })));
  const lines: string[] = [];
  let line = '';
  for (const { piece, spaced } of pieces) {
    const joined = line === '' ? piece : line + (spaced ? ' ' : '') + piece;
    if (line !== '' && joined.length > width) {
      lines.push(line);
      line = piece;
    } else line = joined;
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** A component's lines: its name beside the first; a line too long for its column starts near the left edge instead. */
function block(name: string, firstLines: string[], rest: string[]): string[] {
  const width = TABLE_WIDTH - NAME_WIDTH;
  const lines = [...firstLines, ...rest.flatMap((text) => wrap(text, width).map((line, i) => (i === 0 ? line : `  ${line}`)))];
  return lines.map((line, i) => {
    if (i === 0) return name.padEnd(NAME_WIDTH - 1) + ' ' + line;
    return NAME_WIDTH + line.length <= TABLE_WIDTH ? INDENT + line : `  ${line.trimStart()}`;
  });
}

function endpointLines(running: RunningComponent): string[] {
  return running.urls.flatMap(({ label, url }) => {
    const line = `${label.padEnd(LABEL_WIDTH - 1)} ${url}`;
    return label.length < LABEL_WIDTH && NAME_WIDTH + line.length <= TABLE_WIDTH ? [line] : [label, `  ${url}`];
  });
}

export interface TableNotes {
  failed?: ReadonlyMap<string, FailedComponent>;
  /** Components `up --only` started because chosen ones need them: `storage: bearer tokens (§4.10)`, one per need. */
  neededFor?: ReadonlyMap<string, readonly string[]>;
  /** Under `offcloud up`, which keeps its values for `offcloud env`. */
  envHint?: boolean;
}

export function formatStartTable(started: ReadonlyMap<string, RunningComponent>, notes: TableNotes = {}): string {
  const failed = notes.failed ?? new Map<string, FailedComponent>();
  const neededFor = notes.neededFor ?? new Map<string, readonly string[]>();
  const lines = [`${'component'.padEnd(NAME_WIDTH - 1)} ${'what'.padEnd(LABEL_WIDTH - 1)} url`, '-'.repeat(TABLE_WIDTH)];
  const caFiles = new Set<string>();
  for (const [name, running] of started) {
    lines.push(
      ...block(name, endpointLines(running), [
        ...(neededFor.get(name) ?? []).map((need) => `· not in --only; started for ${need}`),
        ...(running.credentials ?? []).map((text) => `· ${text}`),
      ]),
    );
    if (running.caCertPath) caFiles.add(running.caCertPath);
  }
  for (const [name, failure] of failed) lines.push(...block(name, ['NOT STARTED'], [`reason: ${failure.reason}`, `fix: ${failure.fix}`]));
  lines.push('-'.repeat(TABLE_WIDTH));
  for (const path of caFiles) lines.push(...wrap(`CA file (trust it for the https:// and mqtts:// URLs): ${path}`, TABLE_WIDTH));
  if (notes.envHint) lines.push(envHint());
  return lines.join('\n');
}
