"""Turns `music.Part`s into audio: fluidsynth with GM soundfonts, real drum samples, and a sung voice
built from espeak-ng syllables re-pitched by LPC resynthesis (so it has consonants, formants and a melody)."""
import functools
import glob
import io
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import soundfile as sf
from scipy.linalg import solve_toeplitz
from scipy.signal import butter, lfilter, resample_poly, sosfilt

import voices
from midi import Track, write_midi

SR = 44100
VOICE_SPLIT = "train"  # which real speakers generation 3 may use (render.py --voices)
SOUNDFONTS = ["/usr/share/sounds/sf2/FluidR3_GM.sf2", "/usr/share/sounds/sf2/MuseScore_General_Full.sf2"]
AVL_DRUMS = ["/usr/share/sounds/sf2/Black_Pearl_4_LV2.sf2", "/usr/share/sounds/sf2/Red_Zeppelin_4_LV2.sf2"]
HYDROGEN_DIR = "/usr/share/hydrogen/data/drumkits"
SONIC_PI_DIR = "/usr/share/sonic-pi/samples"
GM_DRUM_NOTES = {"kick": [36, 35], "snare": [38, 40], "clap": [39], "hat_closed": [42], "hat_open": [46],
                 "ride": [51, 59], "crash": [49, 57], "tom_hi": [50, 48], "tom_mid": [47, 45], "tom_lo": [43, 41],
                 "perc": [54, 70, 69]}
GM_DRUM_KITS = [0, 0, 1, 8, 16, 24, 25, 32, 40]


def _to_stereo(x):
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        return np.stack([x, x])
    return x.T[:2] if x.shape[1] >= 2 else np.repeat(x.T, 2, 0)


@functools.lru_cache(maxsize=4096)
def load_sample(path):
    x, sr = sf.read(path, dtype="float32", always_2d=True)
    y = _to_stereo(x)
    if sr != SR:
        y = resample_poly(y, SR, sr, axis=1).astype(np.float32)
    return y


