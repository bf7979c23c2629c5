// Preloaded (node --require) into a child the build benchmark runs: on exit, writes the process's peak
// resident set size (getrusage maxrss, KiB) to $ISOATLAS_BENCH_RSS_FILE. No /usr/bin/time needed.
const { writeFileSync } = require('node:fs');

process.once('exit', () => {
  const file = process.env.ISOATLAS_BENCH_RSS_FILE;
  if (file) writeFileSync(file, JSON.stringify({ maxRssKiB: process.resourceUsage().maxRSS }));
});
