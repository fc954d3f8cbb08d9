"""Trains model.MaskUNet on the rendered songs, with on-the-fly augmentation. Seeded and resumable.

    nice -n 10 /usr/bin/python3 scripts/train/train.py --run small1            # starts, or resumes if the run exists
    nice -n 10 /usr/bin/python3 scripts/train/train.py --run small1 --hours 2  # stop after 2 h of wall time

Writes scripts/train/runs/<run>/:
  model.pt     weights + step + config (enough to resume with a fresh optimizer, and to export)
  best.pt      the weights with the best held-out SDR so far (the one exported)
  log.jsonl    one line per evaluation: step, seconds, train loss, held-out SDR per stem (the training curve)
  tmp/full.pt  weights + optimizer + RNG state (exact resume on the same machine)
Checkpoints stay out of git but the shipped run's best.pt; log.jsonl and the run's line in runs/README.md are kept.
"""
import argparse
import glob
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from model import HOP, SOURCES, MaskUNet

HERE = os.path.dirname(os.path.abspath(__file__))
SR = 44100


def sdr(ref, est, axis):
    """Music Demixing Challenge SDR in dB."""
    num = (ref ** 2).sum(axis) + 1e-7
    den = ((ref - est) ** 2).sum(axis) + 1e-7
    return 10 * np.log10(num / den)


class Songs:
    """Rendered songs as memory-mapped float16 arrays [6, 2, samples]; picks up new files as the renderer adds them."""

    def __init__(self, folders):
        self.folders = folders
        self.arrays, self.seen, self.sung = [], set(), []
        self.refresh()

    def refresh(self):
        for folder in self.folders:
            for f in sorted(glob.glob(os.path.join(folder, "song*.npy"))):
                if not f.endswith(".tmp.npy") and f not in self.seen:
                    self.seen.add(f)
                    self.arrays.append(np.load(f, mmap_mode="r"))
                    self.sung.append(_has_vocals(f))

    def __len__(self):
        return len(self.arrays)


def _has_vocals(npy):
    """Whether a rendered song has a vocal part (its .json lists the sources per stem; no .json: assume it has)."""
    meta = npy[: -len(".npy")] + ".json"
    if not os.path.exists(meta):
        return True
    with open(meta) as f:
        return "vocals" in json.load(f)["sources"]


def augmented_example(songs, rng, length, vocal_redraw=0.0):
    """One training example [6, 2, length]: stems possibly from different songs, each with its own crop,
    speed (pitch + tempo by resampling), gain, channel swap, and sometimes silence. With `vocal_redraw` q, a vocal
    stem drawn from a song without vocals is drawn again from the songs with vocals with probability q."""
    remix = rng.random() < 0.6
    base = rng.integers(len(songs))
    out = np.zeros((len(SOURCES), 2, length), np.float32)
    for s in range(len(SOURCES)):
        index = rng.integers(len(songs)) if remix else base
        if s == 0 and vocal_redraw > 0 and not songs.sung[index] and rng.random() < vocal_redraw:
            sung = np.flatnonzero(songs.sung)
            index = sung[rng.integers(len(sung))] if len(sung) else index
        song = songs.arrays[index]
        speed = rng.uniform(0.88, 1.12) if rng.random() < 0.3 else 1.0
        need = int(length * speed) + 1
        total = song.shape[-1]
        start = rng.integers(0, max(1, total - need))
        x = np.asarray(song[s, :, start: start + need], dtype=np.float32)
        if x.shape[-1] < need:
            x = np.pad(x, ((0, 0), (0, need - x.shape[-1])))
        if speed != 1.0:
            x = F.interpolate(torch.from_numpy(x)[None], size=length, mode="linear", align_corners=False)[0].numpy()
        x = x[:, :length]
        if rng.random() < 0.5:
            x = x[::-1]
        gain = 10 ** (rng.uniform(-8, 4) / 20) if rng.random() > 0.08 else 0.0
        out[s] = x * gain
    return out


_BAND = None


def band_extended(vocals, rng):
    """Generation 3's real speakers are 16 kHz recordings: their vocal stem stops at 8 kHz while real vocals do not.
    With --band-extend p, such a stem (almost nothing above 8.5 kHz against 4-8 kHz) gets, with probability p,
    a synthesised upper octave (voices.band_extend) so the model cannot learn "band-limited means voice"."""
    global _BAND
    if _BAND is None:
        from scipy.signal import butter
        _BAND = (butter(4, 8500, "highpass", fs=SR, output="sos"), butter(4, [4000, 8000], "bandpass", fs=SR, output="sos"))
    from scipy.signal import sosfilt
    import voices
    mono = vocals.mean(0)
    low = (sosfilt(_BAND[1], mono) ** 2).mean()
    if low < 1e-8 or (sosfilt(_BAND[0], mono) ** 2).mean() > 0.02 * low:
        return vocals
    return np.stack([voices.band_extend(ch.astype(np.float64), SR, rng) for ch in vocals]).astype(np.float32)


