"""MSST's own PyTorch inference of an MDX23C network, for scripts/bench/mdx23c.ts.

Imports TFC_TDF_net and demix from an MSST checkout named on the command line (nothing of MSST
is in this repository), loads the random weights the bench wrote (weights.f32 + weights.json),
runs MSST's demix on the bench's track as MSST's inference.py does (model.eval(), generic mode,
no TTA) and prints one JSON line: load and separation seconds, peak RSS while separating
(sampled from /proc every 5 ms, as the TypeScript side does) and the process maximum. The stems
are written to --out as raw float32 [stems, channels, length] so the bench can compare them.

    python3 scripts/bench/mdx23c_msst.py --msst DIR --config model.yaml --weights DIR \
        --track track.f32 --channels 2 --out msst.f32 [--threads 2]

MSST's utils/model_utils.py imports ml_collections and tqdm; where they are not installed (e.g.
Debian's python3-torch alone) minimal stand-ins are registered: ConfigDict as an attribute dict,
tqdm unused (no progress bar is asked for).
"""
import argparse
import json
import os
import resource
import sys
import threading
import time
import types


def stand_ins():
    try:
        import ml_collections  # noqa: F401
    except ImportError:
        class ConfigDict(dict):
            def __init__(self, values=None):
                super().__init__()
                for key, value in (values or {}).items():
                    self[key] = ConfigDict(value) if isinstance(value, dict) else value

            def __getattr__(self, key):
                try:
                    return self[key]
                except KeyError as error:
                    raise AttributeError(key) from error

        sys.modules['ml_collections'] = types.SimpleNamespace(ConfigDict=ConfigDict)
    try:
        import tqdm.auto  # noqa: F401
    except ImportError:
        module = types.ModuleType('tqdm')
        module.tqdm = None
        module.auto = module
        sys.modules['tqdm'] = module
        sys.modules['tqdm.auto'] = module


class PeakRss:
    """Samples this process's resident set every 5 ms."""

    def __init__(self):
        self.peak = 0
        self.running = True
        self.page = os.sysconf('SC_PAGE_SIZE')
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            with open('/proc/self/statm') as statm:
                self.peak = max(self.peak, int(statm.read().split()[1]) * self.page)
            time.sleep(0.005)

    def stop(self):
        self.running = False
        self.thread.join()
        return self.peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--msst', required=True, help='a Music-Source-Separation-Training checkout')
    parser.add_argument('--config', required=True)
    parser.add_argument('--weights', required=True, help='the folder with weights.f32 and weights.json')
    parser.add_argument('--track', required=True)
    parser.add_argument('--channels', type=int, required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--threads', type=int, default=2)
    args = parser.parse_args()

    sys.path.insert(0, os.path.abspath(args.msst))
    stand_ins()
    import numpy as np
    import torch
    import yaml
    from ml_collections import ConfigDict
    from models.mdx23c_tfc_tdf_v3 import TFC_TDF_net
    from utils.model_utils import demix, prefer_target_instrument

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    with open(args.config) as file:
        config = ConfigDict(yaml.load(file, Loader=yaml.FullLoader))
    model = TFC_TDF_net(config)
    with open(os.path.join(args.weights, 'weights.json')) as file:
        index = json.load(file)
    values = np.fromfile(os.path.join(args.weights, 'weights.f32'), dtype='<f4')
    state = model.state_dict()
    for entry in index:
        count = int(np.prod(entry['shape'])) if entry['shape'] else 1
        tensor = torch.from_numpy(values[entry['offset']:entry['offset'] + count].copy()).reshape(entry['shape'])
        state[entry['name']] = tensor
    missing = set(model.state_dict()) - {entry['name'] for entry in index}
    if any(not name.endswith('num_batches_tracked') for name in missing):
        raise SystemExit(f'weights lack {sorted(missing)[:5]}')
    model.load_state_dict(state)
    model.eval()
    del values
    load_seconds = time.perf_counter() - started

    mix = np.fromfile(args.track, dtype='<f4').reshape(args.channels, -1)
    sampler = PeakRss()
    started = time.perf_counter()
    stems = demix(config, model, mix, 'cpu', 'mdx23c')
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    np.stack([stems[name] for name in prefer_target_instrument(config)]).astype('<f4').tofile(args.out)
    print(json.dumps({
        'torch': torch.__version__,
        'load_seconds': load_seconds,
        'seconds': seconds,
        'peak_rss_bytes': peak,
        'max_rss_bytes': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }))


if __name__ == '__main__':
    main()
