/**
 * Every command README.md and docs/ show runs as written. Each command line of their shell and
 * console blocks, read in order as one operator's session (the README first: its `cp` makes the
 * plan the other pages use), is checked for what it names: a shardmove command and every option it
 * gives exist (asked of the CLI's own `--help`), the files it reads exist or an earlier command made
 * them, the folders it writes into exist, and no two sandboxes of different seeds are told to use
 * the same port. The command spans of the prose (the synopses of the Commands table included) are
 * checked for their options. Then the safe ones run for real, verbatim but for the instance's URL:
 * the README's migration and the twin rehearsal, up to their dry runs and the twin, against a
 * sandbox this test starts.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../src/sandbox/index.js';
import type { RunningSandbox } from '../src/sandbox/index.js';
import { ADMIN_TOKEN, BIN, ROOT, tempDir } from './support/cli-harness.js';
import { blockCommands, docPages, parseLine, proseCommands } from './support/doc-commands.js';
import type { DocCommand, SimpleCommand } from './support/doc-commands.js';

const run = promisify(execFile);

/** What the CLI accepts, per command (`token inspect`, `weights restore` for the nested ones). */
interface CommandSpec {
  /** Option name -> whether it takes a value. */
  options: Map<string, boolean>;
  /** Positional arguments, `required` for `<x>`. */
  args: { name: string; required: boolean }[];
}

async function help(args: string[]): Promise<string> {
  return (await run(process.execPath, [BIN, ...args, '--help'], { cwd: ROOT })).stdout;
}

function parseHelp(text: string): { spec: CommandSpec; commands: string[] } {
  const usage = /^Usage: \S+(?: \S+)*?(?: \[options\])?((?: [<[][^>\]]+[>\]])*)\s*$/m.exec(text)?.[1] ?? '';
  const args = [...usage.matchAll(/([<[])([^>\]]+)[>\]]/g)].map((m) => ({ name: m[2]!, required: m[1] === '<' }));
  const options = new Map<string, boolean>();
  const section = (name: string) => text.split(`\n${name}:\n`)[1]?.split(/\n\n/)[0] ?? '';
  for (const m of section('Options').matchAll(/^ {2}(?:-\w, )?(--[\w-]+)(?: ([<[][^>\]]+[>\]]))?/gm))
    options.set(m[1]!, m[2] !== undefined);
  const commands = [...section('Commands').matchAll(/^ {2}([\w-]+)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
  return { spec: { options, args }, commands };
}

/** Every command's options and arguments, from the CLI's own help. */
async function readSpecs(): Promise<{ global: CommandSpec; commands: Map<string, CommandSpec> }> {
  const top = parseHelp(await help([]));
  const commands = new Map<string, CommandSpec>();
  await Promise.all(
    top.commands.map(async (name) => {
      const h = parseHelp(await help([name]));
      if (h.commands.length === 0) commands.set(name, h.spec);
      await Promise.all(
        h.commands.map(async (sub) => {
          commands.set(`${name} ${sub}`, parseHelp(await help([name, sub])).spec);
        }),
      );
    }),
  );
  return { global: top.spec, commands };
}

/**
 * Files the pages name as the operator's own, not the repository's: a plan of theirs, the token
 * they want to inspect. Everything else a command reads must exist or be made by an earlier one.
 */
const OPERATORS_OWN = new Set(['plan.yaml', 'leaked.txt']);
/** Programs besides shardmove that the pages use: the shell's, the system's, and a pager of the operator's. */
const PROGRAMS = new Set([
  'export',
  'read',
  'cp',
  'mkdir',
  'touch',
  'cat',
  'tail',
  'jq',
  'echo',
  'wait',
  'exit',
  'while',
  'do',
  'done',
  'pass',
  'npm',
  'cd',
  'notify-oncall',
  'tmux',
  'screen',
  'systemd-run',
  'systemctl',
  'journalctl',
]);

interface Session {
  made: Set<string>;
  /** The line went to another directory (`cd /srv/shardmove && ...`): its relative paths are not the clone's. */
  elsewhere?: boolean;
  /** Sandboxes told a port: which seed, where. */
  ports: { port: number; seed: string; where: string }[];
}

const exists = (s: Session, file: string) => s.elsewhere || s.made.has(file) || existsSync(join(ROOT, file));
const dirExists = (s: Session, file: string) => {
  const dir = dirname(file);
  return dir === '.' || exists(s, dir) || [...s.made].some((m) => m.startsWith(`${dir}/`));
};
const placeholder = (word: string) => /^[A-Z][A-Z_.]*(?:\.yaml)?$/.test(word) || word.startsWith('$');

/** What is wrong with one shardmove invocation, given what the session made so far. */
function checkShardmove(
  c: SimpleCommand,
  where: string,
  specs: Awaited<ReturnType<typeof readSpecs>>,
  s: Session,
): string[] {
  const problems: string[] = [];
  const words = c.words.slice(1);
  if (words[0]?.startsWith('-')) {
    for (const w of words) if (!specs.global.options.has(w)) problems.push(`${where}: shardmove has no option ${w}`);
    return problems;
  }
  let name = words.shift() ?? '';
  if (!specs.commands.has(name) && specs.commands.has(`${name} ${words[0]}`)) name = `${name} ${words.shift()}`;
  const spec = specs.commands.get(name);
  if (!spec) return [`${where}: shardmove has no command "${name}"`];
  const values = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('--')) {
      positional.push(w);
      continue;
    }
    const [flag, inline] = w.split('=', 2) as [string, string | undefined];
    const takes = spec.options.get(flag);
    if (takes === undefined) {
      problems.push(`${where}: shardmove ${name} has no option ${flag}`);
      continue;
    }
    if (takes) values.set(flag, inline ?? words[++i] ?? '');
  }
  const required = spec.args.filter((a) => a.required).length;
  if (positional.length < required || positional.length > spec.args.length)
    problems.push(`${where}: shardmove ${name} takes ${spec.args.map((a) => a.name).join(', ') || 'no argument'}`);
  const plan = spec.args[0]?.name === 'plan' ? positional[0] : undefined;
  if (plan && !placeholder(plan) && !OPERATORS_OWN.has(plan) && !exists(s, plan))
    problems.push(`${where}: the plan ${plan} does not exist (no file, and no command before makes it)`);
  for (const flag of ['--seed', '--plan', '--token-file', '--only']) {
    const f = values.get(flag);
    if (f && !placeholder(f) && !OPERATORS_OWN.has(f) && !exists(s, f))
      problems.push(`${where}: ${flag} ${f} does not exist (no file, and no command before makes it)`);
  }
  // The commands that refuse to write into a folder that is not there.
  for (const flag of ['--out', '--html', '--items']) {
    const f = values.get(flag);
    if (!f || placeholder(f)) continue;
    if (!dirExists(s, f)) problems.push(`${where}: ${flag} ${f}: its folder ${dirname(f)} does not exist yet`);
    s.made.add(f);
    if (flag === '--out') s.made.add(f.replace(/\.ya?ml$/, '.items.jsonl')).add(f.replace(/\.ya?ml$/, '.plan.yaml'));
  }
  for (const flag of ['--state', '--events', '--metrics-file']) {
    const f = values.get(flag);
    if (f && !placeholder(f)) s.made.add(f);
  }
  const port = values.get('--port');
  if (name === 'sandbox' && port && port !== '0')
    s.ports.push({ port: Number(port), seed: values.get('--seed') ?? 'the built-in seed', where });
  return problems;
}

