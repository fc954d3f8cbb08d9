"""Random but musically plausible arrangements: harmony, grooves, bass lines, guitar, piano, other parts, melodies.

Everything is expressed in seconds and MIDI pitches; `instruments.py` turns it into audio.
"""
from dataclasses import dataclass, field
import numpy as np

MAJOR = [0, 2, 4, 5, 7, 9, 11]
MINOR = [0, 2, 3, 5, 7, 8, 10]
DORIAN = [0, 2, 3, 5, 7, 9, 10]
MIXOLYDIAN = [0, 2, 4, 5, 7, 9, 10]
# Scale degrees (0-based) of common progressions.
PROGRESSIONS = [
    [0, 4, 5, 3], [0, 5, 3, 4], [5, 3, 0, 4], [0, 3, 4, 4], [1, 4, 0, 0], [0, 3, 0, 4],
    [0, 6, 5, 4], [0, 0, 3, 3], [0, 2, 3, 4], [3, 4, 0, 5], [0, 5, 1, 4], [0, 3, 5, 4],
    [0, 4, 3, 3], [5, 4, 3, 4], [0, 1, 2, 3], [0, 6, 3, 0],
]

STEMS = ["vocals", "drums", "bass", "other", "guitar", "piano"]


@dataclass
class Chord:
    start: float
    dur: float
    pitches: list  # pitch classes as offsets from C, root first (may exceed 12)


@dataclass
class Part:
    """One instrument line. kind: 'fluid' (soundfont program), 'drums' (hits by role), 'voice' (sung syllables)."""
    kind: str
    program: int = 0
    notes: list = field(default_factory=list)   # (start, dur, pitch, vel); drums: (start, role, vel)
    bends: list = field(default_factory=list)
    style: dict = field(default_factory=dict)


@dataclass
class Song:
    bpm: float
    duration: float
    key: int
    scale: list
    chords: list
    stems: dict  # stem name -> list[Part]


