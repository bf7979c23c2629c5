// The nginx front's config at demo and human scale: how many requests it maps to files, its size,
// the time and peak RSS of `isoatlas nginx-config`, how long Debian's nginx takes to load it, and what
// nginx then holds in memory (master and worker together).
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, measureCli, type BenchContext } from './context.js';
import { standaloneNginx } from '../edge/server/nginx-config.js';
import type { SectionReport } from './report.js';
import { fmt, mib } from './stats.js';
import { NGINX_BIN } from './machine.js';
import { freePort } from './servers.js';

interface Scale {
  label: string;
  mapped: number;
  configBytes: number;
  generateSeconds: number;
  generatePeakRss: number;
  nginxStartSeconds: number;
  nginxPss: number;
}

/** Proportional set size of a process (its share of pages it shares with others), in bytes. */
function pss(pid: number): number {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function measure(ctx: BenchContext, label: string, tree: string): Promise<Scale> {
  const dir = join(ctx.tmp, `front-${label}`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const config = join(dir, 'isoatlas.conf');
  const generated = await measureCli(
    [
      'nginx-config',
      '--dir',
      tree,
      '--upstream',
      '127.0.0.1:9',
      '--listen',
      `127.0.0.1:${port}`,
      '--access-log',
      '/dev/null',
      '--out',
      config,
    ],
    ctx.tmp,
    `front-${label}`,
  );
  const mapped = Number(/(\d+) requests answered from files/.exec(generated.stderr)?.[1] ?? NaN);
  const { args } = standaloneNginx(dir, config);
  const check = spawnSync(NGINX_BIN, [...args, '-t'], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t refused the generated config: ${check.stderr}`);
  // From start to listening: nginx reads the config (its map above all) before it binds the port.
  const t0 = performance.now();
  const child = spawn(NGINX_BIN, [...args, '-g', 'daemon off;'], { stdio: 'ignore' });
  let nginxStartSeconds = NaN;
  let nginxPss = NaN;
  try {
    for (let i = 0; i < 1200; i++) {
      const up = await fetch(`http://127.0.0.1:${port}/.isoatlas/none`).then(
        () => true,
        () => false,
      );
      if (up) {
        nginxStartSeconds = (performance.now() - t0) / 1000;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const workers = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean)
      .map(Number);
    nginxPss = [child.pid!, ...workers].reduce((sum, pid) => sum + pss(pid), 0);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  const scale = {
    label,
    mapped,
    configBytes: statSync(config).size,
    generateSeconds: generated.seconds,
    generatePeakRss: generated.peakRssBytes,
    nginxStartSeconds,
    nginxPss,
  };
  ctx.log(
    `  ${label}: ${fmt(mapped)} requests mapped, ${mib(scale.configBytes).toFixed(1)} MiB config in ${generated.seconds.toFixed(1)} s; nginx up in ${nginxStartSeconds.toFixed(2)} s, ${mib(nginxPss).toFixed(0)} MiB`,
  );
  return scale;
}

export async function benchFront(ctx: BenchContext): Promise<SectionReport> {
  if (!existsSync(NGINX_BIN)) throw new Error(`Debian's nginx is not installed (${NGINX_BIN}): apt-get install nginx`);
  const scales = [await measure(ctx, 'demo', (await ctx.demo()).tree)];
  const human = [ctx.human()?.tree, join(ROOT, '.isoatlas/human/tree')].find(
    (t) => t && existsSync(join(t, 'manifest.json')),
  );
  if (human) scales.push(await measure(ctx, 'human', human));
  else ctx.log('  no human-scale tree (run the build section, or `isoatlas demo --scale human`): demo scale only');
  const rows = scales.map((s) => [
    s.label,
    fmt(s.mapped),
    mib(s.configBytes).toFixed(1),
    s.generateSeconds.toFixed(1),
    mib(s.generatePeakRss).toFixed(0),
    s.nginxStartSeconds.toFixed(2),
    mib(s.nginxPss).toFixed(0),
  ]);
  const last = scales[scales.length - 1];
  return {
    id: 'front',
    title: 'The nginx front’s config',
    method:
      '`isoatlas nginx-config` over a rendered tree (one run, in a child process: wall time, peak RSS from getrusage), then Debian’s nginx started with the config in an http block (`worker_processes 1`): time from spawn until it answers on its port, and the proportional set size (Pss, /proc/<pid>/smaps_rollup) of its master and worker together once it does. The human-scale tree holds no structure files (structures are recorded by path), so its map has no `/structures/` entries.',
    tables: [
      {
        headers: [
          'scale',
          'requests mapped to files',
          'config (MiB)',
          'generated in (s)',
          'generator peak RSS (MiB)',
          'nginx up in (s)',
          'nginx memory, master + worker (MiB)',
        ],
        rows,
      },
    ],
    targets: [],
    notes: [
      'A tree’s map names each file by path and sha256; a mirror’s (a store) by sha256 alone, which makes its config smaller.',
      'nginx holds the map once, shared by its master and worker; a reload holds the old and the new config until the old workers have finished.',
    ],
    headline: `${last.label} front config ${mib(last.configBytes).toFixed(0)} MiB, nginx up in ${last.nginxStartSeconds.toFixed(1)} s`,
  };
}
