export { loadDemucs, convertCheckpoint, type LoadDemucsOptions, type ConvertedModel, type ConvertedStage, type TimingSink } from './engine.js';
export { readCheckpoint, PyFraction, type Checkpoint, type CheckpointTensor } from './checkpoint.js';
export { parseHTDemucsConfig, type HTDemucsConfig } from './config.js';
export { parseBagFile, resolveMember, type BagFile } from './bag-file.js';
