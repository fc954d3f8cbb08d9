"""Exports a trained checkpoint as the shipped models: models/<prefix>-6s and models/<prefix>-4s.

    /usr/bin/python3 scripts/train/export.py                      # the shipped run's best.pt (DEFAULT_RUN)
    /usr/bin/python3 scripts/train/export.py --checkpoint scripts/train/runs/small4/best.pt --out /tmp/candidate

Both graphs are the same network: waveform in (`mix` [1, 2, segment]), waveform out (`stems` [1, S, 2, segment]),
the STFT inside as a convolution with DFT kernels computed in the graph, the inverse STFT as two half-size DFT
MatMuls and an overlap-add (_faster_softmax_and_istft). The 4-stem graph sums the other, guitar and piano masks
before the inverse STFT.
"""
import argparse
import json
import os

import math

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from model import BINS, HOP, N_FFT, MaskUNet, SOURCES, _window

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEGMENT = 430 * HOP  # 440320 samples, 9.98 s: a multiple of the hop, close to the baseline's 10 s
LAYOUTS = {
    "6s": ["drums", "bass", "other", "vocals", "guitar", "piano"],
    "4s": ["drums", "bass", "other", "vocals"],
}
FOLD = {"other": ["other", "guitar", "piano"]}


class Exported(torch.nn.Module):
    def __init__(self, net, names):
        super().__init__()
        self.net = net
        self.groups = [[SOURCES.index(s) for s in (FOLD.get(n, [n]) if len(names) == 4 else [n])] for n in names]

    def forward(self, mix):
        return self.net(mix, self.groups)


def _kernel_nodes(fwd_name, inv_name):
    """Nodes and small initializers that compute the DFT kernels when ONNX Runtime loads the graph,
    instead of storing 2 x 17 MB of constants: angle = 2*pi*((k*n) mod N)/N, exact in float32."""
    scale = np.full((BINS, 1), 2.0 / N_FFT, np.float32)
    scale[0] = scale[-1] = 1.0 / N_FFT
    inits = [numpy_helper.from_array(a, n) for a, n in [
        (np.arange(BINS, dtype=np.float32)[:, None], "dft_bins"), (np.arange(N_FFT, dtype=np.float32)[None], "dft_times"),
        (_window().numpy()[None].astype(np.float32), "dft_window"), (scale, "dft_inverse_scale"),
        (np.array(float(N_FFT), np.float32), "dft_n"), (np.array(2 * math.pi / N_FFT, np.float32), "dft_step"),
        (np.array([1], np.int64), "dft_axis1")]]
    n = helper.make_node
    nodes = [
        n("Mul", ["dft_bins", "dft_times"], ["dft_kn"]), n("Mod", ["dft_kn", "dft_n"], ["dft_kn_mod"], fmod=1),
        n("Mul", ["dft_kn_mod", "dft_step"], ["dft_angle"]), n("Cos", ["dft_angle"], ["dft_cos"]), n("Sin", ["dft_angle"], ["dft_sin"]),
        n("Mul", ["dft_cos", "dft_window"], ["dft_cos_w"]), n("Mul", ["dft_sin", "dft_window"], ["dft_sin_w"]),
        n("Neg", ["dft_sin_w"], ["dft_nsin_w"]), n("Concat", ["dft_cos_w", "dft_nsin_w"], ["dft_fwd2"], axis=0),
        n("Unsqueeze", ["dft_fwd2", "dft_axis1"], [fwd_name]),
        n("Mul", ["dft_fwd2", "dft_inverse_scale2"], ["dft_inv2"]), n("Unsqueeze", ["dft_inv2", "dft_axis1"], [inv_name]),
        n("Concat", ["dft_inverse_scale", "dft_inverse_scale"], ["dft_inverse_scale2"], axis=0),
    ]
    return nodes, inits