def normalized(stems, rng=None):
    """Scales an example the way the pipeline normalises a track (by the mixture's standard deviation)."""
    mix = stems.sum(0)
    std = mix.mean(0).std() + 1e-5
    factor = 10 ** (rng.uniform(-6, 6) / 20) if rng is not None else 1.0
    return stems / std * factor


def retimbred(ex, rng, share):
    """Each stem, with probability `share`, through a fresh random mixing EQ (production.eq: high-pass, shelves, a
    bell, sometimes a low-pass). The renderer EQs each stem once per song, so over thousands of steps the network
    sees the same few sampled instruments in the same colours; a new colour per example is meant to keep it from
    learning those colours instead of what a voice, a kick or a bass line is (run small9 tests this)."""
    import production
    for s, name in enumerate(SOURCES):
        if rng.random() < share and np.abs(ex[s]).max() > 0:
            ex[s] = production.eq(ex[s].astype(np.float64), rng, name).astype(np.float32)
    return ex


def batch(songs, rng, size, length, band_extend=0.0, vocal_redraw=0.0, timbre=0.0):
    examples = []
    for _ in range(size):
        ex = augmented_example(songs, rng, length, vocal_redraw)
        if band_extend > 0 and rng.random() < band_extend:
            ex[0] = band_extended(ex[0], rng)
        if timbre > 0:
            ex = retimbred(ex, rng, timbre)
        examples.append(normalized(ex, rng))
    ex = np.stack(examples)
    return torch.from_numpy(ex)


def validation_set(data, seconds=6.0, per_song=1):
    """Fixed, un-augmented crops of the held-out songs (seeds training never uses) in every `valid*` folder, and the
    folder of each crop. Run small2's: valid2 (generation 2, synthetic full-band singers) and valid3 (generation 3
    sung and spoken by the held-out real speaker, whom training never hears)."""
    length = int(seconds * SR) // HOP * HOP
    out, sets = [], []
    for f in sorted(glob.glob(os.path.join(data, "valid*", "song*.npy"))):
        a = np.load(f).astype(np.float32)
        for k in range(per_song):
            start = (a.shape[-1] - length) * (k + 1) // (per_song + 1)
            out.append(normalized(a[..., start: start + length]))
            sets.append(os.path.basename(os.path.dirname(f)))
    return torch.from_numpy(np.stack(out)), np.array(sets)


FOLD4 = [[1], [2], [3, 4, 5], [0]]  # drums, bass, other(+guitar+piano), vocals from the 6 training stems


def present(ref, mix):
    """Stems louder than -40 dB relative to the mixture; SDR of an absent stem says nothing useful."""
    return (ref ** 2).sum((2, 3)) > 1e-4 * (mix ** 2).sum((1, 2))[:, None]


def stem_means(scores, mask, names):
    """Mean SDR per stem over the crops where that stem is present."""
    return {n: round(float(scores[:, i][mask[:, i]].mean()), 3) if mask[:, i].any() else None for i, n in enumerate(names)}


def leakage(est_vocals, mix, no_voice):
    """Vocal-stem energy relative to the mixture (dB), pooled over the crops without vocals: what the model calls
    voice where nobody sings. None when every crop has vocals."""
    if not no_voice.any():
        return None
    voc = (est_vocals[no_voice] ** 2).sum()
    return round(float(10 * np.log10((voc + 1e-12) / ((mix[no_voice] ** 2).sum() + 1e-12))), 2)


