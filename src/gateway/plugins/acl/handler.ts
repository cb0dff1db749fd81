/**
 * acl (Kong PRIORITY 950, after authentication): lets a consumer through
 * when one of its `acls` groups is in `allow` (or none is in `deny`), and
 * tells the upstream its groups in X-Consumer-Groups. Kong's schema and
 * answers: 401 `Unauthorized` when no consumer was identified, 403 `You
 * cannot consume this service` otherwise.
 */
import type { Field, FieldError } from '../../config/schema.ts';
import { GatewayError } from '../../errors.ts';
import { definePlugin, setOrClearHeader } from '../types.ts';

interface AclConfig {
  allow: string[] | null;
  deny: string[] | null;
  hide_groups_header: boolean;
  include_consumer_groups: boolean;
  always_use_authenticated_groups: boolean;
}

const groups: Field = { type: 'array', default: null, elements: { type: 'string' } };

const aclFields: Record<string, Field> = {
  allow: groups,
  deny: groups,
  hide_groups_header: { type: 'boolean', default: false },
  include_consumer_groups: {
    type: 'boolean',
    default: false,
    check: (v) => (v ? "not supported by offcloud's gateway (consumer groups are an Enterprise entity)" : undefined),
  },
  always_use_authenticated_groups: { type: 'boolean', default: false, noEffect: 'no plugin here authenticates groups without a consumer', asIf: false },
};

function checkAclConfig(config: Record<string, unknown>, path: string, errors: FieldError[]): void {
  const set = (v: unknown) => Array.isArray(v) && v.length > 0;
  const given = [config.allow, config.deny].filter(set).length;
  if (given === 0) errors.push({ path, message: "at least one of these fields must be non-empty: 'config.allow', 'config.deny'" });
  if (given === 2) errors.push({ path, message: "only one of these fields must be non-empty: 'config.allow', 'config.deny'" });
}

const FORBIDDEN = 'You cannot consume this service';

export const acl = definePlugin<AclConfig>({ name: 'acl', priority: 950, configFields: aclFields, checkConfig: checkAclConfig, noConsumer: true }, (conf) => {
  const allow = conf.allow?.length ? new Set(conf.allow) : null;
  const deny = new Set(conf.deny ?? []);
  return {
    access(ctx) {
      if (!ctx.consumer) throw ctx.credential ? new GatewayError(403, FORBIDDEN) : new GatewayError(401, 'Unauthorized');
      const mine = ctx.directory.groupsOf(ctx.consumer.id);
      const blocked = allow ? !mine.some((g) => allow.has(g)) : mine.some((g) => deny.has(g));
      if (blocked) throw new GatewayError(403, FORBIDDEN);
      if (!conf.hide_groups_header) setOrClearHeader(ctx.upstreamHeaders, 'x-consumer-groups', mine.length ? mine.join(', ') : null);
    },
  };
});
