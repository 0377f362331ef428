// The catalog's synchronous PostgreSQL connection (catalog/pg-connection.ts) when things go
// wrong: a statement past its timeout is ended by the server and the connection goes on; a
// server that accepts and then says nothing is given up after the timeout and its grace, and
// every later call fails at once instead of waiting again; a server that stops mid-session
// fails the next call with one error, never a hang; a bad statement is an error with its
// SQLSTATE and leaves the connection usable; answers are never mixed up, whatever the load.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { POSTGRES_SKIP, type Postgres, startPostgres } from '../../../test/postgres-server.ts';
import { PgConnection, PgFailure } from '../src/catalog/pg-connection.ts';

test('a server that accepts and never answers is given up after the timeout and its grace, then fails at once', async () => {
  const sockets: Socket[] = [];
  const silent = createServer((socket) => void sockets.push(socket));
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  const { port } = silent.address() as { port: number };
  const connection = new PgConnection(`postgres://nobody@127.0.0.1:${port}/none`, { statementTimeoutMs: 200, silenceGraceMs: 300 });
  try {
    const started = Date.now();
    assert.throws(
      () => connection.query('SELECT 1'),
      (error: PgFailure) => error instanceof PgFailure && /did not answer within 1 s/.test(error.message),
    );
    const waited = Date.now() - started;
    assert.ok(waited >= 450, `waited ${waited} ms: the timeout and its grace`);
    // Far below the default wait (11 minutes), whatever the load.
    assert.ok(waited < 60_000, `waited ${waited} ms`);
    const again = Date.now();
    assert.throws(() => connection.query('SELECT 1'), /did not answer/);
    assert.ok(Date.now() - again < 100, 'a broken connection fails at once');
  } finally {
    connection.close();
    for (const socket of sockets) socket.destroy();
    silent.close();
  }
});

describe('against a real server', { skip: POSTGRES_SKIP }, () => {
  let postgres: Postgres;
  let url: string;
  before(async () => {
    postgres = await startPostgres();
    url = await postgres.createDatabase('connection');
  });
  after(async () => postgres?.stop());

  test('a statement past its timeout is ended by the server, and the connection goes on', () => {
    const connection = new PgConnection(url, { statementTimeoutMs: 300 });
    try {
      const started = Date.now();
      assert.throws(
        () => connection.query('SELECT pg_sleep(5)'),
        (error: PgFailure) => error.sqlState === '57014',
      );
      assert.ok(Date.now() - started < 4000);
      assert.deepEqual(connection.query('SELECT 1 AS one').rows, [{ one: 1 }]);
    } finally {
      connection.close();
    }
  });

  test('a wake with no answer behind it is not taken for one', () => {
    // The worker counts an answer, then wakes this thread. Paused in between (as under load), its
    // wake came during the next query and was once taken for that query's answer: "thread ended".
    // Here the worker wakes the thread once more before each answer.
    const connection = new PgConnection(url, { extraWakes: true });
    try {
      for (let n = 0; n < 50; n++) assert.equal(connection.query('SELECT $1::int AS n', [n]).rows[0]?.n, n);
    } finally {
      connection.close();
    }
  });

  test('a bad statement is an error with its SQLSTATE, and the connection goes on', () => {
    const connection = new PgConnection(url);
    try {
      assert.throws(
        () => connection.query('SELEC 1'),
        (error: PgFailure) => error.sqlState === '42601',
      );
      assert.throws(
        () => connection.query('SELECT * FROM absent'),
        (error: PgFailure) => error.sqlState === '42P01',
      );
      assert.deepEqual(connection.query('SELECT $1::int AS n, $2::text AS t', [7, 'x']).rows, [{ n: 7, t: 'x' }]);
    } finally {
      connection.close();
    }
  });

  test('a server that stops mid-session fails the next call with one error', async () => {
    const own = await startPostgres();
    const connection = new PgConnection(await own.createDatabase('stopping'));
    try {
      assert.deepEqual(connection.query('SELECT 2 AS two').rows, [{ two: 2 }]);
      await own.stop();
      const started = Date.now();
      assert.throws(() => connection.query('SELECT 3'), PgFailure);
      // Far below the default wait (11 minutes), whatever the load.
      assert.ok(Date.now() - started < 60_000, 'no hang');
    } finally {
      connection.close();
      await own.stop();
    }
  });
});
