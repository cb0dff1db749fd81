/**
 * CRC-64 as the storage service uses it: structured messages both ways through the SDK
 * (`contentChecksumAlgorithm: 'StorageCrc64'`, whose own CRC-64 code checks ours),
 * `x-ms-content-crc64` on writes and `x-ms-range-get-content-crc64` on reads, checked
 * against the published check value of the algorithm; and broken messages sent raw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential } from '@azure/storage-blob';
import { startStorage } from '../../src/storage/server.ts';
import { DEVELOPMENT_KEY } from '../../src/storage/persistence/accounts.ts';
import { tempDataDir } from '../helpers/index.ts';

/** The catalogue's check input and value for CRC-64/NVME (poly 0xAD93D23594C93659, reflected 0x9A6C9329AC4BC9B5, init and xorout all ones): the algorithm the service uses. */
const CHECK_INPUT = Buffer.from('123456789');
const CHECK_VALUE = Buffer.from('ae8b14860a799888', 'hex').reverse(); // the wire carries the value least significant byte first

function serviceError(status: number, code: string) {
  return (err: { statusCode?: number; code?: string }) => {
    assert.equal(err.statusCode, status);
    assert.equal(err.code, code);
    return true;
  };
}

/** Changes one bit of a byte. */
function flip(bytes: Buffer, at: number): void {
  bytes.writeUInt8(bytes.readUInt8(at) ^ 1, at);
}

/** A structured message of one segment holding CHECK_INPUT, written here from the format's description. */
function checkMessage(edit: (message: Buffer) => void = () => undefined): Buffer {
  const header = Buffer.alloc(13);
  const segmentHeader = Buffer.alloc(10);
  const length = 13 + 10 + CHECK_INPUT.length + 8 + 8;
  header.writeUInt8(1, 0);
  header.writeBigUInt64LE(BigInt(length), 1);
  header.writeUInt16LE(1, 9); // flags: CRC-64
  header.writeUInt16LE(1, 11); // one segment
  segmentHeader.writeUInt16LE(1, 0);
  segmentHeader.writeBigUInt64LE(BigInt(CHECK_INPUT.length), 2);
  const message = Buffer.concat([header, segmentHeader, CHECK_INPUT, CHECK_VALUE, CHECK_VALUE]);
  edit(message);
  return message;
}

