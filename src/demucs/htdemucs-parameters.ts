/**
 * The parameters HTDemucs constructs (demucs/htdemucs.py, demucs/transformer.py), by name and
 * shape, from its config alone: the graph builder reads every weight against this list, so a
 * weight of the wrong shape is refused naming it, before the graph could reach a shape that
 * names nothing.
 */
import type { HTDemucsConfig } from './config.js';
import { hybridUNetParameters, Parameters, type ParameterShapes } from './v3-parameters.js';

export function htdemucsParameters(config: HTDemucsConfig): ParameterShapes {
  const unet = hybridUNetParameters({
    ...config,
    cac: true,
    // HTDemucs' DConv has neither local attention nor a BiLSTM; the config refuses MultiWrap, and
    // the time stride only shapes layers past the frequency axis, which the config refuses too.
    dconv: { mode: config.dconvMode, depth: config.dconvDepth, compress: config.dconvComp, attnFrom: Infinity, lstmFrom: Infinity },
    multiFreqs: [],
    multiFreqsDepth: 0,
    timeStride: 2,
  });
  const p = new Parameters();
  const unetChannels = Math.trunc(config.channels * config.growth ** (config.depth - 1));
  // PyTorch builds the bottom projections even without transformer layers (which never apply them).
  if (config.bottomChannels > 0) {
    for (const branch of ['', '_t']) {
      p.conv(`channel_upsampler${branch}`, [config.bottomChannels, unetChannels, 1], config.bottomChannels);
      p.conv(`channel_downsampler${branch}`, [unetChannels, config.bottomChannels, 1], unetChannels);
    }
  }
  if (config.tLayers > 0) crossTransformerParameters(p, config, config.bottomChannels || unetChannels);
  return [...unet, ...p.list];
}

/** CrossTransformerEncoder(dim): its input norms and, per branch, self- and cross-attention layers alternating. */
function crossTransformerParameters(p: Parameters, config: HTDemucsConfig, dim: number): void {
  const t = 'crosstransformer';
  const inputNorm = config.tNormIn || config.tNormInGroup;
  p.groupNorm(`${t}.norm_in`, dim, inputNorm);
  p.groupNorm(`${t}.norm_in_t`, dim, inputNorm);
  const hidden = Math.trunc(dim * config.tHiddenScale);
  const classicParity = config.tCrossFirst ? 1 : 0;
  for (const branch of ['layers', 'layers_t']) {
    for (let index = 0; index < config.tLayers; index++) {
      const prefix = `${t}.${branch}.${index}`;
      const cross = index % 2 !== classicParity;
      // nn.MultiheadAttention: queries, keys and values projected by one packed matrix.
      const attention = `${prefix}.${cross ? 'cross_attn' : 'self_attn'}`;
      p.add(`${attention}.in_proj_weight`, [3 * dim, dim]);
      p.add(`${attention}.in_proj_bias`, [3 * dim]);
      p.conv(`${attention}.out_proj`, [dim, dim], dim);
      p.conv(`${prefix}.linear1`, [hidden, dim], hidden);
      p.conv(`${prefix}.linear2`, [dim, hidden], dim);
      for (const norm of cross ? ['norm1', 'norm2', 'norm3'] : ['norm1', 'norm2']) p.groupNorm(`${prefix}.${norm}`, dim, true);
      p.groupNorm(`${prefix}.norm_out`, dim, config.tNormFirst && config.tNormOut);
      if (config.tLayerScale) for (const gamma of ['gamma_1', 'gamma_2']) p.add(`${prefix}.${gamma}.scale`, [dim]);
    }
  }
}
