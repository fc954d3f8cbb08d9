/**
 * What a model is for, in the words of UVR users: the page groups models by it and the API lists
 * it. A catalog entry or `models add --task` may say; otherwise it is told from the stems a
 * model writes and its name.
 */
export const TASKS = ['four-stems', 'six-stems', 'vocals', 'instrumental', 'karaoke', 'dereverb', 'deecho', 'denoise', 'drum-parts', 'other'] as const;
export type Task = (typeof TASKS)[number];

const FOUR_STEMS = ['drums', 'bass', 'other', 'vocals'];
const DRUM_PARTS = ['kick', 'snare', 'toms', 'hh', 'hihat', 'ride', 'crash', 'cymbals'];

/** The task of a model named `name` that writes `stems` (lower-case), unless `declared`. */
export function taskOf(name: string, stems: readonly string[], declared?: Task): Task {
  if (declared !== undefined) return declared;
  const has = (stem: string) => stems.includes(stem);
  const words = `${name} ${stems.join(' ')}`.toLowerCase();
  if (FOUR_STEMS.every(has)) return has('guitar') && has('piano') ? 'six-stems' : 'four-stems';
  if (stems.some((stem) => DRUM_PARTS.includes(stem))) return 'drum-parts';
  if (/karaoke|lead|back(ing)?[_ -]?vocals/.test(words)) return 'karaoke';
  if (/reverb/.test(words)) return 'dereverb';
  if (/echo|delay/.test(words)) return 'deecho';
  if (/noise/.test(words)) return 'denoise';
  if (stems[0] === 'instrumental' || (stems.length === 1 && stems[0] === 'inst')) return 'instrumental';
  if (has('vocals')) return 'vocals';
  return 'other';
}
