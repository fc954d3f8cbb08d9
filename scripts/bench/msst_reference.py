"""MSST's own PyTorch inference of a network a bench built, for side-by-side figures (any MSST model type).

    python3 scripts/bench/msst_reference.py --msst DIR --model-type bs_roformer --config model.yaml \
        --weights DIR --track track.f32 --channels 2 --out msst.f32 [--threads 2] [--set model.flash_attn=false] [--published CONFIG]

Builds the model as MSST's inference.py does (utils/settings.py get_model_from_config from the
checkout named by --msst: nothing of MSST is in this repository), loads the bench's random weights
(DIR/weights.json + DIR/weights.bin, float32, names as in the state_dict; strict), runs MSST's demix
on the bench's track (model.eval(), no TTA, the config's own inference batch size) and prints one
JSON line: load and separation seconds, the peak RSS while separating (sampled from /proc every
5 ms, as the TypeScript side samples its own) and the process maximum. The stems are written to --out
as raw float32 [stems, channels, samples] in MSST's output order, for the bench's SNR check.

`--set section.key=value` overrides a config value (YAML-parsed): Debian's torch 1.13 has no
scaled_dot_product_attention, so RoFormer configs that ask for flash_attn need model.flash_attn=false.
Modules MSST imports for training or I/O only (ml_collections, omegaconf, soundfile, tqdm, ...) are
stood in for where they are not installed.
"""
import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
import types


class AttrDict(dict):
    """ml_collections.ConfigDict as far as MSST's inference uses it: nested attribute access, `in`, get."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for key, value in self.items():
            if isinstance(value, dict) and not isinstance(value, AttrDict):
                self[key] = AttrDict(value)

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as error:
            raise AttributeError(key) from error

    def __setattr__(self, key, value):
        self[key] = value


def stand_in(name, **attributes):
    try:
        __import__(name)
    except ImportError:
        parts = name.split('.')
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault('.'.join(parts[:i]), types.ModuleType('.'.join(parts[:i])))
        for key, value in attributes.items():
            setattr(sys.modules[name], key, value)


class PeakRss:
    """Resident memory sampled every 5 ms from /proc/self/statm on a thread of its own."""

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
    parser.add_argument('--msst', required=True, help='a checkout of ZFTurbo/Music-Source-Separation-Training')
    parser.add_argument('--model-type', required=True)
    parser.add_argument('--config', required=True)
    parser.add_argument('--weights', required=True, help='the folder with weights.json and weights.bin')
    parser.add_argument('--track', required=True)
    parser.add_argument('--channels', type=int, required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--set', action='append', default=[])
    parser.add_argument('--published', help="an MSST config whose model section the bench's must equal")
    args = parser.parse_args()

    stand_in('ml_collections', ConfigDict=AttrDict)
    stand_in('omegaconf', OmegaConf=type('OmegaConf', (), {}))
    stand_in('soundfile')
    stand_in('tqdm', tqdm=lambda iterable=None, *a, **k: iterable)
    stand_in('tqdm.auto', tqdm=lambda iterable=None, *a, **k: iterable)
    sys.path.insert(0, os.path.abspath(args.msst))
    import numpy as np
    import torch
    import yaml

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    config_path = args.config
    if args.set:
        with open(args.config) as f:
            document = yaml.load(f, Loader=yaml.FullLoader)
        for pair in args.set:
            key, value = pair.split('=', 1)
            section, field = key.split('.', 1)
            document[section][field] = yaml.safe_load(value)
        handle, config_path = tempfile.mkstemp(suffix='.yaml')
        with os.fdopen(handle, 'w') as f:
            yaml.dump(document, f)
    from utils.settings import get_model_from_config
    from utils.model_utils import demix, prefer_target_instrument

    if args.published:
        with open(args.config) as f:
            ours = yaml.load(f, Loader=yaml.FullLoader)['model']
        with open(args.published) as f:
            published = yaml.load(f, Loader=yaml.FullLoader)['model']
        if ours != published:
            raise SystemExit(f'the bench network is not {args.published}: {ours} != {published}')
    model, config = get_model_from_config(args.model_type, config_path)
    if config_path != args.config:
        os.remove(config_path)  # the overridden copy: read once, by get_model_from_config
    with open(os.path.join(args.weights, 'weights.json')) as f:
        index = json.load(f)
    blob = np.fromfile(os.path.join(args.weights, 'weights.bin'), dtype='<f4')
    state = {}
    for entry in index:
        count = int(np.prod(entry['shape'])) if entry['shape'] else 1
        state[entry['name']] = torch.from_numpy(blob[entry['offset']:entry['offset'] + count].copy()).reshape(entry['shape'])
    model.load_state_dict(state, strict=True)
    del blob, state
    model.eval()
    load_seconds = time.perf_counter() - started

    mix = np.fromfile(args.track, dtype='<f4').reshape(args.channels, -1)
    sampler = PeakRss()
    started = time.perf_counter()
    cpu = time.process_time()
    stems = demix(config, model, mix, torch.device('cpu'), args.model_type)
    cpu = time.process_time() - cpu
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    np.stack([stems[name] for name in prefer_target_instrument(config)]).astype('<f4').tofile(args.out)
    print(json.dumps({
        'torch': torch.__version__,
        'threads': torch.get_num_threads(),
        'batch_size': int(config.inference.batch_size),
        'load_seconds': load_seconds,
        'seconds': seconds,
        'cpu_seconds': cpu,
        'peak_rss_bytes': peak,
        'max_rss_bytes': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }))


if __name__ == '__main__':
    main()
