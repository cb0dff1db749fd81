/**
 * The hub query language, in the subset the SDKs and the docs use:
 *
 *   SELECT * | COUNT() [AS n] | <path> [AS n], … FROM devices | devices.modules
 *   [WHERE <condition>] [GROUP BY <path>, …]
 *
 * Conditions compare a path of the twin document (`tags.location.region`,
 * `properties.reported.firmware`, `status`, `connectionState`, `deviceId`, `modelId`)
 * with a literal (`=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`, `IN [...]`, `NOT IN [...]`),
 * joined by AND, OR, NOT and parentheses, or call IS_DEFINED, IS_NULL, IS_STRING,
 * IS_NUMBER, IS_BOOL, IS_OBJECT, STARTSWITH, ENDSWITH. Keywords are case-insensitive.
 * A path may start with `devices.` or `devices.modules.` (the collection's own name).
 */
import { invalidArgument } from './errors.ts';
import type { JsonValue } from './twin.ts';

export type Collection = 'devices' | 'devices.modules';

type Literal = string | number | boolean | null;

export type Condition =
  | { kind: 'and' | 'or'; left: Condition; right: Condition }
  | { kind: 'not'; operand: Condition }
  | { kind: 'compare'; path: string[]; operator: '=' | '!=' | '<' | '<=' | '>' | '>='; value: Literal }
  | { kind: 'in'; path: string[]; values: Literal[]; negated: boolean }
  | { kind: 'function'; name: string; path: string[]; argument?: string };

export type Projection = { kind: 'all' } | { kind: 'count'; alias: string } | { kind: 'path'; path: string[]; alias: string };

export interface HubQuery {
  collection: Collection;
  projections: Projection[];
  where?: Condition;
  groupBy: string[][];
}

type Token = { type: 'word' | 'number' | 'string' | 'symbol'; text: string; value?: Literal };

const MAX_QUERY_LENGTH = 8192;
const MAX_NESTING = 32;
const FUNCTIONS = new Set(['IS_DEFINED', 'IS_NULL', 'IS_STRING', 'IS_NUMBER', 'IS_BOOL', 'IS_OBJECT', 'STARTSWITH', 'ENDSWITH']);

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s+|([A-Za-z_$][\w$-]*)|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(<>|!=|<=|>=|[=<>(),.*[\]])/gy;
  let match: RegExpExecArray | null;
  let at = 0;
  while (at < text.length) {
    pattern.lastIndex = at;
    match = pattern.exec(text);
    if (!match) throw invalidArgument(`the query has an unexpected character at position ${at}: ${JSON.stringify(text.slice(at, at + 16))}`);
    at = pattern.lastIndex;
    const [, word, number, single, double, symbol] = match;
    if (word !== undefined) tokens.push({ type: 'word', text: word });
    else if (number !== undefined) tokens.push({ type: 'number', text: number, value: Number(number) });
    else if (single !== undefined || double !== undefined) tokens.push({ type: 'string', text: '', value: (single ?? double)!.replace(/\\(.)/g, '$1') });
    else if (symbol !== undefined) tokens.push({ type: 'symbol', text: symbol });
  }
  return tokens;
}

class Parser {
  private at = 0;
  private nesting = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token | undefined {
    return this.tokens[this.at];
  }

  private isKeyword(word: string, offset = 0): boolean {
    const token = this.tokens[this.at + offset];
    return token?.type === 'word' && token.text.toUpperCase() === word;
  }

  private isSymbol(symbol: string): boolean {
    const token = this.peek();
    return token?.type === 'symbol' && token.text === symbol;
  }

  private expectKeyword(word: string): void {
    if (!this.isKeyword(word)) throw this.unexpected(word);
    this.at++;
  }

  private expectSymbol(symbol: string): void {
    if (!this.isSymbol(symbol)) throw this.unexpected(`'${symbol}'`);
    this.at++;
  }

  private unexpected(wanted: string) {
    const token = this.peek();
    const found = token === undefined ? 'the end of the query' : JSON.stringify(token.type === 'string' ? token.value : token.text);
    return invalidArgument(`query syntax: expected ${wanted}, found ${found}`);
  }

