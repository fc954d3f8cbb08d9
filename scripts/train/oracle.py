"""What a magnitude mask with the mixture's phase can reach at all, per STFT: the ceiling of model.MaskUNet's design.

    nice -n 19 /usr/bin/python3 scripts/train/oracle.py                       # held-out valid2 + valid3, 4-stem fold
    nice -n 19 /usr/bin/python3 scripts/train/oracle.py --sets valid4lead

For each held-out song it applies the ideal ratio mask |S_k| / Σ_j |S_j| (what a perfect network with softmax masks
over magnitudes would output) to the mixture's STFT and scores the result with train.sdr. Comparing frame sizes and
hops tells whether the 23-ms hop (n_fft 2048, hop 1024) is what holds bass back against the kick drum.
"""
import argparse
import glob
import os

import numpy as np
import torch

from train import FOLD4, sdr, present

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = [(2048, 1024), (2048, 512), (4096, 1024), (4096, 2048), (1024, 512)]  # (n_fft, hop); the first ships


def oracle(stems, n_fft, hop):
    """stems [S, 2, L] → ideal-ratio-mask estimates [S, 2, L] with the mixture's phase."""
    window = torch.hann_window(n_fft).sqrt()
    x = torch.from_numpy(stems).reshape(-1, stems.shape[-1])
    spec = torch.stft(x, n_fft, hop, window=window, return_complex=True).reshape(*stems.shape[:2], n_fft // 2 + 1, -1)
    mag = spec.abs()
    mask = mag / (mag.sum(0, keepdim=True) + 1e-8)
    est = mask * spec.sum(0, keepdim=True)
    y = torch.istft(est.reshape(-1, *est.shape[-2:]), n_fft, hop, window=window, length=stems.shape[-1])
    return y.reshape(stems.shape).numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--sets", default="valid2,valid3")
    args = ap.parse_args()
    torch.set_num_threads(1)
    names = ["drums", "bass", "other", "vocals"]
    files = [f for s in args.sets.split(",") for f in sorted(glob.glob(os.path.join(args.data, s, "song*.npy")))]
    print(f"{len(files)} held-out songs ({args.sets}); ideal ratio mask, mixture phase; SDR in dB, 4-stem fold")
    print("| n_fft | hop (ms) | " + " | ".join(names) + " |")
    print("|---:|---:|" + "---:|" * len(names))
    for n_fft, hop in CONFIGS:
        scores, masks = [], []
        for f in files:
            stems = np.load(f).astype(np.float32)
            r4 = np.stack([stems[idx].sum(0) for idx in FOLD4])
            e4 = oracle(r4, n_fft, hop)
            scores.append(sdr(r4, e4, (1, 2)))
            masks.append(present(r4[None], r4.sum(0)[None])[0])
        scores, masks = np.array(scores), np.array(masks)
        means = [scores[:, i][masks[:, i]].mean() for i in range(len(names))]
        print(f"| {n_fft} | {hop / 44.1:.0f} | " + " | ".join(f"{m:.2f}" for m in means) + " |", flush=True)


if __name__ == "__main__":
    main()
