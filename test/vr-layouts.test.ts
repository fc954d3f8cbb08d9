/**
 * The VR layouts and params the shared fixtures do not reach, on state dicts written here as
 * `torch.save` writes them (harness/hostile/torch-files.ts), at small widths but with the real
 * structure: VR 5.0 with 5, 6 (and a fifth encoder) or 7 ASPP branches (conv6 and conv7 one
 * module, as UVR's 33966/537238 layouts save them), and VR 5.1 with its BiLSTMs.
 *
 * Their output layer is zero, so the mask is 0.5 everywhere: with aggression 0 the two stems are
 * then equal, and together they give back what the params' bands keep of the mix. That checks
 * every band layout, crop, filter, channel conversion and resampler path end to end against the
 * mix itself: each params file's figure is printed, and must clear a floor well below it.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pickle, stateDictOps, torchFile, type TensorMeta } from '../harness/hostile/torch-files.js';
import { separateVr, VrNetwork, vrSettings } from '../src/vr/engine.js';
import { checkVrKeys } from '../src/vr/model-data.js';
import { tempDir } from './support/server.js';

const work = tempDir('stemsplit-vr-layouts-');
after(() => rmSync(work, { recursive: true, force: true }));

type Tensor = readonly [name: string, shape: readonly number[]];

/** Conv2DBNActiv's tensors under `prefix` (`.0` the conv, `.1` its BatchNorm). */
function convBn(prefix: string, out: number, input: number, kernel: number): Tensor[] {
  return [[`${prefix}.0.weight`, [out, input, kernel, kernel]], ...batchNorm(`${prefix}.1`, out)];
}

function batchNorm(prefix: string, channels: number): Tensor[] {
  return ['weight', 'bias', 'running_mean', 'running_var'].map((key) => [`${prefix}.${key}`, [channels]] as Tensor);
}

/** nets.BaseASPPNet(nin, ch) with `branches` ASPP branches and an optional fifth encoder. */
function asppNet(prefix: string, nin: number, ch: number, fiveLevels: boolean, branches: number): Tensor[] {
  const widths = [nin, ch, 2 * ch, 4 * ch, 8 * ch, ...(fiveLevels ? [16 * ch] : [])];
  const tensors: Tensor[] = [];
  for (let level = 1; level < widths.length; level++) {
    tensors.push(...convBn(`${prefix}.enc${level}.conv1.conv`, widths[level] as number, widths[level - 1] as number, 3));
    tensors.push(...convBn(`${prefix}.enc${level}.conv2.conv`, widths[level] as number, widths[level] as number, 3));
  }
  const deepest = widths.at(-1) as number;
  tensors.push(...convBn(`${prefix}.aspp.conv1.1.conv`, deepest, deepest, 1), ...convBn(`${prefix}.aspp.conv2.conv`, deepest, deepest, 1));
  for (let branch = 3; branch <= branches; branch++) {
    const at = `${prefix}.aspp.conv${branch}.conv`;
    tensors.push([`${at}.0.weight`, [deepest, 1, 3, 3]], [`${at}.1.weight`, [deepest, deepest, 1, 1]], ...batchNorm(`${at}.2`, deepest));
  }
  tensors.push(...convBn(`${prefix}.aspp.bottleneck.0.conv`, 2 * deepest, branches * deepest, 1));
  let below = 2 * deepest;
  for (let level = widths.length - 1; level >= 1; level--) {
    tensors.push(...convBn(`${prefix}.dec${level}.conv.conv`, widths[level] as number, below + (widths[level] as number), 3));
    below = widths[level] as number;
  }
  return tensors;
}

/** nets.CascadedASPPNet with UVR's capacity pattern at base width `ch`. */
function v50(ch: number, fiveLevels: boolean, branches: number): Tensor[] {
  return [
    ...asppNet('stg1_low_band_net', 2, ch, fiveLevels, branches),
    ...asppNet('stg1_high_band_net', 2, ch, fiveLevels, branches),
    ...convBn('stg2_bridge.conv', ch / 2, ch + 2, 1),
    ...asppNet('stg2_full_band_net', ch / 2, ch, fiveLevels, branches),
    ...convBn('stg3_bridge.conv', ch, 2 * ch + 2, 1),
    ...asppNet('stg3_full_band_net', ch, 2 * ch, fiveLevels, branches),
    ['out.weight', [2, 2 * ch, 1, 1]],
    ['aux1_out.weight', [2, ch, 1, 1]],
    ['aux2_out.weight', [2, ch, 1, 1]],
  ];
}