@torch.no_grad()
def evaluate(model, valid_and_sets):
    """Mean SDRs over all held-out crops (6 stems, 4-stem fold), the 4-stem fold per held-out folder, and per folder
    the vocal leakage on its instrumental crops (`valid4lead`: voice-like leads on held-out instruments, no vocals)."""
    valid, sets = valid_and_sets
    model.eval()
    s6, m6, s4, m4, ev, mx = [], [], [], [], [], []
    for i in range(0, len(valid), 4):
        ref = valid[i: i + 4]
        est = model(ref.sum(1))
        r, e = ref.numpy(), est.numpy()
        mix = r.sum(1)
        r4 = np.stack([r[:, idx].sum(1) for idx in FOLD4], 1)
        e4 = np.stack([e[:, idx].sum(1) for idx in FOLD4], 1)
        s6.append(sdr(r, e, (2, 3)))
        m6.append(present(r, mix))
        s4.append(sdr(r4, e4, (2, 3)))
        m4.append(present(r4, mix))
        ev.append(e[:, 0])
        mx.append(mix)
    model.train()
    s6, m6, s4, m4, ev, mx = map(np.concatenate, (s6, m6, s4, m4, ev, mx))
    names4 = ["drums", "bass", "other", "vocals"]
    per_set = {name: stem_means(s4[sets == name], m4[sets == name], names4) for name in sorted(set(sets))}
    leak = {name: leakage(ev[sets == name], mx[sets == name], ~m4[sets == name][:, 3]) for name in sorted(set(sets))}
    return stem_means(s6, m6, SOURCES), stem_means(s4, m4, names4), per_set, {k: v for k, v in leak.items() if v is not None}


def stem_weights(spec):
    """--stem-weights "bass=2": per-stem weights of the L1 loss (the rest 1), as a [1, 6, 1, 1] tensor."""
    w = {name: 1.0 for name in SOURCES}
    for item in filter(None, spec.split(",")):
        name, value = item.split("=")
        if name not in w:
            raise SystemExit(f"--stem-weights: unknown stem {name!r} (stems: {', '.join(SOURCES)})")
        w[name] = float(value)
    return torch.tensor([w[name] for name in SOURCES])[None, :, None, None]


def learning_rate(args, step):
    """--lr, or with --cosine-steps N a cosine from --lr at step 0 down to --lr-final at step N (then flat):
    a function of the step alone, so a resumed run follows the same schedule."""
    if not args.cosine_steps:
        return args.lr
    k = min(step, args.cosine_steps) / args.cosine_steps
    return args.lr_final + (args.lr - args.lr_final) * 0.5 * (1 + np.cos(np.pi * k))


@torch.no_grad()
def ema_update(ema, model, decay):
    """Exponential moving average of the weights (Polyak averaging); BatchNorm statistics are copied as they are.
    The average is what is evaluated and exported: it does not swing from one evaluation to the next as the raw
    weights of a batch-4 run do (small3's held-out bass moved by up to 1.3 dB between evaluations)."""
    for e, m in zip(ema.parameters(), model.parameters()):
        e.mul_(decay).add_(m, alpha=1 - decay)
    for e, m in zip(ema.buffers(), model.buffers()):
        e.copy_(m)


