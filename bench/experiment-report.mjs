// The experiment's figures (experiment.mjs): per contender and phase the medians and counts,
// the ratios oaibag/wget, the archive's inodes, the targets of issue 13 (each with the issue's
// "goal beyond" where it names one), and the three outputs — experiment.json, a markdown table
// (experiment.md) and a self-contained SVG chart (experiment.svg) — plus the console table.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { median, round } from './repository-common.mjs';

const MB = 1e6;
/** The contenders of each phase, in the order the tables and the chart show them. */
const CONTENDERS = [
  { phase: 'baseline', key: 'wgetBaseline', name: 'wget -r -N', wget: true },
  { phase: 'baseline', key: 'oaibagBaseline', name: 'oaibag harvest' },
  { phase: 'update', key: 'wgetIms', name: 'wget -N (If-Modified-Since)', wget: true },
  { phase: 'update', key: 'wgetHead', name: 'wget -N --no-if-modified-since (HEAD+GET)', wget: true },
  { phase: 'update', key: 'oaibagUpdate', name: 'oaibag harvest (incremental)' },
];
/** Issue 13's targets ("this issue must reach") and the goals beyond them. */
export const TARGETS = {
  issue: 13,
  updateWallRatio: 0.5,
  updateWallRatioGoal: 0.25,
  updateRequestsRatio: 1 / 50,
  baselineWallRatio: 2,
  baselineWallRatioGoal: 1,
  touchBytes: 2048,
  touchBytesGoal: 500,
  inodesBeyondNewFilesPerBag: 20,
  baselineInodesRatio: 1.5,
  baselineInodesRatioGoal: 1.1,
};
/** Issue 13's target measured by another benchmark, named in the report so that it is not forgotten. */
const ELSEWHERE = [
  {
    metric: 'harvester peak RSS, one 1 GiB By-Value record',
    target: '< 150 MB',
    command: 'npx --yes pnpm@10.34.9 bench:harvest -- --only large',
  },
];
const COLORS = { wgetBaseline: '#d08c3c', wgetIms: '#d08c3c', wgetHead: '#8c5a1e', oaibagBaseline: '#2f6fb0', oaibagUpdate: '#2f6fb0' };

