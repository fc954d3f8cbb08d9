/**
 * The command declarations, and nothing else: each action resolves the config once and calls
 * a plain function imported lazily, so `keys list` never loads ONNX Runtime.
 */
import { Command, Option } from 'commander';
import { DEFAULTS, ENV, MAX_UPLOAD_MB_LIMIT, modelList, parseDatabaseUrl, parsePublicUrl, resolveConfig, type ConfigInput } from '../config.js';
import { exitCodes } from '../errors.js';
import { MODEL_CATALOG } from '../models/catalog.js';
import { ALIAS_FLAGS, STEM_MODEL_ALIASES, type StemModelAlias } from '../models/aliases.js';
import { familyFilesInWords, MODEL_FAMILIES } from '../models/families.js';
import { listedFamiliesInWords } from '../services/models.js';
import { flagAttribute } from '../contract/family.js';
import { TASKS } from '../models/tasks.js';
import type { Precision } from '../onnx/quantize.js';
import type { DeviceChoice } from '../devices/index.js';
import { VERSION } from '../version.js';
import type { CommandContext } from './context.js';
import { collect, deviceOption, ensembleOption, ensembleWeightsOption, integer, precisionOption } from './options.js';
import { declareSplit } from './split-declaration.js';

/** `a+b, c` → `['a+b', 'c']`: the entries an alias tries, first installed wins (config.ts `modelList`). */
function nameList(name: string) {
  return (value: string): string[] => modelList(value, name);
}

/** What serve and worker both take: how jobs run (which models the aliases mean, how ensembles combine, the precision) and where webhooks may go. */
interface JobFlags {
  readonly allowPrivateUrls?: boolean;
  readonly ensemble?: string;
  readonly ensembleWeights?: string;
  readonly precision?: Precision;
  readonly device?: DeviceChoice;
  readonly gpuWorkers?: number;
  readonly [aliasFlag: string]: unknown;
}

/** The flags of JobFlags, declared once for serve and worker; `reaches` says what --allow-private-urls opens. */
function withJobFlags(command: Command, reaches: string): Command {
  for (const alias of STEM_MODEL_ALIASES) {
    const example = alias === '4s' ? ' (e.g. htdemucs_ft,htdemucs,bundled-4s); A+B: an ensemble of A and B' : '';
    command.option(`${ALIAS_FLAGS[alias]} <names>`, `models stemModel "${alias}" runs, first installed wins${example}`, nameList(ALIAS_FLAGS[alias]));
  }
  return (
    command
      .addOption(ensembleOption())
      .addOption(ensembleWeightsOption(`member of each A+B in ${STEM_MODEL_ALIASES.map((alias) => ALIAS_FLAGS[alias]).join(' / ')}, in order`))
      // Not `.env()`: commander would turn a boolean on for any value, =0 too; config reads the variable.
      .option('--allow-private-urls', `let ${reaches} reach private and loopback addresses (trusted LAN only; or ${ENV.allowPrivateUrls}=1)`)
      .addOption(precisionOption())
      .addOption(deviceOption())
      .addOption(
        new Option('--gpu-workers <n>', 'split jobs the GPU runs at once, beside the CPU workers (GPU memory is the limit; default 1)')
          .env(ENV.gpuWorkers)
          .argParser(integer('--gpu-workers', 0, 64)),
      )
  );
}

/** JobFlags as config takes them. */
function jobConfig(opts: JobFlags): ConfigInput {
  const aliasModels = (alias: StemModelAlias) => opts[flagAttribute(ALIAS_FLAGS[alias])] as string[] | undefined;
  return {
    allowPrivateUrls: opts.allowPrivateUrls === true ? true : undefined,
    modelAliases: Object.fromEntries(STEM_MODEL_ALIASES.map((alias) => [alias, aliasModels(alias)])),
    ensemble: opts.ensemble,
    ensembleWeights: opts.ensembleWeights,
    precision: opts.precision,
    device: opts.device,
    gpuWorkers: opts.gpuWorkers,
  };
}

