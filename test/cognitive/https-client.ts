/**
 * A program written against today's SDKs with no insecure option: it calls
 * the container at an https:// endpoint and prints what it got as one JSON
 * line. The tests run it in its own process, because Node reads
 * NODE_EXTRA_CA_CERTS (the local CA a container with --tls uses) only at
 * start, exactly as a user's program would be run.
 * Usage: https-client.ts language|face <endpoint> [image file]
 */
import { readFileSync } from 'node:fs';
import { AzureKeyCredential, TextAnalysisClient } from '@azure/ai-language-text';
import createFaceClient, { isUnexpected } from '@azure-rest/ai-vision-face';

const [kind, endpoint, imageFile] = process.argv.slice(2);

if (kind === 'language') {
  const client = new TextAnalysisClient(endpoint!, new AzureKeyCredential('any-key'));
  const [result] = await client.analyze('SentimentAnalysis', ['What a wonderful evening.'], 'en');
  console.log(JSON.stringify({ sentiment: result?.error ? result.error.code : result?.sentiment }));
} else if (kind === 'face') {
  const client = createFaceClient(endpoint!, new AzureKeyCredential('any-key'));
  const response = await client.path('/detect').post({
    contentType: 'application/octet-stream',
    queryParameters: { detectionModel: 'detection_03', recognitionModel: 'recognition_04', returnFaceId: false },
    body: readFileSync(imageFile!),
  });
  if (isUnexpected(response)) throw new Error(JSON.stringify(response.body));
  console.log(JSON.stringify({ faces: response.body.length }));
} else {
  throw new Error(`unknown client ${kind}`);
}
