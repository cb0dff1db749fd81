import { containerListXml } from '../xml.ts';
import { errors } from '../errors.ts';
import { listingQuery, page, type Operation } from './context.ts';

/** List Containers (§4.10): `GET /?comp=list` with prefix, marker/NextMarker paging and include=metadata. */
export async function listContainers(op: Operation): Promise<void> {
  await op.authorize('list');
  const query = listingQuery(op);
  const matching = op.store.listContainers().filter((c) => c.name.startsWith(query.prefix));
  const result = page(matching, (c) => c.name, query.marker, query.maxResults);
  await op.reply
    .code(200)
    .type('application/xml')
    .send(containerListXml(op.endpoint, result, query));
}

export async function serviceOperation(op: Operation): Promise<void> {
  if (op.request.method === 'GET' && op.query.get('comp') === 'list') return listContainers(op);
  throw errors.invalidQuery('comp');
}