def _compute_kernels_at_load(path):
    model = onnx.load(path)
    g = model.graph
    big = {nd.output[0]: nd for nd in g.node if nd.op_type == "Constant" and list(nd.attribute[0].t.dims) == [2 * BINS, 1, N_FFT]}
    users = {inp: nd.op_type for nd in g.node for inp in nd.input if inp in big}
    fwd = next(k for k, op in users.items() if op == "Conv")
    inv = next(k for k, op in users.items() if op == "ConvTranspose")
    nodes, inits = _kernel_nodes(fwd, inv)
    nodes = nodes[:10] + [nodes[12], nodes[10], nodes[11]]  # topological order
    keep = [nd for nd in g.node if nd.output[0] not in big]
    del g.node[:]
    g.node.extend(nodes + keep)
    g.initializer.extend(inits)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def _faster_softmax_and_istft(path):
    """Two rewrites of the exported graph, the same functions in fewer operations:
    - the masks' Softmax over the sources axis (axis 1), which ONNX Runtime runs by transposing that
      axis last and back, as ReduceMax, Sub, Exp, ReduceSum, Div along it;
    - the inverse STFT's ConvTranspose with the [2·BINS, N_FFT] DFT kernel as two [BINS, BINS]
      MatMuls: a frame's samples n and N_FFT - n share their cosine sums E[n] and their sine sums
      O[n] with opposite signs (s[n] = E + O, s[N_FFT - n] = E - O), so half the products suffice;
      then the window and the overlap-add of half frames (HOP = N_FFT / 2) as the kernel's had them."""
    model = onnx.load(path)
    g = model.graph
    softmax = next(nd for nd in g.node if nd.op_type == "Softmax")
    assert [a.i for a in softmax.attribute if a.name == "axis"] == [1]
    inverse = next(nd for nd in g.node if nd.op_type == "ConvTranspose")
    inits = [numpy_helper.from_array(np.array(a, dtype), name) for a, dtype, name in [
        ([1], np.int64, "softmax_axis"), ([BINS, BINS], np.int64, "idft_split"),
        ([1, BINS], np.int64, "idft_row_shape"), ([-1.0], np.float32, "idft_minus_one"),
        ([0], np.int64, "idft_zero"), ([HOP], np.int64, "idft_half"), ([HOP], np.int64, "idft_back_start"),
        ([0], np.int64, "idft_back_end"), ([-1], np.int64, "idft_step_back"), ([1], np.int64, "idft_axis1"),
        ([2], np.int64, "idft_axis2"), (_window().numpy()[:HOP, None], np.float32, "idft_window_first"),
        (_window().numpy()[HOP:, None], np.float32, "idft_window_second"),
        ([0, 0, 0, 0, 0, 1], np.int64, "idft_pad_after"), ([0, 0, 1, 0, 0, 0], np.int64, "idft_pad_before"),
        ([0, 1, -1], np.int64, "idft_signal_shape"), ([N_FFT - HOP], np.int64, "idft_crop_start"),
        ([HOP - N_FFT], np.int64, "idft_crop_end")]]
    n = helper.make_node
    x, probabilities = softmax.input[0], softmax.output[0]
    softmax_nodes = [
        n("ReduceMax", [x], ["softmax_max"], axes=[1], keepdims=1),
        n("Sub", [x, "softmax_max"], ["softmax_shifted"]),
        n("Exp", ["softmax_shifted"], ["softmax_exp"]),
        n("ReduceSum", ["softmax_exp", "softmax_axis"], ["softmax_sum"], keepdims=1),
        n("Div", ["softmax_exp", "softmax_sum"], [probabilities]),
    ]
    spec, out = inverse.input[0], inverse.output[0]
    istft_nodes = [
        # C[n, k] = scale_k·cos(2π·kn/N), S[n, k] = -scale_k·sin(2π·kn/N) for n, k in 0 .. N/2, from the graph's own DFT angle inputs
        n("Reshape", ["dft_bins", "idft_row_shape"], ["idft_bins_row"]),
        n("Mul", ["dft_bins", "idft_bins_row"], ["idft_kn"]), n("Mod", ["idft_kn", "dft_n"], ["idft_kn_mod"], fmod=1),
        n("Mul", ["idft_kn_mod", "dft_step"], ["idft_angle"]),
        n("Reshape", ["dft_inverse_scale", "idft_row_shape"], ["idft_scale_row"]),
        n("Cos", ["idft_angle"], ["idft_cos"]), n("Mul", ["idft_cos", "idft_scale_row"], ["idft_c"]),
        n("Sin", ["idft_angle"], ["idft_sin"]), n("Mul", ["idft_sin", "idft_scale_row"], ["idft_s_pos"]),
        n("Mul", ["idft_s_pos", "idft_minus_one"], ["idft_s"]),
        n("Split", [spec, "idft_split"], ["idft_re", "idft_im"], axis=1),  # [M, BINS, frames] each
        n("MatMul", ["idft_c", "idft_re"], ["idft_even"]), n("MatMul", ["idft_s", "idft_im"], ["idft_odd"]),
        n("Add", ["idft_even", "idft_odd"], ["idft_sum"]), n("Sub", ["idft_even", "idft_odd"], ["idft_difference"]),
        n("Slice", ["idft_sum", "idft_zero", "idft_half", "idft_axis1"], ["idft_first_raw"]),  # samples 0 .. HOP-1
        n("Slice", ["idft_difference", "idft_back_start", "idft_back_end", "idft_axis1", "idft_step_back"], ["idft_second_raw"]),  # HOP .. N-1
        n("Mul", ["idft_first_raw", "idft_window_first"], ["idft_first"]),
        n("Mul", ["idft_second_raw", "idft_window_second"], ["idft_second"]),
        n("Pad", ["idft_first", "idft_pad_after"], ["idft_first_padded"]),
        n("Pad", ["idft_second", "idft_pad_before"], ["idft_second_padded"]),
        n("Add", ["idft_first_padded", "idft_second_padded"], ["idft_blocks"]),  # [M, HOP, frames + 1]
        n("Transpose", ["idft_blocks"], ["idft_blocks_in_time"], perm=[0, 2, 1]),
        n("Reshape", ["idft_blocks_in_time", "idft_signal_shape"], ["idft_signal"]),
        n("Slice", ["idft_signal", "idft_crop_start", "idft_crop_end", "idft_axis2"], [out]),
    ]
    nodes = []
    for nd in g.node:
        nodes.extend(softmax_nodes if nd is softmax else istft_nodes if nd is inverse else [nd])
    read = {name for nd in nodes for name in nd.input} | {o.name for o in g.output}
    while True:  # drop the nodes that computed the inverse kernel
        dead = [nd for nd in nodes if not any(o in read for o in nd.output)]
        if not dead:
            break
        nodes = [nd for nd in nodes if nd not in dead]
        read = {name for nd in nodes for name in nd.input} | {o.name for o in g.output}
    del g.node[:]
    g.node.extend(nodes)
    kept = [t for t in g.initializer if t.name in read]
    del g.initializer[:]
    g.initializer.extend(kept + [t for t in inits if t.name in read])
    onnx.checker.check_model(model)
    onnx.save(model, path)


