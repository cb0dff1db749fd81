/**
 * Under `offcloud up`: the console's options from what the components started
 * before it published — their URLs, exports and the credential lines the up
 * table prints. Nothing here reaches into another component's code: a value a
 * component does not publish is simply not shown.
 */
import type { RunningComponent } from '../common/component.ts';
import type { OptionValues } from '../common/config.ts';
import { registryOfDevSvc } from '../devices/discovery/index.ts';
import type { consoleOptions } from './options.ts';

type ConsoleValues = OptionValues<typeof consoleOptions>;

/** The first group of `pattern` in the first credential line it matches. */
function credential(running: RunningComponent | undefined, pattern: RegExp): string | undefined {
  for (const line of running?.credentials ?? []) {
    const match = pattern.exec(line);
    if (match) return match[1];
  }
  return undefined;
}

function origin(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

export function consoleWireUp(started: ReadonlyMap<string, RunningComponent>): Partial<ConsoleValues> {
  const get = (name: string) => started.get(name);
  const identity = get('identity')?.exports;
  const gateway = get('gateway')?.exports;
  const billing = get('billing')?.exports;
  const wired: Partial<Record<keyof ConsoleValues, string | string[] | undefined>> = {
    caFile: [...started.values()].find((c) => c.caCertPath)?.caCertPath ?? undefined,
    hubUrl: get('hub')?.exports?.hubRestUrl,
    hubConnectionString: credential(get('hub'), /^service: (HostName=.*)$/),
    hubDeviceConnectionString: credential(get('hub'), /^device [^:]+: (HostName=.*)$/),
    storageConnectionString: credential(get('storage'), /^connection string: (.*)$/),
    identityUrl: identity?.authorityHost,
    identityTenant: identity?.tenantId,
    identityDirectory: identity?.directoryPath,
    identityImdsUrl: identity?.imdsUrl,
    gatewayAdminUrl: gateway?.adminUrl,
    gatewayProxyUrl: gateway?.proxyUrl,
    scriptsUrl: get('scripts')?.urls[0]?.url,
    sentimentUrl: origin(get('sentiment')?.urls[0]?.url),
    faceUrl: origin(get('face')?.urls[0]?.url),
    scoringUrl: get('scoring-frontend')?.urls[0]?.url,
    scoringKey: credential(get('scoring-frontend'), /^\S+ primary key (\S+)$/),
    billingUrl: billing?.billingUrl,
    devdataUrl: origin(get('devdata')?.urls[0]?.url),
    devsvcAddress: get('devsvc')?.exports?.address,
    ...registryOfDevSvc(get('devsvc')?.exports),
    endpoints: [...started].flatMap(([name, c]) => c.urls.map((e) => `${name}|${e.label}|${e.url}`)),
    credentials: [...started].flatMap(([name, c]) => (c.credentials ?? []).map((line) => `${name}|${line}`)),
  };
  // Only what was found: an absent component leaves the option to the user's flags or its default.
  return Object.fromEntries(Object.entries(wired).filter(([, v]) => v !== undefined && v !== '')) as Partial<ConsoleValues>;
}
