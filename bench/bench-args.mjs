// Command-line arguments of the benchmark scripts, parsed the same way in each: a literal `--`
// first is skipped (`pnpm bench:x -- --full` passes one), `-h`/`--help` prints the usage, and
// a bad argument prints the problem and the usage and exits 2.
import os from 'node:os';
import { parseArgs } from 'node:util';

/**
 * Parses `process.argv` against `options` (node:util parseArgs options; `help` is added).
 * Returns the values and `usageError(message)`, which exits 2 naming the script.
 */
export function parseBenchArgs(script, usage, options) {
  const usageError = (message) => {
    process.stderr.write(`${script}: ${message}\n${usage}\n`);
    process.exit(2);
  };
  const argv = process.argv.slice(2);
  if (argv[0] === '--') argv.shift();
  let args;
  try {
    args = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h', default: false } } }).values;
  } catch (error) {
    usageError(error.message);
  }
  if (args.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  return { args, usageError };
}

/** A whole number of at least `min`, or a usage error naming the option. */
export function wholeNumberArg(value, name, usageError, min = 1) {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < min) usageError(`${name} must be a whole number of at least ${min}, not "${value}"`);
  return number;
}

/** `--only a,b`: the sections named (all of `known` when absent), or a usage error naming an unknown one. */
export function sectionsArg(only, known, usageError) {
  const sections = only === undefined ? known : only.split(',').map((name) => name.trim());
  for (const name of sections) if (!known.includes(name)) usageError(`--only: unknown section "${name}" (sections: ${known.join(', ')})`);
  return sections;
}

/** The machine a benchmark ran on, as every results file records it. */
export function machineFacts() {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    totalMemoryBytes: os.totalmem(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    v8: process.versions.v8,
  };
}
