/** The hub's options, apart from its servers so the CLI can list them without loading MQTT, Redis or fastify. */
import { commonOptions, portOption, tlsOptions } from '../common/config.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_TWIN_MAX_DEPTH } from './defaults.ts';

export const hubOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(8883, 'MQTT over TLS port for devices (0 = any free port)'),
  restPort: portOption(8884, 'HTTPS port of the cloud-side REST API (0 = any free port)'),
  // The device SDKs' MqttWs transport always dials 443; only root (or CAP_NET_BIND_SERVICE) may bind it.
  webSocketPort: portOption(
    process.getuid?.() === 0 ? 443 : 8885,
    'MQTT over WebSockets port for devices, path /$iothub/websocket (default 443 as root, else 8885; 0 = any free port)',
  ),
  hostName: {
    type: 'string',
    default: 'localhost',
    description: 'hub host name devices put in their username and SAS resource (connection string HostName)',
  },
  redisUrl: {
    type: 'string',
    default: '',
    description: 'redis://host:port: keep registry, twins and C2D queues in Redis and talk to other replicas through it',
  },
  demoDevice: { type: 'string', default: 'demo-device', description: 'device made on start if missing, printed with its connection string ("" = none)' },
  twinMaxDepth: { type: 'integer', default: DEFAULT_TWIN_MAX_DEPTH, min: 1, max: 32, description: 'deepest nesting allowed in a twin section' },
  c2dTtlSeconds: { type: 'integer', default: 3600, min: 1, max: 172800, description: 'default time a cloud-to-device message waits for its device' },
  connectTimeoutMs: {
    type: 'integer',
    default: DEFAULT_CONNECT_TIMEOUT_MS,
    min: 100,
    max: 600000,
    description: 'milliseconds a device connection has to finish its TLS handshake, and then again to send CONNECT',
  },
  telemetryLogSize: { type: 'integer', default: 10000, min: 1, max: 1000000, description: 'telemetry messages kept for GET /messages/events' },
} as const;
