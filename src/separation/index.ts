export { isTrackModel, type ModelManifest, type SegmentModel, type SeparationModel, type SeparationProgress, type TrackModel } from './model.js';
export { separate, normalizationOf, statisticsOf, shiftOffsets, type SeparateOptions, type StereoTrack, type Normalization } from './pipeline.js';
export { separateStream, demucsNormalization, NormalizationMeter, TrackWindow, type StemWriter, type StreamOptions, type TrackStatistics, type TrackStream } from './stream.js';
export { Chunk, chunksOf, chunkCount, strideOf, transitionWeights } from './chunks.js';
export { combineBag } from './bag.js';
export { MANIFEST_FORMAT, loadManifestModel, parseModelManifest, readModelManifest, type LoadModelOptions } from './manifest.js';
