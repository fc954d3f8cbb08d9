export { resolveFfmpegPath } from './ffmpeg.js';
export { decodeFailed, probeDurationSeconds, readAudioHeader, type AudioHeader } from './probe.js';
export {
  decodeToPlanar,
  decodeInterleaved,
  type DecodeOptions,
  type DecodeProgress,
  type PlanarAudio,
} from './decode.js';
export { isStemFormat, STEM_CONTENT_TYPES, STEM_FORMATS } from './formats.js';
export { encodeStem, openStemEncoder, type EncodeOptions, type StemDepth, type StemEncoder, type StemFormat } from './encode.js';
export { readWavLayout, wavHeader, writeWavTo, type WavLayout, type WavSampleFormat } from './wav.js';
