/**
 * A split's mix set: which of its stems add up to the mix, each part of the song counted once.
 * Stems can overlap: an ensemble of a 4-stem and a vocals/instrumental model writes vocals,
 * drums, bass, other and no_vocals, and no_vocals is drums + bass + other again; a chain that
 * splits `vocals` further writes `vocals-vocals` and `vocals-instrumental`, which are `vocals`
 * again. Playing or summing every stem would count the accompaniment twice (about +6 dB), so
 * the page and the API's `mixStems` use this set.
 *
 * Whoever plans the stems says how they add up, as partitions: stems that add up to the mix
 * (a model's sources; an ensemble gives one per member, see ensemble/plan.ts mixPartitions)
 * or to another stem (a chain's split of that stem). The set is the finest way to make the mix
 * from written stems: the partition of the mix with the most stems (on a tie the first given),
 * each of its stems replaced by the finest partition of that stem where one exists, and so on.
 */

/** Stems that add up to `whole`: the mix when `whole` is absent, else that stem (a chain split it). */
export interface StemPartition {
  readonly whole?: string;
  readonly parts: readonly string[];
}

/** The written stems that add up to the mix, in the order partitions name them; [] when none do (a single stem written). */
export function mixStems(written: readonly string[], partitions: readonly StemPartition[]): string[] {
  const have = new Set(written);
  const finest = (whole: string | undefined, seen: ReadonlySet<string>): string[] | undefined => {
    let best: string[] | undefined;
    for (const partition of partitions) {
      if (partition.whole !== whole || partition.parts.some((part) => seen.has(part))) continue;
      const inner = new Set([...seen, ...partition.parts]);
      const expanded = partition.parts.map((part) => finest(part, inner) ?? (have.has(part) ? [part] : undefined));
      if (expanded.some((parts) => parts === undefined)) continue;
      const stems = (expanded as string[][]).flat();
      if (best === undefined || stems.length > best.length) best = stems;
    }
    return best;
  };
  return finest(undefined, new Set()) ?? [];
}
