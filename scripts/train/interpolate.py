"""Weight interpolation between a run's start and its end (WiSE-FT: Wortsman et al., "Robust fine-tuning of
zero-shot models", CVPR 2022): (1 - alpha) * A + alpha * B, where B was fine-tuned from A. Fine-tuning on a
narrow change of data (round 3: voice-like leads) moves the weights towards what that data rewards; the
average keeps much of A's behaviour on what the new data does not show, which the paper measured on
distribution shifts its fine-tuning never saw. alpha is fixed before any measurement (the paper's 0.5),
not tuned: the real clips stay measure-only, and the rendered held-out scores are only reported.

  /usr/bin/python3 scripts/train/interpolate.py --a scripts/train/runs/small3/best.pt \
      --b scripts/train/runs/small6/best.pt --alpha 0.5 --run small7 [--score 0,0.5,1]

Writes runs/<run>/best.pt (the interpolated weights, with their parents and alpha in `config`), and with
--score prints the held-out rendered measures (train.py's `evaluate`) of each listed alpha.
"""
import argparse
import json
import os

import torch

from model import MaskUNet
from train import HERE, evaluate, validation_set


def interpolate(a, b, alpha):
    """(1 - alpha) * a + alpha * b for every float tensor; integer buffers (counters) from b."""
    if a.keys() != b.keys():
        raise SystemExit("the two checkpoints hold different layers")
    return {k: (1 - alpha) * a[k] + alpha * b[k] if a[k].is_floating_point() else b[k] for k in a}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the start (e.g. runs/small3/best.pt)")
    ap.add_argument("--b", required=True, help="a run fine-tuned from --a (e.g. runs/small6/best.pt)")
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--run", help="write runs/<run>/best.pt")
    ap.add_argument("--score", default="", help="comma-separated alphas whose held-out rendered scores to print")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    a, b = torch.load(args.a), torch.load(args.b)
    if args.run:
        out = os.path.join(HERE, "runs", args.run)
        os.makedirs(out, exist_ok=True)
        config = {"interpolated": {"a": os.path.relpath(args.a, HERE), "a_step": a.get("step"),
                                   "b": os.path.relpath(args.b, HERE), "b_step": b.get("step"), "alpha": args.alpha}}
        torch.save({"model": interpolate(a["model"], b["model"], args.alpha), "step": b.get("step"), "config": config},
                   os.path.join(out, "best.pt"))
        print(f"wrote {os.path.join(out, 'best.pt')}")
    if args.score:
        valid = validation_set(args.data)
        model = MaskUNet()
        for alpha in (float(x) for x in args.score.split(",")):
            model.load_state_dict(interpolate(a["model"], b["model"], alpha))
            s6, s4, per_set, leak = evaluate(model, valid)
            print(json.dumps({"alpha": alpha, "sdr6": s6, "sdr4": s4, "per_set": per_set, "leak": leak}))


if __name__ == "__main__":
    main()
