import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AddressKind, addressKind, refusalOf } from '../src/oai/address-policy.ts';
import { OriginPools } from '../src/oai/origin-pools.ts';

test('addresses are sorted into the networks they lead to, IPv4 inside IPv6 included', () => {
  const table: Array<[string, AddressKind]> = [
    ['93.184.216.34', 'public'],
    ['8.8.8.8', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['fd00::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.7', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:93.184.216.34', 'public'],
    ['64:ff9b::a9fe:a9fe', 'link-local'], // NAT64 of 169.254.169.254
    ['2002:c0a8:0101::1', 'private'], // 6to4 of 192.168.1.1
    ['not an address', 'reserved'],
  ];
  for (const [address, kind] of table) assert.equal(addressKind(address), kind, address);
});

test('a public repository may point only at public addresses, unless the user allows the others', () => {
  const publicRepository = { repositoryKinds: new Set<AddressKind>(['public']), allowPrivate: false };
  for (const address of ['10.1.2.3', '127.0.0.1', '::1', '169.254.169.254', '::ffff:192.168.0.1', 'fd12::1', '0.0.0.0']) {
    assert.match(refusalOf(address, publicRepository) ?? '', new RegExp(`^${address.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is a `), address);
  }
  assert.equal(refusalOf('93.184.216.34', publicRepository), undefined);
  const allowed = { repositoryKinds: new Set<AddressKind>(['public']), allowPrivate: true };
  for (const address of ['10.1.2.3', '127.0.0.1', '169.254.169.254']) assert.equal(refusalOf(address, allowed), undefined);
});

test('a repository on a private network or on loopback may point at its own kind of network, not at others', () => {
  const intranet = { repositoryKinds: new Set<AddressKind>(['private']), allowPrivate: false };
  assert.equal(refusalOf('10.9.9.9', intranet), undefined);
  assert.equal(refusalOf('192.168.3.3', intranet), undefined);
  assert.equal(refusalOf('127.0.0.1', intranet), '127.0.0.1 is a loopback address');
  assert.equal(refusalOf('169.254.169.254', intranet), '169.254.169.254 is a link-local address');
  const local = { repositoryKinds: new Set<AddressKind>(['loopback']), allowPrivate: false };
  assert.equal(refusalOf('127.0.0.2', local), undefined);
  assert.equal(refusalOf('10.0.0.1', local), '10.0.0.1 is a private address');
});

test('origin pools of a public-looking repository refuse private names and literals before connecting, and open one pool per origin', async () => {
  const answers: Record<string, string> = { 'repo.example': '93.184.216.34', 'cdn.example': '151.101.1.1', 'intranet.example': '10.0.0.7' };
  const asked: string[] = [];
  const pools = new OriginPools({
    repository: new URL('https://repo.example/oai'),
    maxOrigins: 2,
    resolve: async (hostname) => {
      asked.push(hostname);
      return hostname === 'both.example'
        ? [
            { address: '151.101.1.1', family: 4 },
            { address: '::1', family: 6 },
          ]
        : [{ address: answers[hostname]!, family: 4 }];
    },
  });
  try {
    await assert.rejects(pools.pool(new URL('http://127.0.0.1:8080/x')), {
      code: 'ERR_HARVEST_REF_REFUSED',
      message: 'http://127.0.0.1:8080/x is refused: 127.0.0.1 is a loopback address',
    });
    await assert.rejects(pools.pool(new URL('http://[::1]/x')), { code: 'ERR_HARVEST_REF_REFUSED' });
    await assert.rejects(pools.pool(new URL('https://intranet.example/file')), {
      code: 'ERR_HARVEST_REF_REFUSED',
      message: 'https://intranet.example/file is refused: intranet.example resolves to 10.0.0.7 is a private address',
    });
    await assert.rejects(pools.pool(new URL('https://both.example/file')), {
      code: 'ERR_HARVEST_REF_REFUSED',
      message: 'https://both.example/file is refused: both.example resolves to ::1 is a loopback address',
    });
    const first = await pools.pool(new URL('https://cdn.example/a'));
    assert.equal(await pools.pool(new URL('https://cdn.example/b')), first, 'one pool per origin');
    // The name is resolved once per pool, not per request.
    assert.equal(asked.filter((name) => name === 'cdn.example').length, 1);
    // Bounded: a third origin closes the least recently used pool.
    await pools.pool(new URL('http://151.101.1.2/'));
    await pools.pool(new URL('http://151.101.1.3/'));
    assert.equal(first.closed, true);
  } finally {
    await pools.close();
  }
});