/** nets_new.BaseNet(nin, n, ninLstm, noutLstm). */
function baseNet(prefix: string, nin: number, n: number, ninLstm: number, noutLstm: number): Tensor[] {
  const widths = [n, 2 * n, 4 * n, 6 * n, 8 * n];
  const tensors: Tensor[] = [...convBn(`${prefix}.enc1.conv`, n, nin, 3)];
  for (let level = 2; level <= 5; level++) {
    tensors.push(...convBn(`${prefix}.enc${level}.conv1.conv`, widths[level - 1] as number, widths[level - 2] as number, 3));
    tensors.push(...convBn(`${prefix}.enc${level}.conv2.conv`, widths[level - 1] as number, widths[level - 1] as number, 3));
  }
  const a = 8 * n;
  tensors.push(...convBn(`${prefix}.aspp.conv1.1.conv`, a, a, 1), ...convBn(`${prefix}.aspp.conv2.conv`, a, a, 1));
  for (const branch of [3, 4, 5]) tensors.push(...convBn(`${prefix}.aspp.conv${branch}.conv`, a, a, 3));
  tensors.push(...convBn(`${prefix}.aspp.bottleneck.conv`, a, 5 * a, 1));
  tensors.push(...convBn(`${prefix}.dec4.conv1.conv`, 6 * n, 14 * n, 3), ...convBn(`${prefix}.dec3.conv1.conv`, 4 * n, 10 * n, 3), ...convBn(`${prefix}.dec2.conv1.conv`, 2 * n, 6 * n, 3));
  const hidden = noutLstm / 2;
  tensors.push(...convBn(`${prefix}.lstm_dec2.conv.conv`, 1, 2 * n, 1));
  for (const suffix of ['', '_reverse']) {
    const lstm = `${prefix}.lstm_dec2.lstm`;
    tensors.push([`${lstm}.weight_ih_l0${suffix}`, [4 * hidden, ninLstm]], [`${lstm}.weight_hh_l0${suffix}`, [4 * hidden, hidden]], [`${lstm}.bias_ih_l0${suffix}`, [4 * hidden]], [`${lstm}.bias_hh_l0${suffix}`, [4 * hidden]]);
  }
  tensors.push([`${prefix}.lstm_dec2.dense.0.weight`, [ninLstm, noutLstm]], [`${prefix}.lstm_dec2.dense.0.bias`, [ninLstm]], ...batchNorm(`${prefix}.lstm_dec2.dense.1`, ninLstm));
  tensors.push(...convBn(`${prefix}.dec1.conv1.conv`, n, 3 * n + 1, 3));
  return tensors;
}

/** nets_new.CascadedNet(bins·2, nout, nout_lstm). */
function v51(bins: number, nout: number, noutLstm: number): Tensor[] {
  const ninLstm = Math.floor(bins / 2);
  return [
    ...baseNet('stg1_low_band_net.0', 2, nout / 2, Math.floor(ninLstm / 2), noutLstm),
    ...convBn('stg1_low_band_net.1.conv', nout / 4, nout / 2, 1),
    ...baseNet('stg1_high_band_net', 2, nout / 4, Math.floor(ninLstm / 2), noutLstm / 2),
    ...baseNet('stg2_low_band_net.0', nout / 4 + 2, nout, Math.floor(ninLstm / 2), noutLstm),
    ...convBn('stg2_low_band_net.1.conv', nout / 2, nout, 1),
    ...baseNet('stg2_high_band_net', nout / 4 + 2, nout / 2, Math.floor(ninLstm / 2), noutLstm / 2),
    ...baseNet('stg3_full_band_net', (3 * nout) / 4 + 2, nout, ninLstm, noutLstm),
    ['out.weight', [2, nout, 1, 1]],
    ['aux_out.weight', [2, (3 * nout) / 4, 1, 1]],
  ];
}

