// A tiny ZIP writer for the hostile ZIPs yazl refuses to write (`../x`, a symbolic link entry, a
// wrong CRC, an encrypted flag, lying sizes): local headers, the central directory and the end
// record, every field overridable. Entries are stored, or deflated with `method: 8`.
import { crc32, deflateRawSync } from 'node:zlib';

export interface RawZipEntry {
  name: string;
  data?: string | Buffer;
  /** 0 stored (the default), 8 deflated. */
  method?: 0 | 8;
  /** The bytes written as the entry's data, instead of `data` (compressed when method is 8). */
  rawData?: Buffer;
  crc32?: number;
  compressedSize?: number;
  uncompressedSize?: number;
  /** General purpose bit flag: 0x0800 (UTF-8 name) unless given; bit 0 is "encrypted". */
  flags?: number;
  /** Unix mode in the high 16 bits: a regular file 0644 unless given. */
  externalAttributes?: number;
  /** 0x031e (unix, spec 3.0) unless given. */
  versionMadeBy?: number;
}

/** 2024-01-02 03:04:06, local time, in DOS form. */
const DOS_TIME = (3 << 11) | (4 << 5) | (6 / 2);
const DOS_DATE = ((2024 - 1980) << 9) | (1 << 5) | 2;

export function rawZip(entries: RawZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = Buffer.from(entry.data ?? '');
    const method = entry.method ?? 0;
    const body = entry.rawData ?? (method === 8 ? deflateRawSync(data) : data);
    const fields = {
      flags: entry.flags ?? 0x0800,
      crc: entry.crc32 ?? crc32(data),
      compressed: entry.compressedSize ?? body.length,
      uncompressed: entry.uncompressedSize ?? data.length,
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(fields.flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(fields.crc >>> 0, 14);
    local.writeUInt32LE(fields.compressed, 18);
    local.writeUInt32LE(fields.uncompressed, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(entry.versionMadeBy ?? 0x031e, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(fields.flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(DOS_TIME, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(fields.crc >>> 0, 16);
    central.writeUInt32LE(fields.compressed, 20);
    central.writeUInt32LE(fields.uncompressed, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((entry.externalAttributes ?? 0o100644 << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
