// Which network addresses a harvest may connect to when it follows a remote repository's URLs
// (By-Reference `ref`s and their redirects). A repository is not trusted to point the harvester
// into the harvester's own network: a cloud metadata service (169.254.169.254), an admin page
// on localhost, a database on 10.x. Pure functions over addresses; the resolving and pinning
// happen in origin-pools.ts.

import { BlockList, isIP } from 'node:net';

/** The kind of network an address belongs to; everything but `public` is refused by default. */
export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

const RANGES: ReadonlyArray<[Exclude<AddressKind, 'public'>, 'ipv4' | 'ipv6', string, number]> = [
  ['unspecified', 'ipv4', '0.0.0.0', 8],
  ['loopback', 'ipv4', '127.0.0.0', 8],
  ['private', 'ipv4', '10.0.0.0', 8],
  ['private', 'ipv4', '172.16.0.0', 12],
  ['private', 'ipv4', '192.168.0.0', 16],
  ['private', 'ipv4', '100.64.0.0', 10], // carrier-grade NAT (RFC 6598)
  ['link-local', 'ipv4', '169.254.0.0', 16], // cloud metadata services live here
  ['reserved', 'ipv4', '192.0.0.0', 24], // IETF protocol assignments
  ['reserved', 'ipv4', '192.0.2.0', 24], // documentation
  ['reserved', 'ipv4', '198.18.0.0', 15], // benchmarking
  ['reserved', 'ipv4', '198.51.100.0', 24],
  ['reserved', 'ipv4', '203.0.113.0', 24],
  ['multicast', 'ipv4', '224.0.0.0', 4],
  ['reserved', 'ipv4', '240.0.0.0', 4], // includes 255.255.255.255
  ['unspecified', 'ipv6', '::', 128],
  ['loopback', 'ipv6', '::1', 128],
  ['private', 'ipv6', 'fc00::', 7], // unique local
  ['link-local', 'ipv6', 'fe80::', 10],
  ['reserved', 'ipv6', 'fec0::', 10], // deprecated site-local
  ['multicast', 'ipv6', 'ff00::', 8],
  ['reserved', 'ipv6', '2001:db8::', 32], // documentation
  ['reserved', 'ipv6', '2001::', 32], // Teredo: the IPv4 address inside is not checkable
  ['reserved', 'ipv6', '100::', 64], // discard
];

const LISTS = new Map<AddressKind, BlockList>();
for (const [kind, type, network, prefix] of RANGES) {
  let list = LISTS.get(kind);
  if (!list) LISTS.set(kind, (list = new BlockList()));
  list.addSubnet(network, prefix, type);
}

/**
 * The kind of an IP address (a literal, as DNS returns it). An IPv6 address that carries an
 * IPv4 one (`::ffff:10.0.0.1`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4
 * address inside, since that is where the packets go. Anything that is not an IP literal is
 * `reserved` (refused).
 */
export function addressKind(address: string): AddressKind {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''); // brackets, zone index
  const family = isIP(bare);
  if (family === 0) return 'reserved';
  if (family === 6) {
    const inner = embeddedIpv4(bare);
    if (inner !== undefined) return addressKind(inner);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [kind, list] of LISTS) if (list.check(bare, type)) return kind;
  return 'public';
}

/** The IPv4 address an IPv6 address stands for, when it is mapped, NAT64 or 6to4. */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (groups === undefined) return undefined;
  const v4 = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const zeros = (from: number, to: number): boolean => groups.slice(from, to).every((group) => group === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6]!, groups[7]!); // ::ffff:a.b.c.d
  if (zeros(0, 6) && (groups[6] !== 0 || groups[7]! > 1)) return v4(groups[6]!, groups[7]!); // ::a.b.c.d (deprecated)
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return v4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  return undefined;
}

/** The eight 16-bit groups of an IPv6 literal (dotted IPv4 tail allowed). */
function expandIpv6(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string?];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const first = parse(head);
  const last = tail === undefined ? [] : parse(tail);
  const missing = 8 - first.length - last.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return undefined;
  return [...first, ...new Array<number>(missing).fill(0), ...last];
}

/** What a harvest may connect to: the repository's own kinds of address, or everything. */
export interface AddressPolicy {
  /** The kinds of the repository's own addresses: refs into that same kind of network are its own. */
  repositoryKinds: ReadonlySet<AddressKind>;
  /** `--allow-private-refs`: any address at all. */
  allowPrivate: boolean;
}

/**
 * Why a connection to `address` is refused, or undefined when it is allowed: public addresses
 * always are; a non-public one only when the repository itself is at an address of the same
 * kind (a repository on a private network may point at its neighbours, one on loopback at its
 * own machine), or when the user allowed it.
 */
export function refusalOf(address: string, policy: AddressPolicy): string | undefined {
  const kind = addressKind(address);
  if (kind === 'public' || policy.allowPrivate || policy.repositoryKinds.has(kind)) return undefined;
  return `${address} is a ${kind} address`;
}

/**
 * Whether a host with these kinds of address is on this machine or its local network
 * (loopback, private, link-local): there the link is much faster than compressing is (see
 * OaiClientOptions.compression).
 */
export function onLocalNetwork(kinds: ReadonlySet<AddressKind>): boolean {
  return kinds.size > 0 && [...kinds].every((kind) => kind === 'loopback' || kind === 'private' || kind === 'link-local');
}
