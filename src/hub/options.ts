/** The hub's options, apart from its servers so the CLI can list them without loading MQTT, Redis or fastify. */
import { commonOptions, portOption, tlsOptions } from '../common/config.ts';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_TWIN_MAX_DEPTH } from './defaults.ts';

const HTTPS_PORT = process.getuid?.() === 0 ? 443 : 8884;

export const hubOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(8883, 'MQTT over TLS port for devices (0 = any free port)'),
  // The service SDK and the devices' WebSocket transports always dial 443, where the real hub serves all of them;
  // only root (or CAP_NET_BIND_SERVICE) may bind it. 8443 is the gateway's, so the fallback stays 8884.
  restPort: portOption(
    HTTPS_PORT,
    'HTTPS port of the REST API, also serving MQTT and AMQP over WebSockets (default 443 as root, else 8884; 0 = any free port)',
  ),
  webSocketPort: portOption(HTTPS_PORT, 'port for MQTT and AMQP over WebSockets (/$iothub/websocket); the REST port (one listener) unless another is given'),
  amqpPort: portOption(5671, 'AMQP 1.0 over TLS port for devices and the service SDK (0 = any free port)'),
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
  c2dMaxDeliveryCount: {
    type: 'integer',
    default: 10,
    min: 1,
    max: 100,
    description: 'deliveries of a cloud-to-device message before it is dead-lettered (feedback DeliveryCountExceeded)',
  },
  connectTimeoutMs: {
    type: 'integer',
    default: DEFAULT_CONNECT_TIMEOUT_MS,
    min: 100,
    max: 600000,
    description: 'milliseconds a device connection has to finish its TLS handshake, and then again to send CONNECT',
  },
  fileUploadConnectionString: {
    type: 'string',
    default: '',
    description:
      'storage connection string (HTTPS endpoint, account key) devices upload files into (under offcloud up: the storage component\'s; "" = no file upload)',
  },
  fileUploadContainer: { type: 'string', default: 'fileupload', description: 'container file uploads go into, made when missing' },
  fileUploadSasTtlSeconds: { type: 'integer', default: 3600, min: 60, max: 86400, description: 'how long the SAS URI a device gets for an upload is valid' },
  fileUploadNotifications: {
    type: 'boolean',
    default: true,
    description: 'send a file notification to the service side for each successful upload (the file notification receiver)',
  },
  telemetryLogSize: { type: 'integer', default: 10000, min: 1, max: 1000000, description: 'telemetry messages kept for GET /messages/events' },
} as const;
