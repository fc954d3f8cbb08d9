/**
 * The VR layouts and params the shared fixtures do not reach, on state dicts written here as
 * `torch.save` writes them (test/support/vr-state-dict.ts), at small widths but with the real
 * structure: VR 5.0 with 5, 6 (and a fifth encoder) or 7 ASPP branches (conv6 and conv7 one
 * module, as UVR's 33966/537238 layouts save them), and VR 5.1 with its BiLSTMs.
 *
 * Their output layer is zero, so the mask is 0.5 everywhere: with aggression 0 the two stems are
 * then equal, and together they give back what the params' bands keep of the mix. That checks
 * every band layout, crop, filter, channel conversion and resampler path end to end against the
 * mix itself: each params file's figure is printed, and must clear a floor well below it. Each
 * is also run in blocks of 37 frames (the streamed computation's slices of every band, resampler
 * and iSTFT), which must give the whole track's stems bit for bit.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { v50Tensors as v50, v51Tensors as v51, writeVrPth as writePth } from './support/vr-state-dict.js';
import { separateVr, VrNetwork, vrSettings } from '../src/vr/engine.js';
import { checkVrKeys } from '../src/vr/model-data.js';
import { tempDir } from './support/server.js';

const work = tempDir('stemsplit-vr-layouts-');
after(() => rmSync(work, { recursive: true, force: true }));

/** Two seconds of a stereo mix whose channels differ (so mid/side conversions matter), float32. */
function mix(): [Float64Array, Float64Array] {
  const length = 2 * 44_100;
  const channel = (phase: number) =>
    new Float64Array(length).map((_, i) => {
      const t = i / 44_100;
      return Math.fround(
        0.3 * Math.sin(2 * Math.PI * 220 * t + phase) +
          0.15 * Math.sin(2 * Math.PI * 1375 * t) +
          0.05 * Math.sin(2 * Math.PI * (5000 + 3000 * t) * t + phase) +
          0.02 * Math.sin(2 * Math.PI * 12_500 * t),
      );
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
  // At another rate: loaded with the top band's resampler, the stems brought back with soxr.
  '1band_sr16000_hl512': 10,
  '1band_sr32000_hl512': 10,
  '1band_sr33075_hl384': 10,
  '2band_32000': 10,
  '2band_48000': 10,
};

const LAYOUTS = [
  { name: 'VR 5.0, 5 ASPP branches', tensors: () => v50(4, false, 5), params: Object.keys(PARAMS) },
  { name: 'VR 5.0, a fifth encoder and 6 ASPP branches (129605)', tensors: () => v50(2, true, 6), params: ['1band_sr44100_hl512', '4band_44100'] },
  { name: 'VR 5.0, 7 ASPP branches, conv6 = conv7 (33966, 537238)', tensors: () => v50(4, false, 7), params: ['1band_sr44100_hl512', '3band_44100_msb2'] },
] as const;

describe('VR layouts and params beyond the fixtures', () => {
  const track = mix();

  async function run(
    pth: string,
    param: string,
    nout?: readonly [number, number],
    highEndProcess = false,
  ): Promise<{ version: string; snr: number; equal: boolean }> {
    const data = checkVrKeys({ vr_model_param: param, primary_stem: 'Vocals', ...(nout ? { nout: nout[0], nout_lstm: nout[1] } : {}) }, param);
    const settings = vrSettings(data, { aggression: 0, highEndProcess });
    const network = await VrNetwork.open(pth, settings, { intraOpThreads: 2 });
    try {
      const [primary, secondary] = await separateVr(network, settings, track);
      // Two seconds fit one block; in blocks of 37 frames every slice of every band (stream.ts) must give the same numbers.
      assert.deepEqual(
        await separateVr(network, settings, track, { blockFrames: 37 }),
        [primary, secondary],
        `${param}: blocks of 37 frames differ from the whole track`,
      );
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
    for (const [param, bins] of [
      ['4band_v3_sn', 672],
      ['4band_v4_ms_fullband', 896],
      ['1band_sr44100_hl1024', 1024],
    ] as const) {
      const pth = join(work, `v51_${param}.pth`);
      writePth(pth, v51(bins, 8, 8));
      const { version, snr, equal } = await run(pth, param, [8, 8]);
      console.log(`VR 5.1 ${param}: the stems sum to the mix at ${snr.toFixed(1)} dB`);
      assert.equal(version, '5.1');
      assert.ok(equal, `${param}: a mask of 0.5 makes the two stems equal`);
      assert.ok(snr >= 10, `${param}: ${snr.toFixed(1)} dB`);
    }
    // high_end_process where pre_filter_start is −1: numpy's slice counts from the end.
    const pth = join(work, 'v51_4band_v4_ms_fullband.pth');
    const { snr, equal } = await run(pth, '4band_v4_ms_fullband', [8, 8], true);
    console.log(`VR 5.1 4band_v4_ms_fullband with high_end_process: the stems sum to the mix at ${snr.toFixed(1)} dB`);
    assert.ok(equal && snr >= 10, `${snr.toFixed(1)} dB`);
  });

  it("refuses, as the official code fails, a fifth encoder over bins that do not halve five times (4band_v2's 336 per half)", async () => {
    const pth = join(work, 'five_levels.pth');
    writePth(pth, v50(2, true, 6));
    const settings = vrSettings(checkVrKeys({ vr_model_param: '4band_v2', primary_stem: 'Vocals' }, 'five'));
    await assert.rejects(
      VrNetwork.open(pth, settings),
      /five_levels\.pth: stg1_low_band_net\.dec5\.conv\.conv joins \[1, 64, 22, 32\] with a skip of \[1, 32, 21, 32\]: .*\(the official code fails here too\)/,
    );
  });

  it('refuses a state dict that does not fit the params (an LSTM sized for other bins), in one line', async () => {
    const pth = join(work, 'v51_mismatch.pth');
    writePth(pth, v51(672, 8, 8));
    const settings = vrSettings(checkVrKeys({ vr_model_param: '1band_sr44100_hl512', primary_stem: 'Vocals', nout: 8, nout_lstm: 8 }, 'mismatch'));
    await assert.rejects(VrNetwork.open(pth, settings), /v51_mismatch\.pth: stg1_low_band_net\.0\.lstm_dec2\.lstm takes 168 bins, the params give 256 there/);
  });
});
