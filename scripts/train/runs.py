"""The figures of each run's record (scripts/train/runs/README.md), read from its log.jsonl alone.

    python3 scripts/train/runs.py

Per run: the last step scored, the best step (the highest 6-stem held-out mean on the held-out set the run ended
with, as train.py chooses best.pt) and its 4-stem held-out SDRs. Needs no checkpoint and no PyTorch.
"""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
STEMS = ("vocals", "drums", "bass", "other")


def summary(log_path):
    lines = [json.loads(line) for line in open(log_path) if line.strip()]
    last = lines[-1]
    same_set = [e for e in lines if e.get("crops") == last.get("crops") and e.get("loss") is not None]
    best = max(same_set, key=mean6)
    return last["step"], best


def mean6(entry):
    """The 6-stem mean as train.py compares it (the logged mean6 is rounded, and two steps can tie there)."""
    scores = [v for v in entry["sdr6"].values() if v is not None]
    return sum(scores) / len(scores)


def main():
    print("| run | last step | best step | held-out crops | 6-stem mean | " + " | ".join(STEMS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(STEMS))
    runs = sorted(glob.glob(os.path.join(HERE, "runs", "*", "log.jsonl")),
                  key=lambda p: int(os.path.basename(os.path.dirname(p))[5:].rstrip("n") or 0))
    for log_path in runs:
        last, best = summary(log_path)
        sdr = " | ".join(f"{best['sdr4'][s]:.2f}" for s in STEMS)
        crops = best.get("crops", 24)
        print(f"| {os.path.basename(os.path.dirname(log_path))} | {last} | {best['step']} | {crops} | {mean6(best):.3f} | {sdr} |")


if __name__ == "__main__":
    main()