/** What is wrong with one command line of a block. */
function checkLine(cmd: DocCommand, specs: Awaited<ReturnType<typeof readSpecs>>, s: Session): string[] {
  const where = `${cmd.page}:${cmd.line}`;
  const problems: string[] = [];
  s.elsewhere = false;
  for (const c of parseLine(cmd.text)) {
    for (const r of c.redirects)
      if (r.op === '<' && !OPERATORS_OWN.has(r.target) && !exists(s, r.target))
        problems.push(`${where}: reads ${r.target}, which does not exist`);
    const [program, ...rest] = c.words;
    if (program === undefined) continue;
    if (program === 'bin/shardmove' || program === 'shardmove') {
      problems.push(...checkShardmove(c, where, specs, s));
      continue;
    }
    if (!PROGRAMS.has(program)) {
      problems.push(`${where}: runs ${program}, which the pages do not introduce`);
      continue;
    }
    const args = rest.filter((w) => !w.startsWith('-'));
    if (program === 'cp') {
      if (!exists(s, args[0]!)) problems.push(`${where}: cp from ${args[0]}, which does not exist`);
      s.made.add(args[1]!);
    }
    if (program === 'mkdir' || program === 'touch') for (const d of args) s.made.add(d);
    if (program === 'cd') s.elsewhere = true;
    if (program === 'npm') problems.push(...checkNpm(rest, where, s));
  }
  return problems;
}

