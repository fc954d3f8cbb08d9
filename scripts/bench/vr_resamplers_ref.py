"""Reference outputs of the resamplers UVR's VR params reach, from the libraries themselves, for
scripts/bench/vr-resamplers.ts to compare stemsplit's resamplers with.

Runs outside the project: librosa 0.11.0 (its `resample` dispatch), python-soxr 1.1.0, resampy
0.4.3 and libsamplerate (python-samplerate 0.1.0's `resample()` over ctypes, as the VR fixtures
do) must be importable. Writes, into OUT_DIR, each case's input and librosa.resample output as
raw little-endian float64, and manifest.json; with --sines, also the sine figures
test/data/vr-resampler-sines.json holds (SNR against the ideal sine over the interior and both
50 ms edges).

    python3 scripts/bench/vr_resamplers_ref.py OUT_DIR [--sines FILE]
"""
import json
import sys

import librosa
import numpy as np

# (res_type, from, to, dtype): what loading_mix and the separator's last resample call for the
# params not at 44.1 kHz (the top band on loading, lower bands, and soxr back to 44.1 kHz).
CASES = [
    ('sinc_best', 44100, 16000, 'float32'),
    ('sinc_best', 44100, 33075, 'float32'),
    ('kaiser_fast', 44100, 32000, 'float32'),
    ('sinc_medium', 44100, 32000, 'float32'),
    ('sinc_medium', 44100, 48000, 'float32'),
    ('sinc_fastest', 32000, 6000, 'float32'),
    ('sinc_fastest', 48000, 6000, 'float32'),
    ('sinc_fastest', 6000, 32000, 'float64'),
    ('sinc_fastest', 6000, 48000, 'float64'),
    ('soxr_hq', 16000, 44100, 'float64'),
    ('soxr_hq', 32000, 44100, 'float64'),
    ('soxr_hq', 33075, 44100, 'float64'),
    ('soxr_hq', 48000, 44100, 'float64'),
]

SECONDS = 1.5


def music_like(rate, seconds, seed):
    """Seeded partials, a decaying noise burst every 0.25 s and a quiet stretch, peak about 0.5."""
    rng = np.random.default_rng(seed)
    n = int(rate * seconds)
    t = np.arange(n) / rate
    x = np.zeros(n)
    for _ in range(24):
        f = rng.uniform(30, 0.48 * rate)
        x += rng.uniform(0.01, 0.08) * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
    noise = rng.standard_normal(n)
    env = np.exp(-((t % 0.25) * 30))
    x += 0.2 * env * noise
    x[(t > 0.6) & (t < 0.8)] *= 0.01
    return 0.5 * x / np.max(np.abs(x))


def sine(rate, seconds, frequency):
    n = int(rate * seconds)
    return 0.5 * np.sin(2 * np.pi * frequency * np.arange(n) / rate)


def sine_frequency(rate_from, rate_to):
    return round(0.3 * min(rate_from, rate_to) / 2, 1)


def snr(ideal, out, a, b):
    noise = np.sum((ideal[a:b] - out[a:b]) ** 2)
    return float(10 * np.log10(np.sum(ideal[a:b] ** 2) / noise))


def main():
    out_dir = sys.argv[1]
    sines_path = sys.argv[sys.argv.index('--sines') + 1] if '--sines' in sys.argv else None
    manifest, sines = [], {}
    for i, (res_type, rate_from, rate_to, dtype) in enumerate(CASES):
        f = sine_frequency(rate_from, rate_to)
        for signal, x in (('music', music_like(rate_from, SECONDS, 1000 + i)), ('sine', sine(rate_from, SECONDS, f))):
            x = x.astype(dtype)
            y = librosa.resample(x, orig_sr=rate_from, target_sr=rate_to, res_type=res_type)
            name = f'{res_type}_{rate_from}_{rate_to}_{signal}'
            x.astype('<f8').tofile(f'{out_dir}/{name}.in.f64')
            y.astype('<f8').tofile(f'{out_dir}/{name}.out.f64')
            manifest.append({'name': name, 'resType': res_type, 'from': rate_from, 'to': rate_to, 'dtype': dtype,
                             'signal': signal, 'inLength': len(x), 'outLength': len(y)})
            if signal == 'sine':
                ideal = 0.5 * np.sin(2 * np.pi * f * np.arange(len(y)) / rate_to)
                edge = round(0.05 * rate_to)
                sines[f'{rate_from}->{rate_to} {f}Hz {res_type} {dtype}'] = {
                    'seconds': SECONDS, 'out_frames': len(y),
                    'interior_snr_db': round(snr(ideal, y, edge, len(y) - edge), 2),
                    'first_50ms_snr_db': round(snr(ideal, y, 0, edge), 2),
                    'last_50ms_snr_db': round(snr(ideal, y, len(y) - edge, len(y)), 2),
                }
    with open(f'{out_dir}/manifest.json', 'w') as fh:
        json.dump(manifest, fh, indent=1)
    if sines_path is not None:
        with open(sines_path, 'w') as fh:
            json.dump({'source': 'scripts/bench/vr_resamplers_ref.py (librosa 0.11.0 resample; python-soxr 1.1.0; resampy 0.4.3; libsamplerate 0.2.2)',
                       'sines': sines}, fh, indent=1)
            fh.write('\n')
    print(f'{len(manifest)} cases in {out_dir}')


if __name__ == '__main__':
    main()