  parse(): HubQuery {
    this.expectKeyword('SELECT');
    const projections = this.projections();
    this.expectKeyword('FROM');
    this.expectKeyword('DEVICES');
    let collection: Collection = 'devices';
    if (this.isSymbol('.')) {
      this.at++;
      this.expectKeyword('MODULES');
      collection = 'devices.modules';
    }
    let where: Condition | undefined;
    if (this.isKeyword('WHERE')) {
      this.at++;
      where = this.condition();
    }
    const groupBy: string[][] = [];
    if (this.isKeyword('GROUP')) {
      this.at++;
      this.expectKeyword('BY');
      do groupBy.push(this.path());
      while (this.isSymbol(',') && ++this.at);
    }
    if (this.peek() !== undefined) throw this.unexpected('the end of the query');
    for (const projection of projections) {
      if (groupBy.length && projection.kind === 'path' && !groupBy.some((g) => g.join('.') === projection.path.join('.')))
        throw invalidArgument(`query: ${projection.path.join('.')} is selected but not grouped by`);
    }
    if (groupBy.length && projections.some((p) => p.kind === 'all')) throw invalidArgument('query: SELECT * cannot be grouped');
    return { collection, projections, ...(where ? { where } : {}), groupBy };
  }

  private projections(): Projection[] {
    if (this.isSymbol('*')) {
      this.at++;
      return [{ kind: 'all' }];
    }
    const out: Projection[] = [];
    do {
      if (this.isKeyword('COUNT')) {
        this.at++;
        this.expectSymbol('(');
        this.expectSymbol(')');
        out.push({ kind: 'count', alias: this.alias(`$${out.length + 1}`) });
      } else {
        const path = this.path();
        out.push({ kind: 'path', path, alias: this.alias(path[path.length - 1]!) });
      }
    } while (this.isSymbol(',') && ++this.at);
    return out;
  }

  private alias(fallback: string): string {
    if (!this.isKeyword('AS')) return fallback;
    this.at++;
    const token = this.peek();
    if (token?.type !== 'word') throw this.unexpected('a name after AS');
    this.at++;
    return token.text;
  }

  /** `a.b.c` without the collection's own prefix (`devices.`, `devices.modules.`). */
  private path(): string[] {
    const parts: string[] = [];
    do {
      const token = this.peek();
      if (token?.type !== 'word') throw this.unexpected('a property name');
      parts.push(token.text);
      this.at++;
    } while (this.isSymbol('.') && ++this.at);
    if (parts.length > 1 && parts[0]!.toLowerCase() === 'devices') parts.shift();
    if (parts.length > 1 && parts[0]!.toLowerCase() === 'modules') parts.shift();
    return parts;
  }

  private condition(): Condition {
    if (++this.nesting > MAX_NESTING) throw invalidArgument(`query: conditions nest deeper than ${MAX_NESTING}`);
    let left = this.conjunction();
    while (this.isKeyword('OR')) {
      this.at++;
      left = { kind: 'or', left, right: this.conjunction() };
    }
    this.nesting--;
    return left;
  }

  private conjunction(): Condition {
    let left = this.negation();
    while (this.isKeyword('AND')) {
      this.at++;
      left = { kind: 'and', left, right: this.negation() };
    }
    return left;
  }

  private negation(): Condition {
    if (this.isKeyword('NOT')) {
      this.at++;
      if (++this.nesting > MAX_NESTING) throw invalidArgument(`query: conditions nest deeper than ${MAX_NESTING}`);
      const operand = this.negation();
      this.nesting--;
      return { kind: 'not', operand };
    }
    if (this.isSymbol('(')) {
      this.at++;
      const inner = this.condition();
      this.expectSymbol(')');
      return inner;
    }
    const token = this.peek();
    if (token?.type === 'word' && FUNCTIONS.has(token.text.toUpperCase()) && this.tokens[this.at + 1]?.text === '(') {
      this.at += 2;
      const path = this.path();
      let argument: string | undefined;
      const name = token.text.toUpperCase();
      if (name === 'STARTSWITH' || name === 'ENDSWITH') {
        this.expectSymbol(',');
        const literal = this.literal();
        if (typeof literal !== 'string') throw invalidArgument(`query: ${name} takes a string`);
        argument = literal;
      }
      this.expectSymbol(')');
      return { kind: 'function', name, path, ...(argument === undefined ? {} : { argument }) };
    }
    const path = this.path();
    const negated = this.isKeyword('NOT') && this.isKeyword('IN', 1);
    if (negated) this.at++;
    if (this.isKeyword('IN')) {
      this.at++;
      this.expectSymbol('[');
      const values: Literal[] = [];
      if (!this.isSymbol(']')) {
        do values.push(this.literal());
        while (this.isSymbol(',') && ++this.at);
      }
      this.expectSymbol(']');
      return { kind: 'in', path, values, negated };
    }
    const operator = this.peek();
    if (operator?.type !== 'symbol' || !['=', '!=', '<>', '<', '<=', '>', '>='].includes(operator.text)) throw this.unexpected('a comparison');
    this.at++;
    const op = (operator.text === '<>' ? '!=' : operator.text) as '=' | '!=' | '<' | '<=' | '>' | '>=';
    return { kind: 'compare', path, operator: op, value: this.literal() };
  }

