"""Renders a data set of short multitrack songs: one float16 .npy [6 stems, 2, samples] per song.

    nice -n 10 /usr/bin/python3 scripts/train/render.py --out scripts/train/data/train --first 0 --count 400
    nice -n 10 /usr/bin/python3 scripts/train/render.py --out scripts/train/data/valid --first 1000000 --count 40

Song k is fully determined by seed k and the generation (same packages, same output), so sets are reproducible
and train/valid never share a song. Generation 1 (`--gen 1`) is what run small1 trained on first; generation 2
also sings with Festival's HTS voice, overdrives some basses and echoes some vocals. Generation 3 (the default)
adds real recorded speakers (voices.py): sung by PSOLA in 60 % of vocal parts, rhythmic speech in 15 %. Generation 4
(the default) adds voice-like leads in `other` and instrumentals (music.make_song). Stem order: music.STEMS.
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np

import instruments
import music
import production

SR = instruments.SR


def render_song(seed, duration, tmpdir, gen=1, leads="train", instrumental=False):
    rng = np.random.default_rng(seed)
    song = music.make_song(rng, duration, gen, leads, instrumental)
    n = int(duration * SR)
    n_render = n + SR  # let notes ring past the cut
    room = production.reverb_ir(rng)
    stems, sources = {}, {}
    for stem in music.STEMS:
        acc = np.zeros((2, n_render))
        for i, part in enumerate(song.stems[stem]):
            audio, src = instruments.render_part(part, n_render, rng, tmpdir, f"{seed}_{stem}_{i}", gen)
            if production.rms(audio) < 1e-6:
                continue
            audio = production.produce_part(audio / production.rms(audio) * 0.1, rng, stem, part.style.get("distort", False), gen)
            acc += audio * part.style.get("gain", 1.0)
            sources.setdefault(stem, []).append(src)
        lead = any(part.style.get("lead") for part in song.stems[stem])
        level = production.LEAD_LEVEL_DB if lead else None
        stems[stem] = production.produce_stem(acc, rng, stem, room, level)[:, :n]
    stems = production.master(stems, rng)
    meta = {"seed": seed, "gen": gen, "bpm": round(song.bpm, 1), "key": song.key, "sources": sources}
    return np.stack([stems[s] for s in music.STEMS]).astype(np.float16), meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--duration", type=float, default=12.0)
    ap.add_argument("--gen", type=int, default=4, choices=[1, 2, 3, 4],
                    help="renderer generation: 1 sings with espeak-ng only; 2 adds Festival's HTS voice; "
                         "3 adds real recorded speakers, sung by PSOLA or spoken on the groove; "
                         "4 adds voice-like leads (strings, flutes, reeds, brass, whistle, synth) in `other` "
                         "and 30 %% instrumentals")
    ap.add_argument("--leads", default="train", choices=["train", "held-out"],
                    help="generation 4: which lead programs (music.LEAD_PROGRAMS); held-out ones never appear in training")
    ap.add_argument("--instrumental", action="store_true",
                    help="no vocals in any song, always a voice-like lead (the leakage set valid4lead)")
    ap.add_argument("--voices", default="train", choices=["train", "held-out"],
                    help="generation 3: which real speakers (voices.SOURCES split); held-out ones never appear in training")
    args = ap.parse_args()
    instruments.VOICE_SPLIT = args.voices
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first, args.first + args.count):
            path = os.path.join(args.out, f"song{seed:07d}.npy")
            if os.path.exists(path):
                continue  # resumable
            t0 = time.time()
            audio, meta = render_song(seed, args.duration, tmp, args.gen, args.leads, args.instrumental)
            np.save(path + ".tmp.npy", audio)
            os.replace(path + ".tmp.npy", path)
            with open(os.path.join(args.out, f"song{seed:07d}.json"), "w") as f:
                json.dump(meta, f)
            print(f"seed {seed}: {time.time() - t0:.1f}s {meta['sources']}", flush=True)


if __name__ == "__main__":
    main()
