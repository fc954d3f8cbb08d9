export { isTrackModel, type ModelManifest, type SegmentModel, type SeparationModel, type SeparationProgress, type TrackModel } from './model.js';
export { separate, normalizationOf, statisticsOf, type SeparateOptions, type StereoTrack } from './pipeline.js';
export { separateStream, shiftOffsets, type StreamOptions } from './segment-stream.js';
export { monoMixNormalization, NormalizationMeter, type Normalization, type TrackStatistics } from './normalization.js';
export { TrackWindow, type StemWriter, type TrackStream } from './track-stream.js';
export { Chunk, chunksOf, chunkCount, strideOf, transitionWeights } from './chunks.js';
export { combineBag } from './bag.js';
