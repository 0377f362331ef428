// A hand-written S3 server on 127.0.0.1 that breaks one promise on purpose, for the capability
// probe's refusals (a real store keeps them all): it holds objects in memory, checks no
// signature, and answers just the requests the probe makes (bucket versioning and Object Lock
// settings, PUT with If-None-Match, GET with Range, ListObjectVersions, DELETE of a version).
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';

export type S3Fault =
  /** PUT If-None-Match: * on an existing key is accepted (an unversioned bucket). */
  | 'ignores-conditional-create'
  /** A GET answers one byte short of the object. */
  | 'short-reads'
  /** Object Lock is said to be on, and a locked version is deleted anyway. */
  | 'deletes-locked';

export interface FaultyS3 {
  endpoint: string;
  close(): Promise<void>;
}

export async function startFaultyS3(fault: S3Fault): Promise<FaultyS3> {
  const objects = new Map<string, { bytes: Buffer; versionId: string }>();
  let versions = 0;
  const server: Server = createServer(async (request, response) => {
    const url = new URL(request.url!, 'http://s3.test');
    const body: Buffer[] = [];
    for await (const chunk of request) body.push(chunk as Buffer);
    const [, , ...rest] = url.pathname.split('/');
    const key = decodeURIComponent(rest.join('/'));
    const xml = (status: number, text: string): void => {
      response.writeHead(status, { 'content-type': 'application/xml' });
      response.end(`<?xml version="1.0" encoding="UTF-8"?>${text}`);
    };
    if (key === '' && url.searchParams.has('versioning')) return xml(200, '<VersioningConfiguration/>');
    if (key === '' && url.searchParams.has('object-lock')) {
      if (fault === 'deletes-locked') return xml(200, '<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>');
      return xml(404, '<Error><Code>ObjectLockConfigurationNotFoundError</Code></Error>');
    }
    if (request.method === 'PUT') {
      if (request.headers['if-none-match'] === '*' && objects.has(key) && fault !== 'ignores-conditional-create') {
        return xml(412, '<Error><Code>PreconditionFailed</Code></Error>');
      }
      const versionId = `v${++versions}`;
      objects.set(key, { bytes: Buffer.concat(body), versionId });
      response.writeHead(200, { etag: '"0"', 'x-amz-version-id': versionId });
      return response.end();
    }
    if (request.method === 'GET' && key !== '') {
      const object = objects.get(key);
      if (object === undefined) return xml(404, '<Error><Code>NoSuchKey</Code></Error>');
      let bytes = object.bytes;
      const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? '');
      if (range) bytes = bytes.subarray(Number(range[1]), Number(range[2]) + 1);
      if (fault === 'short-reads') bytes = bytes.subarray(0, bytes.length - 1);
      response.writeHead(range ? 206 : 200, { 'content-length': String(bytes.length) });
      return response.end(bytes);
    }
    if (request.method === 'DELETE') {
      objects.delete(key);
      response.writeHead(204);
      return response.end();
    }
    return xml(400, '<Error><Code>NotImplemented</Code></Error>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
