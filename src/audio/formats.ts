/** The files a stem can be written as: one list for the CLI, the API and the store. */
export const STEM_FORMATS = ['mp3', 'wav', 'flac', 'ogg', 'opus', 'm4a', 'aiff', 'alac'] as const;
export type StemFormat = (typeof STEM_FORMATS)[number];

/** What a split writes unless told otherwise: MP3, as the v1 spec's only output format, at 320 kb/s constant. */
export const DEFAULT_STEM_FORMAT: StemFormat = 'mp3';

/** The kb/s a lossy format takes: `--bitrate` / `bitrateKbps` must lie in [min, max] (a stereo stem's figures). */
export interface BitrateRange {
  readonly min: number;
  readonly max: number;
  readonly default: number;
  /** The most a mono stem can carry, where the encoder refuses more (the asked bitrate is capped there). */
  readonly monoMax?: number;
}

/**
 * The one vocabulary of a stem's depth a split asks for, from the CLI's flags to the API's
 * `bitDepth`, the job's record and the worker: 16- or 24-bit integers, or 32-bit float.
 */
export const BIT_DEPTHS = [16, 24, 32] as const;
export type BitDepth = (typeof BIT_DEPTHS)[number];
/** The depths a lossless format holds (a float source is written 24-bit where 32 is not among them). */
type LosslessDepth = BitDepth;

/** Each format's facts, in one place: its file extension, its content type, and what it can hold. */
export interface StemFormatInfo {
  /** A name in words, for messages. */
  readonly title: string;
  /** The stem files' extension; ALAC shares `.m4a` with AAC, so it is not always the format's name. */
  readonly extension: string;
  readonly contentType: string;
  /** A lossy format's bitrate range; absent for lossless ones, which refuse a bitrate. */
  readonly bitrate?: BitrateRange;
  /** A lossless format's depths; absent for lossy ones (they take float samples and refuse a depth). */
  readonly depths?: readonly LosslessDepth[];
  /** The only rates the format holds; absent when it holds any. Other rates are written at the nearest listed one above (`storableRate`). */
  readonly rates?: readonly number[];
}

/** Rates an MP3 can have (MPEG-1, -2 and 2.5). */
export const MP3_RATES: readonly number[] = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];
/** Opus codes at 48 kHz and these lower rates only (RFC 6716). */
const OPUS_RATES: readonly number[] = [8000, 12000, 16000, 24000, 48000];
/** The AAC sampling-frequency table (ISO/IEC 14496-3) up to 96 kHz. */
const AAC_RATES: readonly number[] = [7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000];

export const STEM_FORMAT_INFO: Readonly<Record<StemFormat, StemFormatInfo>> = {
  mp3: { title: 'MP3', extension: 'mp3', contentType: 'audio/mpeg', bitrate: { min: 32, max: 320, default: 320 }, rates: MP3_RATES },
  wav: { title: 'WAV', extension: 'wav', contentType: 'audio/wav', depths: [16, 24, 32] },
  flac: { title: 'FLAC', extension: 'flac', contentType: 'audio/flac', depths: [16, 24] },
  // Vorbis in its quality mode (encode.ts): the bitrate picks the quality whose nominal rate it is.
  ogg: { title: 'Ogg Vorbis', extension: 'ogg', contentType: 'audio/ogg', bitrate: { min: 45, max: 500, default: 320 } },
  opus: {
    title: 'Opus',
    extension: 'opus',
    contentType: 'audio/ogg; codecs=opus',
    bitrate: { min: 6, max: 512, default: 256, monoMax: 256 },
    rates: OPUS_RATES,
  },
  m4a: { title: 'AAC (M4A)', extension: 'm4a', contentType: 'audio/mp4', bitrate: { min: 32, max: 512, default: 256 }, rates: AAC_RATES },
  aiff: { title: 'AIFF', extension: 'aiff', contentType: 'audio/aiff', depths: [16, 24] },
  alac: { title: 'ALAC (M4A)', extension: 'm4a', contentType: 'audio/mp4', depths: [16, 24] },
};

export const DEFAULT_MP3_BITRATE_KBPS = STEM_FORMAT_INFO.mp3.bitrate?.default ?? 320;

export const STEM_CONTENT_TYPES: Readonly<Record<StemFormat, string>> = Object.fromEntries(
  STEM_FORMATS.map((format) => [format, STEM_FORMAT_INFO[format].contentType]),
) as Record<StemFormat, string>;

/** Every stem file extension, each once (the download URLs end in one). */
export const STEM_EXTENSIONS = [...new Set(STEM_FORMATS.map((format) => STEM_FORMAT_INFO[format].extension))] as [string, ...string[]];

export function isStemFormat(value: string): value is StemFormat {
  return (STEM_FORMATS as readonly string[]).includes(value);
}

export function stemExtension(format: StemFormat): string {
  return STEM_FORMAT_INFO[format].extension;
}

/** Why `kbps` cannot be `format`'s bitrate, in a sentence naming `field`; undefined when it can. */
export function bitrateProblem(format: StemFormat, kbps: number, field: string): string | undefined {
  const range = STEM_FORMAT_INFO[format].bitrate;
  if (range === undefined) return `${field} applies to lossy formats (${lossyFormats().join(', ')}); ${format} is lossless`;
  if (!Number.isInteger(kbps) || kbps < range.min || kbps > range.max)
    return `${field} for ${format} must be a whole number of kb/s from ${range.min} to ${range.max}, got ${kbps}`;
  return undefined;
}

/** The kb/s a stem of `channels` is written at: the one asked (or the format's default), capped where a mono stem holds less. */
export function stemBitrate(format: StemFormat, asked: number | undefined, channels: 1 | 2): number | undefined {
  const range = STEM_FORMAT_INFO[format].bitrate;
  if (range === undefined) return undefined;
  const kbps = asked ?? range.default;
  return channels === 1 && range.monoMax !== undefined ? Math.min(kbps, range.monoMax) : kbps;
}

export function lossyFormats(): StemFormat[] {
  return STEM_FORMATS.filter((format) => STEM_FORMAT_INFO[format].bitrate !== undefined);
}

/** Whether `format` holds this depth (a lossy format holds none). */
export function holdsDepth(format: StemFormat, depth: LosslessDepth): boolean {
  return STEM_FORMAT_INFO[format].depths?.includes(depth) ?? false;
}

/** The formats that hold `depth`, for messages. */
export function formatsHolding(depth: LosslessDepth): StemFormat[] {
  return STEM_FORMATS.filter((format) => holdsDepth(format, depth));
}

/** The rate `format` stores `rate` at: itself where it can, else the nearest rate above it the format holds, else its highest. */
export function storableRate(format: StemFormat, rate: number): number {
  const rates = STEM_FORMAT_INFO[format].rates;
  if (rates === undefined || rates.includes(rate)) return rate;
  return rates.find((candidate) => candidate > rate) ?? (rates.at(-1) as number);
}