DEFAULT_RUN = "small3"  # the run whose best.pt models/stemsplit-small-* ship


def export(checkpoint, prefix, out_root):
    ck = torch.load(checkpoint)
    net = MaskUNet()
    net.load_state_dict(ck["model"])
    net.eval()
    net.spec.export_mode = True
    written = []
    for layout, names in LAYOUTS.items():
        name = f"{prefix}-{layout}"
        folder = os.path.join(out_root, name)
        os.makedirs(folder, exist_ok=True)
        graph = Exported(net, names).eval()
        dummy = torch.zeros(1, 2, SEGMENT)
        torch.onnx.export(graph, dummy, os.path.join(folder, "model.onnx"), input_names=["mix"], output_names=["stems"],
                          opset_version=13)
        _compute_kernels_at_load(os.path.join(folder, "model.onnx"))
        _faster_softmax_and_istft(os.path.join(folder, "model.onnx"))
        sdr = ck.get("sdr4" if layout == "4s" else "sdr6", {})
        manifest = {
            "format": "stemsplit-model/1",
            "name": name,
            "description": (f"Small spectrogram-mask U-Net ({sum(p.numel() for p in net.parameters()) / 1e6:.1f} M parameters) "
                            "trained only on songs the project renders itself (soundfonts, drum samples, synthetic and "
                            "real recorded voices under permissive licences); much weaker than Demucs on real music, see "
                            "docs/quality.md and MODEL_CARD.md."),
            "terms": ("MIT, as stemsplit itself; trained only on audio rendered from public-domain, MIT/BSD-style and "
                      f"CC-BY sources, listed with their attribution in models/{prefix}-4s/MODEL_CARD.md"),  # one card for both graphs
            "sampleRate": 44100,
            "sources": names,
            "segmentSamples": SEGMENT,
            "overlap": 0.25,
            "normalize": True,
            "input": "waveform",
            "onnx": "model.onnx",
            "provenance": {
                "trainer": "scripts/train/train.py",
                "checkpoint": os.path.relpath(checkpoint, ROOT),
                "step": ck["step"],
                "config": ck.get("config", {}),
                "heldOutRenderedSdr": sdr,
                # The sources and their licences are listed once, in the card; naming them here as well let this
                # line go stale (it kept generation 1's GPL drum kits after the data changed).
                "trainingData": ("rendered by scripts/train/render.py from the Debian packages listed with their licences "
                                 f"in models/{prefix}-4s/MODEL_CARD.md; no third-party weights"),
                "licence": "MIT",
            },
        }
        with open(os.path.join(folder, "model.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        written.append(folder)
    return written


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", default=os.path.join(HERE, "runs", DEFAULT_RUN, "best.pt"))
    ap.add_argument("--prefix", default="stemsplit-small")
    ap.add_argument("--out", default=os.path.join(ROOT, "models"))
    args = ap.parse_args()
    for folder in export(args.checkpoint, args.prefix, args.out):
        print(folder, os.path.getsize(os.path.join(folder, "model.onnx")) // 1024, "KiB")


if __name__ == "__main__":
    main()
