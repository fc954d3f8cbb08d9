/**
 * Which stems an ensemble writes and which of each member's sources make them.
 *
 * Stems are matched by name, after two spellings of one stem are made one:
 * - `instrumental` (UVR's and MDX-Net's name) is `no_vocals`;
 * - a two-stem model of `X` and `other` (MSST's vocals/other models) made `other` as all but
 *   `X`: it is `no_X` (python-audio-separator files such an `other` as "Instrumental" too).
 *
 * The ensemble writes every stem some member makes (in the order first met), each combined
 * from the members that make it. A `no_X` (a single-target model's complement) is also made by
 * every member that makes `X` among other stems: the sum of its other stems is its `no_X`, as
 * `--two-stems X` defines it. So a vocals RoFormer with a 4-stem model gives `vocals` from
 * both, `drums`, `bass` and `other` from the 4-stem model, and `no_vocals` from the RoFormer's
 * `no_vocals` and the 4-stem model's drums + bass + other. With `--two-stems X` the ensemble
 * writes `X` and `no_X` only, each from every member that makes it so.
 */
import { StemsplitError } from '../errors.js';
import type { StemPartition } from '../separation/mix-set.js';

export interface MemberStems {
  readonly name: string;
  /** The member model's sources, in the order it writes them. */
  readonly sources: readonly string[];
}

/** Member `member` makes a stem as the sum of these of its sources (one: the stem itself; several: a complement). */
export interface StemPart {
  readonly member: number;
  readonly sources: readonly number[];
}

export interface EnsemblePlan {
  readonly stems: readonly string[];
  /** Per stem, the members that make it, in member order. */
  readonly parts: readonly (readonly StemPart[])[];
}

/** A member's sources under the names the ensemble matches them by. */
export function matchingNames(sources: readonly string[]): string[] {
  const names = sources.map((source) => {
    const lower = source.toLowerCase();
    return lower === 'instrumental' ? 'no_vocals' : lower;
  });
  if (names.length === 2 && names.includes('other')) {
    const target = names.find((name) => name !== 'other') as string;
    if (!target.startsWith('no_')) return names.map((name) => (name === 'other' ? `no_${target}` : name));
  }
  return names;
}

/** How `names` (matching names) make `stem`: the stem itself, the complement of its target, or not at all. */
function partOf(names: readonly string[], stem: string): number[] | undefined {
  const own = names.indexOf(stem);
  if (own >= 0) return [own];
  if (!stem.startsWith('no_')) return undefined;
  const target = names.indexOf(stem.slice(3));
  if (target < 0) return undefined;
  const rest = names.flatMap((name, index) => (index !== target && !name.startsWith('no_') ? [index] : []));
  return rest.length > 0 ? rest : undefined;
}

export function ensemblePlan(members: readonly MemberStems[], twoStems?: string): EnsemblePlan {
  const names = members.map((member) => matchingNames(member.sources));
  const wanted = twoStems === undefined ? [...new Set(names.flat())] : [twoStems.toLowerCase(), `no_${twoStems.toLowerCase()}`];
  const parts = wanted.map((stem) =>
    names.flatMap((own, member) => {
      const sources = partOf(own, stem);
      return sources ? [{ member, sources }] : [];
    }),
  );
  for (const [index, stem] of wanted.entries()) {
    if ((parts[index] as StemPart[]).length === 0) {
      throw new StemsplitError(
        'USAGE',
        `--two-stems ${twoStems}: no model of the ensemble makes ${stem} (${members.map((m) => `${m.name}: ${m.sources.join(', ')}`).join('; ')})`,
      );
    }
  }
  return { stems: wanted, parts };
}

/**
 * The ways the ensemble's stems add up to the mix, one per member (separation/mix-set.ts picks
 * the finest): the stems a member makes from one source each, then those it makes as a sum of
 * sources none of them took, where together they cover all its sources once. A 4-stem member
 * gives vocals, drums, bass, other (its no_vocals, drums + bass + other again, is left out); a
 * vocals/instrumental member vocals, no_vocals; with `--two-stems X` every member X, no_X.
 */
export function mixPartitions(plan: EnsemblePlan, members: readonly MemberStems[]): StemPartition[] {
  return members.flatMap((member, index) => {
    const made = plan.stems.flatMap((stem, at) => {
      const part = (plan.parts[at] as readonly StemPart[]).find((p) => p.member === index);
      return part === undefined ? [] : [{ stem, sources: part.sources }];
    });
    const taken = new Set<number>();
    const take = (sources: readonly number[]): boolean => {
      if (sources.some((source) => taken.has(source))) return false;
      for (const source of sources) taken.add(source);
      return true;
    };
    const singles = new Set(made.filter((one) => one.sources.length === 1 && take(one.sources)));
    const sums = new Set(made.filter((one) => one.sources.length > 1 && take(one.sources)));
    if (taken.size !== member.sources.length) return [];
    return [{ parts: made.filter((one) => singles.has(one) || sums.has(one)).map((one) => one.stem) }];
  });
}

/** Member `member`'s contribution to every stem it takes part in: planar [2, frames] each, in plan order of its parts. */
export function memberParts(plan: EnsemblePlan, member: number): Array<{ readonly stem: number; readonly sources: readonly number[] }> {
  return plan.parts.flatMap((parts, stem) => parts.filter((part) => part.member === member).map((part) => ({ stem, sources: part.sources })));
}

/** The sum of a member's `sources` blocks (planar [2, frames] each). */
export function sumSources(blocks: readonly Float32Array[], sources: readonly number[], frames: number): Float32Array {
  if (sources.length === 1) return (blocks[sources[0] as number] as Float32Array).subarray(0, 2 * frames);
  const out = new Float32Array(2 * frames);
  for (const source of sources) {
    const block = blocks[source] as Float32Array;
    for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) + (block[i] as number);
  }
  return out;
}
