/**
 * A small schema checker for Kong's declarative entities: field types,
 * defaults, ranges and choices, with every error named by its path in the
 * file (`services[0].routes[1].paths[0]`) and worded like Kong's own
 * validator, so a user who knows Kong's messages recognises them.
 */

export interface FieldError {
  path: string;
  message: string;
}

interface Base<T> {
  /** Filled in when the field is absent (Kong's `default`). */
  default?: T | null;
  required?: boolean;
  /** Extra check on a present value; returns a message when it fails. */
  check?: (value: T) => string | undefined;
  /** Kong has this field but this gateway does nothing with it: given in a file, it is accepted with a load warning saying why. */
  noEffect?: string;
  /** The value this gateway behaves as whatever is given: given explicitly, it draws no noEffect warning (a decK dump spells every default out). */
  asIf?: T;
}
export interface StringField extends Base<string> {
  type: 'string';
  oneOf?: readonly string[];
}
export interface IntegerField extends Base<number> {
  type: 'integer';
  between?: [number, number];
}
export interface NumberField extends Base<number> {
  type: 'number';
  between?: [number, number];
  greaterThan?: number;
}
export interface BooleanField extends Base<boolean> {
  type: 'boolean';
}
export interface ArrayField extends Base<unknown[]> {
  type: 'array';
  elements: Field;
}
export interface RecordField extends Base<Record<string, unknown>> {
  type: 'record';
  fields: Record<string, Field>;
}
/** Any JSON value that is kept as is (foreign keys, tags' free-form parts). */
export interface AnyField extends Base<unknown> {
  type: 'any';
}
export type Field = StringField | IntegerField | NumberField | BooleanField | ArrayField | RecordField | AnyField;

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks `value` against `field`, pushes every problem found into `errors`,
 * and returns the value with defaults filled in (undefined when absent and
 * without a default).
 */
function checkField(field: Field, value: unknown, path: string, errors: FieldError[], warnings?: FieldError[]): unknown {
  if (field.noEffect && value !== undefined && value !== null && value !== field.asIf)
    warnings?.push({ path, message: `accepted without effect: ${field.noEffect}` });
  if (value === undefined || value === null) {
    if (field.required) errors.push({ path, message: 'required field missing' });
    if (field.default === undefined) return value === null ? null : undefined;
    // An absent record still gets the defaults of its own fields.
    if (field.type === 'record' && field.default !== null) return checkRecord(field.fields, structuredClone(field.default), path, errors, warnings);
    // Only a list or record default needs a copy of its own (a file's entities must not share one).
    return typeof field.default === 'object' ? structuredClone(field.default) : field.default;
  }
  const fail = (message: string) => {
    errors.push({ path, message });
    return undefined;
  };
  switch (field.type) {
    case 'string':
      if (typeof value !== 'string') return fail('expected a string');
      if (field.oneOf && !field.oneOf.includes(value)) return fail(`expected one of: ${field.oneOf.join(', ')}`);
      break;
    case 'integer':
    case 'number':
      if (field.type === 'integer' ? !Number.isInteger(value) : typeof value !== 'number' || !Number.isFinite(value)) {
        return fail(field.type === 'integer' ? 'expected an integer' : 'expected a number');
      }
      if (field.between && ((value as number) < field.between[0] || (value as number) > field.between[1])) {
        return fail(`value should be between ${field.between[0]} and ${field.between[1]}`);
      }
      if (field.type === 'number' && field.greaterThan !== undefined && (value as number) <= field.greaterThan)
        return fail(`value must be greater than ${field.greaterThan}`);
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return fail('expected a boolean');
      break;
    case 'array': {
      if (!Array.isArray(value)) return fail('expected an array');
      const out = value.map((element, i) => checkField(field.elements, element, join(path, i), errors, warnings));
      return runCheck(field, out, path, errors);
    }
    case 'record': {
      if (!isRecord(value)) return fail('expected a record');
      return runCheck(field, checkRecord(field.fields, value, path, errors, warnings), path, errors);
    }
    case 'any':
      break;
  }
  return runCheck(field as Base<unknown>, value, path, errors);
}

function runCheck<T>(field: Base<T>, value: T, path: string, errors: FieldError[]): T {
  const message = field.check?.(value);
  if (message) errors.push({ path, message });
  return value;
}

/** Checks an object's known fields, refuses unknown ones, fills defaults; fields given without effect go to `warnings`. */
export function checkRecord(
  fields: Record<string, Field>,
  value: Record<string, unknown>,
  path: string,
  errors: FieldError[],
  warnings?: FieldError[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (!Object.hasOwn(fields, key)) errors.push({ path: join(path, key), message: 'unknown field' });
  }
  for (const [key, field] of Object.entries(fields)) {
    const checked = checkField(field, value[key], join(path, key), errors, warnings);
    if (checked !== undefined) out[key] = checked;
  }
  return out;
}

/** A field Kong knows but this gateway does not act on: refused with a clear message. */
export function unsupported(what: string): AnyField {
  return { type: 'any', check: () => `not supported by offcloud's gateway (${what})` };
}
