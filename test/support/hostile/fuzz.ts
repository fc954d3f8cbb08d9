/**
 * The longer run of hostile model files: every named case and `random` seeded mutations loaded as
 * the split worker loads them, then every named case through the real CLI. Its report gives the
 * figures docs/reliability.md quotes: cases, refusals, time and peak RSS of the worst case, and
 * every broken rule (a refusal that is not one line naming the file with exit 13, a case over 5 s
 * or 500 MB, a split that wrote stems).
 */
import { ALL_CASES } from './cases.js';
import { randomCases } from './random.js';
import { cliRunner, libraryRunner, type HostileOutcome } from './run.js';

export interface HostileFuzzOptions {
  readonly seed: number;
  readonly random: number;
  /** Run the named cases through the CLI too. */
  readonly cli: boolean;
  readonly log?: (line: string) => void;
}

export interface RunFigures {
  readonly cases: number;
  readonly refused: number;
  readonly accepted: number;
  readonly seconds: number;
  readonly slowest: { readonly name: string; readonly seconds: number };
  readonly largest: { readonly name: string; readonly peakMb: number };
}

export interface HostileFuzzReport {
  readonly seed: number;
  readonly library: RunFigures;
  readonly cli?: RunFigures;
  readonly problems: readonly string[];
}

function figures(outcomes: readonly HostileOutcome[], seconds: number): RunFigures {
  const slowest = outcomes.reduce((a, b) => (b.seconds > a.seconds ? b : a));
  const largest = outcomes.reduce((a, b) => (b.peakMb > a.peakMb ? b : a));
  const refused = outcomes.filter((outcome) => outcome.result === 'refused').length;
  return {
    cases: outcomes.length,
    refused,
    accepted: outcomes.length - refused,
    seconds,
    slowest: { name: slowest.name, seconds: slowest.seconds },
    largest: { name: largest.name, peakMb: largest.peakMb },
  };
}

function problemsOf(outcomes: readonly HostileOutcome[], where: string): string[] {
  return outcomes.flatMap((outcome) => outcome.problems.map((problem) => `${where} ${outcome.name}: ${problem} (${outcome.message.slice(0, 300)})`));
}

export async function runHostileFuzz(options: HostileFuzzOptions): Promise<HostileFuzzReport> {
  const log = options.log ?? (() => undefined);
  const load = libraryRunner();
  const libraryOutcomes: HostileOutcome[] = [];
  const started = performance.now();
  const cases = [...ALL_CASES, ...randomCases(options.seed, options.random)];
  for (const [index, hostile] of cases.entries()) {
    libraryOutcomes.push(await load(hostile));
    if ((index + 1) % 500 === 0) log(`library: ${index + 1}/${cases.length}`);
  }
  const library = figures(libraryOutcomes, (performance.now() - started) / 1000);
  const problems = problemsOf(libraryOutcomes, 'library');
  if (!options.cli) return { seed: options.seed, library, problems };

  const split = cliRunner();
  const cliOutcomes: HostileOutcome[] = [];
  const cliStarted = performance.now();
  for (const hostile of ALL_CASES) {
    const outcome = await split(hostile);
    cliOutcomes.push(outcome);
    log(`cli: ${hostile.name}: exit ${String(outcome.code)}, ${outcome.seconds.toFixed(1)} s, ${outcome.peakMb} MB`);
  }
  return {
    seed: options.seed,
    library,
    cli: figures(cliOutcomes, (performance.now() - cliStarted) / 1000),
    problems: [...problems, ...problemsOf(cliOutcomes, 'cli')],
  };
}

export function formatHostileFuzz(report: HostileFuzzReport): string {
  const row = (what: string, run: RunFigures) =>
    `${what}: ${run.cases} cases, ${run.refused} refused, ${run.accepted} loaded, ${run.seconds.toFixed(0)} s; slowest ${run.slowest.seconds.toFixed(2)} s (${run.slowest.name}); largest peak RSS ${run.largest.peakMb} MB (${run.largest.name})`;
  return [row('library', report.library), ...(report.cli ? [row('cli', report.cli)] : []), `problems: ${report.problems.length}`].join('\n');
}
