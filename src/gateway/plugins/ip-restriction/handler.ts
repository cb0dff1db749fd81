/**
 * ip-restriction (Kong PRIORITY 990): refuses clients by address or CIDR
 * range, `deny` first, then anything outside `allow` when one is given;
 * Kong's 403 `Your IP address is not allowed` (or the configured status and
 * message). The address is the client's as the gateway trusts it
 * (X-Real-IP / X-Forwarded-For only from `--trusted-ips`).
 */
import { BlockList, isIP } from 'node:net';
import type { Field, FieldError } from '../../config/schema.ts';
import { GatewayError } from '../../errors.ts';
import { definePlugin } from '../types.ts';

interface IpRestrictionConfig {
  allow: string[] | null;
  deny: string[] | null;
  status: number | null;
  message: string | null;
}

/** `a.b.c.d`, `::1`, or either with `/prefix`. */
function parseRange(entry: string): { address: string; prefix: number | null; family: 'ipv4' | 'ipv6' } | null {
  const [address = '', prefixText] = entry.split('/');
  const version = isIP(address);
  if (version === 0) return null;
  const prefix = prefixText === undefined ? null : Number(prefixText);
  if (prefix !== null && (!Number.isInteger(prefix) || prefix < 0 || prefix > (version === 4 ? 32 : 128))) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

const ranges: Field = {
  type: 'array',
  default: null,
  elements: { type: 'string', check: (v) => (parseRange(v) ? undefined : `invalid ip or cidr range: '${v}'`) },
};

const ipRestrictionFields: Record<string, Field> = {
  allow: ranges,
  deny: ranges,
  status: { type: 'integer', default: null, between: [100, 599] },
  message: { type: 'string', default: null },
};

function checkIpRestrictionConfig(config: Record<string, unknown>, path: string, errors: FieldError[]): void {
  const set = (v: unknown) => Array.isArray(v) && v.length > 0;
  if (!set(config.allow) && !set(config.deny)) errors.push({ path, message: "at least one of these fields must be non-empty: 'config.allow', 'config.deny'" });
}

function blockList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const range = parseRange(entry)!;
    if (range.prefix === null) list.addAddress(range.address, range.family);
    else list.addSubnet(range.address, range.prefix, range.family);
  }
  return list;
}

export const ipRestriction = definePlugin<IpRestrictionConfig>(
  { name: 'ip-restriction', priority: 990, configFields: ipRestrictionFields, checkConfig: checkIpRestrictionConfig },
  (conf) => {
    const allow = conf.allow?.length ? blockList(conf.allow) : null;
    const deny = conf.deny?.length ? blockList(conf.deny) : null;
    const refuse = () => new GatewayError(conf.status ?? 403, conf.message ?? 'Your IP address is not allowed');
    return {
      access(ctx) {
        const ip = ctx.forwardedIp;
        const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
        if (deny?.check(ip, family)) throw refuse();
        if (allow && !allow.check(ip, family)) throw refuse();
      },
    };
  },
);
