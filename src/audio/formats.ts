/** The files a stem can be written as: one list for the CLI, the API and the store. */
export const STEM_FORMATS = ['mp3', 'wav', 'flac'] as const;
export type StemFormat = (typeof STEM_FORMATS)[number];

/** What a split writes unless told otherwise: MP3, as the v1 spec's only output format, at 320 kb/s constant. */
export const DEFAULT_STEM_FORMAT: StemFormat = 'mp3';
export const DEFAULT_MP3_BITRATE_KBPS = 320;

export const STEM_CONTENT_TYPES: Readonly<Record<StemFormat, string>> = { mp3: 'audio/mpeg', wav: 'audio/wav', flac: 'audio/flac' };

export function isStemFormat(value: string): value is StemFormat {
  return (STEM_FORMATS as readonly string[]).includes(value);
}
