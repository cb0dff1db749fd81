/**
 * Blob index tag expressions: the `where` of Find Blobs by Tags (`"key" = 'value' AND
 * @container = 'c'`, comparisons joined by AND) and the `x-ms-if-tags` condition of blob
 * operations (also `<>`, OR and parentheses). Keys are double-quoted (or bare identifiers),
 * values single-quoted; comparisons are on the strings, as the service compares them.
 */
import { errors } from '../errors.ts';

type Operator = '=' | '<>' | '>' | '>=' | '<' | '<=';

export type TagCondition =
  { kind: 'compare'; key: string; operator: Operator; value: string } | { kind: 'and' | 'or'; left: TagCondition; right: TagCondition };

const TOKEN = /\s*(?:"((?:[^"]|"")*)"|'((?:[^']|'')*)'|(@?[A-Za-z0-9_.:+\-/]+)|(<>|>=|<=|=|>|<)|(\(|\)))/y;

type Token = { key?: string; value?: string; word?: string; operator?: Operator; paren?: string };

function tokenize(text: string): Token[] | null {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(TOKEN.lastIndex))) break;
    const match = TOKEN.exec(text);
    if (!match) return null;
    if (match[1] !== undefined) tokens.push({ key: match[1].replace(/""/g, '"') });
    else if (match[2] !== undefined) tokens.push({ value: match[2].replace(/''/g, "'") });
    else if (match[3] !== undefined) tokens.push({ word: match[3] });
    else if (match[4] !== undefined) tokens.push({ operator: match[4] as Operator });
    else tokens.push({ paren: match[5]! });
  }
  return tokens;
}

/**
 * Parses an expression; `findBlobs` limits it to what Find Blobs by Tags takes (AND only,
 * no `<>`, `@container` allowed). Throws the service's 400 naming `source` when it is not one.
 */
export function parseTagCondition(text: string, source: 'where' | 'x-ms-if-tags', findBlobs = false): TagCondition {
  const invalid = () => (source === 'where' ? errors.invalidQuery('where') : errors.invalidHeader(source, text));
  const tokens = tokenize(text);
  if (!tokens || tokens.length === 0) throw invalid();
  let at = 0;
  const keyword = (word: string) => tokens[at]?.word?.toUpperCase() === word;
  const comparison = (): TagCondition => {
    if (tokens[at]?.paren === '(' && !findBlobs) {
      at++;
      const inner = disjunction();
      if (tokens[at++]?.paren !== ')') throw invalid();
      return inner;
    }
    const keyToken = tokens[at++];
    const key = keyToken?.key ?? keyToken?.word;
    const operator = tokens[at++]?.operator;
    const value = tokens[at++]?.value;
    if (key === undefined || !operator || value === undefined) throw invalid();
    if (key.startsWith('@') && (!findBlobs || key !== '@container' || operator !== '=')) throw invalid();
    if (findBlobs && operator === '<>') throw invalid();
    return { kind: 'compare', key, operator, value };
  };
  const conjunction = (): TagCondition => {
    let left = comparison();
    while (keyword('AND')) {
      at++;
      left = { kind: 'and', left, right: comparison() };
    }
    return left;
  };
  const disjunction = (): TagCondition => {
    let left = conjunction();
    while (keyword('OR') && !findBlobs) {
      at++;
      left = { kind: 'or', left, right: conjunction() };
    }
    return left;
  };
  const parsed = disjunction();
  if (at !== tokens.length) throw invalid();
  return parsed;
}

function compare(actual: string | undefined, operator: Operator, value: string): boolean {
  if (actual === undefined) return operator === '<>';
  switch (operator) {
    case '=':
      return actual === value;
    case '<>':
      return actual !== value;
    case '>':
      return actual > value;
    case '>=':
      return actual >= value;
    case '<':
      return actual < value;
    case '<=':
      return actual <= value;
  }
}

/** Whether a blob's tags (and its container, for `@container`) satisfy the expression. */
export function matchesTagCondition(condition: TagCondition, tags: Record<string, string>, container?: string): boolean {
  if (condition.kind !== 'compare') {
    const left = matchesTagCondition(condition.left, tags, container);
    return condition.kind === 'and'
      ? left && matchesTagCondition(condition.right, tags, container)
      : left || matchesTagCondition(condition.right, tags, container);
  }
  if (condition.key === '@container') return container === condition.value;
  return compare(Object.hasOwn(tags, condition.key) ? tags[condition.key] : undefined, condition.operator, condition.value);
}
