/**
 * UVR VR state dicts written as `torch.save` writes them, for tests and benchmarks: the tensors of
 * python-audio-separator's nets.CascadedASPPNet (VR 5.0) and nets_new.CascadedNet (VR 5.1) at any
 * width, by their key names and shapes. At UVR's widths their byte counts land on UVR's size
 * classes (vr_separator.py's nn_arch_sizes: 31191 KiB for base width 16, 123821 for 32, …).
 */
import { writeFileSync } from 'node:fs';
import { pickle, stateDictOps, torchFile, type TensorMeta } from './hostile/torch-files.js';

export type VrTensor = readonly [name: string, shape: readonly number[]];

/** Conv2DBNActiv's tensors under `prefix` (`.0` the conv, `.1` its BatchNorm). */
function convBn(prefix: string, out: number, input: number, kernel: number): VrTensor[] {
  return [[`${prefix}.0.weight`, [out, input, kernel, kernel]], ...batchNorm(`${prefix}.1`, out)];
}

function batchNorm(prefix: string, channels: number): VrTensor[] {
  return ['weight', 'bias', 'running_mean', 'running_var'].map((key) => [`${prefix}.${key}`, [channels]] as VrTensor);
}

/** nets.BaseASPPNet(nin, ch) with `branches` ASPP branches and an optional fifth encoder. */
function asppNet(prefix: string, nin: number, ch: number, fiveLevels: boolean, branches: number): VrTensor[] {
  const widths = [nin, ch, 2 * ch, 4 * ch, 8 * ch, ...(fiveLevels ? [16 * ch] : [])];
  const tensors: VrTensor[] = [];
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
export function v50Tensors(ch: number, fiveLevels: boolean, branches: number): VrTensor[] {
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
function baseNet(prefix: string, nin: number, n: number, ninLstm: number, noutLstm: number): VrTensor[] {
  const widths = [n, 2 * n, 4 * n, 6 * n, 8 * n];
  const tensors: VrTensor[] = [...convBn(`${prefix}.enc1.conv`, n, nin, 3)];
  for (let level = 2; level <= 5; level++) {
    tensors.push(...convBn(`${prefix}.enc${level}.conv1.conv`, widths[level - 1] as number, widths[level - 2] as number, 3));
    tensors.push(...convBn(`${prefix}.enc${level}.conv2.conv`, widths[level - 1] as number, widths[level - 1] as number, 3));
  }
  const a = 8 * n;
  tensors.push(...convBn(`${prefix}.aspp.conv1.1.conv`, a, a, 1), ...convBn(`${prefix}.aspp.conv2.conv`, a, a, 1));
  for (const branch of [3, 4, 5]) tensors.push(...convBn(`${prefix}.aspp.conv${branch}.conv`, a, a, 3));
  tensors.push(...convBn(`${prefix}.aspp.bottleneck.conv`, a, 5 * a, 1));
  tensors.push(
    ...convBn(`${prefix}.dec4.conv1.conv`, 6 * n, 14 * n, 3),
    ...convBn(`${prefix}.dec3.conv1.conv`, 4 * n, 10 * n, 3),
    ...convBn(`${prefix}.dec2.conv1.conv`, 2 * n, 6 * n, 3),
  );
  const hidden = noutLstm / 2;
  tensors.push(...convBn(`${prefix}.lstm_dec2.conv.conv`, 1, 2 * n, 1));
  for (const suffix of ['', '_reverse']) {
    const lstm = `${prefix}.lstm_dec2.lstm`;
    tensors.push(
      [`${lstm}.weight_ih_l0${suffix}`, [4 * hidden, ninLstm]],
      [`${lstm}.weight_hh_l0${suffix}`, [4 * hidden, hidden]],
      [`${lstm}.bias_ih_l0${suffix}`, [4 * hidden]],
      [`${lstm}.bias_hh_l0${suffix}`, [4 * hidden]],
    );
  }
  tensors.push(
    [`${prefix}.lstm_dec2.dense.0.weight`, [ninLstm, noutLstm]],
    [`${prefix}.lstm_dec2.dense.0.bias`, [ninLstm]],
    ...batchNorm(`${prefix}.lstm_dec2.dense.1`, ninLstm),
  );
  tensors.push(...convBn(`${prefix}.dec1.conv1.conv`, n, 3 * n + 1, 3));
  return tensors;
}

/** nets_new.CascadedNet(bins·2, nout, nout_lstm). */
export function v51Tensors(bins: number, nout: number, noutLstm: number): VrTensor[] {
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
 * Writes the tensors as a state dict (one zip, as torch.save writes it): seeded weights scaled to
 * their fan-in, BatchNorm at identity statistics, the output layer zero unless `output` (zero: a
 * mask of 0.5 everywhere); conv6 and conv7 of a 7-branch ASPP share one storage, as in UVR's files.
 */
export function writeVrPth(file: string, tensors: readonly VrTensor[], options: { readonly output?: boolean } = {}): void {
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
        if ((name === 'out.weight' && options.output !== true) || /running_mean|\.bias/.test(name)) return 0;
        if (/running_var/.test(name) || (shape.length === 1 && name.endsWith('.weight'))) return 1;
        return random() * 2 * Math.sqrt(3 / fanIn);
      });
      storages[key] = new Uint8Array(values.buffer);
    }
    return [name, { key, shape }];
  });
  writeFileSync(file, torchFile(pickle(stateDictOps(metas)), storages));
}
