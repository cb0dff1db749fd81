/**
 * What the CLI knows about a component: its name, its options and how to start
 * it. Every component exports one of these from src/<component>/index.ts and
 * is listed in src/components.ts.
 */
import type { OptionSchema, OptionValues } from './config.ts';

export interface Endpoint {
  /** What this URL serves, e.g. "REST", "MQTT over TLS", "IMDS". */
  label: string;
  url: string;
}

export interface RunningComponent {
  urls: Endpoint[];
  /** Lines a client needs besides the URLs: keys, ids, how to get a token. */
  credentials?: string[];
  /** The CA file to trust, when a URL is HTTPS/TLS with the local CA. */
  caCertPath?: string | null;
  /** Facts later components need under `offcloud up` (an issuer URL, a billing URL). */
  exports?: Record<string, string>;
  /** Stops accepting, finishes what is in flight, releases everything. */
  close(): Promise<void>;
}

export interface ComponentDefinition<S extends OptionSchema = OptionSchema> {
  name: string;
  summary: string;
  options: S;
  start(options: OptionValues<S>): Promise<RunningComponent>;
  /** Option values that differ under `offcloud up` (a port that would clash). */
  upDefaults?: Partial<OptionValues<S>>;
  /** Under `offcloud up`: option values taken from components started before it. */
  wireUp?(started: ReadonlyMap<string, RunningComponent>): Partial<OptionValues<S>>;
  /** `offcloud <name> <subcommand> …`: management commands; returns the exit code. */
  subcommands?: Record<string, Subcommand>;
}

export interface Subcommand {
  summary: string;
  usage: string;
  run(args: string[]): Promise<number>;
}

/** Keeps the schema's type while the registry holds definitions of every schema. */
export function defineComponent<S extends OptionSchema>(definition: ComponentDefinition<S>): ComponentDefinition<S> {
  return definition;
}

/** `offcloud <name> <sub> …` for management commands that belong to no server (`offcloud models pull`). */
export interface CommandGroup {
  name: string;
  summary: string;
  subcommands: Record<string, Subcommand>;
  /** `offcloud <name> <args…>` itself, when the first argument names no subcommand (`offcloud score <image>`). */
  command?: Subcommand;
}
