"""Real recorded voices, under permissive terms only, turned into sung lines and rhythmic speech (generation 3).

Each source is a Debian package whose copyright file was read (see models/stemsplit-small-4s/MODEL_CARD.md for the
attribution that CC-BY requires). Nothing GPL, GFDL or ShareAlike is used: gcin-voice's other speaker (*/3.ogg,
GPL-3/LGPL-3) and Asterisk's English and French prompts (CC-BY-SA-3.0) are left out on purpose.

Singing keeps the speaker's own timbre and breath by time-domain pitch-synchronous overlap-add (TD-PSOLA): two-period
grains cut at the speech's own pitch marks are laid down again at the melody's pitch, the vowel nucleus repeated to
sustain the note. The recordings are 16 kHz (8 kHz of audio band); `band_extend` optionally synthesises the missing
octave from the 4-8 kHz band's envelope (noise for breath and sibilance, plus the upper harmonics of a rectified
copy), so that a model does not learn "band-limited means voice". train.py's ablation measures whether that helps.
"""
import functools
import glob
import os
import subprocess

import numpy as np
import soundfile as sf
from scipy.signal import butter, resample_poly, sosfilt

RATE = 16000

# split: "train" sources may appear in training songs; "held-out" sources only in the held-out set valid3, so that
# its score says whether the model learned voices rather than these speakers.
SOURCES = {
    "festvox-ru": {"glob": "/usr/share/festival/voices/russian/msu_ru_nsh_clunits/wav/*.wav", "split": "train",
                   "package": "festvox-ru", "licence": "BSD-style (Festival; (c) 2005 Nickolay V. Shmyrev)"},
    "gcin-voice": {"glob": "/usr/share/gcin-voice/ogg/*/5.ogg", "split": "train", "package": "gcin-voice",
                   "licence": "CC-BY-3.0 (voice: Chu Lo, ChionMeilin recording group; only */5.ogg)"},
    "asterisk-it": {"glob": "/usr/share/asterisk/sounds/it_IT_m_Carlo/**/*.g722", "split": "train",
                    "package": "asterisk-core-sounds-it-g722", "licence": "CC-BY-3.0 (Carlo Flora, carloflora.com)"},
    "asterisk-ru": {"glob": "/usr/share/asterisk/sounds/ru_RU_f_IvrvoiceRU/**/*.g722", "split": "held-out",
                    "package": "asterisk-core-sounds-ru-g722", "licence": "CC-BY-3.0 (Maxim, 2010)"},
}


def available(split):
    """Sources of this split whose files are installed."""
    return [name for name, s in SOURCES.items() if s["split"] == split and _files(name)]


@functools.lru_cache(maxsize=None)
def _files(name):
    return tuple(sorted(glob.glob(SOURCES[name]["glob"], recursive=True)))


@functools.lru_cache(maxsize=256)
def load(path):
    """Mono float32 at 16 kHz, peak-normalised; G.722 prompts are decoded by ffmpeg."""
    if path.endswith(".g722"):
        raw = subprocess.run(["ffmpeg", "-v", "error", "-f", "g722", "-i", path, "-ac", "1", "-ar", str(RATE),
                              "-f", "f32le", "-"], check=True, capture_output=True).stdout
        x = np.frombuffer(raw, np.float32).copy()
    else:
        x, sr = sf.read(path, dtype="float32", always_2d=True)
        x = x.mean(1)
        if sr != RATE:
            x = resample_poly(x, RATE, sr).astype(np.float32)
    x = x - x.mean()
    peak = np.abs(x).max()
    return x / peak * 0.5 if peak > 0 else x


# ---------------------------------------------------------------- analysis
HOP = RATE // 200  # 5-ms frames