/** Figures, ratios and targets from the runs' samples. */
export function buildFigures({ samples, testbed, machine }) {
  const contenders = {};
  for (const c of CONTENDERS) {
    const list = samples.map((s) => s[c.key]).filter(Boolean);
    if (list.length === 0) continue;
    const first = list[0];
    const seconds = list.map((s) => s.seconds);
    contenders[c.key] = {
      phase: c.phase,
      name: c.name,
      seconds: round(median(seconds), 2),
      secondsRange: [round(Math.min(...seconds), 2), round(Math.max(...seconds), 2)],
      cpuSeconds: list[0].cpuSeconds === null || list[0].cpuSeconds === undefined ? null : round(median(list.map((s) => s.cpuSeconds)), 2),
      cpuUserSeconds: list[0].cpuUserSeconds === null || list[0].cpuUserSeconds === undefined ? null : round(median(list.map((s) => s.cpuUserSeconds)), 2),
      serverCpuSeconds: round(median(list.map((s) => s.serverCpuSeconds)), 2),
      requests: first.log.requests,
      requestsBy: c.wget ? first.log.byMethodStatus : first.log.byVerb,
      bytesOnWire: first.log.bytes,
      peakRssBytes: Math.max(...list.map((s) => s.peakRssBytes)),
      storedDiskBytes: first.storedDiskBytes,
      ...(first.growthBytes !== undefined ? { growthBytes: first.growthBytes } : {}),
      ...(first.inodes !== undefined ? { inodes: first.inodes } : {}),
      ...(first.inodesBefore !== undefined ? { inodesBefore: first.inodesBefore } : {}),
      ...(first.found
        ? { changesFound: first.found.found, changesExpected: first.found.expected, found: first.found, listingFetched: first.listingFetched }
        : {}),
      ...(first.mirrorCheck ? { mirrorCheck: first.mirrorCheck } : {}),
      ...(first.summary ? { summary: first.summary } : {}),
      ...(first.foundByChange ? { foundByChange: first.foundByChange } : {}),
      exitCodes: list.map((s) => s.exitCode),
      runs: list.length,
    };
  }
  const ratio = (a, b, field, digits = 3) => (a && b?.[field] ? round(a[field] / b[field], digits) : null);
  const ratios = {};
  const o = contenders;
  if (o.oaibagBaseline && o.wgetBaseline)
    ratios.baseline = Object.fromEntries(
      ['seconds', 'requests', 'bytesOnWire', 'peakRssBytes', 'storedDiskBytes', 'inodes'].map((f) => [f, ratio(o.oaibagBaseline, o.wgetBaseline, f)]),
    );
  for (const [key, label] of [
    ['wgetIms', 'updateVsIfModifiedSince'],
    ['wgetHead', 'updateVsHeadGet'],
  ]) {
    if (o.oaibagUpdate && o[key])
      ratios[label] = Object.fromEntries(
        ['seconds', 'requests', 'bytesOnWire', 'peakRssBytes', 'storedDiskBytes', 'growthBytes', 'inodes'].map((f) => [f, ratio(o.oaibagUpdate, o[key], f, 4)]),
      );
  }

  const first = samples[0];
  const changes = first.changes;
  const update = o.oaibagUpdate;
  const growthBeyondNewBytes = update.growthBytes - changes.rewrittenBytes - changes.addedBytes - changes.listingBytes;
  const storage = {
    archiveAfterBaselineBytes: o.oaibagBaseline.storedDiskBytes,
    archiveAfterUpdateBytes: update.storedDiskBytes,
    growthBytes: update.growthBytes,
    growthCatalogBytes: first.oaibagUpdate.growthCatalogBytes,
    growthBagsBytes: first.oaibagUpdate.growthBagsBytes,
    newBytes: changes.rewrittenBytes + changes.addedBytes + changes.listingBytes,
    growthBeyondNewBytes,
    touchedOnlyPayloadBytes: changes.touchedBytes,
    growthBeyondNewBytesPercentOfTouchedPayload: round((100 * growthBeyondNewBytes) / changes.touchedBytes, 2),
    growthBeyondNewBytesPercentOfSite: round((100 * growthBeyondNewBytes) / testbed.payloadBytes, 2),
    growthBytesPerTouchedRecord: Math.round(growthBeyondNewBytes / changes.touched),
  };
  // Inodes (first run, like the bytes): the archive's growth over the update beyond the new
  // payload files (the rewritten, the added and the listing: bytes the archive did not hold)
  // and the folders those files needed in their bags' data/, which a touch must not add to.
  const bags = first.oaibagUpdate.bags ?? {};
  const newPayloadFiles = changes.truth.rewritten + changes.truth.added + 1;
  const inodeGrowth = update.inodes - update.inodesBefore;
  const newPayloadFolders = bags.update?.payloadFolders ?? 0;
  const bagsWritten = bags.update?.bags ?? 0;
  const beyondNewFiles = inodeGrowth - newPayloadFiles - newPayloadFolders;
  const inodes = {
    archiveAfterBaseline: o.oaibagBaseline.inodes,
    wgetMirrorAfterBaseline: o.wgetBaseline?.inodes ?? null,
    archiveVsWgetMirrorAfterBaseline: o.wgetBaseline ? round(o.oaibagBaseline.inodes / o.wgetBaseline.inodes, 3) : null,
    baselineBags: bags.baseline?.bags ?? null,
    archiveBeforeUpdate: update.inodesBefore,
    archiveAfterUpdate: update.inodes,
    growth: inodeGrowth,
    newPayloadFiles,
    newPayloadFilesNote: 'rewritten + added + listing.html (the bytes the archive did not hold)',
    payloadFilesInUpdateBags: bags.update?.payloadFiles ?? 0,
    newPayloadFolders,
    bagsWritten,
    updateBags: bags.update ?? null,
    beyondNewFiles,
    beyondNewFilesPerBag: bagsWritten > 0 ? round(beyondNewFiles / bagsWritten, 1) : null,
    beyondNewFilesPerTouchedRecord: round(beyondNewFiles / changes.touched, 4),
  };
  const restore = first.restore;
  const targets = [];
  const target = (metric, value, wanted, pass, goal) =>
    targets.push({ metric, value, target: wanted, pass, ...(goal ? { goalBeyond: goal.wanted, goalBeyondMet: goal.met } : {}) });
  const T = TARGETS;
  for (const [key, label] of [
    ['wgetIms', 'If-Modified-Since'],
    ['wgetHead', 'HEAD+GET'],
  ]) {
    if (!o[key]) continue;
    const r = round(update.seconds / o[key].seconds, 3);
    target(`update wall time, oaibag / wget (${label})`, r, `<= ${T.updateWallRatio}`, r <= T.updateWallRatio, {
      wanted: `<= ${T.updateWallRatioGoal}`,
      met: r <= T.updateWallRatioGoal,
    });
    const q = round(update.requests / o[key].requests, 4);
    target(`update requests, oaibag / wget (${label})`, q, '<= 0.02 (1/50)', q <= T.updateRequestsRatio);
  }
  target('update: every change found by oaibag, deletions included', `${update.changesFound}/${update.changesExpected}`, 'all', update.found.all);
  if (o.wgetBaseline) {
    const r = round(o.oaibagBaseline.seconds / o.wgetBaseline.seconds, 3);
    target('baseline wall time, oaibag / wget', r, `<= ${T.baselineWallRatio}`, r <= T.baselineWallRatio, {
      wanted: `<= ${T.baselineWallRatioGoal}`,
      met: r <= T.baselineWallRatioGoal,
    });
  }
  target(
    'a touch on disk: archive growth (catalog included) beyond the new payload bytes / touched files, bytes',
    storage.growthBytesPerTouchedRecord,
    `<= ${T.touchBytes}`,
    storage.growthBytesPerTouchedRecord <= T.touchBytes,
    { wanted: `<= ${T.touchBytesGoal}`, met: storage.growthBytesPerTouchedRecord <= T.touchBytesGoal },
  );
  target(
    'no new inode per touch: inodes beyond new payload files and their folders <= 20 x bags written in the update',
    `${beyondNewFiles} (${inodeGrowth} - ${newPayloadFiles} files - ${newPayloadFolders} folders; ${bagsWritten} bag(s); ${inodes.beyondNewFilesPerTouchedRecord} per touched record)`,
    `<= ${T.inodesBeyondNewFilesPerBag * bagsWritten} (${T.inodesBeyondNewFilesPerBag} x ${bagsWritten})`,
    beyondNewFiles <= T.inodesBeyondNewFilesPerBag * bagsWritten,
  );
  if (o.wgetBaseline) {
    const r = inodes.archiveVsWgetMirrorAfterBaseline;
    target(
      "archive inodes after the baseline / wget's mirror's (files + folders)",
      `${r} (${inodes.archiveAfterBaseline} / ${inodes.wgetMirrorAfterBaseline})`,
      `<= ${T.baselineInodesRatio}`,
      r <= T.baselineInodesRatio,
      { wanted: `<= ${T.baselineInodesRatioGoal}`, met: r <= T.baselineInodesRatioGoal },
    );
  }
  target(
    'archive restores to the site byte for byte',
    restore.check.identical ? 'identical' : `${restore.check.missing} missing, ${restore.check.different} different, ${restore.check.extra} extra`,
    'identical',
    restore.check.identical,
  );
  return {
    issue: T.issue,
    machineLimits: machine,
    contenders,
    ratios,
    changes,
    storage,
    inodes,
    restore,
    targets,
    allTargetsMet: targets.every((t) => t.pass),
    allGoalsBeyondMet: targets.every((t) => t.goalBeyondMet !== false && t.pass),
    measuredElsewhere: ELSEWHERE,
  };
}

