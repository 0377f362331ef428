// A Ceph RADOS Gateway of a test's own (Debian 12's `radosgw`, `ceph-mon` and `ceph-osd`, which
// .ci/run installs when absent; their systemd units are never used): a one-node cluster in a
// short temporary folder, one monitor, one memstore OSD and one radosgw answering S3 on a free
// loopback port, with an S3 user made before the gateway starts. Started in about 2 s, stopped
// by PID in the order gateway → OSD → monitor. A memstore OSD cannot be restarted: a test that
// needs a fresh store starts another cluster. Where the binaries are missing, the tests that
// need them are skipped with CEPH_SKIP's message.
//
// The settings that matter (measured, issue 28): with `auth * required = none` the client mode
// must allow crc or radosgw never logs in; paxos intervals cut the start from ~13 s to ~2 s;
// pools of size 1 need `mon allow pool size one`, and 8 placement groups each keep RGW's eight
// pools inside the default budget; the zonegroup's api_name is the region requests are signed
// for.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';

const run = promisify(execFile);
const BINARIES = ['/usr/bin/ceph-mon', '/usr/bin/ceph-osd', '/usr/bin/radosgw', '/usr/bin/radosgw-admin', '/usr/bin/monmaptool', '/usr/bin/ceph'];

/** Why the tests that need an S3 server are skipped here, or false when they run. */
export const CEPH_SKIP: string | false = BINARIES.every((binary) => existsSync(binary))
  ? false
  : `${BINARIES.find((binary) => !existsSync(binary))} is missing (install Debian's radosgw, ceph-mon and ceph-osd, as .ci/run does): S3 storage is not tested`;

/** The region requests are signed for (the zonegroup's api_name). */
export const RGW_REGION = 'us-east-1';
/** How long a start may take (measured: about 2 s on an idle machine). */
const START_TIMEOUT_MS = 60_000;

export interface CephRgw {
  /** `http://127.0.0.1:PORT`. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The processes' ids, gateway first. */
  pids(): number[];
  /** Stops the cluster (gateway, OSD, monitor) and removes its folder: its data is gone. */
  stop(): Promise<void>;
}

export async function startCephRgw(): Promise<CephRgw> {
  // Short: the admin sockets' paths must fit in 108 characters.
  const folder = mkdtempSync('/tmp/rgw-');
  const monPort = await freePort();
  const rgwPort = await freePort();
  const fsid = crypto.randomUUID();
  const conf = join(folder, 'ceph.conf');
  for (const sub of ['run', 'log', 'mon-a', 'osd-0']) mkdirSync(join(folder, sub));
  writeFileSync(
    conf,
    `[global]
fsid = ${fsid}
mon host = 127.0.0.1:${monPort}
mon initial members = a
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc secure
mon allow pool size one = true
mon allow pool delete = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
paxos propose interval = 0.05
paxos min wait = 0.01
osd objectstore = memstore
memstore device bytes = 4294967296
run dir = ${folder}/run
admin socket = ${folder}/run/$name.asok
pid file = ${folder}/run/$name.pid
log file = ${folder}/log/$name.log
mon data = ${folder}/mon-$id
osd data = ${folder}/osd-$id
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
`,
  );
  const children: ChildProcess[] = [];
  const ceph = async (program: string, args: string[], input?: string): Promise<string> => {
    const promise = run(program, ['-c', conf, ...args], { timeout: 30_000 });
    if (input !== undefined) promise.child.stdin!.end(input);
    return (await promise).stdout;
  };
  const daemon = (program: string, args: string[]): void => {
    const child = spawn(program, ['-f', '-c', conf, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-2000);
    });
    child.on('exit', (code) => {
      if (!stopping && code !== 0) console.error(`${program} ended (${code}): ${stderr}`);
    });
    children.unshift(child);
  };
  let stopping = false;
  // A test process that ends without stopping the cluster takes it along.
  const orphan = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', orphan);
  const stop = async (): Promise<void> => {
    stopping = true;
    process.off('exit', orphan);
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const ended = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await ended;
      clearTimeout(timer);
    }
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    await run('monmaptool', ['--create', '--add', 'a', `127.0.0.1:${monPort}`, '--fsid', fsid, join(folder, 'monmap')]);
    await ceph('ceph-mon', ['--mkfs', '-i', 'a', '--monmap', join(folder, 'monmap')]);
    daemon('ceph-mon', ['-i', 'a']);
    await until(async () => (await ceph('ceph', ['mon', 'stat'])).includes('quorum'), 'the monitor');
    const osd = (await ceph('ceph', ['osd', 'create'])).trim();
    await ceph('ceph-osd', ['-i', osd, '--mkfs']);
    await ceph('ceph', ['osd', 'crush', 'add', `osd.${osd}`, '1', 'root=default']);
    daemon('ceph-osd', ['-i', osd]);
    await until(async () => (await ceph('ceph', ['osd', 'stat'])).includes('1 up'), 'the OSD');
    const accessKeyId = `AK${fsid.replaceAll('-', '').slice(0, 18).toUpperCase()}`;
    const secretAccessKey = `sk-${fsid}`;
    await ceph('radosgw-admin', ['user', 'create', '--uid=oaibag', '--display-name=oaibag', `--access-key=${accessKeyId}`, `--secret-key=${secretAccessKey}`]);
    const zonegroup = JSON.parse(await ceph('radosgw-admin', ['zonegroup', 'get'])) as { api_name: string };
    zonegroup.api_name = RGW_REGION;
    writeFileSync(join(folder, 'zonegroup.json'), JSON.stringify(zonegroup));
    await ceph('radosgw-admin', ['zonegroup', 'set', '--infile', join(folder, 'zonegroup.json')]);
    daemon('radosgw', ['-n', 'client.rgw']);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await until(async () => (await fetch(endpoint, { signal: AbortSignal.timeout(2000) })).ok, 'the gateway');
    return {
      endpoint,
      region: RGW_REGION,
      accessKeyId,
      secretAccessKey,
      pids: () => children.map((child) => child.pid!),
      stop,
    };
  } catch (error) {
    const logs = ['mon.a', 'osd.0', 'client.rgw'].map((name) => tail(join(folder, 'log', `${name}.log`))).join('');
    await stop();
    throw new Error(`the Ceph cluster did not start: ${(error as Error).message}${logs}`);
  }
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not answering yet
    }
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${START_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function tail(file: string): string {
  try {
    return `\n${file}: ${readFileSync(file, 'utf8').slice(-1500)}`;
  } catch {
    return '';
  }
}