# ---------------------------------------------------------------- fluidsynth
def fluid_render(tracks, soundfont, n, tmpdir, tag):
    """Renders MIDI tracks with one fluidsynth call (built-in reverb/chorus off: production adds its own)."""
    mid = os.path.join(tmpdir, f"{tag}.mid")
    wav = os.path.join(tmpdir, f"{tag}.wav")
    write_midi(mid, tracks)
    subprocess.run(["fluidsynth", "-ni", "-q", "-R", "0", "-C", "0", "-g", "0.4", "-r", str(SR), "-F", wav, soundfont, mid],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    x, _ = sf.read(wav, dtype="float32", always_2d=True)
    os.remove(mid)
    os.remove(wav)
    out = np.zeros((2, n), np.float32)
    y = _to_stereo(x)[:, :n]
    out[:, : y.shape[1]] = y
    return out


def vibrato_bends(notes, rng, depth_cents=None):
    """Pitch-bend events (±2 semitone range) for a delayed vibrato per note, as singers and string players do."""
    bends = []
    for start, dur, _, _ in notes:
        depth = depth_cents if depth_cents is not None else rng.uniform(15, 60)
        rate = rng.uniform(4.5, 6.5)
        for t in np.arange(0.0, dur, 0.02):
            ramp = min(1.0, max(0.0, (t - 0.15) / 0.3))
            bends.append((start + t, 8192 * depth * ramp * np.sin(2 * np.pi * rate * t) / 200.0))
        bends.append((start + dur, 0))
    return bends


def lead_bends(notes, rng, slides):
    """Pitch bends (±2 semitone range) for a lead played like a voice: delayed vibrato on each note and, with
    `slides`, a glide from the previous note's pitch when it is at most two semitones away."""
    bends, prev = [], None
    depth, rate = rng.uniform(15, 50), rng.uniform(4.5, 6.5)
    for start, dur, pitch, _ in notes:
        glide_from = (prev - pitch) * 100 if slides and prev is not None and abs(prev - pitch) <= 2 else 0.0
        glide_time = rng.uniform(0.03, 0.09)
        for t in np.arange(0.0, dur, 0.015):
            ramp = min(1.0, max(0.0, (t - 0.15) / 0.3))
            cents = depth * ramp * np.sin(2 * np.pi * rate * t) + glide_from * max(0.0, 1 - t / glide_time)
            bends.append((start + t, 8192 * cents / 200.0))
        bends.append((start + dur, 0))
        prev = pitch
    return bends


def synth_lead(part, n, rng):
    """A synthesised mono lead (held-out leakage set only): detuned saw + pulse through a low-pass, with glides,
    delayed vibrato and an attack/release envelope. No training song contains it."""
    out = np.zeros(n)
    cutoff = rng.uniform(1500, 7000)
    saw_mix, width, detune = rng.uniform(0.2, 1.0), rng.uniform(0.2, 0.5), rng.uniform(3, 12)
    attack, release = rng.uniform(0.005, 0.06), rng.uniform(0.03, 0.2)
    prev = None
    for start, dur, pitch, vel in part.notes:
        i0 = int(start * SR)
        m = int((dur + release) * SR)
        if i0 >= n or m <= 0:
            continue
        t = np.arange(m) / SR
        f0 = 440.0 * 2 ** ((pitch - 69) / 12)
        f_start = 440.0 * 2 ** ((prev - 69) / 12) if prev is not None and part.style.get("slides") else f0
        glide = np.exp(-t / 0.05)
        vib = 2 ** (rng.uniform(10, 40) * np.clip((t - 0.15) / 0.3, 0, 1) * np.sin(2 * np.pi * rng.uniform(4.5, 6.5) * t) / 1200)
        freq = (f_start * glide + f0 * (1 - glide)) * vib
        y = 0.0
        for cents in (-detune / 2, detune / 2):
            ph = np.cumsum(freq * 2 ** (cents / 1200) / SR) % 1.0
            y = y + saw_mix * (2 * ph - 1) + (1 - saw_mix) * np.where(ph < width, 1.0, -1.0)
        env = np.minimum(1.0, t / attack) * np.clip((dur + release - t) / release, 0, 1)
        y = y * env * vel / 127.0
        j = min(n, i0 + m)
        out[i0:j] += y[: j - i0]
        prev = pitch
    out = sosfilt(butter(2, cutoff, "lowpass", fs=SR, output="sos"), out)
    return np.stack([out, out]).astype(np.float32), "synth-lead"


# ---------------------------------------------------------------- drum kits
def _role_of(name):
    n = name.lower()
    rules = [("kick", r"kick|bass ?drum|\bbd|bassdrum"), ("hat_open", r"open|ohh|hat op"), ("hat_closed", r"hat|hh"),
             ("snare", r"snare|\bsd|rim"), ("clap", r"clap|snap"), ("ride", r"ride|bell"), ("crash", r"crash|splash|china|cymbal"),
             ("tom_hi", r"tom.*(hi|high|1\b)|hi.*tom"), ("tom_lo", r"floor|tom.*(lo|low|3\b)|lo.*tom"), ("tom_mid", r"tom"),
             ("perc", r"cowbell|tamb|shak|maraca|clave|wood|conga|bongo|cajon")]
    for role, pattern in rules:
        if re.search(pattern, n):
            return role
    return None


@functools.lru_cache(maxsize=None)
def hydrogen_kits():
    """{kit: {role: [(layer files with velocity ranges)]}} for every installed Hydrogen kit with a kick and a snare."""
    kits = {}
    for xml in sorted(glob.glob(os.path.join(HYDROGEN_DIR, "*", "drumkit.xml"))):
        root = ET.parse(xml).getroot()
        ns = re.match(r"\{.*\}", root.tag)
        ns = ns.group(0) if ns else ""
        roles = {}
        for inst in root.iter(f"{ns}instrument"):
            name = inst.findtext(f"{ns}name") or ""
            role = _role_of(name)
            layers = []
            for layer in inst.iter(f"{ns}layer"):
                fn = layer.findtext(f"{ns}filename")
                if fn:
                    layers.append((os.path.join(os.path.dirname(xml), fn), float(layer.findtext(f"{ns}min") or 0),
                                   float(layer.findtext(f"{ns}max") or 1)))
            fn = inst.findtext(f"{ns}filename")
            if fn and not layers:
                layers.append((os.path.join(os.path.dirname(xml), fn), 0.0, 1.0))
            if role and layers:
                roles.setdefault(role, []).append(layers)
        if "kick" in roles and "snare" in roles:
            kits[os.path.basename(os.path.dirname(xml))] = roles
    return kits


def sonic_pi_kit():
    def f(*names):
        return [[(os.path.join(SONIC_PI_DIR, n + ".flac"), 0.0, 1.0)] for n in names]
    return {"kick": f("bd_fat", "bd_klub", "bd_haus", "bd_tek", "drum_heavy_kick", "drum_bass_hard", "bd_boom", "bd_808"),
            "snare": f("sn_dolf", "sn_generic", "drum_snare_hard", "sn_dub", "elec_snare", "elec_hi_snare"),
            "clap": f("perc_snap", "perc_snap2"), "hat_closed": f("drum_cymbal_closed", "drum_cymbal_pedal"),
            "hat_open": f("drum_cymbal_open"), "ride": f("drum_cymbal_soft"), "crash": f("drum_splash_hard", "drum_cymbal_hard"),
            "tom_hi": f("drum_tom_hi_hard"), "tom_mid": f("drum_tom_mid_hard"), "tom_lo": f("drum_tom_lo_hard"),
            "perc": f("drum_cowbell", "elec_tick", "elec_wood")}


ROLE_FALLBACK = {"clap": "snare", "ride": "hat_closed", "hat_open": "hat_closed", "tom_hi": "tom_mid",
                 "tom_lo": "tom_mid", "tom_mid": "tom_lo"}


def sample_drums(hits, kit, n, rng):
    """Places real drum samples at the hit times; one sample per role per song, velocity picks the layer."""
    out = np.zeros((2, n), np.float32)
    chosen = {role: kit[role][rng.integers(len(kit[role]))] for role in kit}
    pans = {role: rng.uniform(-0.5, 0.5) if role.startswith(("tom", "hat", "ride", "crash", "perc")) else rng.uniform(-0.08, 0.08)
            for role in kit}
    for t, role, vel in hits:
        if role not in chosen:
            role = ROLE_FALLBACK.get(role)
        if role not in chosen:
            continue
        v = vel / 127.0
        layers = chosen[role]
        match = [l for l in layers if l[1] <= v <= l[2]] or layers
        path = match[rng.integers(len(match))][0]
        try:
            s = load_sample(path)
        except Exception:
            continue
        i = int(t * SR)
        if i >= n:
            continue
        seg = s[:, : n - i] * (v ** 1.5)
        p = pans[role]
        out[0, i: i + seg.shape[1]] += seg[0] * np.sqrt(0.5 * (1 - p))
        out[1, i: i + seg.shape[1]] += seg[1] * np.sqrt(0.5 * (1 + p))
    return out


# Generation 3 trains the model a studio may use for paid work, so it uses only permissively licensed sounds:
# hydrogen-drumkits (GPL-2, GPL-2+, CC-BY-SA-3.0 kits) and avldrums.lv2-soundfont (GPL-2+) are left out,
# as is espeak-ng (GPL-3) as a singer. Its drums: the GM kits of FluidR3 and MuseScore General (MIT) and
# sonic-pi-samples' drum samples (CC0, one MIT).
CLEAN_DRUM_SOURCES = ["gm", "gm", "gm", "sonicpi", "sonicpi"]


def render_drums(part, n, rng, tmpdir, tag, gen=1):
    source = rng.choice(CLEAN_DRUM_SOURCES if gen >= 3 else ["gm", "gm", "avl", "hydrogen", "hydrogen", "hydrogen", "sonicpi"])
    if source == "hydrogen" and hydrogen_kits():
        kits = hydrogen_kits()
        return sample_drums(part.notes, kits[list(kits)[rng.integers(len(kits))]], n, rng), "hydrogen"
    if source == "sonicpi":
        return sample_drums(part.notes, sonic_pi_kit(), n, rng), "sonicpi"
    notes = [(t, 0.2, GM_DRUM_NOTES[r][rng.integers(len(GM_DRUM_NOTES[r]))] if len(GM_DRUM_NOTES[r]) > 1 and rng.random() < 0.2
              else GM_DRUM_NOTES[r][0], v) for t, r, v in part.notes]
    if source == "avl":
        return fluid_render([Track(0, 0, 0, notes)], AVL_DRUMS[rng.integers(2)], n, tmpdir, tag), "avl"
    kit = int(rng.choice(GM_DRUM_KITS))
    return fluid_render([Track(9, kit, 0, notes)], SOUNDFONTS[rng.integers(2)], n, tmpdir, tag), f"gm{kit}"


# ---------------------------------------------------------------- sung voice
SYLLABLES = ["la", "na", "da", "ma", "ba", "ya", "wo", "oh", "ah", "lo", "no", "do", "me", "be", "see", "lee", "you",
             "love", "heart", "night", "day", "way", "time", "home", "light", "fire", "sky", "run", "dream", "go",
             "say", "stay", "now", "high", "low", "baby", "ooh", "yeah", "hey", "so", "far", "away", "tonight",
             "feel", "real", "rain", "again", "alone", "sun", "gone", "want", "know", "shine", "my", "your", "we"]
ESPEAK_VOICES_M = ["en-us", "en", "en+m1", "en+m2", "en+m3", "en+m4", "en+m7", "es", "it", "pt", "de", "en-us+david",
                   "en+Andy", "en+boris", "en+iven", "en+john"]
ESPEAK_VOICES_F = ["en-us+f1", "en+f2", "en+f3", "en+f4", "en+f5", "es+f3", "it+f2", "en+Annie", "en+belinda",
                   "en+linda", "en+anika", "en+grandma", "pt+f4"]
VSR = 22050
ORDER = 20


@functools.lru_cache(maxsize=2048)
def _espeak(voice, word, speed):
    wav = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", word], check=True,
                         capture_output=True).stdout
    x, sr = sf.read(io.BytesIO(wav), dtype="float32")
    if sr != VSR:
        x = resample_poly(x, VSR, sr).astype(np.float32)
    return _trimmed(x)