/**
 * Writes the tensors as a state dict: seeded small weights, BatchNorm at identity statistics, the
 * output layer zero (a mask of 0.5); conv6 and conv7 of a 7-branch ASPP share one storage.
 */
function writePth(file: string, tensors: readonly Tensor[]): void {
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31 - 0.5;
  };
  const storages: Record<string, Uint8Array> = {};
  const metas: [string, TensorMeta][] = tensors.map(([name, shape]) => {
    const shared = /\.conv7\./.test(name) ? name.replace('.conv7.', '.conv6.') : name;
    const key = String(tensors.findIndex(([other]) => other === shared));
    if (storages[key] === undefined) {
      const count = shape.reduce((a, b) => a * b, 1);
      const fanIn = shape.slice(1).reduce((a, b) => a * b, 1);
      const values = new Float32Array(count).map(() => {
        if (name === 'out.weight' || /running_mean|\.bias/.test(name)) return 0;
        if (/running_var/.test(name) || (shape.length === 1 && name.endsWith('.weight'))) return 1;
        return random() * 2 * Math.sqrt(3 / fanIn);
      });
      storages[key] = new Uint8Array(values.buffer);
    }
    return [name, { key, shape }];
  });
  writeFileSync(file, torchFile(pickle(stateDictOps(metas)), storages));
}

/** Two seconds of a stereo mix whose channels differ (so mid/side conversions matter), float32. */
function mix(): [Float64Array, Float64Array] {
  const length = 2 * 44_100;
  const channel = (phase: number) =>
    new Float64Array(length).map((_, i) => {
      const t = i / 44_100;
      return Math.fround(0.3 * Math.sin(2 * Math.PI * 220 * t + phase) + 0.15 * Math.sin(2 * Math.PI * 1375 * t) + 0.05 * Math.sin(2 * Math.PI * (5000 + 3000 * t) * t + phase) + 0.02 * Math.sin(2 * Math.PI * 12_500 * t));
    });
  return [channel(0), channel(1.1)];
}

function snrDb(reference: Float64Array, actual: Float64Array, length: number): number {
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < length; i++) {
    signal += (reference[i] as number) ** 2;
    noise += ((reference[i] as number) - (actual[i] as number)) ** 2;
  }
  return 10 * Math.log10(signal / noise);
}

/** Params files and the floor their bands' reconstruction of the mix must clear (dB, both stems summed). */
const PARAMS: Readonly<Record<string, number>> = {
  '1band_sr44100_hl512': 60,
  '1band_sr44100_hl256': 60,
  '1band_sr44100_hl1024': 60,
  '1band_sr44100_hl512_nf1024': 60,
  '1band_sr44100_hl512_cut': 3,
  '2band_44100_lofi': 10,
  '3band_44100': 10,
  '3band_44100_mid': 10,
  '3band_44100_msb2': 10,
  '4band_44100': 10,
  '4band_44100_reverse': 10,
  '4band_v2': 10,
  '4band_v3_sn': 10,
  ensemble: 10,
};

const LAYOUTS = [
  { name: 'VR 5.0, 5 ASPP branches', tensors: () => v50(4, false, 5), params: Object.keys(PARAMS) },
  { name: 'VR 5.0, a fifth encoder and 6 ASPP branches (129605)', tensors: () => v50(2, true, 6), params: ['1band_sr44100_hl512', '4band_44100'] },
  { name: 'VR 5.0, 7 ASPP branches, conv6 = conv7 (33966, 537238)', tensors: () => v50(4, false, 7), params: ['1band_sr44100_hl512', '3band_44100_msb2'] },
] as const;

