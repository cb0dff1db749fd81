/**
 * Kong's entities as the gateway holds them after validation, defaults and
 * reference resolution (config/declarative.ts). What the proxy compiles
 * from them is proxy/compile.ts's.
 */

export interface Service {
  id: string;
  name: string | null;
  protocol: 'http' | 'https';
  host: string;
  port: number;
  path: string | null;
  retries: number;
  connect_timeout: number;
  write_timeout: number;
  read_timeout: number;
  enabled: boolean;
  tls_verify: boolean | null;
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

export interface Route {
  id: string;
  name: string | null;
  /** `http`/`https`, or `grpc`/`grpcs` (matched, then refused: this gateway does not proxy gRPC). */
  protocols: ('http' | 'https' | 'grpc' | 'grpcs')[];
  methods: string[] | null;
  hosts: string[] | null;
  paths: string[] | null;
  headers: Record<string, string[]> | null;
  https_redirect_status_code: number;
  regex_priority: number;
  strip_path: boolean;
  path_handling: 'v0';
  preserve_host: boolean;
  request_buffering: boolean;
  response_buffering: boolean;
  service: { id: string } | null;
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

export interface Consumer {
  id: string;
  username: string | null;
  custom_id: string | null;
  tags: string[] | null;
  created_at: number;
}

export interface KeyauthCredential {
  id: string;
  key: string;
  consumer: { id: string };
  ttl: number | null;
  tags: string[] | null;
  created_at: number;
}

/** A jwt plugin credential: `key` is what a token's `iss` (or the configured claim) names. */
export interface JwtSecret {
  id: string;
  consumer: { id: string };
  key: string;
  secret: string;
  rsa_public_key: string | null;
  algorithm: string;
  tags: string[] | null;
  created_at: number;
}

/** A consumer's membership of an acl group. */
export interface Acl {
  id: string;
  consumer: { id: string };
  group: string;
  tags: string[] | null;
  created_at: number;
}

/** A basic-auth credential; `password` is Kong's hash, sha1(password + consumer id) in hex. */
export interface BasicauthCredential {
  id: string;
  consumer: { id: string };
  username: string;
  password: string;
  tags: string[] | null;
  created_at: number;
}

/** An hmac-auth credential: requests signed with `secret` by `username`. */
export interface HmacauthCredential {
  id: string;
  consumer: { id: string };
  username: string;
  secret: string;
  tags: string[] | null;
  created_at: number;
}

/** What any credential has: the consumer it authenticates. */
export type Credential = KeyauthCredential | JwtSecret | BasicauthCredential | HmacauthCredential;

export interface Plugin {
  id: string;
  name: string;
  instance_name: string | null;
  config: Record<string, unknown>;
  enabled: boolean;
  protocols: string[];
  service: { id: string } | null;
  route: { id: string } | null;
  consumer: { id: string } | null;
  tags: string[] | null;
  created_at: number;
}

/** Kong's upstream: a virtual host name that services use as `host`, balanced over its targets. */
export interface Upstream {
  id: string;
  name: string;
  algorithm: 'round-robin';
  hash_on: string;
  hash_fallback: string;
  hash_on_header: string | null;
  hash_fallback_header: string | null;
  hash_on_cookie: string | null;
  hash_on_cookie_path: string;
  hash_on_query_arg: string | null;
  hash_fallback_query_arg: string | null;
  hash_on_uri_capture: string | null;
  hash_fallback_uri_capture: string | null;
  slots: number;
  healthchecks: Record<string, unknown>;
  host_header: string | null;
  use_srv_name: boolean;
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

/** One `host:port` of an upstream, with its share of the traffic (0 = disabled). */
export interface Target {
  id: string;
  upstream: { id: string };
  target: string;
  weight: number;
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

/** Kong's certificate: a PEM certificate (chain) and key, with an optional second pair of the other key type (RSA beside ECDSA). */
export interface Certificate {
  id: string;
  cert: string;
  key: string;
  cert_alt: string | null;
  key_alt: string | null;
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

/** A server name (exact, `*.` prefix or `.*` suffix wildcard, or `*`) whose TLS handshakes get its certificate. */
export interface Sni {
  id: string;
  name: string;
  certificate: { id: string };
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

export interface Entities {
  services: Service[];
  routes: Route[];
  consumers: Consumer[];
  keyauth_credentials: KeyauthCredential[];
  jwt_secrets: JwtSecret[];
  acls: Acl[];
  basicauth_credentials: BasicauthCredential[];
  hmacauth_credentials: HmacauthCredential[];
  plugins: Plugin[];
  upstreams: Upstream[];
  targets: Target[];
  certificates: Certificate[];
  snis: Sni[];
}
