// Mirroring (#33): a first sync and a 1% re-sync of a release, as a mirror operator gets them through
// another mirror's `isoatlas serve` with its default limits (read through packs), beside the same syncs
// reading every object on its own and beside `rclone copy` of the same store.
//
// The store: a mirror's directory (a directory store, as `isoatlas mirror` makes one) into which the
// release is published, then a release with 1% of isoforms changed (bench/publish.ts changedRelease).
// `isoatlas serve` serves it. The demo runs always; human scale runs when the bench has a human-scale
// tree (the build section's, or --human-tree). At human scale the object-by-object sync is not run:
// its request count is the objects the packed sync fetched, one request each, and at the default
// limit that alone takes hours (computed, said so in the table).
import { join } from 'node:path';
import { publish } from '../build/publish/publish.js';
import { renderTree } from '../build/render/index.js';
import { mirror, type MirrorSummary } from '../edge/mirror/mirror.js';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import type { BenchContext } from './context.js';
import { changedRelease, rclone, rcloneInstalled } from './publish.js';
import type { SectionReport, Table, Target } from './report.js';
import { startLocalServer } from './servers.js';
import { fmt } from './stats.js';
import { loadavg } from 'node:os';
import { mkdirSync, rmSync } from 'node:fs';

/** `isoatlas serve`'s default anonymous limit per address (edge/access), for the per-object projection. */
const DEFAULT_PER_MINUTE = 900;

interface Row {
  what: string;
  requests: number | null;
  /** Requests computed, not sent (the object-by-object sync at human scale). */
  computed?: boolean;
  bytes: number | null;
  seconds: number | null;
  refused: number | null;
}

const row = (what: string, s: MirrorSummary): Row => ({
  what,
  requests: s.requests,
  bytes: s.bytes,
  seconds: s.seconds,
  refused: s.waited,
});

interface ScaleResult {
  scale: 'demo' | 'human';
  rows: Row[];
  objects: number;
  isoforms: number;
  changed: number;
  load: number;
}

async function mirrorScale(
  ctx: BenchContext,
  scale: 'demo' | 'human',
  base: { db: string; tree: string },
  rcloneVersion: string | null,
): Promise<ScaleResult> {
  const tmp = join(ctx.tmp, `mirror-${scale}`);
  mkdirSync(tmp, { recursive: true });
  const load = loadavg()[0];
  const changedDb = join(tmp, 'changed.sqlite');
  const change = changedRelease(base.db, changedDb);
  const tree2 = join(tmp, 'changed-tree');
  ctx.log(`  mirror (${scale}): rendering release 2 (${change.changed} of ${fmt(change.isoforms)} isoforms changed)…`);
  await renderTree(changedDb, tree2, { progress: false });
  rmSync(changedDb, { force: true });

  const upstream = join(tmp, 'upstream');
  const store = new ReleaseStore(new DirectoryBackend(upstream));
  const dirs = { packs: join(tmp, 'packs'), objects: join(tmp, 'objects'), rclone: join(tmp, 'rclone') };
  const rows: Row[] = [];
  let objects = 0;
  const round = async (label: string) => {
    const limited = await startLocalServer(upstream, tmp, { defaultLimits: true });
    try {
      ctx.log(`  mirror (${scale}): ${label}, through packs…`);
      const packed = await mirror({ from: limited.base, to: dirs.packs, progress: false });
      rows.push(row(`${label}: packs, default limits`, packed));
      if (label === 'first sync') objects = packed.fetched;
    } finally {
      await limited.stop();
    }
    if (scale === 'demo') {
      const open = await startLocalServer(upstream, tmp);
      try {
        ctx.log(`  mirror (${scale}): ${label}, object by object…`);
        const single = await mirror({ from: open.base, to: dirs.objects, progress: false, packs: false });
        rows.push(row(`${label}: object by object, limits raised`, single));
      } finally {
        await open.stop();
      }
    } else if (label === 'first sync') {
      rows.push({
        what: `${label}: object by object (not run: one request per object)`,
        requests: objects,
        computed: true,
        bytes: null,
        seconds: null,
        refused: null,
      });
    }
    if (rcloneVersion) {
      ctx.log(`  mirror (${scale}): ${label}, rclone copy…`);
      // The objects and the release's records, not the packs: what a mirror holds.
      const r = await rclone('copy', upstream, dirs.rclone, undefined, ['--exclude', 'packs/**']);
      if (r.failure) throw new Error(`rclone copy failed: ${r.failure}`);
      rows.push({
        what: `${label}: \`rclone copy\` of the store's directory, local to local`,
        requests: null,
        bytes: null,
        seconds: r.seconds,
        refused: null,
      });
    }
  };

  ctx.log(`  mirror (${scale}): publishing release 1 into the upstream mirror's directory…`);
  await publish({ dir: base.tree, store, progress: false });
  await round('first sync');
  ctx.log(`  mirror (${scale}): publishing release 2…`);
  await publish({ dir: tree2, store, progress: false });
  rmSync(tree2, { recursive: true, force: true });
  await round('1% re-sync');
  rmSync(tmp, { recursive: true, force: true });
  return { scale, rows, objects, isoforms: change.isoforms, changed: change.changed, load };
}

