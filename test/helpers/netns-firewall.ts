// The shipped firewall rule (docs/nginx-front.nft) at work, in a network namespace of this process's
// own: `unshare --net` gives it a loopback nobody else uses, where the rule is loaded without
// touching the machine's firewall, and which goes away with the process. A test's own process cannot
// enter a namespace, so test/nginx-firewall.test.ts runs this file as a child (`netnsRun`) and reads
// the one JSON line it prints. Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): `netnsPermitted` says
// whether this machine allows it, and why not.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startNginxFront } from './nginx-front.js';
import { rawRequest } from './raw-request.js';
import { run } from './run.js';
import { slowHeaders, type HeldConnections } from './slow-clients.js';

const ROOT = join(__dirname, '..', '..');
/** The shipped rule. */
export const RULESET = join(ROOT, 'docs/nginx-front.nft');
export const NFT = '/usr/sbin/nft';
const IP = '/usr/sbin/ip';
const SS = '/usr/bin/ss';

/** A request of the address the attack must not starve: its status, or why it has none (not answered
 * within the bound, or the connection refused or closed). */
export interface VictimAnswer {
  status: number | null;
  ms: number;
  failure?: string;
}

export interface CapResult {
  /** Connections each source opened (of those it tried) to a plain listener behind the rule. */
  opened: Record<string, number>;
}

export interface FrontResult {
  /** Connections the attacking address keeps trying to hold, and its attempts in all. */
  attackers: number;
  attempts: number;
  /** Of those attempts: connected, refused (by the rule's reset), and cut by the front. */
  connected: number;
  refused: number;
  closed: number;
  /** The attacking address's connections the front has at the start of each round, as the kernel
   * has them (the attacker's own count lags behind when it is busy). */
  atFront: number[];
  victim: VictimAnswer[];
}

export type Scenario =
  | { kind: 'cap'; tries: Record<string, number> }
  | {
      kind: 'front';
      dir: string;
      attackers: number;
      headersTimeoutMs: number;
      cutPerRound: number;
      requests: string[];
      boundMs: number;
    };

/** May this process run a scenario: is it root, and may it make a network namespace? `null` when it
 * may, otherwise why not (a reason to skip, not a failure). */
export async function netnsPermitted(): Promise<string | null> {
  if (process.getuid?.() !== 0)
    return 'needs root (CAP_NET_ADMIN in a network namespace of its own, to load the rule): run the suite as root';
  const probe = await run('unshare', ['--net', '--', 'true']);
  if (probe.error || probe.status !== 0)
    return `this machine does not let root make a network namespace (unshare --net: ${probe.error?.message ?? probe.stderr.trim()})`;
  return null;
}

/** nft itself, which a root run must have (as nginx, it is a Debian package the tests drive). */
export function requireNft(): void {
  if (!existsSync(NFT))
    throw new Error(`nftables is not installed (no ${NFT}): apt-get install nftables (.ci/run does)`);
}

/** Runs `scenario` in a network namespace of its own; resolves with what it printed. */
export async function netnsRun<T extends CapResult | FrontResult>(scenario: Scenario): Promise<T> {
  const child = await run('unshare', ['--net', '--', ...thisFileRunning(runScenario), JSON.stringify(scenario)], {
    cwd: ROOT,
  });
  const line = child.stdout.split('\n').find((l) => l.startsWith('{"result":'));
  if (child.status !== 0 || !line)
    throw new Error(`the scenario in a network namespace failed (${child.status}):\n${child.stderr.slice(-4000)}`);
  return (JSON.parse(line) as { result: T }).result;
}

/** The command that runs `entry`, a function this file exports, with the arguments that follow it.
 * Required from a script rather than run as the entry point: tsx then compiles the helpers this file
 * uses as CommonJS, which gives them their __dirname. */
function thisFileRunning(entry: (...args: string[]) => void | Promise<void>): string[] {
  const script = `require(${JSON.stringify(__filename)}).${entry.name}(...process.argv.slice(1))`;
  return [process.execPath, '--import', 'tsx', '-e', script];
}

/** The namespace's loopback up (it starts down), with the IPv6 addresses a scenario uses. */
function loopbackUp(addresses: string[]): void {
  execFileSync(IP, ['link', 'set', 'lo', 'up']);
  for (const address of addresses.filter((a) => a.includes(':')))
    execFileSync(IP, ['-6', 'addr', 'add', `${address}/128`, 'dev', 'lo', 'nodad']);
}

/** The shipped rule, loaded as an operator loads it, with `port` among the front's. */
function loadRule(port: number): void {
  execFileSync(NFT, ['-f', RULESET]);
  execFileSync(NFT, ['add', 'element', 'inet', 'isoatlas_front', 'front_ports', `{ ${port} }`]);
}

/** The IPv6 address the plain listener of a `cap` scenario listens on. */
const LISTENER_V6 = '2001:db8:ff::1';