  private literal(): Literal {
    const token = this.peek();
    if (token?.type === 'string' || token?.type === 'number') {
      this.at++;
      return token.value!;
    }
    if (token?.type === 'word') {
      const word = token.text.toLowerCase();
      if (word === 'true' || word === 'false' || word === 'null') {
        this.at++;
        return word === 'null' ? null : word === 'true';
      }
    }
    throw this.unexpected('a string, number, true, false or null');
  }
}

export function parseQuery(text: unknown): HubQuery {
  if (typeof text !== 'string' || text.trim() === '') throw invalidArgument('query must be a non-empty string');
  if (text.length > MAX_QUERY_LENGTH) throw invalidArgument(`the query is longer than ${MAX_QUERY_LENGTH} characters`);
  return new Parser(tokenize(text)).parse();
}

function valueAt(document: JsonValue, path: string[]): JsonValue | undefined {
  let value: JsonValue | undefined = document;
  for (const part of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return undefined;
    value = value[part];
  }
  return value;
}

function compare(left: JsonValue | undefined, operator: string, right: Literal): boolean {
  if (left === undefined) return false;
  if (operator === '=') return left === right;
  if (operator === '!=') return left !== right && (typeof left !== 'object' || right !== null);
  // Ordering only between two numbers or two strings.
  if (!((typeof left === 'number' && typeof right === 'number') || (typeof left === 'string' && typeof right === 'string'))) return false;
  switch (operator) {
    case '<':
      return left < right;
    case '<=':
      return left <= right;
    case '>':
      return left > right;
    default:
      return left >= right;
  }
}

function callFunction(name: string, value: JsonValue | undefined, argument: string | undefined): boolean {
  switch (name) {
    case 'IS_DEFINED':
      return value !== undefined;
    case 'IS_NULL':
      return value === null;
    case 'IS_STRING':
      return typeof value === 'string';
    case 'IS_NUMBER':
      return typeof value === 'number';
    case 'IS_BOOL':
      return typeof value === 'boolean';
    case 'IS_OBJECT':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'STARTSWITH':
      return typeof value === 'string' && value.startsWith(argument!);
    default:
      return typeof value === 'string' && value.endsWith(argument!);
  }
}

/** Whether a document matches (the parser bounds the query, and with it how deep this goes). */
export function matches(condition: Condition, document: JsonValue): boolean {
  switch (condition.kind) {
    case 'and':
      return matches(condition.left, document) && matches(condition.right, document);
    case 'or':
      return matches(condition.left, document) || matches(condition.right, document);
    case 'not':
      return !matches(condition.operand, document);
    case 'compare':
      return compare(valueAt(document, condition.path), condition.operator, condition.value);
    case 'in': {
      const value = valueAt(document, condition.path);
      if (value === undefined) return false;
      const found = condition.values.some((v) => v === value);
      return condition.negated ? !found : found;
    }
    default:
      return callFunction(condition.name, valueAt(document, condition.path), condition.argument);
  }
}

/** Filters, projects, counts and groups documents as the query says. */
export function runQuery(query: HubQuery, documents: JsonValue[]): JsonValue[] {
  const selected = query.where ? documents.filter((d) => matches(query.where!, d)) : documents;
  const [first] = query.projections;
  if (first?.kind === 'all') return selected;
  if (query.groupBy.length === 0) {
    if (query.projections.some((p) => p.kind === 'count')) return [project(query.projections, selected[0] ?? {}, selected.length)];
    return selected.map((d) => project(query.projections, d, 1));
  }
  const groups = new Map<string, JsonValue[]>();
  for (const document of selected) {
    const key = JSON.stringify(query.groupBy.map((path) => valueAt(document, path) ?? null));
    const group = groups.get(key);
    if (group) group.push(document);
    else groups.set(key, [document]);
  }
  return [...groups.values()].map((group) => project(query.projections, group[0]!, group.length));
}

function project(projections: Projection[], document: JsonValue, count: number): JsonValue {
  const out: Record<string, JsonValue> = {};
  for (const projection of projections) {
    if (projection.kind === 'count') out[projection.alias] = count;
    else if (projection.kind === 'path') {
      const value = valueAt(document, projection.path);
      if (value !== undefined) out[projection.alias] = value;
    }
  }
  return out;
}