test('CRC-64: structured messages up and down through the SDK (StorageCrc64), x-ms-content-crc64 and x-ms-range-get-content-crc64 against the check value; broken messages refused raw', async (t) => {
  const dataDir = await tempDataDir(t);
  const storage = await startStorage({ dataDir, port: 0, httpsPort: 0, logLevel: 'silent' });
  t.after(() => storage.close());
  const endpoint = storage.facts!.storage!.httpBlobEndpoint;
  const service = new BlobServiceClient(endpoint, new StorageSharedKeyCredential('devstoreaccount1', DEVELOPMENT_KEY));
  const container = service.getContainerClient('sums');
  await container.create();
  const crc = { contentChecksumAlgorithm: 'StorageCrc64' as const };

  // Put Blob of 9 MiB + 5 bytes: three segments up; the whole blob, and a range across segments, down.
  const big = randomBytes(9 * 1024 * 1024 + 5);
  const blob = container.getBlockBlobClient('big.bin');
  const put = await blob.upload(big, big.length, crc);
  assert.equal(put._response.headers.get('x-ms-structured-body'), 'XSM/1.0; properties=crc64');
  assert.deepEqual(await blob.downloadToBuffer(), big, 'stored as the content, not the message');
  const whole = await blob.download(0, undefined, crc);
  assert.equal(whole._response.headers.get('x-ms-structured-content-length'), String(big.length));
  const chunks: Buffer[] = [];
  for await (const chunk of whole.readableStreamBody!) chunks.push(chunk as Buffer);
  assert.deepEqual(Buffer.concat(chunks), big, 'the SDK unwrapped and checked every segment');
  const ranged = await blob.download(4 * 1024 * 1024 - 10, 4 * 1024 * 1024 + 20, crc);
  const rangeChunks: Buffer[] = [];
  for await (const chunk of ranged.readableStreamBody!) rangeChunks.push(chunk as Buffer);
  assert.deepEqual(Buffer.concat(rangeChunks), big.subarray(4 * 1024 * 1024 - 10, 8 * 1024 * 1024 + 10));
  const empty = container.getBlockBlobClient('empty');
  await empty.upload(Buffer.alloc(0), 0); // (the SDK's own encoder never finishes an empty structured upload)
  const emptyDown = await empty.download(0, undefined, crc);
  for await (const chunk of emptyDown.readableStreamBody!) assert.equal((chunk as Buffer).length, 0);

  // Put Block, Append Block, Put Page with structured bodies.
  const blocks = container.getBlockBlobClient('blocks.bin');
  await blocks.stageBlock('AAAA', CHECK_INPUT, CHECK_INPUT.length, crc);
  await blocks.commitBlockList(['AAAA']);
  assert.deepEqual(await blocks.downloadToBuffer(), CHECK_INPUT);
  const append = container.getAppendBlobClient('log');
  await append.create();
  await append.appendBlock(CHECK_INPUT, CHECK_INPUT.length, crc);
  await append.appendBlock(CHECK_INPUT, CHECK_INPUT.length, crc);
  assert.deepEqual(await append.downloadToBuffer(), Buffer.concat([CHECK_INPUT, CHECK_INPUT]));
  const pages = container.getPageBlobClient('disk');
  await pages.create(1024);
  const page = randomBytes(512);
  await pages.uploadPages(page, 512, 512, crc);
  assert.deepEqual((await pages.downloadToBuffer()).subarray(512), page);

  // x-ms-content-crc64: the check value passes and is echoed; any other is 400 Crc64Mismatch and nothing is staged.
  const staged = await blocks.stageBlock('QkJCQg==', CHECK_INPUT, CHECK_INPUT.length, { transactionalContentCrc64: CHECK_VALUE });
  assert.equal(staged._response.headers.get('x-ms-content-crc64'), CHECK_VALUE.toString('base64'));
  const wrong = Buffer.from(CHECK_VALUE);
  wrong[0]! ^= 1;
  await assert.rejects(
    blocks.stageBlock('Q0NDQw==', CHECK_INPUT, CHECK_INPUT.length, { transactionalContentCrc64: wrong }),
    serviceError(400, 'Crc64Mismatch'),
  );
  const list = await blocks.getBlockList('uncommitted');
  assert.deepEqual(
    list.uncommittedBlocks?.map((b) => b.name),
    ['QkJCQg=='],
  );
  await assert.rejects(append.appendBlock(CHECK_INPUT, CHECK_INPUT.length, { transactionalContentCrc64: wrong }), serviceError(400, 'Crc64Mismatch'));
  assert.equal((await append.getProperties()).contentLength, 18, 'the refused append left the blob as it was');
  const appended = await append.appendBlock(CHECK_INPUT, CHECK_INPUT.length, { transactionalContentCrc64: CHECK_VALUE });
  assert.equal(appended._response.headers.get('x-ms-content-crc64'), CHECK_VALUE.toString('base64'));

  // x-ms-range-get-content-crc64 on a range of at most 4 MiB.
  const check = container.getBlockBlobClient('check');
  await check.upload(Buffer.concat([Buffer.from('xx'), CHECK_INPUT]), 11);
  const rangeCrc = await check.download(2, 9, { rangeGetContentCrc64: true });
  assert.deepEqual(Buffer.from(rangeCrc.contentCrc64!), CHECK_VALUE);
  await assert.rejects(blob.download(0, 5 * 1024 * 1024, { rangeGetContentCrc64: true }), serviceError(400, 'OutOfRangeInput'));
  await assert.rejects(check.download(0, 5, { rangeGetContentCrc64: true, rangeGetContentMD5: true }), serviceError(400, 'InvalidHeaderValue'));

  // Raw: a message written here is taken; broken ones are refused and change nothing.
  const sas = new URL(await container.generateSasUrl({ permissions: ContainerSASPermissions.parse('racwd'), expiresOn: new Date(Date.now() + 600_000) }))
    .search;
  const putRaw = async (name: string, message: Buffer, headers: Record<string, string> = {}) => {
    const answer = await request(`${endpoint}/sums/${name}${sas}`, {
      method: 'PUT',
      body: message,
      headers: {
        'x-ms-version': '2026-04-06',
        'x-ms-blob-type': 'BlockBlob',
        'x-ms-structured-body': 'XSM/1.0; properties=crc64',
        'x-ms-structured-content-length': String(CHECK_INPUT.length),
        ...headers,
      },
    });
    const text = await answer.body.text();
    return { status: answer.statusCode, code: answer.headers['x-ms-error-code'], text };
  };
  assert.equal((await putRaw('raw', checkMessage())).status, 201);
  assert.deepEqual(await container.getBlockBlobClient('raw').downloadToBuffer(), CHECK_INPUT);
  const broken: [string, Buffer, Record<string, string>, number, string][] = [
    ['a content byte changed', checkMessage((m) => flip(m, 23)), {}, 400, 'Crc64Mismatch'],
    ['the segment CRC changed', checkMessage((m) => flip(m, 32)), {}, 400, 'Crc64Mismatch'],
    ['the message CRC changed', checkMessage((m) => flip(m, 40)), {}, 400, 'Crc64Mismatch'],
    ['version 2', checkMessage((m) => (m[0] = 2)), {}, 400, 'InvalidInput'],
    ['segment number 2', checkMessage((m) => (m[13] = 2)), {}, 400, 'InvalidInput'],
    ['cut short', checkMessage().subarray(0, 30), {}, 400, 'InvalidInput'],
    ['bytes after it', Buffer.concat([checkMessage(), Buffer.from('x')]), {}, 400, 'InvalidInput'],
    ['a shorter content length', checkMessage(), { 'x-ms-structured-content-length': '5' }, 400, 'InvalidInput'],
    ['a longer content length', checkMessage(), { 'x-ms-structured-content-length': '20' }, 400, 'InvalidInput'],
    ['no content length', checkMessage(), { 'x-ms-structured-content-length': '' }, 400, 'MissingRequiredHeader'],
    ['another format', checkMessage(), { 'x-ms-structured-body': 'XSM/2.0; properties=md5' }, 400, 'InvalidHeaderValue'],
    ['a CRC header of 4 bytes', CHECK_INPUT, { 'x-ms-structured-body': '', 'x-ms-content-crc64': 'AAAAAA==' }, 400, 'InvalidHeaderValue'],
  ];
  for (const [what, message, headers, status, code] of broken) {
    const cleaned = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ''));
    const without = Object.entries(headers)
      .filter(([, v]) => v === '')
      .map(([k]) => k);
    const sent = await (async () => {
      if (!without.length) return putRaw('raw', message, cleaned);
      const all: Record<string, string> = {
        'x-ms-version': '2026-04-06',
        'x-ms-blob-type': 'BlockBlob',
        'x-ms-structured-body': 'XSM/1.0; properties=crc64',
        'x-ms-structured-content-length': String(CHECK_INPUT.length),
        ...cleaned,
      };
      for (const name of without) delete all[name];
      const answer = await request(`${endpoint}/sums/raw${sas}`, { method: 'PUT', body: message, headers: all });
      return { status: answer.statusCode, code: answer.headers['x-ms-error-code'], text: await answer.body.text() };
    })();
    assert.equal(sent.status, status, `${what}: ${sent.text}`);
    assert.equal(sent.code, code, what);
  }
  assert.deepEqual(await container.getBlockBlobClient('raw').downloadToBuffer(), CHECK_INPUT, 'no refused message replaced the blob');
});