export function buildProgram(run: (fn: (ctx: CommandContext) => Promise<void>, input?: ConfigInput) => Promise<void>): Command {
  const program = new Command('stemsplit')
    .description('Self-hosted music stem splitter: the v1 HTTP API and a CLI, running separation models on the CPU or the GPU.')
    .version(VERSION, '-V, --version')
    .addOption(new Option('--data-dir <dir>', 'data folder (database, uploads, stems)').env(ENV.dataDir))
    .addOption(
      new Option(
        '--database-url <url>',
        'postgres://… : keep accounts, credits and jobs in PostgreSQL, shared by several nodes (default: SQLite in the data dir)',
      )
        .env(ENV.databaseUrl)
        .argParser(parseDatabaseUrl),
    )
    .addHelpText('after', exitCodeHelp())
    // One line for a usage error, as for every other error (main.ts gives every command this and exit code 2).
    .configureOutput({ outputError: (text, write) => write(`stemsplit: ${(text.split('\n')[0] ?? '').replace(/^error: /, '')} (see --help)\n`) });

  /** Where the store is: every command that opens it takes both. */
  const dataDir = (): ConfigInput => {
    const { dataDir: dir, databaseUrl } = program.opts<{ dataDir?: string; databaseUrl?: string }>();
    return { dataDir: dir, databaseUrl };
  };

  const serve = program
    .command('serve')
    .description('serve the v1 API on this machine')
    // Each flag has its variable, for service managers and containers; a flag given wins.
    .addOption(new Option('--host <host>', 'address to listen on').env(ENV.host).default(DEFAULTS.host))
    .addOption(
      new Option('--port <port>', 'port to listen on')
        .env(ENV.port)
        .argParser(integer('--port', 0, 65535))
        .default(DEFAULTS.port),
    )
    .addOption(
      new Option(
        '--public-url <url>',
        'the URL clients reach this server at behind a reverse proxy (e.g. https://studio.example/stemsplit); the API hands out URLs under it',
      )
        .env(ENV.publicUrl)
        .argParser(parsePublicUrl),
    )
    .addOption(
      new Option('--workers <n>', 'split jobs this server runs at once; 0: API only, `stemsplit worker` processes run the jobs')
        .env(ENV.workers)
        .argParser(integer('--workers', 0, 64)),
    )
    .addOption(
      new Option('--concurrency <n>', 'the same as --workers, at least 1')
        .env(ENV.concurrency)
        .argParser(integer('--concurrency', 1, 64))
        .default(DEFAULTS.concurrency),
    )
    .addOption(
      new Option('--rate-limit <n>', 'POST /v1/audio/splits per API key per minute')
        .env(ENV.rateLimit)
        .argParser(integer('--rate-limit', 1, 1_000_000))
        .default(DEFAULTS.rateLimitPerMinute),
    )
    .addOption(
      new Option('--max-minutes <n>', 'longest audio a job accepts (default: no limit; splits stream their audio and check for disk room)')
        .env(ENV.maxMinutes)
        .argParser(integer('--max-minutes', 1, 24 * 60)),
    )
    .addOption(
      new Option(
        '--max-upload-mb <n>',
        "largest upload or direct_url source in MB (MiB), for the API and the web page (default: 50, the v1 spec's 52428800 bytes)",
      )
        .env(ENV.maxUploadMb)
        .argParser(integer('--max-upload-mb', 1, MAX_UPLOAD_MB_LIMIT)),
    )
    .addOption(new Option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (with --tls-key); the printed links say https').env(ENV.tlsCert))
    .addOption(new Option('--tls-key <file>', "the certificate's PEM private key (with --tls-cert)").env(ENV.tlsKey))
    .addOption(
      new Option('--access-log <file>', 'append the access log (one line per request, never a key or signature) to this file instead of stdout').env(
        ENV.accessLog,
      ),
    )
    .option(
      '--models <names>',
      `the models a job may name through the API (its "model" or "models"), comma-separated; default: every installed model (or ${ENV.servedModels})`,
      nameList('--models'),
    )
    .option('--new-link', "print a new one-time invite to the web page, ending the admin's page keys made so far")
    .option('--print-link', 'print a new one-time invite to the web page, the page keys made so far still working');
  withJobFlags(serve, 'direct_url and webhooks').action(
    async (
      opts: JobFlags & {
        host: string;
        port: number;
        publicUrl?: string;
        maxMinutes?: number;
        maxUploadMb?: number;
        workers?: number;
        concurrency: number;
        rateLimit: number;
        models?: string[];
        newLink?: boolean;
        printLink?: boolean;
        tlsCert?: string;
        tlsKey?: string;
        accessLog?: string;
      },
    ) => {
      const { serveCommand } = await import('./commands/serve.js');
      await run((ctx) => serveCommand(ctx, { newLink: opts.newLink === true, printLink: opts.printLink === true }), {
        ...dataDir(),
        host: opts.host,
        port: opts.port,
        publicUrl: opts.publicUrl,
        tlsCert: opts.tlsCert,
        tlsKey: opts.tlsKey,
        accessLog: opts.accessLog,
        maxMinutes: opts.maxMinutes,
        maxUploadMb: opts.maxUploadMb,
        concurrency: opts.workers ?? opts.concurrency,
        rateLimitPerMinute: opts.rateLimit,
        servedModels: opts.models,
        ...jobConfig(opts),
      });
    },
  );

  const worker = program
    .command('worker')
    .description('run split jobs from a shared PostgreSQL (--database-url), beside serve --workers 0 on any box that mounts the data dir')
    .addOption(
      new Option('--concurrency <n>', 'split jobs run at once')
        .env(ENV.concurrency)
        .argParser(integer('--concurrency', 1, 64))
        .default(DEFAULTS.concurrency),
    );
  withJobFlags(worker, 'webhooks').action(async (opts: JobFlags & { concurrency: number }) => {
    const { workerCommand } = await import('./commands/worker.js');
    await run(workerCommand, { ...dataDir(), concurrency: opts.concurrency, ...jobConfig(opts) });
  });

  declareSplit(program).action(async (files: string[], opts) => {
    const { splitCommand } = await import('./commands/split.js');
    const { precision, device } = opts as { precision?: Precision; device?: DeviceChoice };
    await run((ctx) => splitCommand(ctx, files, opts), { ...dataDir(), precision, device });
  });

  program
    .command('devices')
    .description('list the GPU adapters found and where --device auto and gpu would run')
    .option('--check', 'also open a small graph on the GPU, to show it works (loads ONNX Runtime)')
    .option('--json', 'print JSON')
    .action(async (opts: { check?: boolean; json?: boolean }) => {
      const { devicesCommand } = await import('./commands/devices.js');
      await run((ctx) => devicesCommand(ctx, opts), dataDir());
    });

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('create an API key (printed once)')
    .option('--name <name>', 'a label for the key', 'cli')
    .option('--account <account>', 'account the key belongs to', 'default')
    .option('--json', 'print {"id","key","account"}')
    .action(async (opts) => {
      const { keysCreate } = await import('./commands/keys.js');
      await run((ctx) => keysCreate(ctx, opts), dataDir());
    });
  keys
    .command('list')
    .description('list active API keys (never the keys themselves)')
    .option('--all', 'revoked keys too (serve --new-link revokes the web-session keys)')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const { keysList } = await import('./commands/keys.js');
      await run((ctx) => keysList(ctx, opts), dataDir());
    });
  keys
    .command('link')
    .description(
      "print the web page's link again, for each address the last serve recorded (a new web-session key, revoking the one it replaces unless --keep)",
    )
    .option('--account <account>', "account the link's key belongs to", 'default')
    .option('--keep', "keep the account's earlier web-session keys working (by default the new link replaces them)")
    .option('--json', 'print {"id","account","links","revoked"}')
    .action(async (opts) => {
      const { keysLink } = await import('./commands/keys.js');
      await run((ctx) => keysLink(ctx, opts), dataDir());
    });
  keys
    .command('revoke')
    .description('revoke an API key: it gets 401 from then on')
    .argument('<id>', 'key id (key_…)')
    .action(async (id: string) => {
      const { keysRevoke } = await import('./commands/keys.js');
      await run((ctx) => keysRevoke(ctx, id), dataDir());
    });

  const credits = program.command('credits').description('show, grant and account for credits (1 credit = 1 second of audio)');
  credits
    .command('show')
    .description("an account's balance in credits (seconds of audio)")
    .option('--account <account>', 'account', 'default')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const { creditsShow } = await import('./commands/credits.js');
      await run((ctx) => creditsShow(ctx, opts), dataDir());
    });
  credits
    .command('history')
    .description('the latest grants, charges and refunds, newest first, with the balance each left')
    .option('--account <account>', 'account', 'default')
    .option('--limit <n>', 'entries to show', integer('--limit', 1, 10_000), 20)
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const { creditsHistory } = await import('./commands/credits.js');
      await run((ctx) => creditsHistory(ctx, opts), dataDir());
    });
  credits
    .command('grant')
    .description('add credits to an account (written to its ledger as a grant)')
    .argument('<seconds>', 'credits to add (1 credit = 1 second of audio)')
    .option('--account <account>', 'account', 'default')
    .option('--json', 'print JSON')
    .action(async (seconds: string, opts) => {
      const { creditsGrant } = await import('./commands/credits.js');
      await run((ctx) => creditsGrant(ctx, seconds, opts), dataDir());
    });

  program
    .command('webhook-secret')
    .description('manage the webhook signing secret')
    .command('rotate')
    .description('make a new signing secret (printed once)')
    .option('--account <account>', 'account', 'default')
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const { webhookSecretRotate } = await import('./commands/credits.js');
      await run((ctx) => webhookSecretRotate(ctx, opts), dataDir());
    });

  program
    .command('presets')
    .description("named ensembles: python-audio-separator's curated presets and your own (<data-dir>/presets.json); split --preset NAME runs one")
    .command('list')
    .description('each preset: its models (installed or not, with their terms), algorithm and weights')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const { presetsList } = await import('./commands/presets.js');
      await run(async (ctx) => presetsList(ctx, opts), dataDir());
    });

  const pullable = MODEL_CATALOG.map((m) => m.name).join(', ');
  const models = program.command('models').description('list, pull and remove models');
  models
    .command('list')
    .description(`installed models and those available to pull, with their family and terms (families: ${listedFamiliesInWords()})`)
    .option('--installed', 'only the models installed here')
    .addOption(new Option('--task <task>', 'only the models for this task').choices([...TASKS]))
    .addOption(new Option('--sort <key>', 'sdr: best published SDR first (for --task, its stem), unscored last').choices(['sdr']))
    .option('--json', 'print JSON')
    .action(async (opts) => {
      const { modelsList } = await import('./commands/models.js');
      await run((ctx) => modelsList(ctx, opts), dataDir());
    });
  models
    .command('pull')
    .description(
      `download catalog models into the cache, with the files each runs with: ${MODEL_FAMILIES.filter((family) => (family.catalog?.length ?? 0) > 0)
        .map((family) => family.takers)
        .join(', ')} (resumes; checks SHA-256, or records it where none is published)`,
    )
    .argument('<names...>', `any of ${pullable}`)
    .addOption(new Option('--base-url <url>', 'folder URL to download from (a mirror)').env(ENV.modelsBaseUrl))
    .option(
      '--file <path>',
      "install a file already on disk instead of downloading it (matched to the catalog's file by its name, else the first file; hash-checked as a download is); repeatable",
      collect,
      [],
    )
    .option('--json', 'print JSON')
    .action(async (names: string[], opts) => {
      const { modelsPull } = await import('./commands/models.js');
      await run((ctx) => modelsPull(ctx, names, opts), dataDir());
    });
  models
    .command('add')
    .description(
      `add your own model files to this data dir's library under a name: ${familyFilesInWords()} (UVR's files with NAME.json where UVR's table lacks them); loaded once to check it, then split, serve and the API run it by name`,
    )
    .argument('<files...>', "the model file (its companions beside it are found: NAME.yaml, NAME.json, a bag's members); several files add several models")
    .option('--name <name>', 'the name it goes by (default: the file name without its extension; one file only)')
    .option('--config <yaml>', "an MSST checkpoint's yaml, where it is not NAME.yaml beside it (one file only)")
    .option('--terms <text>', 'the terms of its weights as their publisher states them (default: "not stated")')
    .addOption(new Option('--task <task>', 'what it is for, where its stems do not tell').choices([...TASKS]))
    .option(
      '--link',
      "hard-link the files instead of copying them (same file system only; the original may then move or be deleted, but editing it changes the library's copy too)",
    )
    .option('--json', 'print JSON')
    .action(async (files: string[], opts) => {
      const { modelsAdd } = await import('./commands/models.js');
      await run((ctx) => modelsAdd(ctx, files, opts), dataDir());
    });
  models
    .command('bench')
    .description(
      "time models on this box as a job runs them (loaded once, then a test song split), and record the seconds per minute of audio that models list, GET /v1/models and the web page's estimate show",
    )
    .argument('<names...>', 'installed models (names, library names, paths, or 4s/6s)')
    .addOption(new Option('--seconds <n>', 'length of the test song').argParser(integer('--seconds', 5, 3600)).default(60))
    .addOption(precisionOption())
    .addOption(deviceOption())
    .option('--json', 'print JSON')
    .action(async (names: string[], opts: { seconds: number; json?: boolean; precision?: Precision; device?: DeviceChoice }) => {
      const { modelsBench } = await import('./commands/bench.js');
      await run((ctx) => modelsBench(ctx, names, opts), { ...dataDir(), precision: opts.precision, device: opts.device });
    });
  models
    .command('remove')
    .description(
      'delete pulled models of any family (checkpoints, yaml, MDX-Net model data, partial downloads and converted graphs), or models added to the library',
    )
    .argument('<names...>', `pulled models among ${pullable}, or library models`)
    .action(async (names: string[]) => {
      const { modelsRemove } = await import('./commands/models.js');
      await run((ctx) => modelsRemove(ctx, names), dataDir());
    });

  return program;
}

/** `--help`'s list of exit codes, from src/errors.ts (README's table comes from the same). */
function exitCodeHelp(): string {
  const rows = exitCodes().map((row) => `  ${String(row.exitCode).padStart(3)}  ${row.meaning}`);
  return `\nExit codes (a batch exits with the code its failures share):\n${rows.join('\n')}\n`;
}

export function contextFor(input: ConfigInput = {}): CommandContext {
  return { config: resolveConfig(input), stdout: process.stdout, stderr: process.stderr };
}
