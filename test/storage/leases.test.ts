/**
 * Lease Blob and Lease Container through the SDK: acquire, renew, change, release, break,
 * the lease condition on writes and deletes, and time (fixed leases run out, breaks
 * complete) moved by the server's injected clock instead of sleeping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RestError } from '@azure/storage-blob';
import { startSharedKeyStorage } from './helpers.ts';

const refusedWith = (statusCode: number, code: string) => (err: RestError) => {
  assert.equal(err.statusCode, statusCode, err.message);
  assert.equal(err.code, code, err.message);
  return true;
};

const LEASE_A = '11111111-1111-4111-8111-111111111111';
const LEASE_B = '22222222-2222-4222-8222-222222222222';

test('blob leases: a leased blob refuses writes and deletes without its id; renew, change, release; fixed leases expire by the clock', async (t) => {
  let now = Date.now();
  const { service } = await startSharedKeyStorage(t, { clock: () => now });
  const container = service.getContainerClient('leases');
  await container.create();
  const blob = container.getBlockBlobClient('held.txt');
  await blob.upload('held', 4);
  const leases = blob.getBlobLeaseClient(LEASE_A);
  const acquired = await leases.acquireLease(15);
  assert.equal(acquired.leaseId, LEASE_A);
  let properties = await blob.getProperties();
  assert.deepEqual([properties.leaseState, properties.leaseStatus, properties.leaseDuration], ['leased', 'locked', 'fixed']);

  await assert.rejects(blob.upload('other', 5), refusedWith(412, 'LeaseIdMissing'));
  await assert.rejects(blob.delete(), refusedWith(412, 'LeaseIdMissing'));
  await assert.rejects(blob.setMetadata({ a: 'b' }, { conditions: { leaseId: LEASE_B } }), refusedWith(412, 'LeaseIdMismatchWithBlobOperation'));
  await blob.upload('changed under lease', 19, { conditions: { leaseId: LEASE_A } });
  await assert.rejects(blob.getBlobLeaseClient(LEASE_B).acquireLease(-1), refusedWith(409, 'LeaseAlreadyPresent'));
  await assert.rejects(blob.getBlobLeaseClient(LEASE_B).renewLease(), refusedWith(409, 'LeaseIdMismatchWithLeaseOperation'));

  // 16 seconds later the fixed lease has run out: anyone may write, and a new lease may be taken.
  now += 16_000;
  properties = await blob.getProperties();
  assert.deepEqual([properties.leaseState, properties.leaseStatus], ['expired', 'unlocked']);
  await blob.setMetadata({ after: 'expiry' });
  await leases.renewLease();
  assert.equal((await blob.getProperties()).leaseState, 'leased', 'an expired lease renews with its id');

  await leases.changeLease(LEASE_B);
  await assert.rejects(blob.setMetadata({ a: 'b' }, { conditions: { leaseId: LEASE_A } }), refusedWith(412, 'LeaseIdMismatchWithBlobOperation'));
  await blob.getBlobLeaseClient(LEASE_B).releaseLease();
  assert.equal((await blob.getProperties()).leaseState, 'available');
  await assert.rejects(blob.setMetadata({ a: 'b' }, { conditions: { leaseId: LEASE_B } }), refusedWith(412, 'LeaseNotPresentWithBlobOperation'));
  await assert.rejects(blob.getBlobLeaseClient(LEASE_B).releaseLease(), refusedWith(409, 'LeaseNotPresentWithLeaseOperation'));
});

test('breaking a lease: breaking for its period (writes still need the id), then broken; an infinite lease breaks at once by default', async (t) => {
  let now = Date.now();
  const { service } = await startSharedKeyStorage(t, { clock: () => now });
  const container = service.getContainerClient('breaks');
  await container.create();
  const blob = container.getBlockBlobClient('b.txt');
  await blob.upload('b', 1);
  const leases = blob.getBlobLeaseClient(LEASE_A);
  await leases.acquireLease(-1);
  const broken = await leases.breakLease(10);
  assert.equal(broken.leaseTime, 10);
  assert.equal((await blob.getProperties()).leaseState, 'breaking');
  await assert.rejects(blob.getBlobLeaseClient(LEASE_B).acquireLease(-1), refusedWith(409, 'LeaseIsBreakingAndCannotBeAcquired'));
  await assert.rejects(blob.upload('x', 1), refusedWith(412, 'LeaseIdMissing'));
  now += 10_000;
  assert.equal((await blob.getProperties()).leaseState, 'broken');
  await assert.rejects(leases.renewLease(), refusedWith(409, 'LeaseIsBrokenAndCannotBeRenewed'));
  await blob.upload('free again', 10);
  await blob.getBlobLeaseClient(LEASE_B).acquireLease(-1);
  assert.equal((await blob.getBlobLeaseClient(LEASE_B).breakLease(0)).leaseTime, 0);
  assert.equal((await blob.getProperties()).leaseState, 'broken');
});

test('container leases: Delete Container and Set Container Metadata need the lease; break and release; listings show the state', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('leased-container');
  await container.create();
  const leases = container.getBlobLeaseClient(LEASE_A);
  await leases.acquireLease(-1);
  const properties = await container.getProperties();
  assert.deepEqual([properties.leaseState, properties.leaseStatus, properties.leaseDuration], ['leased', 'locked', 'infinite']);
  for await (const item of service.listContainers({ prefix: 'leased' })) assert.equal(item.properties.leaseState, 'leased');
  await assert.rejects(container.delete(), refusedWith(412, 'LeaseIdMissing'));
  await assert.rejects(container.delete({ conditions: { leaseId: LEASE_B } }), refusedWith(412, 'LeaseIdMismatchWithContainerOperation'));
  await container.setMetadata({ kept: 'yes' }, { conditions: { leaseId: LEASE_A } });
  await container.setMetadata({ no: 'lease-id' });
  await leases.releaseLease();
  await assert.rejects(container.delete({ conditions: { leaseId: LEASE_A } }), refusedWith(412, 'LeaseNotPresentWithContainerOperation'));
  await container.getBlobLeaseClient(LEASE_B).acquireLease(20);
  await container.delete({ conditions: { leaseId: LEASE_B } });
  assert.equal(await container.exists(), false);
});

test('lease requests with bad headers are refused with the service codes and change nothing', async (t) => {
  const { service } = await startSharedKeyStorage(t);
  const container = service.getContainerClient('bad-leases');
  await container.create();
  const blob = container.getBlockBlobClient('x');
  await blob.upload('x', 1);
  await assert.rejects(blob.getBlobLeaseClient(LEASE_A).acquireLease(5), refusedWith(400, 'InvalidHeaderValue'));
  await assert.rejects(blob.getBlobLeaseClient('not-a-guid').acquireLease(-1), refusedWith(400, 'InvalidHeaderValue'));
  await assert.rejects(blob.getBlobLeaseClient(LEASE_A).breakLease(61), refusedWith(400, 'InvalidHeaderValue'));
  await assert.rejects(container.getBlockBlobClient('missing').getBlobLeaseClient(LEASE_A).acquireLease(-1), refusedWith(404, 'BlobNotFound'));
  assert.equal((await blob.getProperties()).leaseState, 'available');
});
