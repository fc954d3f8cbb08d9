"""MSST's own PyTorch inference of the network scripts/bench/scnet.ts built, for the side-by-side figures.

    python3 scripts/bench/scnet_msst.py --msst /path/to/Music-Source-Separation-Training --dir DIR [--threads 2]

DIR is what scnet.ts wrote: config.yaml (the MSST config), weights.json + weights.bin (the random
state_dict, float32), track.f32 (the input, [channels, samples]). This script loads MSST's SCNet class
(`models/scnet`) and its chunked inference (`utils/model_utils.py` demix, as inference.py calls it
through bigshifts_wrapper with bigshifts=1) from the given checkout, so the repository holds none of
MSST's code. It checks that config.yaml's model section is MSST's published one
(configs/config_musdb18_scnet_large.yaml), times the demix, writes the stems to DIR/msst.f32
([stems, channels, samples]) and prints one JSON line: wall and CPU seconds, and the peak RSS of this
process (ru_maxrss, its whole life: import, weights, inference).

Needs numpy, PyYAML and torch (Debian: python3-torch). ml_collections and tqdm, which MSST imports but
this run does not use, are stood in for when they are not installed.
"""
import argparse
import json
import os
import resource
import sys
import time
import types

import numpy as np
import torch
import yaml


class AttrDict(dict):
    """ml_collections.ConfigDict as far as demix uses it: attribute access, `in`, getattr with a default."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as error:
            raise AttributeError(key) from error

    @staticmethod
    def wrap(value):
        if isinstance(value, dict):
            return AttrDict({k: AttrDict.wrap(v) for k, v in value.items()})
        return value


def stand_in(name, **attributes):
    try:
        __import__(name)
    except ImportError:
        parts = name.split('.')
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault('.'.join(parts[:i]), types.ModuleType('.'.join(parts[:i])))
        for key, value in attributes.items():
            setattr(sys.modules[name], key, value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--msst', required=True, help='a checkout of ZFTurbo/Music-Source-Separation-Training')
    parser.add_argument('--dir', required=True)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--published', default='configs/config_musdb18_scnet_large.yaml', help="MSST config whose model section must match ('' to skip)")
    args = parser.parse_args()

    stand_in('ml_collections', ConfigDict=AttrDict)
    stand_in('tqdm.auto', tqdm=lambda *a, **k: None)
    sys.path.insert(0, os.path.abspath(args.msst))
    from models.scnet import SCNet
    from utils.model_utils import demix

    with open(os.path.join(args.dir, 'config.yaml')) as f:
        config = AttrDict.wrap(yaml.safe_load(f))
    if args.published:
        with open(os.path.join(args.msst, args.published)) as f:
            published = yaml.load(f, Loader=yaml.FullLoader)['model']
        if dict(config.model) != published:
            raise SystemExit(f'the bench network is not {args.published}: {dict(config.model)} != {published}')

    torch.set_num_threads(args.threads)
    model = SCNet(**config.model)
    with open(os.path.join(args.dir, 'weights.json')) as f:
        index = json.load(f)
    blob = np.fromfile(os.path.join(args.dir, 'weights.bin'), dtype='<f4')
    state = {e['name']: torch.from_numpy(blob[e['offset']:e['offset'] + int(np.prod(e['shape']))].reshape(e['shape']).copy()) for e in index}
    model.load_state_dict(state, strict=True)
    del blob, state
    model.eval()

    channels = config.audio.num_channels
    track = np.fromfile(os.path.join(args.dir, 'track.f32'), dtype='<f4').reshape(channels, -1)
    cpu = time.process_time()
    wall = time.perf_counter()
    stems = demix(config, model, track, torch.device('cpu'), 'scnet')
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    instruments = config.training.instruments
    np.stack([stems[name] for name in instruments]).astype('<f4').tofile(os.path.join(args.dir, 'msst.f32'))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({'wallSeconds': wall, 'cpuSeconds': cpu, 'peakRssBytes': peak, 'torch': torch.__version__, 'threads': torch.get_num_threads()}))


if __name__ == '__main__':
    main()