def pitch_track(x):
    """Per 5-ms frame: f0 in Hz (0 when unvoiced), from the normalised autocorrelation of a 40-ms window."""
    win = RATE // 25
    lo, hi = RATE // 450, RATE // 65
    n = max(1, 1 + (len(x) - win) // HOP)
    idx = np.arange(win)[None] + HOP * np.arange(n)[:, None]
    frames = np.pad(x, (0, win))[idx]
    frames = frames - frames.mean(1, keepdims=True)
    spec = np.fft.rfft(frames * np.hanning(win)[None], 2 * win)
    r = np.fft.irfft(np.abs(spec) ** 2, 2 * win)[:, : hi + 1]
    energy = r[:, 0] + 1e-9
    lag = lo + np.argmax(r[:, lo: hi + 1], axis=1)
    strength = r[np.arange(n), lag] / energy
    loud = energy > 1e-3 * energy.max()
    return np.where((strength > 0.45) & loud, RATE / lag, 0.0), energy


def pitch_marks(x, f0):
    """Analysis marks: one per glottal period (at the waveform's peak) in voiced frames, every 5 ms elsewhere.
    Returns (sample positions, local period in samples, voiced flag)."""
    marks, periods, voiced = [], [], []
    t = 0
    smooth = np.convolve(x, np.hanning(9) / np.hanning(9).sum(), mode="same")
    while t < len(x):
        f = f0[min(len(f0) - 1, t // HOP)]
        if f > 0:
            p = int(RATE / f)
            a, b = t, min(len(x), t + p)
            if marks and voiced[-1]:
                a, b = max(0, t - p // 4), min(len(x), t + p // 4)
            if b <= a:
                break
            m = a + int(np.argmax(smooth[a:b]))
            marks.append(m)
            periods.append(p)
            voiced.append(True)
            t = m + p
        else:
            marks.append(t)
            periods.append(HOP * 2)
            voiced.append(False)
            t += HOP * 2
    return np.array(marks), np.array(periods), np.array(voiced)


def syllables(x, f0, energy):
    """Syllable-like segments: each voiced run with its surrounding unvoiced sounds, split at energy dips.
    Returns (start, nucleus start, nucleus end, end) sample positions."""
    v = f0 > 0
    runs, i = [], 0
    while i < len(v):
        if v[i]:
            j = i
            while j < len(v) and v[j]:
                j += 1
            if j - i >= 8:  # 40 ms or more of voicing
                runs.append((i, j))
            i = j
        else:
            i += 1
    segs = []
    for k, (a, b) in enumerate(runs):
        prev_end = runs[k - 1][1] if k else 0
        next_start = runs[k + 1][0] if k + 1 < len(runs) else len(v)
        start = max(prev_end, a - 24)  # up to 120 ms of onset consonant
        end = min(next_start, b + 16)
        # long runs hold several syllables: split them at the deepest energy dips
        cuts = [a]
        e = np.log(energy[a:b] + 1e-12)
        for c in range(a + 30, b - 30, 30):
            seg = e[c - a - 10: c - a + 10]
            cuts.append(a + c - a - 10 + int(np.argmin(seg)))
        cuts.append(b)
        for m in range(len(cuts) - 1):
            s0 = start if m == 0 else cuts[m]
            s1 = end if m == len(cuts) - 2 else cuts[m + 1]
            segs.append((s0 * HOP, cuts[m] * HOP, cuts[m + 1] * HOP, s1 * HOP))
    return segs


@functools.lru_cache(maxsize=256)
def analysed(path):
    x = load(path)
    f0, energy = pitch_track(x)
    return x, f0, pitch_marks(x, f0), syllables(x, f0, energy)


# ---------------------------------------------------------------- synthesis
def psola_note(x, marks, seg, f0_curve, formant, rng):
    """One sung note from a syllable: onset and coda at their own speed, the voiced nucleus stretched over the note,
    every voiced grain re-laid at the melody's period (f0_curve: Hz per output sample). `formant` > 1 shifts the
    speaker's formants up (grains resampled shorter), < 1 down."""
    pos, per, vo = marks
    s0, n0, n1, s1 = seg
    n = len(f0_curve)
    head, tail = n0 - s0, s1 - n1
    head, tail = min(head, n // 3), min(tail, n // 4)
    body = max(1, n - head - tail)
    out = np.zeros(n + 2 * RATE // 40)
    t = 0.0
    while t < n:
        ti = int(t)
        if ti < head:
            src = n0 - head + ti
        elif ti < head + body:
            src = n0 + (ti - head) * (n1 - n0) / body  # sustained vowel: the nucleus read slower
        else:
            src = n1 + ti - head - body
        k = int(np.clip(np.searchsorted(pos, src), 0, len(pos) - 1))
        p = int(per[k])
        a, b = pos[k] - p, pos[k] + p
        if a < 0 or b > len(x):
            t += p
            continue
        grain = x[a:b] * np.hanning(b - a)
        if vo[k]:
            if formant != 1.0:
                grain = np.interp(np.arange(0, len(grain), formant), np.arange(len(grain)), grain)
            step = RATE / max(f0_curve[min(ti, n - 1)], 40.0)
        else:
            step = p
        c = int(t) - len(grain) // 2 + RATE // 40
        lo = max(0, c)
        out[lo: c + len(grain)] += grain[lo - c: len(out) - c]
        t += step
    out = out[RATE // 40: RATE // 40 + n]
    env = np.minimum(1.0, np.minimum(np.arange(n) / (0.005 * RATE), (n - np.arange(n)) / (0.02 * RATE)))
    return out * env, head


def band_extend(y, rate, rng):
    """Adds an 8-16 kHz band to a 16 kHz recording (y at `rate` ≥ 32 kHz): noise shaped by the 4-8 kHz band's envelope
    (breath, sibilance) plus the upper harmonics of its rectified copy, at a level 12-24 dB under that band."""
    band = sosfilt(butter(4, [4000, 7800], "bandpass", fs=rate, output="sos"), y)
    env = sosfilt(butter(2, 60, "lowpass", fs=rate, output="sos"), np.abs(band))
    noise = rng.standard_normal(len(y)) * env
    harmonics = np.abs(band) - env
    hp = butter(6, 8000, "highpass", fs=rate, output="sos")
    hf = sosfilt(hp, noise * 1.5 + harmonics)
    level = np.sqrt(np.mean(band ** 2) / (np.mean(hf ** 2) + 1e-12)) * 10 ** (-rng.uniform(12, 24) / 20)
    return y + hf * level


def sung_line(notes, n_out, out_rate, rng, split, female):
    """A melody sung by one real speaker of `split`: list of (start, dur, midi pitch, velocity) → mono at out_rate."""
    source = str(rng.choice(available(split)))
    files = _files(source)
    picks = [files[i] for i in rng.choice(len(files), size=min(4, len(files)), replace=False)]
    bank = [(analysed(p), s) for p in picks for s in analysed(p)[3]]
    if not bank:
        return np.zeros(n_out, np.float32), source
    # a male recording singing a female part gets its formants raised a little, and the other way round
    formant = rng.uniform(1.08, 1.2) if female and source in ("festvox-ru", "asterisk-it") else rng.uniform(0.95, 1.05)
    out = np.zeros(int(n_out * RATE / out_rate) + RATE)
    prev = None
    for start, dur, pitch, vel in notes:
        f0 = 440.0 * 2 ** ((pitch - 69) / 12)
        f0_start = prev if prev is not None and rng.random() < 0.7 else f0
        n = max(RATE // 20, int(dur * RATE))
        t = np.arange(n) / RATE
        glide = np.exp(-t / rng.uniform(0.02, 0.07))
        cents = rng.uniform(0, 50) * np.clip((t - 0.2) / 0.3, 0, 1) * np.sin(2 * np.pi * rng.uniform(4.5, 6.5) * t)
        drift = np.interp(t, np.linspace(0, t[-1] + 1e-3, 6), rng.normal(0, 8, 6))
        curve = (f0_start * glide + f0 * (1 - glide)) * 2 ** ((cents + drift) / 1200)
        (x, _, marks, _), seg = bank[rng.integers(len(bank))]
        y, lead = psola_note(x, marks, seg, curve, formant, rng)
        i = max(0, int(start * RATE) - lead)
        if i >= len(out):
            continue
        y = y[: len(out) - i] * (vel / 127.0)
        out[i: i + len(y)] += y
        prev = f0
    return out, source


def spoken_line(bpm, n_out, out_rate, rng, split):
    """Rhythmic speech (a rap-like part): whole syllables at the speaker's own pitch, each started on an
    eighth or sixteenth note of the groove, phrases with rests between them."""
    source = str(rng.choice(available(split)))
    files = _files(source)
    picks = [files[i] for i in rng.choice(len(files), size=min(4, len(files)), replace=False)]
    bank = [(analysed(p)[0], s) for p in picks for s in analysed(p)[3]]
    out = np.zeros(int(n_out * RATE / out_rate) + RATE)
    if not bank:
        return out, source
    grid = 60.0 / bpm / float(rng.choice([2, 4]))
    t, total = rng.uniform(0, 4 * grid), n_out / out_rate
    while t < total:
        for _ in range(int(rng.integers(4, 14))):
            x, (s0, _, _, s1) = bank[rng.integers(len(bank))]
            y = x[s0:s1] * np.minimum(1.0, np.minimum(np.arange(s1 - s0) / 40, (s1 - s0 - np.arange(s1 - s0)) / 80))
            i = int(t * RATE)
            if i >= len(out):
                break
            y = y[: len(out) - i]
            out[i: i + len(y)] += y * rng.uniform(0.6, 1.0)
            t += grid * max(1, round(len(y) / RATE / grid))
        t += grid * int(rng.integers(4, 12))
    return out, source


def to_output_rate(y, out_rate, extend, rng):
    """16 kHz line → out_rate, optionally with the synthesised upper band."""
    z = resample_poly(y, out_rate, RATE)
    return band_extend(z, out_rate, rng) if extend else z
