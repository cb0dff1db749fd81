/**
 * The table `offcloud up` (and `offcloud <component>`) prints: one block per
 * component, its URLs beside it and its details under it (and, under `up
 * --only`, which chosen component a dependency was started for), grouped
 * vertically so it fits a 100-column terminal; a component that failed shows
 * why and the command that fixes it. A URL, key, token or connection string
 * is never broken: what does not fit beside its label goes on its own line,
 * whole (a value wider than the table at the left edge, so that a
 * line-selection copies exactly it). Programs read up.json's facts instead.
 */
import type { Detail, RunningComponent } from '../common/component.ts';
import { envHint } from './container.ts';

export const TABLE_WIDTH = 100;
const NAME_WIDTH = 18;
const LABEL_WIDTH = 30;
const INDENT = ' '.repeat(NAME_WIDTH);
/** Where a detail's continuation lines start: under the text after `· `. */
const DETAIL_INDENT = INDENT + '  ';

export interface FailedComponent {
  reason: string;
  fix: string;
}

/** Splits prose into lines of at most `width` at spaces; a word longer than that stays whole, on a line of its own. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const joined = line === '' ? word : `${line} ${word}`;
    if (line !== '' && joined.length > width) {
      lines.push(line);
      line = word;
    } else line = joined;
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** A line at `indent`, or at the left edge when it would not fit the table there. */
function placed(indent: string, text: string): string {
  return indent.length + text.length <= TABLE_WIDTH ? indent + text : text;
}

/** Prose under a component: wrapped at spaces, its first line after `· `. */
function noteLines(text: string): string[] {
  return wrap(text, TABLE_WIDTH - DETAIL_INDENT.length).map((line, i) => placed(i === 0 ? `${INDENT}· ` : DETAIL_INDENT, line));
}

/** `· label: value` on one line when it fits; else the label, then the value alone and whole. */
function detailLines({ label, value }: Detail): string[] {
  if (value === undefined) return noteLines(label);
  const oneLine = `${INDENT}· ${label}: ${value}`;
  if (oneLine.length <= TABLE_WIDTH) return [oneLine];
  return [...noteLines(`${label}:`), placed(DETAIL_INDENT, value)];
}

/** The URLs: label and URL on one line when they fit, else the label, then the URL alone and whole. */
function endpointLines(running: RunningComponent): string[] {
  return running.urls.flatMap(({ label, url }) => {
    const line = `${INDENT}${label.padEnd(LABEL_WIDTH - 1)} ${url}`;
    return label.length < LABEL_WIDTH && line.length <= TABLE_WIDTH ? [line] : [INDENT + label, placed(DETAIL_INDENT, url)];
  });
}

/** A component's lines (each starting with INDENT), its name in the first. */
function block(name: string, lines: string[]): string[] {
  return lines.map((line, i) => (i === 0 ? name.padEnd(NAME_WIDTH - 1) + ' ' + line.slice(NAME_WIDTH) : line));
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
      ...block(name, [
        ...endpointLines(running),
        ...(neededFor.get(name) ?? []).flatMap((need) => noteLines(`not in --only; started for ${need}`)),
        ...(running.details ?? []).flatMap(detailLines),
      ]),
    );
    if (running.caCertPath) caFiles.add(running.caCertPath);
  }
  for (const [name, failure] of failed) {
    lines.push(...block(name, [`${INDENT}NOT STARTED`, ...noteLines(`reason: ${failure.reason}`), ...noteLines(`fix: ${failure.fix}`)]));
  }
  lines.push('-'.repeat(TABLE_WIDTH));
  for (const path of caFiles) {
    const label = 'CA file (trust it for the https:// and mqtts:// URLs):';
    lines.push(...(label.length + 1 + path.length <= TABLE_WIDTH ? [`${label} ${path}`] : [label, path]));
  }
  if (notes.envHint) lines.push(envHint());
  return lines.join('\n');
}
