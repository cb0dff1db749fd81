/**
 * Named parameters (§4.5): each query parameter, and each field of a
 * form-encoded POST body, reaches the script as the environment variable
 * PARAM_<NAME> (name upper-cased). Values travel only through the
 * environment, never through a command line, so nothing is interpolated by a
 * shell. Names a shell could not read as a variable are refused.
 */
import { badParameter } from './errors.ts';

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_PARAMETERS = 100;
/** Sum of the names and values handed to one run. */
export const MAX_PARAMETER_BYTES = 64 * 1024;

/** Variables of the server's own environment a script sees; everything else (secrets) stays out. */
const INHERITED = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

function shown(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** Query and form fields → `PARAM_*` variables; a bad or repeated name is a 400. */
export function parameterVariables(sources: URLSearchParams[]): Record<string, string> {
  const variables: Record<string, string> = {};
  let count = 0;
  let bytes = 0;
  for (const source of sources) {
    for (const [name, value] of source) {
      if (!PARAM_NAME.test(name)) {
        throw badParameter(`parameter name ${shown(name)} is not allowed: use letters, digits and _ (not starting with a digit), at most 64`);
      }
      const key = `PARAM_${name.toUpperCase()}`;
      if (key in variables) throw badParameter(`parameter ${shown(name)} is given more than once (names are case-insensitive)`);
      if (value.includes('\0')) throw badParameter(`parameter ${shown(name)} contains a NUL character`);
      count++;
      bytes += name.length + Buffer.byteLength(value);
      if (count > MAX_PARAMETERS) throw badParameter(`more than ${MAX_PARAMETERS} parameters`);
      if (bytes > MAX_PARAMETER_BYTES) throw badParameter(`parameters larger than ${MAX_PARAMETER_BYTES} bytes in all`);
      variables[key] = value;
    }
  }
  return variables;
}

export interface RequestFacts {
  method: string;
  urlPath: string;
  queryString: string;
  remoteAddress: string;
  contentType: string | undefined;
  contentLength: number;
  user: string | null;
}

/** The whole environment of one run: a few inherited variables, CGI-style facts, the parameters. */
export function scriptEnvironment(facts: RequestFacts, parameters: Record<string, string>, serverEnv: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED) {
    const value = serverEnv[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  Object.assign(env, {
    REQUEST_METHOD: facts.method,
    SCRIPT_NAME: facts.urlPath,
    QUERY_STRING: facts.queryString,
    REMOTE_ADDR: facts.remoteAddress,
    CONTENT_LENGTH: String(facts.contentLength),
  });
  if (facts.contentType) env.CONTENT_TYPE = facts.contentType;
  if (facts.user !== null) env.REMOTE_USER = facts.user;
  return { ...env, ...parameters };
}
