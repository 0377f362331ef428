/**
 * Reads a password: from a terminal without echo, else the first line of standard input
 * (so that scripts can pipe it in and it never appears in a command line or shell history).
 */
export async function readPassword(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = '';
    stdin.setEncoding('utf8');
    for await (const chunk of stdin) text += chunk as string;
    return text.split(/\r?\n/)[0] ?? '';
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  try {
    let password = '';
    for await (const chunk of stdin) {
      for (const char of chunk as string) {
        if (char === '\r' || char === '\n') return password;
        if (char === '\u0003') throw Object.assign(new Error('interrupted'), { code: 'EINTR' });
        if (char === '\u007f' || char === '\b') password = password.slice(0, -1);
        else password += char;
      }
    }
    return password;
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write('\n');
  }
}
