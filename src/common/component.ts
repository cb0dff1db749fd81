/**
 * What the CLI knows about a component: its name, its options and how to start
 * it. Every component exports one of these from src/<component>/index.ts and
 * is listed in src/components.ts.
 */
import type { OptionSchema, OptionValues } from './config.ts';
import type { PublishedFacts } from './facts.ts';

export interface Endpoint {
  /** What this URL serves, e.g. "REST", "MQTT over TLS", "IMDS". */
  label: string;
  url: string;
}

/**
 * A line of the table under a component's URLs: a label and the value a user
 * copies (a key, a connection string; printed whole, never wrapped), or a
 * note alone. For people only: programs read `facts`.
 */
export interface Detail {
  label: string;
  value?: string;
}

export interface RunningComponent {
  urls: Endpoint[];
  /** The machine values it publishes, typed: what `offcloud env`, up.json, `wireUp` and the console read. */
  facts?: PublishedFacts;
  /** What the table shows besides the URLs: keys, ids, how to get a token. */
  details?: Detail[];
  /** The CA file to trust, when a URL is HTTPS/TLS with the local CA. */
  caCertPath?: string | null;
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
  /** Under `offcloud up`: option values taken from what the components started before it published. */
  wireUp?(facts: PublishedFacts, started: ReadonlyMap<string, RunningComponent>): Partial<OptionValues<S>>;
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
