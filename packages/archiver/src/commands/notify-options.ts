import type { Command } from 'commander';
import type { NotifyOptions } from '../health/notify.js';
import { httpUrl } from './option-parsers.js';

/** The notification options of `mirror` and `verify` (docs/operations.md, "Notifications"). */
export function withNotifyOptions(command: Command): Command {
  return command
    .option(
      '--on-failure <CMD>',
      'after a failed attempt (or damage found), run this shell command with the notice as JSON on its input and in OAIBAG_* variables',
    )
    .option('--notify <URL>', 'after a failed attempt (or damage found), POST the notice as JSON to this http(s) URL', httpUrl('--notify'));
}

/** The notification settings given, or undefined when none. */
export function notifyFromOptions(options: { onFailure?: string; notify?: string }, log: (line: string) => void): NotifyOptions | undefined {
  if (options.onFailure === undefined && options.notify === undefined) return undefined;
  return { onFailure: options.onFailure, notifyUrl: options.notify, log };
}
