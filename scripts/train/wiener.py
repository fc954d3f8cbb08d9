"""Post-filters on the masks of a checkpoint, scored on the held-out rendered crops (the 4-stem fold of valid2 and
valid3, as train.py scores them): would a sharper or softer mask, or a multichannel Wiener filter, help the shipped
network without retraining? Nothing here is part of the exported model.

  /usr/bin/python3 scripts/train/wiener.py --checkpoint scripts/train/runs/small3/best.pt base pow0.8 pow2 mwf1

  base    the network's own masks (softmax over the sources)
  powA    masks raised to the power A and renormalised over the sources (A > 1 sharper, A < 1 softer)
  mwfN    N iterations of the multichannel Wiener filter (Open-Unmix / norbert's EM): source power spectra from the
          masked mixture, a 2x2 spatial covariance per source and bin, each source re-estimated as
          v_j R_j (sum_k v_k R_k)^-1 x
"""
import argparse
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train as T  # noqa: E402
from model import MaskUNet  # noqa: E402


def multichannel_wiener(y, x, iterations, eps=1e-10):
    """y [B, S, 2, F, T] complex source estimates, x [B, 2, F, T] the complex mixture."""
    for _ in range(iterations):
        v = (y.abs() ** 2).mean(2)
        r = torch.einsum("bsift,bsjft->bsfij", y, y.conj()) / (v.sum(-1)[..., None, None] + eps)
        mix_cov = torch.einsum("bsft,bsfij->bftij", v.to(r.dtype), r) + eps * torch.eye(2)
        gain = torch.einsum("bsft,bsfij,bftjk->bsftik", v.to(r.dtype), r, torch.linalg.inv(mix_cov))
        y = torch.einsum("bsftik,bkft->bsift", gain, x)
    return y


@torch.no_grad()
def score(model, valid, sets, mode):
    s4, m4 = [], []
    for i in range(0, len(valid), 4):
        ref = valid[i: i + 4]
        mix = ref.sum(1)
        re, im = model.spec.stft(mix)
        m = model.masks(torch.sqrt(re[:, :, :-1] ** 2 + im[:, :, :-1] ** 2 + 1e-10))
        m = torch.cat([m, m[:, :, :, -1:]], 3)
        if mode.startswith("pow"):
            m = m ** float(mode[3:])
            m = m / (m.sum(1, keepdim=True) + 1e-12)
        x = torch.complex(re, im)
        y = m * x[:, None]
        if mode.startswith("mwf"):
            y = multichannel_wiener(y.to(torch.complex128), x.to(torch.complex128), int(mode[3:])).to(torch.complex64)
        est = model.spec.istft(y.real.contiguous(), y.imag.contiguous(), mix.shape[-1]).numpy()
        r = ref.numpy()
        r4 = np.stack([r[:, idx].sum(1) for idx in T.FOLD4], 1)
        e4 = np.stack([est[:, idx].sum(1) for idx in T.FOLD4], 1)
        s4.append(T.sdr(r4, e4, (2, 3)))
        m4.append(T.present(r4, r.sum(1)))
    s4, m4 = np.concatenate(s4), np.concatenate(m4)
    keep = sets != "valid4lead"
    return T.stem_means(s4[keep], m4[keep], ["drums", "bass", "other", "vocals"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("modes", nargs="+")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = MaskUNet()
    model.load_state_dict(torch.load(args.checkpoint, map_location="cpu")["model"])
    model.eval()
    valid, sets = T.validation_set(args.data)
    for mode in args.modes:
        print(mode, score(model, valid, sets, mode), flush=True)


if __name__ == "__main__":
    main()