function mb(bytes) {
  return bytes === undefined || bytes === null ? '' : (bytes / MB).toFixed(bytes >= 10 * MB ? 1 : 2);
}

function breakdown(by) {
  return Object.entries(by ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

/** The rows of the main table: one per contender and phase. */
function contenderRows(report) {
  return CONTENDERS.filter((c) => report.contenders[c.key]).map((c) => {
    const f = report.contenders[c.key];
    return [
      c.phase,
      f.name,
      f.seconds.toFixed(2),
      f.cpuSeconds === null ? '' : `${f.cpuSeconds.toFixed(2)}${f.cpuUserSeconds === null ? '' : ` (${f.cpuUserSeconds.toFixed(1)} user)`}`,
      f.serverCpuSeconds.toFixed(2),
      String(f.requests),
      mb(f.bytesOnWire),
      mb(f.peakRssBytes),
      mb(f.storedDiskBytes) + (f.growthBytes !== undefined ? ` (+${mb(f.growthBytes)})` : ''),
      f.changesExpected !== undefined ? `${f.changesFound}/${f.changesExpected} (deleted ${f.found.deleted.found}/${f.found.deleted.expected})` : '',
      breakdown(f.requestsBy),
    ];
  });
}

const HEADER = [
  'phase',
  'contender',
  'wall s',
  'CPU s',
  'server CPU s',
  'requests',
  'MB on wire',
  'peak RSS MB',
  'stored MB (growth)',
  'changes found',
  'requests by kind',
];

function ratioRows(report) {
  const rows = [];
  for (const [label, r] of Object.entries(report.ratios))
    rows.push([
      label,
      ...['seconds', 'requests', 'bytesOnWire', 'peakRssBytes', 'storedDiskBytes', 'inodes'].map((f) =>
        r[f] === null || r[f] === undefined ? '' : String(r[f]),
      ),
    ]);
  return rows;
}

function textTable(header, body) {
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((line) => String(line[i]).length)));
  const line = (cells) =>
    cells
      .map((cell, i) => String(cell).padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

function markdownTable(header, body) {
  const esc = (cell) => String(cell).replace(/\|/g, '\\|');
  return [`| ${header.map(esc).join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...body.map((row) => `| ${row.map(esc).join(' | ')} |`)].join('\n');
}

/** The console's and the markdown file's text. */
export function renderText(report, markdown) {
  const t = markdown ? markdownTable : textTable;
  const l = report.machineLimits;
  const p = report.paper;
  const c = report.changes;
  const s = report.storage;
  const n = report.inodes;
  const parts = [];
  parts.push(
    `${markdown ? '## ' : ''}mod_oai experiment, ${report.testbed.variant} testbed: ${report.testbed.files} files (listing included), ${mb(report.testbed.payloadBytes)} MB; ${report.options.runs} run(s), wall time = median`,
  );
  parts.push(
    `Machine (${report.machine.cpus} cores, ${report.machine.cpuModel}; load average ${report.machine.loadAverage.start[0]} at the start, ${report.machine.loadAverage.end[0]} at the end): sha-256 ${l.sha256MBps} MB/s, base64 decode ${l.base64DecodeMBps} MB/s, sequential write+fsync ${l.diskWriteMBps} MB/s, small files written+fsynced+renamed ${l.smallFileFsyncsPerSecond}/s. wget: ${report.software.wget ?? `not run (${report.software.wgetMissing})`}.`,
  );
  parts.push(
    `Update: ${c.truth.touched} touched, ${c.truth.rewritten} rewritten, ${c.truth.added} added, ${c.truth.deleted} deleted (+ listing.html regenerated, seen by both).`,
  );
  parts.push(t(HEADER, contenderRows(report)));
  parts.push(`${markdown ? '### ' : ''}Ratios oaibag / wget`);
  parts.push(t(['phase', 'wall time', 'requests', 'bytes on wire', 'peak RSS', 'stored', 'inodes'], ratioRows(report)));
  parts.push(`${markdown ? '### ' : ''}Targets (issue ${report.issue})`);
  parts.push(
    t(
      ['target', 'value', 'wanted', 'result', 'goal beyond'],
      report.targets.map((x) => [
        x.metric,
        String(x.value),
        x.target,
        x.pass ? 'PASS' : 'MISSED',
        x.goalBeyond === undefined ? '' : `${x.goalBeyond}: ${x.goalBeyondMet ? 'met' : 'not met'}`,
      ]),
    ),
  );
  parts.push(
    `${report.allTargetsMet ? 'All targets met' : 'TARGET MISSED'}${report.allTargetsMet ? (report.allGoalsBeyondMet ? ', and every goal beyond' : ', not every goal beyond') : ''}. Measured elsewhere: ${report.measuredElsewhere
      .map((e) => `${e.metric} ${e.target} (\`${e.command}\`)`)
      .join('; ')}.`,
  );
  parts.push(
    `Storage: archive ${mb(s.archiveAfterBaselineBytes)} MB after the baseline, ${mb(s.archiveAfterUpdateBytes)} MB after the update: +${mb(s.growthBytes)} MB (catalog ${mb(s.growthCatalogBytes)} MB, bags ${mb(s.growthBagsBytes)} MB), of which new bytes ${mb(s.newBytes)} MB; ` +
      `the rest, ${mb(s.growthBeyondNewBytes)} MB (${s.growthBytesPerTouchedRecord} B per touched record), is ${s.growthBeyondNewBytesPercentOfTouchedPayload}% of the touched-only payload (${mb(s.touchedOnlyPayloadBytes)} MB) and ${s.growthBeyondNewBytesPercentOfSite}% of the site (information, not targets).`,
  );
  parts.push(
    `Inodes (files and folders, unique, catalog included): archive ${n.archiveAfterBaseline} after the baseline${n.baselineBags === null ? '' : ` (${n.baselineBags} batch bag(s))`}` +
      (n.wgetMirrorAfterBaseline === null ? '' : `, wget's mirror ${n.wgetMirrorAfterBaseline} (${n.archiveVsWgetMirrorAfterBaseline}x)`) +
      `; ${n.archiveBeforeUpdate} before the update, ${n.archiveAfterUpdate} after: +${n.growth}, of which ${n.newPayloadFiles} new payload files (rewritten + added + listing; ${n.payloadFilesInUpdateBags} files in the update's bags' data/) and ${n.newPayloadFolders} folders they needed; ` +
      `beyond them ${n.beyondNewFiles} over ${n.bagsWritten} bag(s) written (${n.beyondNewFilesPerBag ?? '-'} per bag, ${n.beyondNewFilesPerTouchedRecord} per touched record).`,
  );
  parts.push(
    `Restore: exit ${report.restore.exitCode}, ${report.restore.seconds} s, ${report.restore.check.matching}/${report.restore.check.referenceFiles} files identical${report.restore.check.identical ? ', nothing missing or extra' : ''}.`,
  );
  for (const [phase, p] of Object.entries(report.profiles ?? {})) {
    parts.push(
      `${markdown ? '### ' : ''}Profile: oaibag ${phase} harvest under node --cpu-prof (untimed extra run: ${p.seconds} s wall, ${p.cpuSeconds} s CPU; self time)`,
    );
    parts.push(
      t(
        ['area', '%', 'ms'],
        p.byArea.slice(0, 8).map((a) => [a.name, String(a.percent), String(a.milliseconds)]),
      ),
    );
    parts.push(
      t(
        ['function', '%', 'ms'],
        p.topFunctions.slice(0, 8).map((a) => [a.name, String(a.percent), String(a.milliseconds)]),
      ),
    );
  }
  parts.push(
    `Paper (${p.files} files, ${mb(p.bytes)} MB, ${p.touched} touched): wget -N needed ${p.wgetUpdateHeadRequests} HEAD + ${p.wgetUpdateGetRequests} GET = ${p.wgetUpdateHeadRequests + p.wgetUpdateGetRequests} requests for the update.`,
  );
  return `${parts.join('\n\n')}\n`;
}

function escapeXml(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * Two panels of grouped bars, baseline and update: requests (log scale) and wall time
 * (linear), one bar per contender, the value written above each bar.
 */
export function renderSvg(report) {
  const width = 900;
  const height = 380;
  const panel = { top: 70, bottom: 300, width: 400 };
  const groups = ['baseline', 'update'];
  const present = CONTENDERS.filter((c) => report.contenders[c.key]);
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(`mod_oai experiment, ${report.testbed.variant} testbed (${report.testbed.files} files, ${mb(report.testbed.payloadBytes)} MB): oaibag against wget`)}</text>`,
  );
  const p = report.paper;
  out.push(
    `<text x="${width / 2}" y="38" text-anchor="middle" fill="#555">${escapeXml(`the paper (${p.files.toLocaleString('en-US')} files, ${p.touched.toLocaleString('en-US')} touched): wget -N needed ${p.wgetUpdateHeadRequests.toLocaleString('en-US')} HEAD + ${p.wgetUpdateGetRequests.toLocaleString('en-US')} GET for the update`)}</text>`,
  );
  const drawPanel = (x0, title, field, log) => {
    const values = present.map((c) => report.contenders[c.key][field]);
    const max = Math.max(...values, 1);
    const magnitude = 10 ** Math.floor(Math.log10((max * 1.1) / 4));
    const step = [1, 2, 2.5, 5, 10].map((f) => f * magnitude).find((candidate) => candidate * 4 >= max * 1.1);
    const top = log ? 10 ** Math.ceil(Math.log10(max)) : step * 4;
    const h = panel.bottom - panel.top;
    const y = (v) => (log ? panel.bottom - (h * Math.log10(Math.max(v, 1))) / Math.log10(top) : panel.bottom - (h * v) / top);
    out.push(`<text x="${x0 + panel.width / 2}" y="${panel.top - 16}" text-anchor="middle" font-size="12" font-weight="bold">${escapeXml(title)}</text>`);
    out.push(`<line x1="${x0}" y1="${panel.top}" x2="${x0}" y2="${panel.bottom}" stroke="#444"/>`);
    out.push(`<line x1="${x0}" y1="${panel.bottom}" x2="${x0 + panel.width}" y2="${panel.bottom}" stroke="#444"/>`);
    const ticks = log ? Array.from({ length: Math.log10(top) + 1 }, (_, i) => 10 ** i) : [0, 1, 2, 3, 4].map((f) => f * step);
    for (const tick of ticks) {
      out.push(`<line x1="${x0 - 4}" y1="${y(tick).toFixed(1)}" x2="${x0 + panel.width}" y2="${y(tick).toFixed(1)}" stroke="#ddd"/>`);
      out.push(
        `<text x="${x0 - 6}" y="${(y(tick) + 4).toFixed(1)}" text-anchor="end">${escapeXml(log ? tick.toLocaleString('en-US') : round(tick, tick < 10 ? 1 : 0))}</text>`,
      );
    }
    const groupWidth = panel.width / groups.length;
    groups.forEach((group, g) => {
      const members = present.filter((c) => c.phase === group);
      const barWidth = Math.min(50, (groupWidth - 40) / Math.max(members.length, 1));
      const start = x0 + g * groupWidth + (groupWidth - barWidth * members.length) / 2;
      members.forEach((c, i) => {
        const v = report.contenders[c.key][field];
        const x = start + i * barWidth;
        const yy = y(v);
        out.push(
          `<rect x="${(x + 2).toFixed(1)}" y="${yy.toFixed(1)}" width="${(barWidth - 4).toFixed(1)}" height="${(panel.bottom - yy).toFixed(1)}" fill="${COLORS[c.key]}"/>`,
        );
        out.push(
          `<text x="${(x + barWidth / 2).toFixed(1)}" y="${(yy - 4).toFixed(1)}" text-anchor="middle">${escapeXml(field === 'seconds' ? v.toFixed(1) : v.toLocaleString('en-US'))}</text>`,
        );
      });
      out.push(
        `<text x="${(x0 + g * groupWidth + groupWidth / 2).toFixed(1)}" y="${panel.bottom + 16}" text-anchor="middle" font-weight="bold">${group}</text>`,
      );
    });
  };
  drawPanel(60, 'requests (log scale)', 'requests', true);
  drawPanel(500, 'wall time, s', 'seconds', false);
  const legend = [
    ['#d08c3c', 'wget -r -N (baseline) / wget -N, If-Modified-Since (update)'],
    ['#8c5a1e', "wget -N --no-if-modified-since: HEAD+GET, the paper's mode (update)"],
    ['#2f6fb0', 'oaibag harvest (baseline: new archive; update: incremental)'],
  ];
  legend.forEach(([color, label], i) => {
    out.push(`<rect x="60" y="${332 + i * 15}" width="10" height="10" fill="${color}"/>`);
    out.push(`<text x="76" y="${341 + i * 15}">${escapeXml(label)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

async function writeAtomically(file, text) {
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
}

/** Prints the table and writes experiment.json, experiment.md and experiment.svg into `dir`. */
export async function writeOutputs(report, dir) {
  console.log(`\n${renderText(report, false)}`);
  await mkdir(dir, { recursive: true });
  const files = [join(dir, 'experiment.json'), join(dir, 'experiment.md'), join(dir, 'experiment.svg')];
  await writeAtomically(files[0], `${JSON.stringify(report, null, 2)}\n`);
  await writeAtomically(files[1], `# ${renderText(report, true).replace(/^## /, '')}`);
  await writeAtomically(files[2], renderSvg(report));
  return files;
}
