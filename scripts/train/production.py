"""Mixing-engineer style processing in numpy/scipy: EQ, compression, distortion, reverb, panning, gain."""
import numpy as np
from scipy.signal import fftconvolve, lfilter, sosfilt, butter

SR = 44100


def _biquad(kind, f0, gain_db, q=0.8):
    """RBJ cookbook biquad (b, a)."""
    a_ = 10 ** (gain_db / 40)
    w = 2 * np.pi * f0 / SR
    alpha = np.sin(w) / (2 * q)
    c = np.cos(w)
    if kind == "peak":
        b = [1 + alpha * a_, -2 * c, 1 - alpha * a_]
        a = [1 + alpha / a_, -2 * c, 1 - alpha / a_]
    elif kind == "low":
        sq = 2 * np.sqrt(a_) * alpha
        b = [a_ * ((a_ + 1) - (a_ - 1) * c + sq), 2 * a_ * ((a_ - 1) - (a_ + 1) * c), a_ * ((a_ + 1) - (a_ - 1) * c - sq)]
        a = [(a_ + 1) + (a_ - 1) * c + sq, -2 * ((a_ - 1) + (a_ + 1) * c), (a_ + 1) + (a_ - 1) * c - sq]
    else:  # high shelf
        sq = 2 * np.sqrt(a_) * alpha
        b = [a_ * ((a_ + 1) + (a_ - 1) * c + sq), -2 * a_ * ((a_ - 1) + (a_ + 1) * c), a_ * ((a_ + 1) + (a_ - 1) * c - sq)]
        a = [(a_ + 1) - (a_ - 1) * c + sq, 2 * ((a_ - 1) - (a_ + 1) * c), (a_ + 1) - (a_ - 1) * c - sq]
    return np.array(b) / a[0], np.array(a) / a[0]


def eq(x, rng, stem):
    if stem != "bass" and rng.random() < 0.7:
        x = sosfilt(butter(2, rng.uniform(30, 180), "highpass", fs=SR, output="sos"), x, axis=-1)
    for kind, lo, hi in (("low", 60, 250), ("peak", 200, 5000), ("high", 3000, 12000)):
        if rng.random() < 0.6:
            b, a = _biquad(kind, rng.uniform(lo, hi), rng.uniform(-7, 7), rng.uniform(0.5, 1.5))
            x = lfilter(b, a, x, axis=-1)
    if rng.random() < 0.2:
        x = sosfilt(butter(2, rng.uniform(3000, 15000), "lowpass", fs=SR, output="sos"), x, axis=-1)
    return x


def compressor_gain(x, rng, threshold_db=None, ratio=None):
    """Gain curve of a feed-forward compressor on the stereo-linked envelope (fast attack, slower release)."""
    env = np.abs(x).max(0)
    peak = env.max() + 1e-9
    thr = peak * 10 ** ((threshold_db if threshold_db is not None else rng.uniform(-24, -6)) / 20)
    ratio = ratio if ratio is not None else rng.uniform(2, 8)
    att = np.exp(-1 / (0.005 * SR))
    level = lfilter([1 - att], [1, -att], env)
    gain_db = -20 * np.log10(np.maximum(level / thr, 1.0)) * (1 - 1 / ratio)
    rel = np.exp(-1 / (rng.uniform(0.05, 0.3) * SR))
    smooth = lfilter([1 - rel], [1, -rel], gain_db)
    return 10 ** (np.minimum(gain_db, smooth) / 20) * (1 + (ratio - 1) * 0.1)  # with light make-up gain


def compress(x, rng):
    return x * compressor_gain(x, rng)


def distort(x, rng):
    drive = rng.uniform(4, 40)
    y = x / (np.abs(x).max() + 1e-9)
    y = np.tanh(drive * (y + rng.uniform(0, 0.2))) - np.tanh(drive * rng.uniform(0, 0.2))
    y = sosfilt(butter(2, rng.uniform(80, 200), "highpass", fs=SR, output="sos"), y, axis=-1)
    return sosfilt(butter(4, rng.uniform(2500, 6000), "lowpass", fs=SR, output="sos"), y, axis=-1)  # cabinet


def reverb_ir(rng, rt60=None):
    rt60 = rt60 if rt60 is not None else rng.uniform(0.2, 2.5)
    n = int(SR * min(rt60, 3.0))
    t = np.arange(n) / SR
    decay = np.exp(-6.9 * t / rt60)
    ir = rng.standard_normal((2, n)) * decay
    ir = sosfilt(butter(1, rng.uniform(2000, 9000), "lowpass", fs=SR, output="sos"), ir, axis=-1)  # air damping
    pre = int(rng.uniform(0, 0.04) * SR)
    ir = np.pad(ir, ((0, 0), (pre, 0)))
    return ir / np.sqrt((ir ** 2).sum(1, keepdims=True))


