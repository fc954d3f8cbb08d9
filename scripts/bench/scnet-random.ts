/**
 * SCNet-large with random weights and the published hyper-parameters (no download): shared by the
 * benchmark (scripts/bench/scnet.ts) and the int8 fidelity check (scripts/eval/int8-fidelity.ts).
 */
import type { ScnetConfig } from '../../src/msst/scnet/config.js';
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';
import { randomTensor } from './synthetic.js';

/** SCNet-large as MSST publishes it (configs/config_musdb18_scnet_large.yaml): the model and inference sections. */
export const SCNET_LARGE = {
  audio: { chunk_size: 485100, num_channels: 2, sample_rate: 44100, min_mean_abs: 0.0 },
  model: {
    sources: ['drums', 'bass', 'other', 'vocals'],
    audio_channels: 2,
    dims: [4, 64, 128, 256],
    nfft: 4096,
    hop_size: 1024,
    win_size: 4096,
    normalized: true,
    band_SR: [0.225, 0.372, 0.403],
    band_stride: [1, 4, 16],
    band_kernel: [3, 4, 16],
    conv_depths: [3, 2, 1],
    compress: 4,
    conv_kernel: 3,
    num_dplayer: 6,
    expand: 1,
  },
  training: { instruments: ['drums', 'bass', 'other', 'vocals'], target_instrument: null, use_amp: true },
  inference: { batch_size: 8, dim_t: 256, num_overlap: 4, normalize: false },
};

/** Every parameter an SCNet of this config has, named as in its state_dict, with random values. */
export function randomScnetState(config: ScnetConfig): Map<string, CheckpointTensor> {
  const state = new Map<string, CheckpointTensor>();
  const seed = { seed: 4321 };
  const weight = (name: string, shape: number[], fanIn: number) => state.set(name, randomTensor(shape, 1 / Math.sqrt(fanIn), seed));
  const bias = (name: string, size: number) => state.set(name, randomTensor([size], 0.05, seed));
  const norm = (prefix: string, size: number) => {
    state.set(`${prefix}.weight`, { shape: [size], data: new Float32Array(size).fill(1) });
    state.set(`${prefix}.bias`, { shape: [size], data: new Float32Array(size) });
  };
  const { dims, bands, convDepths, convKernel: k } = config;
  const levels = dims.length - 1;
  for (let level = 0; level < levels; level++) {
    const cin = dims[level] as number;
    const c = dims[level + 1] as number;
    const hidden = Math.floor(c / config.compress);
    bands.forEach((band, b) => {
      weight(`encoder.${level}.SDlayer.convs.${b}.weight`, [c, cin, band.kernel, 1], cin * band.kernel);
      bias(`encoder.${level}.SDlayer.convs.${b}.bias`, c);
      for (let d = 0; d < (convDepths[b] as number); d++) {
        const p = `encoder.${level}.conv_modules.${b}.layers.${d}`;
        norm(`${p}.0`, c);
        weight(`${p}.1.weight`, [2 * hidden, c, k], c * k);
        bias(`${p}.1.bias`, 2 * hidden);
        weight(`${p}.3.weight`, [hidden, 1, k], k);
        bias(`${p}.3.bias`, hidden);
        norm(`${p}.4`, hidden);
        weight(`${p}.6.weight`, [c, hidden, 1], hidden);
        bias(`${p}.6.bias`, c);
      }
    });
    weight(`encoder.${level}.globalconv.weight`, [c, c, 3, 3], 9 * c);
    bias(`encoder.${level}.globalconv.bias`, c);
    const j = levels - 1 - level;
    const cout = level === 0 ? 2 * config.channels * config.sources.length : cin;
    weight(`decoder.${j}.0.conv.weight`, [2 * c, 2 * c, 3, 3], 18 * c);
    bias(`decoder.${j}.0.conv.bias`, 2 * c);
    bands.forEach((band, b) => {
      weight(`decoder.${j}.1.convtrs.${b}.weight`, [c, cout, band.kernel, 1], c * band.kernel);
      bias(`decoder.${j}.1.convtrs.${b}.bias`, cout);
    });
  }
  for (let layer = 0; layer < config.numDualPathLayers; layer++) {
    const c = (dims[levels] as number) * (layer % 2 === 1 ? 2 : 1);
    const h = c * config.expand;
    const p = `separation_net.dp_modules.${layer}`;
    for (let path = 0; path < 2; path++) {
      for (const suffix of ['', '_reverse']) {
        weight(`${p}.lstm_layers.${path}.weight_ih_l0${suffix}`, [4 * h, c], h);
        weight(`${p}.lstm_layers.${path}.weight_hh_l0${suffix}`, [4 * h, h], h);
        bias(`${p}.lstm_layers.${path}.bias_ih_l0${suffix}`, 4 * h);
        bias(`${p}.lstm_layers.${path}.bias_hh_l0${suffix}`, 4 * h);
      }
      weight(`${p}.linear_layers.${path}.weight`, [c, 2 * h], 2 * h);
      bias(`${p}.linear_layers.${path}.bias`, c);
      norm(`${p}.norm_layers.${path}`, c);
    }
  }
  return state;
}