def save(path, obj):
    torch.save(obj, path + ".tmp")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--hours", type=float, default=1e9, help="stop after this much wall time in this session")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train", default="train", help="comma-separated training folders under --data")
    ap.add_argument("--init", help="a checkpoint whose weights start a new run (e.g. runs/small1/best.pt)")
    ap.add_argument("--band-extend", type=float, default=0.0,
                    help="probability of giving a band-limited (16 kHz recording) vocal stem a synthesised upper octave")
    ap.add_argument("--stem-weights", default="", help='per-stem L1 loss weights, e.g. "bass=2" (others 1)')
    ap.add_argument("--cosine-steps", type=int, default=0, help="cosine learning-rate decay from --lr over this many steps")
    ap.add_argument("--lr-final", type=float, default=3e-5, help="the learning rate the cosine reaches")
    ap.add_argument("--vocal-redraw", type=float, default=0.0,
                    help="probability of drawing a silent vocal stem again from a song with vocals (fewer examples "
                         "without vocals than the data's share of instrumentals)")
    ap.add_argument("--ema", type=float, default=0.0,
                    help="decay of an exponential moving average of the weights (e.g. 0.995); when set, the average "
                         "is what is evaluated, chosen as best.pt and exported")
    ap.add_argument("--timbre", type=float, default=0.0,
                    help="probability of a fresh random mixing EQ on each stem of each example (retimbred)")
    args = ap.parse_args()
    weights = stem_weights(args.stem_weights)
    torch.set_num_threads(args.threads)
    run_dir = os.path.join(HERE, "runs", args.run)
    os.makedirs(os.path.join(run_dir, "tmp"), exist_ok=True)

    torch.manual_seed(args.seed)
    model = MaskUNet()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    step, best, rng, ck_crops, ema_state = 0, -1e9, np.random.default_rng(args.seed), None, None
    full, light = os.path.join(run_dir, "tmp", "full.pt"), os.path.join(run_dir, "model.pt")
    if os.path.exists(full):
        ck = torch.load(full)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, best, ck_crops = ck["step"], ck["best"], ck.get("crops")
        rng.bit_generator.state = ck["rng"]
        torch.set_rng_state(ck["torch_rng"])
        ema_state = ck.get("ema")
        print(f"resumed exactly from {full} at step {step}")
    elif os.path.exists(light):
        ck = torch.load(light)
        model.load_state_dict(ck["model"])
        step, best, ck_crops = ck["step"], ck.get("best", -1e9), ck.get("crops", 24)
        rng = np.random.default_rng([args.seed, step])
        ema_state = ck.get("ema")
        print(f"resumed weights from {light} at step {step} (fresh optimizer)")
    elif args.init:
        model.load_state_dict(torch.load(args.init)["model"])
        print(f"started from the weights of {args.init}")
    for g in opt.param_groups:
        g["lr"] = args.lr
    ema = None
    if args.ema > 0:  # starts from the current weights unless the checkpoint carries an average
        ema = MaskUNet()
        ema.load_state_dict(ema_state if ema_state is not None else model.state_dict())
        ema.eval()
    scored = ema if ema is not None else model

    train = Songs([os.path.join(args.data, t) for t in args.train.split(",")])
    valid = validation_set(args.data)
    log = open(os.path.join(run_dir, "log.jsonl"), "a")
    config = {"seed": args.seed, "batch": args.batch, "seconds": args.seconds, "lr": args.lr, "train": args.train,
              "init": args.init, "band_extend": args.band_extend, "stem_weights": args.stem_weights,
              "cosine_steps": args.cosine_steps, "lr_final": args.lr_final, "ema": args.ema,
              "vocal_redraw": args.vocal_redraw, "timbre": args.timbre}

    def log_evaluation(elapsed, loss):
        """Scores the held-out crops and appends a line to the curve; returns the scores and their 6-stem mean."""
        s6, s4, per_set, leak = evaluate(scored, valid)
        mean = float(np.mean([v for v in s6.values() if v is not None]))
        entry = {"step": step, "time": elapsed, "songs": len(train), "crops": len(valid[0]), "loss": loss,
                 "lr": float(f"{learning_rate(args, step):.3g}"), "sdr6": s6, "sdr4": s4, "sets4": per_set,
                 "leak_db": leak,
                 "mean6": round(mean, 3)}
        log.write(json.dumps(entry) + "\n")
        log.flush()
        print(json.dumps(entry), flush=True)
        return s6, s4, mean

    def checkpoint(best_so_far):
        """Saves model.pt and tmp/full.pt; returns the light state (for best.pt)."""
        state = {"model": model.state_dict(), "step": step, "best": best_so_far, "crops": len(valid[0]), "config": config}
        save(light, state)  # the raw weights (an average restarts from them on a resume from model.pt)
        exact = {**state, "opt": opt.state_dict(), "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state()}
        save(full, {**exact, "ema": ema.state_dict()} if ema is not None else exact)
        return {**state, "model": scored.state_dict()}  # best.pt holds the weights that were scored

    if ck_crops != len(valid[0]):  # a different held-out set: earlier scores are not comparable; score the start
        best = -1e9
        log_evaluation(0, None)
    length = int(args.seconds * SR) // HOP * HOP
    print(f"{len(train)} training songs, {len(valid[0])} held-out crops, {sum(p.numel() for p in model.parameters())} params")
    t_start, losses = time.time(), []
    while time.time() - t_start < args.hours * 3600:
        if step % 50 == 0:
            train.refresh()
        for g in opt.param_groups:
            g["lr"] = learning_rate(args, step)
        x = batch(train, rng, args.batch, length, args.band_extend, args.vocal_redraw, args.timbre)
        est = model(x.sum(1))
        loss = ((est - x).abs() * weights).mean() / weights.mean()  # plain L1 when every weight is 1
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        if ema is not None:
            ema_update(ema, model, args.ema)
        step += 1
        losses.append(loss.item())
        if step % 10 == 0:
            print(f"step {step} loss {np.mean(losses[-10:]):.4f} {time.time() - t_start:.0f}s", flush=True)
        if step % args.eval_every == 0:
            s6, s4, mean = log_evaluation(round(time.time() - t_start), round(float(np.mean(losses)), 5))
            losses = []
            state = checkpoint(max(best, mean))
            if mean > best:
                best = mean
                save(os.path.join(run_dir, "best.pt"), {**state, "sdr6": s6, "sdr4": s4})
    if step % args.eval_every != 0:  # stopped by --hours between evaluations: keep those steps for the next resume
        checkpoint(best)

if __name__ == "__main__":
    main()