def reverb(x, ir, wet):
    n = x.shape[1]
    y = np.stack([fftconvolve(x[0] + x[1], ir[c])[:n] for c in range(2)]) * 0.5
    return x * (1 - wet) + y * wet * 1.5


def pan(x, rng, width):
    p = rng.uniform(-width, width)
    mono = x.mean(0)
    spread = rng.uniform(0, 1)
    y = spread * x + (1 - spread) * np.stack([mono, mono])
    return y * np.array([[np.sqrt(0.5 * (1 - p)) * 1.414], [np.sqrt(0.5 * (1 + p)) * 1.414]])


def rms(x):
    return np.sqrt(np.mean(x ** 2) + 1e-12)


PAN_WIDTH = {"vocals": 0.15, "drums": 0.1, "bass": 0.05, "other": 0.7, "guitar": 0.8, "piano": 0.5}
LEVEL_DB = {"vocals": (-2, 3), "drums": (-4, 2), "bass": (-5, 1), "other": (-10, -1), "guitar": (-8, 0), "piano": (-9, 0)}


def overdrive(x, rng):
    """A bass amp pushed into soft clipping: grit and upper harmonics, lows kept (unlike the guitar cabinet)."""
    drive = rng.uniform(1.5, 8)
    y = np.tanh(drive * x / (np.abs(x).max() + 1e-9)) / np.tanh(drive)
    return sosfilt(butter(2, rng.uniform(2500, 8000), "lowpass", fs=SR, output="sos"), y, axis=-1)


def echo(x, rng):
    """A feedback delay (slapback to quarter-note throws), darker on each repeat, mixed in at a low level."""
    d = int(rng.uniform(0.08, 0.45) * SR)
    fb, wet = rng.uniform(0.2, 0.5), rng.uniform(0.1, 0.35)
    dark = butter(1, rng.uniform(2000, 6000), "lowpass", fs=SR, output="sos")
    out, tap = x.copy(), x
    for k in range(1, 5):
        tap = sosfilt(dark, np.pad(tap, ((0, 0), (d, 0)))[:, : x.shape[1]], axis=-1) * (fb if k > 1 else 1.0)
        out = out + wet * tap
    return out


def produce_part(x, rng, stem, distorted, gen=1):
    """gen 2 adds what real mixes often have and generation 1 lacked: overdriven bass, echoed vocals."""
    if distorted:
        x = distort(x, rng)
    if gen >= 2 and stem == "bass" and rng.random() < 0.3:
        x = overdrive(x, rng)
    if gen >= 2 and stem == "vocals" and rng.random() < 0.35:
        x = echo(x, rng)
    x = eq(x, rng, stem)
    if rng.random() < (0.8 if stem in ("vocals", "drums", "bass") else 0.4):
        x = compress(x, rng)
    return pan(x, rng, PAN_WIDTH[stem])


LEAD_LEVEL_DB = (-5, 2)  # generation 4: an `other` stem carrying a lead line sits up front like a singer


def produce_stem(x, rng, stem, room_ir, level_db=None):
    """Stem-level reverb (its own or the song's shared room) and a level relative to a -20 dBFS reference."""
    if rms(x) < 1e-6:
        return np.zeros_like(x)
    wet = {"vocals": rng.uniform(0.05, 0.4), "drums": rng.uniform(0.0, 0.25), "bass": rng.uniform(0.0, 0.08)}.get(stem, rng.uniform(0.05, 0.45))
    ir = room_ir if rng.random() < 0.5 else reverb_ir(rng)
    x = reverb(x, ir, wet)
    return x / rms(x) * 0.1 * 10 ** (rng.uniform(*(level_db or LEVEL_DB[stem])) / 20)


def master(stems, rng):
    """Bus compression applied as one shared gain curve, so the stems still sum exactly to the mixture."""
    mix = sum(stems.values())
    if rng.random() < 0.5:
        g = compressor_gain(mix, rng, rng.uniform(-12, -3), rng.uniform(1.5, 4))
        stems = {k: v * g for k, v in stems.items()}
        mix = sum(stems.values())
    peak = np.abs(mix).max()
    scale = rng.uniform(0.3, 0.95) / peak if peak > 0 else 1.0
    return {k: (v * scale).astype(np.float32) for k, v in stems.items()}
