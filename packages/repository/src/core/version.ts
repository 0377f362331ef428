import { createRequire } from 'node:module';

/** This package's version, from its package.json (one place to change it). */
export const REPOSITORY_VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