def _trimmed(x):
    nz = np.nonzero(np.abs(x) > 1e-3)[0]
    return x[nz[0]: nz[-1] + 1] if len(nz) else x


HTS_RATE = 32000  # cmu_us_slt_arctic_hts speaks at 32 kHz, so its spectra reach 16 kHz (espeak-ng: 11 kHz)
HTS_ORDER = 32


@functools.lru_cache(maxsize=1)
def _hts_bank():
    """Every lyric syllable spoken by Festival's HTS voice (one festival call for the whole list)."""
    with tempfile.TemporaryDirectory() as d:
        lines = ["(voice_cmu_us_slt_arctic_hts)"]
        lines += [f'(utt.save.wave (utt.synth (Utterance Text "{w}")) "{d}/{i}.wav" \'riff)' for i, w in enumerate(SYLLABLES)]
        script = os.path.join(d, "bank.scm")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["festival", "-b", script], check=True, capture_output=True)
        bank = {}
        for i, w in enumerate(SYLLABLES):
            x, sr = sf.read(os.path.join(d, f"{i}.wav"), dtype="float32")
            assert sr == HTS_RATE, sr
            bank[w] = _trimmed(x)
        return bank


def _lpc_analysis(x, rate, order):
    """Per 5-ms frame of speech x: LPC polynomial, excitation gain and voicing."""
    x = np.append(x[0], x[1:] - 0.95 * x[:-1])
    hop, win = rate // 200, rate // 50
    nfft = 1 << int(np.ceil(np.log2(2 * win)))
    n = max(1, 1 + (len(x) - win) // hop)
    idx = np.arange(win)[None] + hop * np.arange(n)[:, None]
    frames = np.pad(x, (0, win))[idx] * np.hanning(win)[None]
    spec = np.fft.rfft(frames, nfft)
    r = np.fft.irfft(np.abs(spec) ** 2, nfft)
    a = np.zeros((n, order + 1), np.float64)
    gain = np.zeros(n)
    voiced = np.zeros(n)
    lags = slice(rate // 400, rate // 70)
    for i in range(n):
        ri = r[i, : order + 1].copy()
        ri[0] = ri[0] * 1.001 + 1e-9
        coef = solve_toeplitz(ri[:order], ri[1: order + 1])
        a[i] = np.concatenate([[1.0], -coef])
        gain[i] = np.sqrt(max(ri[0] - coef @ ri[1: order + 1], 1e-12) / win)
        voiced[i] = np.clip((r[i, lags].max() / (r[i, 0] + 1e-9) - 0.25) / 0.35, 0, 1)
    return a, gain, voiced


@functools.lru_cache(maxsize=2048)
def _lpc_frames(voice, word, speed):
    return _lpc_analysis(_espeak(voice, word, speed), VSR, ORDER)


@functools.lru_cache(maxsize=512)
def _hts_frames(word, tract):
    """HTS syllable with its vocal tract scaled by `tract` (< 1: longer tract, lower formants, a male-like voice)."""
    x = _hts_bank()[word]
    warped = resample_poly(x, 1000, int(round(1000 * tract))) if tract != 1.0 else x
    return _lpc_analysis(warped, HTS_RATE, HTS_ORDER)


def _glottal(f0, rate, oq):
    """Differentiated Rosenberg glottal pulse train following the f0 contour (Hz per sample); oq: open quotient."""
    phase = np.cumsum(f0 / rate) % 1.0
    tp = 0.66 * oq
    flow = np.where(phase < tp, 0.5 * (1 - np.cos(np.pi * phase / tp)),
                    np.where(phase < oq, np.cos(np.pi * (phase - tp) / (2 * (oq - tp))), 0.0))
    d = np.diff(flow, prepend=0.0)
    return d / (np.sqrt(np.mean(d ** 2)) + 1e-9)


ESPEAK_SINGER = {"oq": 0.6, "breath": (0.03, 0.15), "jitter": 0.0}  # generation 1's voice quality, for every espeak voice


def _sing_note(frames, f0_start, f0, dur, rng, rate, singer):
    """One sung note: the syllable's LPC frames stretched to the note, excited by glottal pulses on its pitch.
    `singer` sets the open quotient, the breathiness range and the jitter (in cents; 0: none)."""
    a, gain, voiced = frames
    hop = rate // 200
    order = a.shape[1] - 1
    n_in = len(gain)
    n_out = max(4, int(dur * rate / hop))
    v_idx = np.nonzero(voiced > 0.5)[0]
    if len(v_idx) == 0:
        v_idx = np.arange(n_in)
    head, tail = v_idx[0], n_in - 1 - v_idx[-1]
    head = min(head, n_out // 3)
    tail = min(tail, n_out // 4)
    mid = n_out - head - tail
    mapping = np.concatenate([np.arange(head), np.linspace(v_idx[0], v_idx[-1], max(1, mid)),
                              np.arange(n_in - tail, n_in)]).astype(int).clip(0, n_in - 1)
    n = len(mapping) * hop
    t = np.arange(n) / rate
    glide = np.exp(-t / rng.uniform(0.02, 0.07))
    cents = rng.uniform(0, 45) * np.clip((t - 0.2) / 0.3, 0, 1) * np.sin(2 * np.pi * rng.uniform(4.5, 6.5) * t)
    drift = np.interp(t, np.linspace(0, t[-1] + 1e-3, 6), rng.normal(0, 8, 6))
    if singer["jitter"] > 0:  # cycle-to-cycle jitter: fast random pitch wobble of a few cents
        k = max(2, int(t[-1] * 120) + 2)
        drift = drift + np.interp(t, np.linspace(0, t[-1] + 1e-3, k), rng.normal(0, singer["jitter"], k))
    freq = (f0_start * glide + f0 * (1 - glide)) * 2 ** ((cents + drift) / 1200)
    exc_v = _glottal(freq, rate, singer["oq"])
    exc_u = rng.standard_normal(n)
    out = np.zeros(n)
    zi = np.zeros(order)
    breath = rng.uniform(*singer["breath"])
    for k, i in enumerate(mapping):
        s = slice(k * hop, (k + 1) * hop)
        v = voiced[i]
        e = (v * (exc_v[s] + breath * exc_u[s]) + (1 - v) * exc_u[s]) * gain[i]
        out[s], zi = lfilter([1.0], a[i], e, zi=zi)
    out = lfilter([1.0], [1.0, -0.95], out)
    env = np.minimum(1.0, np.minimum(np.arange(n) / (0.01 * rate), (n - np.arange(n)) / (0.03 * rate)))
    return (out * env).astype(np.float32), head * hop


def render_voice(part, n, rng, gen=1):
    """A sung line. Generation 1: espeak-ng voices at 22.05 kHz. Generation 2 also sings with Festival's HTS voice
    at 32 kHz (two vocal parts in three), a vocal tract scaled per singer (male or female) and its own voice quality."""
    female = part.style.get("female", False)
    if gen >= 3:
        style = rng.random()
        if style < 0.6:  # a real speaker, sung by PSOLA
            line, source = voices.sung_line(part.notes, n, SR, rng, VOICE_SPLIT, female)
            return _voice_out(line, voices.RATE, n), f"real-sung:{source}"
        if style < 0.75:  # a real speaker, rhythmic speech on the groove
            line, source = voices.spoken_line(part.style.get("bpm", 100.0), n, SR, rng, VOICE_SPLIT)
            return _voice_out(line, voices.RATE, n), f"real-spoken:{source}"
    hts = gen >= 3 or (gen >= 2 and rng.random() < 0.65)  # generation 3: no espeak-ng (GPL-3)
    if hts:
        rate, singer = HTS_RATE, {"oq": rng.uniform(0.4, 0.75), "breath": (0.05, 0.35), "jitter": rng.uniform(2, 10)}
        tract = rng.uniform(0.95, 1.1) if female else rng.uniform(0.72, 0.86)
        frames_of = lambda word: _hts_frames(word, round(tract, 2))
    else:
        rate, singer = VSR, ESPEAK_SINGER
        voice = str(rng.choice(ESPEAK_VOICES_F if female else ESPEAK_VOICES_M))
        speed = int(rng.integers(90, 170))
        frames_of = lambda word: _lpc_frames(voice, word, speed)
    words = [str(w) for w in rng.choice(SYLLABLES, size=8)]  # a small 'lyric' vocabulary per song
    out = np.zeros(int(n * rate / SR) + rate, np.float32)
    prev = None
    for start, dur, pitch, vel in part.notes:
        f0 = 440.0 * 2 ** ((pitch - 69) / 12)
        f0_start = prev if prev is not None and rng.random() < 0.7 else f0
        try:
            y, lead_in = _sing_note(frames_of(words[rng.integers(len(words))]), f0_start, f0, dur, rng, rate, singer)
        except (subprocess.CalledProcessError, ValueError, np.linalg.LinAlgError):
            continue
        i = max(0, int(start * rate) - lead_in)
        if i >= len(out):
            continue
        y = y[: len(out) - i] * (vel / 127.0)
        out[i: i + len(y)] += y
        prev = f0
    return _voice_out(out, rate, n), "hts-lpc" if hts else "espeak-lpc"


def _voice_out(out, rate, n):
    """A mono line at `rate` → stereo [2, n] at SR, peak 0.5."""
    peak = np.abs(out).max()
    if peak > 0:
        out = out / peak * 0.5
    mono = resample_poly(out, SR, rate).astype(np.float32)[:n]
    mono = np.pad(mono, (0, n - len(mono)))
    return np.stack([mono, mono])


# ---------------------------------------------------------------- dispatch
def render_part(part, n, rng, tmpdir, tag, gen=1):
    """Audio [2, n] for one part plus a short description of the source used (gen: the renderer generation)."""
    if part.kind == "drums":
        return render_drums(part, n, rng, tmpdir, tag, gen)
    if part.kind == "voice":
        return render_voice(part, n, rng, gen)
    if part.kind == "synth":
        return synth_lead(part, n, rng)
    font = SOUNDFONTS[int(rng.random() < 0.45)]
    if part.style.get("lead"):
        bends = lead_bends(part.notes, rng, part.style.get("slides", False))
    else:
        bends = vibrato_bends(part.notes, rng) if part.style.get("vibrato") else []
    track = Track(0, part.program, 0, part.notes, bends)
    return fluid_render([track], font, n, tmpdir, tag), f"{os.path.basename(font)}:{part.program}"
