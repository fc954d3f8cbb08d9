"""demucs' own separation of one input, in float32 or float64, for scripts/precision/table.ts.

Runs the official code from a checkout outside the project (--demucs-src, e.g. a clone in /tmp) as
demucs.api.Separator.separate_tensor does (normalised by the mono mix, apply_model with shifts 0,
split, overlap 0.25, de-normalised), with --dtype float64 as the exact answer: the model cast to
double and torch's default dtype float64. Writes the stems [sources, channels, samples] as
little-endian float64 (--dtype float64) or float32.

Needs torch and numpy (Debian: python3-torch). The few imports demucs makes of packages that
separation does not use (julius, openunmix, omegaconf, dora, tqdm) get empty stand-ins when
missing; einops' `rearrange` gets one for the patterns HTDemucs uses (plain reshapes and permutes).
"""
import argparse
import subprocess
import sys
import types
import warnings

import numpy as np


def stand_ins():
    """Modules demucs imports but separation never calls (and einops' rearrange), where missing."""
    def missing(name):
        try:
            __import__(name)
            return False
        except ImportError:
            return True

    def module(name, **attributes):
        m = types.ModuleType(name)
        m.__dict__.update(attributes)
        sys.modules[name] = m
        return m

    def unused(*_args, **_kwargs):
        raise NotImplementedError('not used by separation')

    if missing('julius'):
        module('julius', resample_frac=unused)
    if missing('openunmix'):
        module('openunmix')
        module('openunmix.filtering', wiener=unused)
    if missing('omegaconf'):
        module('omegaconf', OmegaConf=type('OmegaConf', (), {}))
    if missing('dora'):
        module('dora')
        module('dora.log', fatal=unused)
    if missing('tqdm'):
        module('tqdm', tqdm=lambda iterable, **_kwargs: iterable)
    if missing('einops'):
        module('einops', rearrange=rearrange)


def rearrange(x, pattern, **sizes):
    """The einops patterns demucs/htdemucs.py and demucs/transformer.py use, as reshapes and permutes."""
    pattern = pattern.replace(' ', '')
    if pattern == 'bcfrt1->b(t1fr)c':
        b, c, fr, t1 = x.shape
        return x.permute(0, 3, 2, 1).reshape(b, t1 * fr, c)
    if pattern == 'b(t1fr)c->bcfrt1':
        b, n, c = x.shape
        t1 = sizes['t1']
        return x.reshape(b, t1, n // t1, c).permute(0, 3, 2, 1)
    if pattern in ('bct2->bt2c', 'bt2c->bct2'):
        return x.permute(0, 2, 1)
    if pattern == 't2bc->bt2c':
        return x.permute(1, 0, 2)
    if pattern == 'bcft->bc(ft)':
        b, c, f, t = x.shape
        return x.reshape(b, c, f * t)
    if pattern == 'bc(ft)->bcft':
        b, c, n = x.shape
        return x.reshape(b, c, sizes['f'], n // sizes['f'])
    raise NotImplementedError(pattern)


def read_input(path, channels, ffmpeg):
    """[channels, samples] float32: a raw planar .f32, or any audio file through ffmpeg."""
    if path.endswith('.f32'):
        return np.fromfile(path, dtype='<f4').reshape(channels, -1).copy()
    raw = subprocess.run([ffmpeg, '-loglevel', 'error', '-i', path, '-f', 'f32le', '-ac', str(channels), '-'],
                         capture_output=True, check=True).stdout
    return np.frombuffer(raw, dtype='<f4').reshape(-1, channels).T.copy()


def load(path):
    """A checkpoint (.th), or a bag (.yaml beside its members' .th files) as demucs.repo builds it."""
    from demucs.apply import BagOfModels
    from demucs.states import load_model
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        if not path.endswith('.yaml'):
            return load_model(path)
        import os
        import yaml
        bag = yaml.safe_load(open(path))
        folder = os.path.dirname(path)
        models = [load_model(os.path.join(folder, f'{name}.th')) for name in bag['models']]
        return BagOfModels(models, bag.get('weights'), bag.get('segment'))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--demucs-src', required=True, help='a checkout of the official demucs (the folder holding demucs/)')
    parser.add_argument('--model', required=True)
    parser.add_argument('--input', required=True)
    parser.add_argument('--channels', type=int, default=2)
    parser.add_argument('--dtype', choices=['float32', 'float64'], required=True)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--ffmpeg', default='ffmpeg')
    parser.add_argument('--out', required=True)
    args = parser.parse_args()

    sys.path.insert(0, args.demucs_src)
    stand_ins()
    import torch
    from demucs.apply import apply_model

    dtype = getattr(torch, args.dtype)
    torch.set_num_threads(args.threads)
    torch.set_default_dtype(dtype)
    model = load(args.model).to(dtype).eval()
    wav = torch.from_numpy(read_input(args.input, args.channels, args.ffmpeg)).to(dtype)
    # demucs.api.Separator.separate_tensor's normalisation by the mono mix.
    ref = wav.mean(0)
    wav = (wav - ref.mean()) / (ref.std() + 1e-8)
    with torch.no_grad():
        out = apply_model(model, wav[None], shifts=0, split=True, overlap=0.25)[0]
    out = out * (ref.std() + 1e-8) + ref.mean()
    out.numpy().astype('<f8' if dtype == torch.float64 else '<f4').tofile(args.out)
    print(f'{args.model}: {list(out.shape)} {args.dtype}, torch {torch.__version__}, {args.threads} thread(s)', file=sys.stderr)


if __name__ == '__main__':
    main()
