/**
 * Under `offcloud up`: the console's options from what the components started
 * before it published — their facts, and for the overview their URLs and the
 * details the up table prints. Nothing here reaches into another component's
 * code: a value a component does not publish is simply not shown.
 */
import type { Detail, RunningComponent } from '../common/component.ts';
import type { PublishedFacts } from '../common/facts.ts';
import type { OptionValues } from '../common/config.ts';
import { registryOfDevSvc } from '../devices/discovery/index.ts';
import type { consoleOptions } from './options.ts';

type ConsoleValues = OptionValues<typeof consoleOptions>;

function origin(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** A table detail as one line of the overview. */
function detailLine({ label, value }: Detail): string {
  return value === undefined ? label : `${label}: ${value}`;
}

export function consoleWireUp(facts: PublishedFacts, started: ReadonlyMap<string, RunningComponent>): Partial<ConsoleValues> {
  const get = (name: string) => started.get(name);
  const { identity, gateway, billing, hub, storage } = facts;
  const scoringService = Object.values(facts['scoring-frontend']?.services ?? {})[0];
  const wired: Partial<Record<keyof ConsoleValues, string | string[] | undefined>> = {
    caFile: [...started.values()].find((c) => c.caCertPath)?.caCertPath ?? undefined,
    hubUrl: hub?.restUrl,
    hubConnectionString: hub?.serviceConnectionString,
    hubDeviceConnectionString: hub?.demoDevice?.connectionString,
    storageConnectionString: storage?.connectionString,
    identityUrl: identity?.authorityHost,
    identityTenant: identity?.tenantId,
    identityDirectory: identity?.directoryPath,
    identityImdsUrl: identity?.imdsUrl,
    gatewayAdminUrl: gateway?.adminUrl,
    gatewayProxyUrl: gateway?.proxyUrl,
    scriptsUrl: facts.scripts?.url,
    sentimentUrl: origin(get('sentiment')?.urls[0]?.url),
    faceUrl: origin(get('face')?.urls[0]?.url),
    scoringUrl: scoringService?.scoreUrl,
    scoringKey: scoringService?.primaryKey,
    billingUrl: billing?.billingUrl,
    devdataUrl: origin(get('devdata')?.urls[0]?.url),
    devsvcAddress: facts.devsvc?.address,
    ...registryOfDevSvc(facts.devsvc),
    endpoints: [...started].flatMap(([name, c]) => c.urls.map((e) => `${name}|${e.label}|${e.url}`)),
    credentials: [...started].flatMap(([name, c]) => (c.details ?? []).map((detail) => `${name}|${detailLine(detail)}`)),
  };
  // Only what was found: an absent component leaves the option to the user's flags or its default.
  return Object.fromEntries(Object.entries(wired).filter(([, v]) => v !== undefined && v !== '')) as Partial<ConsoleValues>;
}
