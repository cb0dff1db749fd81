/**
 * Runs one official-SDK scenario against a running identity component and
 * prints its observations as one JSON line. sdk.test.ts spawns it, one
 * process per scenario, because the SDKs pick the managed identity endpoint
 * once per process; the environment (NODE_EXTRA_CA_CERTS, AZURE_*) comes
 * from the parent.
 */
import { readFileSync } from 'node:fs';
import { ConfidentialClientApplication } from '@azure/msal-node';
import { ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};

interface ErrorSeen {
  name: string;
  errorCode?: string;
  status?: number;
  message: string;
}

async function failure(run: () => Promise<unknown>): Promise<ErrorSeen | null> {
  try {
    await run();
    return null;
  } catch (err) {
    const e = err as { name: string; errorCode?: string; status?: number; message: string };
    return { name: e.name, ...(e.errorCode ? { errorCode: e.errorCode } : {}), ...(e.status ? { status: e.status } : {}), message: e.message };
  }
}

function msalApp(authority: string, clientId: string, clientSecret: string): ConfidentialClientApplication {
  return new ConfidentialClientApplication({
    auth: { clientId, clientSecret, authority, knownAuthorities: [new URL(authority).host] },
  });
}

/** msal-node with a certificate: client assertions signed PS256 + x5t#S256, and RS256 + x5t. */
async function certificateCredentials() {
  const privateKey = readFileSync(env('CERT_KEY_FILE'), 'utf8');
  const authority = `${env('ISSUER')}/${env('TENANT')}`;
  const app = (clientCertificate: { thumbprintSha256: string; privateKey: string } | { thumbprint: string; privateKey: string }) =>
    new ConfidentialClientApplication({ auth: { clientId: env('CLIENT_ID'), authority, knownAuthorities: [new URL(authority).host], clientCertificate } });
  const sha256 = await app({ thumbprintSha256: env('CERT_SHA256_HEX'), privateKey }).acquireTokenByClientCredential({ scopes: [env('SCOPE')] });
  const sha1 = await app({ thumbprint: env('CERT_SHA1_HEX'), privateKey }).acquireTokenByClientCredential({ scopes: [env('SCOPE')] });
  const unregistered = await failure(() => app({ thumbprintSha256: 'ab'.repeat(32), privateKey }).acquireTokenByClientCredential({ scopes: [env('SCOPE')] }));
  return { sha256: sha256?.accessToken, sha1: sha1?.accessToken, unregistered };
}

const scenarios: Record<string, () => Promise<unknown>> = {
  /** msal-node client credentials: token, cache, tenant case, authority forms, errors. */
  async msal() {
    const issuer = env('ISSUER');
    const tenant = env('TENANT');
    const clientId = env('CLIENT_ID');
    const secret = env('CLIENT_SECRET');
    const scopes = [env('SCOPE')];
    const app = msalApp(`${issuer}/${tenant}`, clientId, secret);
    const first = await app.acquireTokenByClientCredential({ scopes });
    const second = await app.acquireTokenByClientCredential({ scopes });
    const mixed = await msalApp(`${issuer}/${tenant.toUpperCase()}`, clientId, secret).acquireTokenByClientCredential({ scopes });
    const slash = await msalApp(`${issuer}/${tenant}/`, clientId, secret).acquireTokenByClientCredential({ scopes });
    const v2 = await msalApp(`${issuer}/${tenant}/v2.0/`, clientId, secret).acquireTokenByClientCredential({ scopes });
    return {
      first: { token: first?.accessToken, fromCache: first?.fromCache, expiresOn: first?.expiresOn?.getTime() },
      second: { token: second?.accessToken, fromCache: second?.fromCache },
      mixedCase: Boolean(mixed?.accessToken),
      trailingSlash: Boolean(slash?.accessToken),
      v2Authority: Boolean(v2?.accessToken),
      wrongSecret: await failure(() => msalApp(`${issuer}/${tenant}`, clientId, `${secret}x`).acquireTokenByClientCredential({ scopes })),
      unknownClient: await failure(() =>
        msalApp(`${issuer}/${tenant}`, '00000000-0000-0000-0000-000000000001', secret).acquireTokenByClientCredential({ scopes }),
      ),
      badScope: await failure(() => msalApp(`${issuer}/${tenant}`, clientId, secret).acquireTokenByClientCredential({ scopes: ['api://offcloud-demo-api'] })),
      unknownTenant: await failure(() =>
        msalApp(`${issuer}/00000000-0000-0000-0000-00000000beef`, clientId, secret).acquireTokenByClientCredential({ scopes }),
      ),
      certificate: await certificateCredentials(),
    };
  },

  /** @azure/identity ClientSecretCredential with authorityHost + disableInstanceDiscovery, and DefaultAzureCredential from the environment. */
  async 'client-secret'() {
    const options = { authorityHost: env('ISSUER'), disableInstanceDiscovery: true };
    const credential = new ClientSecretCredential(env('TENANT'), env('CLIENT_ID'), env('CLIENT_SECRET'), options);
    const first = await credential.getToken(env('SCOPE'));
    const second = await credential.getToken(env('SCOPE'));
    const wrong = new ClientSecretCredential(env('TENANT'), env('CLIENT_ID'), `${env('CLIENT_SECRET')}x`, options);
    // DefaultAzureCredential through EnvironmentCredential (AZURE_TENANT_ID/CLIENT_ID/CLIENT_SECRET/AUTHORITY_HOST).
    const viaEnvironment = await new DefaultAzureCredential({ disableInstanceDiscovery: true }).getToken('https://storage.azure.com/.default');
    return {
      first: { token: first.token, expiresOnTimestamp: first.expiresOnTimestamp },
      sameSecond: first.token === second.token,
      wrongSecret: await failure(() => wrong.getToken(env('SCOPE'))),
      viaEnvironment: { token: viaEnvironment.token },
    };
  },

  /** ManagedIdentityCredential through AZURE_POD_IDENTITY_AUTHORITY_HOST: system-assigned, then user-assigned by client id. */
  async 'managed-identity'() {
    const system = await new ManagedIdentityCredential().getToken('https://storage.azure.com/.default');
    const user = await new ManagedIdentityCredential({ clientId: env('USER_CLIENT_ID') }).getToken('https://storage.azure.com/.default');
    const unknown = await failure(() =>
      new ManagedIdentityCredential({ clientId: '00000000-0000-0000-0000-00000000cafe' }).getToken('https://vault.azure.net/.default'),
    );
    return {
      system: { token: system.token, expiresOnTimestamp: system.expiresOnTimestamp },
      user: { token: user.token },
      unknown,
    };
  },

  /** DefaultAzureCredential with only AZURE_POD_IDENTITY_AUTHORITY_HOST set. */
  async 'default-managed-identity'() {
    const token = await new DefaultAzureCredential().getToken('https://storage.azure.com/.default');
    return { token: token.token };
  },

  /** App Service style: IDENTITY_ENDPOINT + IDENTITY_HEADER. */
  async 'app-service'() {
    const token = await new ManagedIdentityCredential().getToken('https://vault.azure.net/.default');
    return { token: token.token, expiresOnTimestamp: token.expiresOnTimestamp };
  },
};

const scenario = scenarios[process.argv[2] ?? ''];
if (!scenario) throw new Error(`unknown scenario ${process.argv[2]}; one of ${Object.keys(scenarios).join(', ')}`);
process.stdout.write(`${JSON.stringify(await scenario())}\n`);
