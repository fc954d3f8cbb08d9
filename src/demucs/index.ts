export { loadDemucs, type LoadDemucsOptions } from './engine.js';
export { convertCheckpoint, type ConvertedModel, type ConvertedStage } from './convert.js';
export type { TimingSink } from './segment-model.js';
export { readStateDict, PyFraction, type Checkpoint, type CheckpointTensor } from '../torch/checkpoint.js';
export { checkDemucsCheckpoint, DEMUCS_CLASS_MODULES, readDemucsCheckpoint } from './checkpoint.js';
export { parseHTDemucsConfig, type HTDemucsConfig } from './config.js';
export { parseBagFile, resolveMember, type BagFile } from './bag-file.js';