function checkNpm(args: string[], where: string, s: Session): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    scripts: Record<string, string>;
  };
  const tarball = `${pkg.name}-${pkg.version}.tgz`;
  const [verb, ...rest] = args;
  if (verb === 'pack') s.made.add(tarball);
  if (verb === 'install') {
    const file = rest.find((a) => a.endsWith('.tgz'));
    if (file && file.replace(/^\.\//, '') !== tarball)
      return [`${where}: installs ${file}, but npm pack writes ${tarball}`];
  }
  if ((verb === 'start' || verb === 'test') && !pkg.scripts[verb])
    return [`${where}: package.json has no ${verb} script`];
  return [];
}

/** What is wrong with a command span of the prose: an option its command does not have. */
function checkProse(cmd: DocCommand, specs: Awaited<ReturnType<typeof readSpecs>>): string[] {
  const words = cmd.text.split(/\s+/).slice(1);
  const flags = [...cmd.text.matchAll(/(?<![\w-])(--[\w-]+)/g)].map((m) => m[1]!);
  if (words[0]?.startsWith('-')) return flags.filter((f) => !specs.global.options.has(f)).map((f) => `no option ${f}`);
  const names = [words[0]!];
  // `token inspect|revoke`: both.
  const subs = (words[1] ?? '').split('|').filter((w) => specs.commands.has(`${words[0]} ${w}`));
  const candidates = subs.length > 0 ? subs.map((w) => `${names[0]} ${w}`) : names;
  const problems: string[] = [];
  // A command named alone (`shardmove token`) may be a family of subcommands.
  for (const name of candidates)
    if (!specs.commands.has(name) && ![...specs.commands.keys()].some((k) => k.startsWith(`${name} `)))
      problems.push(`${cmd.page}:${cmd.line}: \`${cmd.text}\`: no command "${name}"`);
  // An option of any of the alternatives (`inspect|revoke`) is one the synopsis may show.
  const specsOf = candidates.map((n) => specs.commands.get(n)).filter((x) => x !== undefined);
  if (specsOf.length === 0) return problems;
  for (const f of flags)
    if (!specsOf.some((sp) => sp.options.has(f)))
      problems.push(`${cmd.page}:${cmd.line}: \`${cmd.text}\`: ${candidates.join(' or ')} has no option ${f}`);
  return problems;
}

describe('the commands README.md and docs/ show', { timeout: 180_000 }, () => {
  let specs: Awaited<ReturnType<typeof readSpecs>>;
  const pages = docPages(ROOT).map((page) => ({ page, text: readFileSync(join(ROOT, page), 'utf8') }));
  const inBlocks = pages.flatMap((p) => blockCommands(p.page, p.text));
  const lines = inBlocks.filter((l) => !l.synopsis);
  const spans = [...pages.flatMap((p) => proseCommands(p.page, p.text)), ...inBlocks.filter((l) => l.synopsis)];
  beforeAll(async () => {
    specs = await readSpecs();
  });

  it('reads the pages: shell and console blocks, prompts, continuations, the synopses of the prose', () => {
    expect(lines.length).toBeGreaterThan(30);
    expect(lines.find((l) => l.text.startsWith('bin/shardmove twin '))?.text).toMatch(/--out twin\//);
    const rehearsal = lines.find((l) => l.text.includes('SHARDMOVE_TWIN_TOKEN=glpat-twin-rehearsal-admin-0001'));
    expect(rehearsal?.text).toMatch(/\s+bin\/shardmove run twin\/retire-nfs\.plan\.yaml$/);
    expect(parseLine('A=1 B="x y" bin/shardmove run p.yaml --state "s t.db" & # why')).toEqual([
      {
        assigns: { A: '1', B: 'x y' },
        words: ['bin/shardmove', 'run', 'p.yaml', '--state', 's t.db'],
        redirects: [],
        background: true,
      },
    ]);
    expect(parseLine('pass show x | shardmove run plan.yaml < secrets/t').map((c) => c.words[0])).toEqual([
      'pass',
      'shardmove',
    ]);
    expect(spans.some((s) => s.text.startsWith('shardmove run PLAN [--state FILE]'))).toBe(true);
    expect(specs.commands.get('run')?.options.get('--state')).toBe(true);
    expect(specs.commands.get('weights restore')?.options.has('--yes')).toBe(true);
  });

  it('name only commands, options, files and folders that exist, and give each sandbox a port of its own', () => {
    const session: Session = { made: new Set(), ports: [] };
    const problems = lines.flatMap((l) => checkLine(l, specs, session));
    problems.push(...spans.flatMap((s) => checkProse(s, specs)));
    // Sandboxes started with --port in the prose count too (the README's rehearsal sandbox).
    for (const s of spans) {
      const c = parseLine(s.text)[0];
      if (c && c.words[1] === 'sandbox' && !s.text.includes('['))
        checkShardmove(c, `${s.page}:${s.line}`, specs, session);
    }
    const byPort = new Map<number, typeof session.ports>();
    for (const p of session.ports) byPort.set(p.port, [...(byPort.get(p.port) ?? []), p]);
    for (const [port, users] of byPort) {
      const seeds = new Set(users.map((u) => u.seed));
      if (seeds.size > 1)
        problems.push(
          `port ${port} is given to two sandboxes at once: ${users.map((u) => `${u.seed} (${u.where})`).join(', ')}`,
        );
    }
    // Within a block, the URL a command is pointed at is a sandbox the block started.
    for (const block of new Set(lines.map((l) => `${l.page}:${l.block}`))) {
      const mine = lines.filter((l) => `${l.page}:${l.block}` === block);
      const started = new Set(
        session.ports.filter((p) => mine.some((l) => `${l.page}:${l.line}` === p.where)).map((p) => p.port),
      );
      if (started.size === 0) continue;
      for (const l of mine)
        for (const c of parseLine(l.text)) {
          const port = /^http:\/\/127\.0\.0\.1:(\d+)/.exec(
            c.assigns.GITLAB_URL ?? c.assigns.SHARDMOVE_TWIN_URL ?? '',
          )?.[1];
          if (port && !started.has(Number(port)))
            problems.push(
              `${l.page}:${l.line}: the URL points at port ${port}, but the block starts its sandbox elsewhere`,
            );
        }
    }
    expect(problems).toEqual([]);
  });

  describe('the safe ones, run as written against a sandbox', () => {
    let sandbox: RunningSandbox;
    let dir: string;
    beforeAll(async () => {
      sandbox = await startSandbox({ workers: 10, moveDurationMs: 20 });
      dir = tempDir('docs-commands');
    });
    afterAll(async () => {
      await sandbox?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /** Read-only or local: validate, dry runs, the twin, and the shell's own copies, folders and variables. */
    function isSafe(cmd: DocCommand): boolean {
      return parseLine(cmd.text).every((c) => {
        const [program, sub] = c.words;
        if (program === undefined) return true;
        if (['export', 'cp', 'mkdir'].includes(program)) return true;
        if (program !== 'bin/shardmove') return false;
        return sub === 'validate' || sub === 'twin' || (sub === 'run' && c.words.includes('--dry-run'));
      });
    }

    it("the README's migration and the twin rehearsal, up to their dry runs and the twin", async () => {
      // The operator's clone: the shipped plans (the README's cp writes beside them), the executable.
      const work = join(dir, 'clone');
      mkdirSync(work);
      cpSync(join(ROOT, 'plans'), join(work, 'plans'), { recursive: true });
      symlinkSync(join(ROOT, 'bin'), join(work, 'bin'));
      // Their token, where the README reads it from.
      const home = join(dir, 'home');
      mkdirSync(join(home, '.secrets'), { recursive: true });
      writeFileSync(join(home, '.secrets', 'gitlab-admin-token'), `${ADMIN_TOKEN}\n`, { mode: 0o600 });

      const chosen = lines.filter(
        (l) =>
          (l.page === 'README.md' &&
            lines.some((m) => m.block === l.block && m.text.includes('cp plans/example.yaml'))) ||
          (l.page === 'docs/sandbox.md' && lines.some((m) => m.block === l.block && m.text.includes(' twin '))),
      );
      const ran = chosen.filter(isSafe);
      expect(ran.map((l) => l.text.split(/\s+#/)[0]!.trim())).toEqual([
        'export GITLAB_URL=https://gitlab.example.com',
        'export GITLAB_TOKEN="$(cat ~/.secrets/gitlab-admin-token)"',
        'cp plans/example.yaml plans/retire-nfs.yaml',
        'bin/shardmove validate plans/retire-nfs.yaml',
        'bin/shardmove run plans/retire-nfs.yaml --dry-run',
        'bin/shardmove run plans/retire-nfs.yaml --dry-run',
        expect.stringMatching(/^mkdir -p twin/),
        'bin/shardmove twin plans/retire-nfs.yaml --out twin/retire-nfs.yaml',
      ]);
      // Verbatim, but for the instance: the sandbox stands in for https://gitlab.example.com.
      const script = ['set -e', ...ran.map((l) => l.text.replaceAll('https://gitlab.example.com', sandbox.url))].join(
        '\n',
      );
      const env = { PATH: process.env.PATH ?? '', HOME: home, NO_COLOR: '1' };
      const out = await run('bash', ['-c', script], { cwd: work, env }).catch(
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
      expect('code' in out ? out.code : 0, `${out.stdout}\n${out.stderr}`).toBe(0);
      expect(out.stdout).toContain('plan OK: retire-nfs');
      expect(out.stdout.match(/DRY RUN COMPLETE/g)).toHaveLength(2);
      expect(readFileSync(join(work, 'twin', 'retire-nfs.yaml'), 'utf8')).toContain('glpat-twin-rehearsal-admin-0001');
      expect(existsSync(join(work, 'twin', 'retire-nfs.items.jsonl'))).toBe(true);
      expect(readFileSync(join(work, 'twin', 'retire-nfs.plan.yaml'), 'utf8')).toContain('url: ${SHARDMOVE_TWIN_URL}');
    });
  });
});