const atLimit = (r: Row) => (r.requests === null ? '–' : `${fmt((r.requests / DEFAULT_PER_MINUTE) * 60)} s`);

function table(s: ScaleResult): Table {
  return {
    caption: `**${s.scale === 'demo' ? 'Demo' : 'Human scale'}** (${fmt(s.objects)} objects; release 2: ${fmt(s.changed)} of ${fmt(s.isoforms)} isoforms changed; load average ${s.load.toFixed(2)} when it started)`,
    headers: [
      'sync',
      'requests',
      'MB',
      'seconds',
      'refused (429)',
      `at ${DEFAULT_PER_MINUTE}/min, requests alone would take`,
    ],
    rows: s.rows.map((r) => [
      r.what,
      r.requests === null ? '–' : `${r.computed ? '≥ ' : ''}${fmt(r.requests)}`,
      r.bytes === null ? '–' : (r.bytes / 1e6).toFixed(1),
      r.seconds === null ? '–' : r.seconds.toFixed(1),
      r.refused === null ? '–' : fmt(r.refused),
      atLimit(r),
    ]),
  };
}

const find = (s: ScaleResult, prefix: string) => s.rows.find((r) => r.what.startsWith(prefix))!;

function targetsOf(s: ScaleResult): Target[] {
  const first = find(s, 'first sync: packs');
  const again = find(s, '1% re-sync: packs');
  if (s.scale === 'demo')
    return [
      {
        what: 'chained first sync of the demo through default limits: requests',
        target: '≤ 300',
        measured: fmt(first.requests!),
        met: first.requests! <= 300,
      },
      {
        what: 'chained first sync of the demo through default limits: seconds, no 429',
        target: '≤ 120 s, 0 refused',
        measured: `${first.seconds!.toFixed(1)} s, ${first.refused} refused`,
        met: first.seconds! <= 120 && first.refused === 0,
      },
    ];
  return [
    {
      what: 'human-scale first sync through a rate-limited endpoint',
      target: '≤ 15 min',
      measured: `${(first.seconds! / 60).toFixed(1)} min, ${fmt(first.requests!)} requests, ${first.refused} refused`,
      met: first.seconds! <= 900,
    },
    {
      what: 'human-scale 1% re-sync through a rate-limited endpoint',
      target: '≤ 60 s',
      measured: `${again.seconds!.toFixed(1)} s, ${fmt(again.requests!)} requests`,
      met: again.seconds! <= 60,
    },
  ];
}

export async function benchMirror(ctx: BenchContext): Promise<SectionReport> {
  const rcloneVersion = await rcloneInstalled();
  const results: ScaleResult[] = [await mirrorScale(ctx, 'demo', await ctx.demo(), rcloneVersion)];
  const human = ctx.human();
  if (human && !ctx.opts.quick)
    results.push(
      await mirrorScale(ctx, 'human', { db: join(human.work, 'release.sqlite'), tree: human.tree }, rcloneVersion),
    );

  const demo = results[0];
  const perObject = find(demo, 'first sync: object');
  const notes = [
    `Object by object, the demo's first sync sends ${fmt(perObject.requests!)} requests: at the default limit of ${DEFAULT_PER_MINUTE} a minute that is ${atLimit(perObject)} of waiting alone, which is why its server's limits are raised here.`,
    rcloneVersion
      ? `rclone (${rcloneVersion}) copies the upstream store's directory to another directory (16 transfers and checkers, one attempt, packs excluded): no network and no limit, so its times are the least any rclone copy of the store could take; over a network it would also need credentials for the bucket or a listing server, since \`isoatlas serve\` lists nothing.`
      : 'rclone is not installed: its rows are left out.',
  ];
  const h = results.find((r) => r.scale === 'human');
  if (h) {
    const row = find(h, 'first sync: object');
    notes.push(
      `At human scale the object-by-object sync is not run: it sends at least one request per object the packed sync fetched (${fmt(row.requests!)}), which at ${DEFAULT_PER_MINUTE} a minute is ${(row.requests! / DEFAULT_PER_MINUTE / 60).toFixed(1)} hours of waiting alone.`,
    );
  } else {
    notes.push(
      'Human scale runs when the bench has a human-scale tree (the build section in the same run, or `--human-tree <dir>`) and not with `--quick`; this run had none.',
    );
  }
  const first = find(h ?? demo, 'first sync: packs');
  return {
    id: 'mirror',
    title: 'Mirroring: packs through a default-limited server, beside object by object and rclone',
    method:
      'Each scale: the release published into a directory store (an upstream mirror), then release 2 with the expression of every 100th isoform changed; ' +
      'the store served by `isoatlas serve` with its default limits (anonymous, per address), from which a new mirror syncs through packs, and (demo only) with the limits raised, from which another syncs object by object (`packs: false`); each run once. ' +
      "Figures are each tool's own wall time on loopback; requests and refusals are the mirror's own counts.",
    tables: results.map(table),
    targets: results.flatMap(targetsOf),
    notes,
    headline: `${h ? 'human' : 'demo'} first sync ${fmt(first.requests!)} requests in ${first.seconds!.toFixed(0)} s`,
  };
}
