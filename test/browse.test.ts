// The archive for people (docs/browse.md), in headless Chromium (Debian's chromium, driven by
// playwright-core): the home page lists the source, a search finds a URL, replay shows an
// archived page under its banner with its image from the right capture and a link that opens
// the linked page's capture, the archived page's script can neither read the archive's cookies
// nor call its routes, and a diff page marks a changed line. Screenshots are checked by what
// they show (the banner's colour, the archived image's, the diff's).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { type Browser, chromium, type Frame, type Page } from 'playwright-core';
import { type ArchiveServer, startArchiveServer } from '../packages/archiver/src/index.ts';
import { HarvestedSite, YEAR_2000 } from './harvested-site.ts';
import { countColour, decodePng, solidPng } from './png-pixels.ts';

const CHROMIUM = '/usr/bin/chromium';
const NO_CHROMIUM = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (install Debian's chromium package, as .ci/run does): the pages are not checked in a browser`;

const RED: [number, number, number] = [220, 20, 20];
const GREEN: [number, number, number] = [20, 180, 60];
const BANNER: [number, number, number] = [0xff, 0xf8, 0xc5];

const page = (heading: string) => `<!DOCTYPE html>
<html><head><title>Home of the site</title><link rel="stylesheet" href="style.css"></head>
<body><h1>${heading}</h1><img id="logo" src="img/logo.png" alt="logo"><p><a id="about-link" href="about.html">About</a></p>
<div id="probe">not run</div>
<script>
  const out = [];
  try { out.push('cookie:' + document.cookie); } catch (e) { out.push('cookie-blocked'); }
  new Image().src = '/oai?verb=ListSets&from=image';
  fetch('/oai?verb=Identify&from=script').then(() => out.push('fetch-ok'), () => out.push('fetch-blocked'))
    .finally(() => { document.getElementById('probe').textContent = out.join(' '); });
</script></body></html>`;

let site: HarvestedSite;
let server: ArchiveServer;
let browser: Browser | undefined;
const served: string[] = [];
/** The two captures' timestamps (14 digits): the first harvest's, then the second's. */
let first: string;
let second: string;

const original = (path: string) => `${site.repository.baseUrl}/${path}`;

before(async () => {
  site = await HarvestedSite.start('oaibag-browse-', {
    'index.html': page('Welcome'),
    'about.html': '<!DOCTYPE html><html><head><title>About us</title></head><body><h1 id="about">About the site</h1></body></html>',
    'img/logo.png': solidPng(40, 40, RED),
    'style.css': 'h1 { color: rgb(0, 128, 0); }',
    'notes.txt': 'line one\nline two\nline three\n',
  });
  const later = YEAR_2000 + 86_400;
  site.write('index.html', page('Welcome back'), later);
  site.write('img/logo.png', solidPng(60, 60, GREEN), later);
  site.write('notes.txt', 'line one\nline 2 changed\nline three\n', later);
  await site.harvestAgain();
  server = await startArchiveServer({ archiveDir: site.archive, accessLog: (line) => served.push(line) });
  const timemap = await (await fetch(`${server.baseUrl}/timemap/link/${original('index.html')}`)).text();
  const stamps = [...timemap.matchAll(/datetime="([^"]+)"/g)].map((match) => new Date(match[1]!).toISOString().slice(0, 19).replace(/[-:T]/g, ''));
  assert.equal(stamps.length, 2, timemap);
  [first, second] = stamps as [string, string];
  if (!NO_CHROMIUM) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
});

after(async () => {
  await browser?.close();
  await server?.close();
  await site?.close();
});

async function openPage(): Promise<{ page: Page; requested: string[] }> {
  const context = await browser!.newContext({ viewport: { width: 1000, height: 700 } });
  // A cookie of the archive's: an archived script must not be able to read it.
  await context.addCookies([{ name: 'archive_session', value: 'secret-of-the-archive', url: server.baseUrl }]);
  const page = await context.newPage();
  const requested: string[] = [];
  // Requests the browser let through (one refused by the page's policy fails before it is sent).
  page.on('requestfinished', (request) => requested.push(request.url()));
  return { page, requested };
}

function replayFrame(page: Page): Frame {
  const frame = page.frames().find((candidate) => candidate.url().includes('mp_/'));
  assert.ok(
    frame,
    `no replay frame among ${page
      .frames()
      .map((candidate) => candidate.url())
      .join(', ')}`,
  );
  return frame;
}

test('the home page lists the source, and a search from it finds a URL', { skip: NO_CHROMIUM }, async () => {
  const { page } = await openPage();
  await page.goto(`${server.baseUrl}/`);
  assert.equal(await page.title(), 'The archive');
  const sources = (await page.locator('table').first().textContent()) ?? '';
  assert.match(sources, new RegExp(site.endpoint.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.match(sources, /complete/);
  assert.match((await page.locator('body').textContent()) ?? '', /Recent changes[\s\S]*notes\.txt/);
  await page.locator('nav input[name=q]').fill('about');
  await Promise.all([page.waitForURL(/\/search\?/), page.locator('nav input[name=q]').press('Enter')]);
  const hits = await page.locator('table td:first-child a').allInnerTexts();
  assert.deepEqual(hits, [original('about.html')]);
  await Promise.all([page.waitForURL(/\/history\//), page.locator('table td:first-child a').first().click()]);
  assert.equal(await page.title(), original('about.html'));
  await page.context().close();
});

test('replay shows the banner, the image of the same capture, and sandboxes the archived script', { skip: NO_CHROMIUM }, async () => {
  for (const [stamp, colour, width, other, otherWidth] of [
    [first, RED, 40, GREEN, 60],
    [second, GREEN, 60, RED, 40],
  ] as const) {
    const { page, requested } = await openPage();
    const response = await page.goto(`${server.baseUrl}/replay/${stamp}/${original('index.html')}`);
    assert.equal(response?.status(), 200);
    assert.ok(response?.headers()['memento-datetime'], 'a replay page carries Memento-Datetime');
    assert.match(
      (await page.locator('header.replay').textContent()) ?? '',
      new RegExp(`Archived ${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}`),
    );
    const frame = replayFrame(page);
    // Expressions run in the page (a string: the test is compiled without the DOM's types).
    await frame.waitForFunction("document.getElementById('probe')?.textContent !== 'not run'", undefined, { timeout: 20_000 });
    assert.equal(await frame.locator('#probe').textContent(), 'cookie-blocked fetch-blocked');
    const logo = (await frame.evaluate(
      "(() => { const image = document.getElementById('logo'); return { width: image.naturalWidth, src: image.currentSrc }; })()",
    )) as {
      width: number;
      src: string;
    };
    assert.equal(logo.width, width, `the capture of ${stamp} shows the logo of its own time`);
    assert.ok(logo.src.startsWith(`${server.baseUrl}/replay/${stamp}mp_/`), logo.src);
    // What the screen shows: the banner, and the image of this capture, not the other's.
    const shot = decodePng(await page.screenshot());
    assert.ok(countColour(shot, BANNER) > 1000, 'the banner is on the screen');
    assert.ok(countColour(shot, colour, 30) >= width * width * 0.9, 'the archived image is on the screen');
    // (A few anti-aliased pixels of text may come near the other colour; its image would be hundreds.)
    assert.ok(countColour(shot, other, 30) < otherWidth * otherWidth * 0.05, 'the other capture of the image is not');
    // Nothing left for the live site, and no route of the archive but replay was asked.
    for (const url of requested) assert.ok(url.startsWith(`${server.baseUrl}/replay/`), `the browser asked for ${url}`);
    assert.ok(!served.some((line) => /from=(script|image)/.test(line)), served.filter((line) => line.includes('/oai')).join('\n'));
    await page.context().close();
  }
});

test('a link inside a replayed page opens the linked page’s capture', { skip: NO_CHROMIUM }, async () => {
  const { page } = await openPage();
  await page.goto(`${server.baseUrl}/replay/${first}/${original('index.html')}`);
  const frame = replayFrame(page);
  await Promise.all([
    page.waitForURL(new RegExp(`/replay/\\d{14}/${original('about.html').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)),
    frame.locator('#about-link').click(),
  ]);
  assert.match((await page.locator('header.replay').textContent()) ?? '', /Archived/);
  const about = replayFrame(page);
  assert.equal(await about.locator('#about').textContent(), 'About the site');
  await page.context().close();
});

test('a diff page marks the changed line', { skip: NO_CHROMIUM }, async () => {
  const { page } = await openPage();
  const response = await page.goto(`${server.baseUrl}/diff/${first}/${second}/${original('notes.txt')}`);
  assert.equal(response?.status(), 200);
  assert.deepEqual(await page.locator('tr.del td.t').allInnerTexts(), ['line two']);
  assert.deepEqual(await page.locator('tr.ins td.t').allInnerTexts(), ['line 2 changed']);
  const shot = decodePng(await page.screenshot({ fullPage: true }));
  assert.ok(countColour(shot, [0xff, 0xeb, 0xe9], 3) > 100, 'the removed line is marked');
  assert.ok(countColour(shot, [0xda, 0xfb, 0xe1], 3) > 100, 'the added line is marked');
  await page.context().close();
});
