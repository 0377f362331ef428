import { createHash, type Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { OaiHeader } from './model.js';

/** A By-Value datastream handed to the caller while it is being decoded. */
export interface IncomingDatastream {
  /** The record's OAI-PMH header, when the DIDL came inside an OAI-PMH response. */
  header?: OaiHeader;
  /** The resource URL when already read (mod_oai writes Descriptors before Components). */
  identifier?: string;
  /** Indices of nested Items from the top Item down to the Item holding the Component. */
  itemPath: number[];
  /** Index of the Component inside its Item. */
  componentIndex: number;
  /** Index of the Resource inside its Component. */
  resourceIndex: number;
  mimeType?: string;
  /**
   * The SHA-256 the record promises for these bytes (lowercase hex), when a Descriptor before
   * the Resource gave one. A caller that holds such bytes already may decline them (see
   * `bytes`): the reader hashes them all the same, and the record's `byValue.sha256` says
   * what they were, to be compared with the promise.
   */
  promisedSha256?: string;
  /**
   * The decoded bytes, with backpressure: the reader waits while they are not read.
   * Consume them fully, call `bytes.resume()` to discard them, or `bytes.destroy()` to decline
   * them (nothing more is handed over; they are still counted and hashed). When the record
   * turns out to be bad the stream is destroyed with the DidlError.
   */
  bytes: Readable;
}

/** Called once per By-Value Resource. The reader awaits the returned promise at the Resource's end. */
export type DatastreamHandler = (datastream: IncomingDatastream) => void | Promise<void>;

/**
 * Asked, before a By-Value datastream is handed over, when its record promised a SHA-256 for
 * it: true declines the bytes (the caller holds such bytes already). The reader then makes no
 * stream for them and does not call `onDatastream`; it still measures and hashes them, and
 * checks them against the promise with the rest of the record.
 */
export type DeclineHeld = (promisedSha256: string, datastream: Omit<IncomingDatastream, 'bytes'>) => boolean;

/** Readable whose producer can wait until the consumer wants more. */
class DatastreamReadable extends Readable {
  private wake: (() => void) | undefined;

  override _read(): void {
    this.wakeProducer();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.wakeProducer();
    callback(error);
  }

  /**
   * Resolves once the consumer wants more. The consumer may have emptied the buffer (and Node
   * called `_read`, once) between the `push` that returned false and this call: then the
   * demand is already there, and waiting for another `_read` would wait forever, since Node
   * calls it again only after the next push. (Seen as a harvest of a 1 GiB By-Value record
   * stopping for good, now and then, when the disk was busy.)
   */
  waitForDemand(): Promise<void> {
    if (this.destroyed || this.readableLength < this.readableHighWaterMark) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  private wakeProducer(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/**
 * Receives the decoded bytes of one By-Value Resource: counts and hashes them, and passes
 * them to the caller's stream when there is one.
 */
export class ByValueSink {
  size = 0;
  private readonly hash: Hash = createHash('sha256');
  private readonly stream: DatastreamReadable | undefined;
  private consumer: Promise<void> | undefined;
  /** Set when the caller's handler failed on its own (not because we destroyed the stream). */
  consumerError: unknown;
  private abandoned = false;

  constructor(handler: DatastreamHandler | undefined, info: Omit<IncomingDatastream, 'bytes'>, highWaterMark: number) {
    if (!handler) return;
    this.stream = new DatastreamReadable({ highWaterMark });
    const stream = this.stream;
    // We destroy the stream with the record's error when the record turns out bad; a
    // handler that discarded the bytes (resume()) or ignored them has no 'error' listener,
    // and that must not become an uncaught exception. The read rejects with the error anyway.
    stream.on('error', () => undefined);
    this.consumer = Promise.resolve()
      .then(() => handler({ ...info, bytes: stream }))
      .catch((error: unknown) => {
        if (!this.abandoned) this.consumerError = error ?? new Error('datastream handler failed');
        if (!stream.destroyed) stream.destroy();
      });
  }

  /** Takes decoded bytes; returns false when the caller should wait for `demand()` first. */
  write(bytes: Buffer): boolean {
    if (this.abandoned || bytes.length === 0) return true;
    this.size += bytes.length;
    this.hash.update(bytes);
    if (!this.stream || this.stream.destroyed) return true;
    return this.stream.push(bytes);
  }

  demand(): Promise<void> {
    return this.stream ? this.stream.waitForDemand() : Promise.resolve();
  }

  /** Ends the caller's stream and returns what was measured. */
  close(): { size: number; sha256: string } {
    if (this.stream && !this.stream.destroyed) this.stream.push(null);
    return { size: this.size, sha256: this.hash.digest('hex') };
  }

  /** Resolves when the caller's handler has finished; rejects with the handler's own failure. */
  async settled(): Promise<void> {
    await this.consumer;
    if (this.consumerError !== undefined) throw this.consumerError;
  }

  /** The Resource is bad: stop counting, destroy the caller's stream with `error`, wait for the handler. */
  async abandon(error: Error): Promise<void> {
    if (this.abandoned) return;
    this.abandoned = true;
    if (this.stream && !this.stream.destroyed) this.stream.destroy(error);
    await this.consumer;
  }

  get isAbandoned(): boolean {
    return this.abandoned;
  }
}