def _chords(rng, key, scale, bar, n_bars):
    prog = PROGRESSIONS[rng.integers(len(PROGRESSIONS))]
    per_bar = rng.choice([1, 1, 1, 2]) if len(prog) == 4 else 1
    sevenths = rng.random() < 0.3
    chords, t, i = [], 0.0, 0
    step = bar / per_bar
    while t < n_bars * bar - 1e-6:
        deg = prog[i % len(prog)]
        tones = [scale[(deg + k) % 7] + 12 * ((deg + k) // 7) for k in ((0, 2, 4, 6) if sevenths else (0, 2, 4))]
        chords.append(Chord(t, step, [key + p for p in tones]))
        t += step
        i += 1
    return chords


def _chord_at(chords, t):
    for c in chords:
        if c.start <= t < c.start + c.dur:
            return c
    return chords[-1]


def _humanize(rng, t, amount=0.008):
    return max(0.0, t + rng.normal(0, amount))


# ---------------------------------------------------------------- drums
GROOVES = {  # 16 steps per bar: kick, snare, hat (1 = hit, 2 = accent / open)
    "rock":      ("1000000010100000", "0000100000001000", "1010101010101010"),
    "pop":       ("1000001010000000", "0000100000001000", "1010101010101010"),
    "four":      ("1000100010001000", "0000100000001000", "0020002000200020"),
    "halftime":  ("1000000000100000", "0000000010000000", "1010101010101010"),
    "funk":      ("1000000100100100", "0000100100001000", "1111111111111111"),
    "hiphop":    ("1000001000100000", "0000100000001001", "1010101010101010"),
    "ballad":    ("1000000010000000", "0000100000001000", "1000100010001000"),
    "disco":     ("1000100010001000", "0000100000001000", "1212121212121212"),
    "punk":      ("1010101010101010", "0000100000001000", "1010101010101010"),
    "reggae":    ("0000000010000000", "0000000010000000", "0010001000100010"),
}


def drum_part(rng, bpm, n_bars):
    name = list(GROOVES)[rng.integers(len(GROOVES))]
    kick, snare, hat = GROOVES[name]
    step = 60.0 / bpm / 4
    swing = rng.choice([0.0, 0.0, 0.0, 0.15, 0.3])
    ride = rng.random() < 0.25
    hits = []
    for b in range(n_bars):
        fill = (b % 4 == 3) and rng.random() < 0.5
        for s in range(16):
            t = (b * 16 + s) * step + (swing * step if s % 2 else 0.0)
            if fill and s >= 8:
                if rng.random() < 0.7:
                    role = ["tom_hi", "tom_mid", "tom_lo", "snare"][min(3, (s - 8) // 2 + rng.integers(0, 2))]
                    hits.append((_humanize(rng, t), role, rng.integers(70, 120)))
                continue
            if kick[s] != "0" and rng.random() < 0.95:
                hits.append((_humanize(rng, t), "kick", rng.integers(90, 127)))
            elif s % 2 == 1 and rng.random() < 0.04:
                hits.append((_humanize(rng, t), "kick", rng.integers(60, 100)))
            if snare[s] != "0" and rng.random() < 0.97:
                hits.append((_humanize(rng, t), "clap" if name in ("four", "disco") and rng.random() < 0.4 else "snare",
                             rng.integers(95, 127)))
            elif name == "funk" and rng.random() < 0.15:
                hits.append((_humanize(rng, t), "snare", rng.integers(25, 50)))  # ghost note
            if hat[s] != "0" and rng.random() < 0.93:
                role = "ride" if ride else ("hat_open" if hat[s] == "2" else "hat_closed")
                vel = rng.integers(80, 115) if s % 4 == 0 else rng.integers(45, 90)
                hits.append((_humanize(rng, t, 0.005), role, vel))
        if b % 4 == 0 and rng.random() < 0.6:
            hits.append((b * 16 * step, "crash", rng.integers(90, 127)))
    if rng.random() < 0.3:  # shaker / tambourine layer
        for b in range(n_bars):
            for s in range(0, 16, 2):
                hits.append((_humanize(rng, (b * 16 + s + 1) * step), "perc", rng.integers(40, 80)))
    return Part("drums", notes=hits, style={"groove": name})


# ---------------------------------------------------------------- bass
def bass_part(rng, song_chords, bpm, n_bars, key, scale, drum_hits):
    beat = 60.0 / bpm
    program = int(rng.choice([32, 33, 33, 34, 34, 35, 36, 37, 38, 39]))
    mode = rng.choice(["whole", "eighths", "root5", "kick", "walk", "octave", "syncop"])
    kicks = sorted(t for t, role, _ in drum_hits if role == "kick")
    notes = []
    low = 28 + rng.integers(0, 6)

    def root(c):
        return low + (c.pitches[0] - low) % 12

    if mode == "kick" and kicks:
        for i, t in enumerate(kicks):
            nxt = kicks[i + 1] if i + 1 < len(kicks) else t + beat
            notes.append((t, min(nxt - t, beat) * 0.9, root(_chord_at(song_chords, t + 0.01)), rng.integers(85, 120)))
    else:
        for c in song_chords:
            r = root(c)
            fifth = r + 7
            n_beats = max(1, int(round(c.dur / beat)))
            if mode == "whole":
                notes.append((c.start, c.dur * 0.95, r, rng.integers(90, 120)))
            elif mode in ("eighths", "octave"):
                for k in range(n_beats * 2):
                    p = r + (12 if mode == "octave" and k % 2 else 0)
                    notes.append((_humanize(rng, c.start + k * beat / 2), beat / 2 * 0.85, p, rng.integers(80, 120)))
            elif mode == "root5":
                for k in range(n_beats):
                    notes.append((_humanize(rng, c.start + k * beat), beat * 0.8, [r, fifth, r + 12, fifth][k % 4], rng.integers(85, 120)))
            elif mode == "walk":
                tones = [r, r + (c.pitches[1] - c.pitches[0]), fifth, r + 12]
                for k in range(n_beats):
                    p = tones[k % 4] if k < n_beats - 1 else r + rng.choice([-1, 1, 2, -2])
                    notes.append((_humanize(rng, c.start + k * beat), beat * 0.9, p, rng.integers(85, 115)))
            else:  # syncopated 16ths
                pattern = rng.choice(["1001001000101000", "1000101000100010", "1010001010000010"])
                for s, ch in enumerate(pattern[: n_beats * 4]):
                    if ch == "1":
                        p = r + (12 if rng.random() < 0.2 else 0) + (7 if rng.random() < 0.15 else 0)
                        notes.append((_humanize(rng, c.start + s * beat / 4), beat / 4 * 1.6, p, rng.integers(80, 125)))
    return Part("fluid", program, notes, style={"mode": str(mode)})


# ---------------------------------------------------------------- voicings
def voicing(chord, low, high, rng, n=4):
    pcs = sorted({p % 12 for p in chord.pitches})
    out, p = [], low + (chord.pitches[0] - low) % 12
    i = 0
    while len(out) < n and p <= high:
        out.append(p)
        nxt = pcs[(pcs.index(p % 12) + 1 + (rng.random() < 0.2)) % len(pcs)]
        p = p + ((nxt - p) % 12 or 12)
        i += 1
    return out or [low + (chord.pitches[0] - low) % 12]


def guitar_part(rng, chords, bpm):
    beat = 60.0 / bpm
    mode = rng.choice(["strum", "strum", "power", "arp", "riff", "chop"])
    if mode == "power":
        program = int(rng.choice([29, 30, 30, 28, 27]))
    elif mode == "arp":
        program = int(rng.choice([24, 25, 26, 27]))
    else:
        program = int(rng.choice([24, 25, 25, 26, 27, 27, 28, 29, 30]))
    notes = []
    for c in chords:
        n8 = max(1, int(round(c.dur / (beat / 2))))
        if mode in ("strum", "chop"):
            v = voicing(c, 40, 72, rng, n=rng.integers(4, 7))
            pat = rng.choice(["D0DU0UDU", "D0D0D0D0", "D00U0UD0", "DDUUDDUU", "0D0D0D0D"]) if mode == "strum" else "0D0D0D0D"
            for k in range(n8):
                s = pat[k % 8]
                if s == "0":
                    continue
                t0 = c.start + k * beat / 2
                strings = v if s == "D" else list(reversed(v))[: max(2, len(v) - 2)]
                spread = rng.uniform(0.006, 0.02)
                length = beat / 2 * (0.3 if mode == "chop" else rng.uniform(0.8, 2.0))
                vel = rng.integers(70, 110) if s == "D" else rng.integers(50, 90)
                for j, p in enumerate(strings):
                    notes.append((_humanize(rng, t0 + j * spread, 0.004), length, p, vel))
        elif mode == "power":
            r = 40 + (c.pitches[0] - 40) % 12
            pal = rng.random() < 0.6
            for k in range(n8):
                for p in (r, r + 7, r + 12):
                    notes.append((_humanize(rng, c.start + k * beat / 2, 0.004), beat / 2 * (0.5 if pal else 0.95), p, rng.integers(85, 120)))
        elif mode == "arp":
            v = voicing(c, 45, 76, rng, n=4)
            order = rng.choice(["up", "updown", "alt"])
            for k in range(n8):
                idx = k % len(v) if order == "up" else (k % (2 * len(v) - 2) if len(v) > 2 else k % len(v))
                if order == "updown" and idx >= len(v):
                    idx = 2 * len(v) - 2 - idx
                if order == "alt":
                    idx = 0 if k % 2 == 0 else 1 + (k // 2) % (len(v) - 1 or 1)
                notes.append((_humanize(rng, c.start + k * beat / 2), beat * rng.uniform(0.6, 1.5), v[min(idx, len(v) - 1)], rng.integers(65, 105)))
        else:  # pentatonic riff on 16ths
            r = 52 + (c.pitches[0] - 52) % 12
            penta = [0, 3, 5, 7, 10, 12]
            for s in range(n8 * 2):
                if rng.random() < 0.55:
                    notes.append((_humanize(rng, c.start + s * beat / 4), beat / 4 * 0.9, r + int(rng.choice(penta)), rng.integers(75, 115)))
    return Part("fluid", program, notes, style={"mode": str(mode), "distort": program in (29, 30) or (mode in ("power", "riff") and rng.random() < 0.6)})


def piano_part(rng, chords, bpm):
    beat = 60.0 / bpm
    program = int(rng.choice([0, 0, 0, 1, 2, 3, 4, 4, 5, 6, 7]))
    mode = rng.choice(["block", "comp", "arp", "ballad", "stabs"])
    notes = []
    for c in chords:
        nb = max(1, int(round(c.dur / beat)))
        v = voicing(c, 55 + rng.integers(-5, 6), 84, rng, n=rng.integers(3, 5))
        bassnote = 36 + (c.pitches[0] - 36) % 12
        if mode == "block":
            for p in v:
                notes.append((_humanize(rng, c.start, 0.005), c.dur * 0.95, p, rng.integers(60, 95)))
        elif mode == "comp":
            for k in range(nb * 2):
                if rng.random() < 0.45:
                    for p in v:
                        notes.append((_humanize(rng, c.start + k * beat / 2, 0.005), beat / 2 * rng.uniform(0.4, 1.2), p, rng.integers(55, 100)))
        elif mode == "arp":
            seq = [bassnote, bassnote + 7] + v
            for k in range(nb * 2):
                notes.append((_humanize(rng, c.start + k * beat / 2), beat * 1.2, seq[k % len(seq)], rng.integers(55, 95)))
        elif mode == "ballad":
            notes.append((c.start, c.dur, bassnote, rng.integers(60, 90)))
            notes.append((c.start, c.dur, bassnote + 12, rng.integers(50, 80)))
            for k in range(nb):
                for p in v:
                    notes.append((_humanize(rng, c.start + k * beat, 0.006), beat * 0.95, p, rng.integers(45, 80)))
        else:
            for k in range(nb):
                if k % 2 == 1:
                    for p in v:
                        notes.append((_humanize(rng, c.start + k * beat, 0.004), beat * 0.3, p, rng.integers(70, 110)))
    return Part("fluid", program, notes, style={"mode": str(mode)})


OTHER_PROGRAMS = {
    "pad": [48, 49, 50, 51, 88, 89, 90, 91, 92, 94, 95],
    "organ": [16, 17, 18, 19],
    "brass": [56, 57, 60, 61, 62, 63],
    "lead": [80, 81, 82, 84, 87, 73, 71, 65, 66, 40, 41, 22],
    "bells": [8, 9, 10, 11, 12, 13, 14, 46],
    "synth": [81, 83, 86, 98, 99, 100, 102],
}


def other_part(rng, chords, bpm, key, scale, melodic=True):
    """A pad, organ, brass/synth stabs, bells or (if `melodic`) a lead melody on one of OTHER_PROGRAMS.
    The leakage set passes melodic=False so its only melody is a held-out lead."""
    beat = 60.0 / bpm
    kind = rng.choice([k for k in OTHER_PROGRAMS if melodic or k != "lead"])
    program = int(rng.choice(OTHER_PROGRAMS[kind]))
    notes = []
    if kind in ("pad", "organ"):
        for c in chords:
            for p in voicing(c, 52, 79, rng, n=rng.integers(3, 5)):
                notes.append((c.start, c.dur * 1.0, p, rng.integers(50, 90)))
    elif kind in ("brass", "synth"):
        for c in chords:
            nb = max(1, int(round(c.dur / beat)))
            for k in range(nb * 2):
                if rng.random() < 0.3:
                    for p in voicing(c, 55, 79, rng, n=3):
                        notes.append((_humanize(rng, c.start + k * beat / 2), beat * rng.uniform(0.2, 0.7), p, rng.integers(70, 110)))
    else:
        notes = melody_notes(rng, chords, bpm, key, scale, 62 if kind == "lead" else 72, 84 if kind == "lead" else 96, density=0.6)
    return Part("fluid", program, notes, style={"kind": str(kind)})


# ---------------------------------------------------------------- melody / vocals
def melody_notes(rng, chords, bpm, key, scale, low, high, density=0.75):
    beat = 60.0 / bpm
    total = chords[-1].start + chords[-1].dur
    notes, t = [], 0.0
    pitch = low + (high - low) // 2
    step_choices = [0.5, 0.5, 1.0, 1.0, 1.0, 1.5, 2.0] if bpm > 110 else [0.25, 0.5, 0.5, 0.5, 1.0, 1.0, 1.5, 2.0]
    scale_pcs = [(key + s) % 12 for s in scale]
    phrase_left = rng.integers(4, 10)
    while t < total - beat * 0.5:
        d = float(rng.choice(step_choices)) * beat
        if phrase_left == 0:  # breath between phrases
            t += beat * float(rng.choice([1, 2, 2, 3, 4]))
            phrase_left = rng.integers(4, 12)
            continue
        c = _chord_at(chords, t)
        on_beat = abs(t / beat - round(t / beat)) < 1e-3
        if on_beat and rng.random() < 0.7:
            targets = [p for p in range(low, high + 1) if p % 12 in {q % 12 for q in c.pitches}]
        else:
            targets = [p for p in range(low, high + 1) if p % 12 in scale_pcs]
        near = sorted(targets, key=lambda p: abs(p - pitch) + rng.random() * 3)
        pitch = near[min(len(near) - 1, int(rng.integers(0, 3)))] if near else pitch
        if rng.random() < density:
            notes.append((t, d * rng.uniform(0.75, 1.0), pitch, rng.integers(70, 115)))
        t += d
        phrase_left -= 1
    return notes


VOCAL_PATCHES = [52, 53, 54, 85]  # choir aahs, voice oohs, synth voice, lead 6 (voice)
# Generation 4 sings patches only with sampled voices: "synth voice" and the "voice" synth lead taught that a
# synth lead is a singer, the confusion round 3 removes.
VOCAL_PATCHES_GEN4 = [52, 53]


def vocal_parts(rng, chords, bpm, key, scale, gen=3):
    female = rng.random() < 0.5
    low, high = (57, 76) if female else (45, 66)
    lead = melody_notes(rng, chords, bpm, key, scale, low, high, density=0.85)
    method = rng.choice(["speech", "speech", "speech", "patch"])
    parts = []
    if method == "speech":
        parts.append(Part("voice", notes=lead, style={"female": female, "bpm": bpm}))
    else:
        patches = VOCAL_PATCHES_GEN4 if gen >= 4 else VOCAL_PATCHES
        parts.append(Part("fluid", int(rng.choice(patches)), lead, style={"vibrato": True}))
    if rng.random() < 0.3:  # backing harmony a third/sixth away, or 'oohs' on chord tones
        if rng.random() < 0.5:
            harm = []
            for (t, d, p, v) in lead:
                c = _chord_at(chords, t)
                cands = [q for q in range(p + 2, p + 10) if q % 12 in {x % 12 for x in c.pitches}]
                if cands:
                    harm.append((t, d, cands[0], int(v * 0.7)))
            parts.append(Part("voice", notes=harm, style={"female": not female if rng.random() < 0.5 else female, "gain": 0.5}))
        else:
            oohs = [(c.start, c.dur, p, 60) for c in chords for p in voicing(c, 55, 72, rng, n=3)]
            parts.append(Part("fluid", int(rng.choice([52, 53])), oohs, style={"vibrato": True, "gain": 0.4}))
    return parts


# ---------------------------------------------------------------- voice-like leads (generation 4)
# Lead lines and solos on instruments that sing: they belong to `other`, and a model that has only heard melodies
# sung learns "lead melody = voice". GM programs, played from the two MIT soundfonts. The held-out programs
# (and the synthesised lead of instruments.synth_lead) are never in a training song: the leakage set `valid4lead`
# (render.py --leads held-out) plays only them.
LEAD_PROGRAMS = {
    "train": {"strings": [40, 41, 42, 44], "flutes": [72, 73, 74, 75, 79], "reeds": [65, 66, 68, 71],
              "brass": [56, 57, 59, 60], "whistle": [78], "synth": [80, 81, 82, 83, 84, 86, 87]},
    "held-out": {"strings": [110], "flutes": [77, 76], "reeds": [64, 67, 69, 70], "brass": [58],
                 "synth": ["synth"]},  # fiddle; shakuhachi, blown bottle; soprano/baritone sax, cor anglais, bassoon; tuba
}
LEAD_RANGE = {"strings": (55, 88), "flutes": (67, 93), "reeds": (50, 79), "brass": (52, 77), "whistle": (72, 96),
              "synth": (55, 86)}


def lead_part(rng, chords, bpm, key, scale, split="train"):
    """A singing melody (legato, phrased like a vocal line, vibrato and slides) on a voice-like instrument."""
    family = str(rng.choice(list(LEAD_PROGRAMS[split])))
    program = rng.choice(LEAD_PROGRAMS[split][family])
    low, high = LEAD_RANGE[family]
    if program == 42 or program == 70 or program == 67 or program == 58:  # cello, bassoon, baritone sax, tuba: lower
        low, high = low - 12, high - 12
    span = int(rng.integers(14, 22))
    low = int(rng.integers(low, max(low + 1, high - span)))
    notes = melody_notes(rng, chords, bpm, key, scale, low, low + span, density=float(rng.uniform(0.75, 0.95)))
    legato = [(t, d * rng.uniform(1.0, 1.25), p, v) for t, d, p, v in notes]
    kind = "synth" if program == "synth" else "fluid"
    return Part(kind, 0 if kind == "synth" else int(program), legato,
                style={"vibrato": True, "slides": rng.random() < 0.5, "lead": family, "gain": float(rng.uniform(0.8, 1.6))})


# ---------------------------------------------------------------- song
PRESENCE = {"vocals": 0.9, "drums": 0.93, "bass": 0.93, "other": 0.7, "guitar": 0.65, "piano": 0.6}
INSTRUMENTAL_GEN4 = 0.3  # generation 4: songs with no vocals at all (silence in the vocal stem is learned too)
LEAD_GEN4 = (0.45, 0.85)  # generation 4: chance of a voice-like lead in `other` with vocals / in an instrumental


def make_song(rng, duration, gen=3, leads="train", instrumental=False):
    """Generation 4 (gen >= 4): 30 % instrumentals, voice-like leads in `other` (`leads` picks the programs),
    sampled-voice patches only for vocals. `instrumental` forces no vocals (the leakage set)."""
    bpm = float(rng.uniform(68, 170))
    key = int(rng.integers(0, 12))
    scale = [MAJOR, MAJOR, MINOR, MINOR, DORIAN, MIXOLYDIAN][rng.integers(6)]
    bar = 4 * 60.0 / bpm
    n_bars = int(np.ceil((duration + 1.0) / bar))
    chords = _chords(rng, key, scale, bar, n_bars)
    present = {s: rng.random() < p for s, p in PRESENCE.items()}
    lead_draw, no_voice_draw = (rng.random(), rng.random()) if gen >= 4 else (1.0, 1.0)
    if instrumental or no_voice_draw < INSTRUMENTAL_GEN4:
        present["vocals"] = False
    if not any(present[s] for s in ("other", "guitar", "piano")):
        present[rng.choice(["other", "guitar", "piano"])] = True
    stems = {s: [] for s in STEMS}
    drums = drum_part(rng, bpm, n_bars)
    if present["drums"]:
        stems["drums"].append(drums)
    if present["bass"]:
        stems["bass"].append(bass_part(rng, chords, bpm, n_bars, key, scale, drums.notes))
    if present["guitar"]:
        stems["guitar"].append(guitar_part(rng, chords, bpm))
        if rng.random() < 0.3:
            stems["guitar"].append(guitar_part(rng, chords, bpm))
    if present["piano"]:
        stems["piano"].append(piano_part(rng, chords, bpm))
    if present["other"]:
        melodic = leads == "train"
        stems["other"].append(other_part(rng, chords, bpm, key, scale, melodic))
        if rng.random() < 0.35:
            stems["other"].append(other_part(rng, chords, bpm, key, scale, melodic))
    if lead_draw < LEAD_GEN4[0 if present["vocals"] else 1] or instrumental:
        stems["other"].append(lead_part(rng, chords, bpm, key, scale, leads))
    if present["vocals"]:
        stems["vocals"].extend(vocal_parts(rng, chords, bpm, key, scale, gen))
    _sections(rng, stems, bar, n_bars)
    return Song(bpm, duration, key, scale, chords, stems)


def _sections(rng, stems, bar, n_bars):
    """Mutes some parts for whole 2- or 4-bar blocks, as arrangements build up and break down."""
    for name, parts in stems.items():
        for part in parts:
            if rng.random() < (0.5 if name == "vocals" else 0.25):
                block = int(rng.choice([2, 4]))
                muted = {b for b in range(0, n_bars, block) if rng.random() < 0.35}
                part.notes = [n for n in part.notes if int(n[0] // (bar * block)) * block not in muted]