/** Connections from each source address to a plain listener behind the rule, all held at once. */
async function cap(tries: Record<string, number>): Promise<CapResult> {
  loopbackUp([LISTENER_V6, ...Object.keys(tries)]);
  const listener = net.createServer((socket) => socket.on('error', () => {}));
  await new Promise<void>((ok) => listener.listen(0, '::', ok));
  const { port } = listener.address() as net.AddressInfo;
  loadRule(port);
  const held: [string, HeldConnections][] = [];
  try {
    for (const [from, count] of Object.entries(tries)) {
      const host = from.includes(':') ? LISTENER_V6 : '127.0.0.1';
      const clients = slowHeaders({ host, port, from, count, dripMs: 60_000 });
      held.push([from, clients]);
      await clients.settled;
    }
    return { opened: Object.fromEntries(held.map(([from, c]) => [from, c.counts().connected])) };
  } finally {
    for (const [, clients] of held) clients.stop();
    listener.close();
  }
}

/** Connections from 127.0.0.2 the front's port has established (nginx's or waiting for it to accept). */
function connectionsAtFront(port: number): number {
  const sockets = execFileSync(SS, ['-Htn', 'state', 'established', 'sport', '=', `:${port}`, 'dst', '127.0.0.2']);
  return sockets.toString().split('\n').filter(Boolean).length;
}

/** The soft limit on this process's open files (Max open files in /proc/self/limits). */
export function openFileLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s+/)[3] ?? 1024);
}

/** One request of 127.0.0.3's, bounded by `boundMs`. */
async function ask(base: string, path: string, boundMs: number): Promise<VictimAnswer> {
  const start = performance.now();
  let bound: NodeJS.Timeout | undefined;
  const answer = await Promise.race([
    rawRequest(base, path, { from: '127.0.0.3' }).then(
      (r) => ({ status: r.status }),
      (err: Error) => ({ status: null, failure: err.message }),
    ),
    new Promise<{ status: null; failure: string }>(
      (ok) => (bound = setTimeout(() => ok({ status: null, failure: `no answer within ${boundMs} ms` }), boundMs)),
    ),
  ]);
  clearTimeout(bound);
  return { ...answer, ms: Math.round(performance.now() - start) };
}

/** The other address's side, in a process of its own (in the same namespace): the attacker's
 * connections keep the scenario's own process busy, and a request must not wait on them to be sent
 * (the front would cut it as slow). One request (`{ base, path, boundMs }`) a line, one answer a line. */
export function askingProcess(): void {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const { base, path, boundMs } = JSON.parse(line) as { base: string; path: string; boundMs: number };
    void ask(base, path, boundMs).then((answer) => process.stdout.write(`${JSON.stringify(answer)}\n`));
  });
  lines.on('close', () => process.exit(0));
}

/** Starts askingProcess; `ask` resolves with each answer in turn. */
function asker(base: string, boundMs: number) {
  const [command, ...args] = thisFileRunning(askingProcess);
  const child = spawn(command, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const answers = createInterface({ input: child.stdout });
  const waiting: ((answer: VictimAnswer) => void)[] = [];
  answers.on('line', (line) => waiting.shift()?.(JSON.parse(line) as VictimAnswer));
  return {
    ask: (path: string) =>
      new Promise<VictimAnswer>((ok) => {
        waiting.push(ok);
        child.stdin.write(`${JSON.stringify({ base, path, boundMs })}\n`);
      }),
    stop: () => child.stdin.end(),
  };
}

/** An nginx front behind the rule, cutting slow clients at `headersTimeoutMs`. 127.0.0.2 keeps trying
 * to hold `attackers` connections that send their headers a byte at a time, opening one again in the
 * place of each refused or cut (on a port it may just have used). In rounds, each once the front has
 * cut as many of its connections again as the rule lets it hold: how many the front has from it, and
 * one request of 127.0.0.3's from `requests`. */
async function front(s: Extract<Scenario, { kind: 'front' }>): Promise<FrontResult> {
  loopbackUp([]);
  const f = await startNginxFront({ dir: s.dir, env: { ISOATLAS_HEADERS_TIMEOUT_MS: String(s.headersTimeoutMs) } });
  const port = Number(new URL(f.base).port);
  let attack: HeldConnections | undefined;
  const other = asker(f.base, s.boundMs);
  try {
    loadRule(port);
    attack = slowHeaders({ host: '127.0.0.1', port, from: '127.0.0.2', count: s.attackers, dripMs: 500, reopen: true });
    await attack.settled;
    const victim: VictimAnswer[] = [];
    const atFront: number[] = [];
    for (const [round, path] of s.requests.entries()) {
      await attack.untilClosed((round + 1) * s.cutPerRound);
      atFront.push(connectionsAtFront(port));
      victim.push(await other.ask(path));
    }
    const { connected, refused, closed } = attack.counts();
    return { attackers: s.attackers, attempts: attack.connections.length, connected, refused, closed, atFront, victim };
  } finally {
    other.stop();
    attack?.stop();
    await f.stop();
  }
}

/** The child's side of netnsRun: runs the scenario given as JSON, prints its result, and exits. */
export async function runScenario(json: string): Promise<void> {
  try {
    const scenario = JSON.parse(json) as Scenario;
    const result = scenario.kind === 'cap' ? await cap(scenario.tries) : await front(scenario);
    process.stdout.write(`${JSON.stringify({ result })}\n`);
    process.exit(0);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  }
}
