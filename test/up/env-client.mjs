// Run by test/up/copy-and-env.test.ts after `eval "$(offcloud env)"`: the Azure SDKs as
// their samples use them, unmodified, reading only the environment. Prints one JSON line.
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import { BlobServiceClient } from '@azure/storage-blob';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';

const credential = new DefaultAzureCredential();
const token = await credential.getToken('https://storage.azure.com/.default');
const managed = await new ManagedIdentityCredential().getToken('https://storage.azure.com/.default');

const byKey = BlobServiceClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING);
await byKey.getContainerClient('from-env').createIfNotExists();
// The same account over HTTPS with DefaultAzureCredential's token (CA trusted through NODE_EXTRA_CA_CERTS).
const byToken = new BlobServiceClient(`${process.env.STORAGE_URL}/devstoreaccount1`, credential);
const containers = [];
for await (const container of byToken.listContainers()) containers.push(container.name);

const device = deviceSdk.Client.fromConnectionString(process.env.IOTHUB_DEVICE_CONNECTION_STRING, mqttTransport.Mqtt);
await device.open();
await device.sendEvent(new deviceSdk.Message('{"from":"env"}'));
await device.close();

console.log(JSON.stringify({ tokenLength: token.token.length, managedLength: managed.token.length, containers, device: 'sent' }));