describe('VR layouts and params beyond the fixtures', () => {
  const track = mix();

  async function run(pth: string, param: string, nout?: readonly [number, number]): Promise<{ version: string; snr: number; equal: boolean }> {
    const data = checkVrKeys({ vr_model_param: param, primary_stem: 'Vocals', ...(nout ? { nout: nout[0], nout_lstm: nout[1] } : {}) }, param);
    const settings = vrSettings(data, { aggression: 0 });
    const network = await VrNetwork.open(pth, settings, { intraOpThreads: 2 });
    try {
      const [primary, secondary] = await separateVr(network, settings, track);
      const length = primary[0].length;
      assert.ok(length > 1.9 * 44_100 && length <= track[0].length, `${param}: ${length} samples`);
      const equal = primary.every((channel, c) => channel.every((v, i) => v === (secondary[c] as Float64Array)[i]));
      const sum = primary.map((channel, c) => channel.map((v, i) => v + ((secondary[c] as Float64Array)[i] as number))) as [Float64Array, Float64Array];
      // The reverse params give the stems back flipped: shifted by the samples the shorter iSTFT drops.
      const shift = param.endsWith('reverse') ? track[0].length - length : 0;
      const reference = track.map((channel) => channel.subarray(shift, shift + length)) as [Float64Array, Float64Array];
      const snr = Math.min(...[0, 1].map((c) => snrDb(reference[c] as Float64Array, sum[c] as Float64Array, length)));
      return { version: network.version, snr, equal };
    } finally {
      await network.release();
    }
  }

  for (const layout of LAYOUTS) {
    it(`${layout.name}: builds from the tensors' shapes and runs each params file`, async () => {
      const pth = join(work, `${layout.name.replace(/\W+/g, '_')}.pth`);
      writePth(pth, layout.tensors());
      for (const param of layout.params) {
        const floorDb = PARAMS[param] as number;
        const { version, snr, equal } = await run(pth, param);
        console.log(`${layout.name} ${param}: the stems sum to the mix at ${snr.toFixed(1)} dB`);
        assert.equal(version, '5.0');
        assert.ok(equal, `${param}: a mask of 0.5 makes the two stems equal`);
        assert.ok(snr >= floorDb, `${param}: ${snr.toFixed(1)} dB < ${floorDb}`);
      }
    });
  }

  it('VR 5.1 with its BiLSTMs: per-band channel conversion (stereo_n, mid_side) and the full-band params', async () => {
    for (const [param, bins] of [['4band_v3_sn', 672], ['4band_v4_ms_fullband', 896], ['1band_sr44100_hl1024', 1024]] as const) {
      const pth = join(work, `v51_${param}.pth`);
      writePth(pth, v51(bins, 8, 8));
      const { version, snr, equal } = await run(pth, param, [8, 8]);
      console.log(`VR 5.1 ${param}: the stems sum to the mix at ${snr.toFixed(1)} dB`);
      assert.equal(version, '5.1');
      assert.ok(equal, `${param}: a mask of 0.5 makes the two stems equal`);
      assert.ok(snr >= 10, `${param}: ${snr.toFixed(1)} dB`);
    }
  });

  it("refuses, as the official code fails, a fifth encoder over bins that do not halve five times (4band_v2's 336 per half)", async () => {
    const pth = join(work, 'five_levels.pth');
    writePth(pth, v50(2, true, 6));
    const settings = vrSettings(checkVrKeys({ vr_model_param: '4band_v2', primary_stem: 'Vocals' }, 'five'));
    await assert.rejects(VrNetwork.open(pth, settings), /five_levels\.pth: stg1_low_band_net\.dec5\.conv\.conv joins \[1, 64, 22, 32\] with a skip of \[1, 32, 21, 32\]: .*\(the official code fails here too\)/);
  });

  it('refuses a state dict that does not fit the params (an LSTM sized for other bins), in one line', async () => {
    const pth = join(work, 'v51_mismatch.pth');
    writePth(pth, v51(672, 8, 8));
    const settings = vrSettings(checkVrKeys({ vr_model_param: '1band_sr44100_hl512', primary_stem: 'Vocals', nout: 8, nout_lstm: 8 }, 'mismatch'));
    await assert.rejects(VrNetwork.open(pth, settings), /v51_mismatch\.pth: stg1_low_band_net\.0\.lstm_dec2\.lstm takes 168 bins, the params give 256 there/);
  });
});
