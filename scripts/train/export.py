"""Exports a trained checkpoint as the shipped models: models/<prefix>-6s and models/<prefix>-4s.

    /usr/bin/python3 scripts/train/export.py                      # the shipped run's best.pt (DEFAULT_RUN)
    /usr/bin/python3 scripts/train/export.py --checkpoint scripts/train/runs/small4/best.pt --out /tmp/candidate

Both graphs are the same network: waveform in (`mix` [1, 2, segment]), waveform out (`stems` [1, S, 2, segment]),
STFT and inverse STFT inside as convolutions with DFT kernels computed in the graph. The 4-stem graph sums the
other, guitar and piano masks before the inverse STFT.
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
        sdr = ck.get("sdr4" if layout == "4s" else "sdr6", {})
        manifest = {
            "format": "stemsplit-model/1",
            "name": name,
            "description": (f"Small spectrogram-mask U-Net ({sum(p.numel() for p in net.parameters()) / 1e6:.1f} M parameters) "
                            "trained only on songs the project renders itself (soundfonts, drum samples, synthetic and "
                            "real recorded voices under permissive licences); much weaker than Demucs on real music, see "
                            "docs/quality.md and MODEL_CARD.md."),
            "terms": ("MIT, as stemsplit itself; trained only on audio rendered from public-domain, MIT/BSD-style and "
                      f"CC-BY sources, listed with their attribution in models/{name}/MODEL_CARD.md"),
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
                "trainingData": "rendered by scripts/train/render.py (generation 3 or later) from Debian packages "
                                "under permissive terms only: fluid-soundfont-gm, musescore-general-soundfont-lossless, "
                                "sonic-pi-samples, festival + festvox-us-slt-hts, and real speakers (festvox-ru, gcin-voice "
                                "CC-BY-3.0 speaker, asterisk-core-sounds-it-g722 CC-BY-3.0); see MODEL_CARD.md; "
                                "no third-party weights",
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
