#!/usr/bin/python3
"""Builds the bundled baseline models (models/bundled-4s, models/bundled-6s).

They are FIXED filterbanks, not learned separators: linear-phase crossover filters
on the mid (L+R)/2 and the full stereo signal, expressed as an ONNX graph so they run
through exactly the same pipeline as real models. Every stem is a linear filter of the
mix and `other` is the mix minus the rest, so the stems always sum to the mix.

Low-pass filters are three cascaded centred moving averages (a quadratic B-spline
kernel, about -40 dB side lobes), computed in O(L) as differences of a float64 cumulative
sum, which keeps the graph tiny and fast.

Run: /usr/bin/python3 scripts/models/build_baseline.py   (needs python3-onnx, python3-numpy)
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SAMPLE_RATE = 44100
SEGMENT = 441000  # 10 s: long enough that the chunk edges (where filters see zeros) are a small share
OVERLAP = 0.25
CASCADE = 3
OPSET = 17

# Crossover frequencies in Hz. A cascade of odd-length moving averages only reaches
# discrete cutoffs (k=3: 4.1 kHz, k=5: 2.4 kHz, k=11: 1.1 kHz, ...), so these are rounded to
# the nearest one; the manifest states the cutoffs actually used.
BASS_BELOW = 150.0
VOCALS_BAND = (300.0, 2400.0)
DRUMS_ABOVE = 4000.0
GUITAR_BAND = (300.0, 1050.0)
PIANO_BAND = (1050.0, 2400.0)

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), '..', '..'))


def cascade_gain(k: int, freq: float) -> float:
    """Magnitude response of CASCADE moving averages of length k at freq."""
    w = math.pi * freq / SAMPLE_RATE
    return abs(math.sin(w * k) / (k * math.sin(w))) ** CASCADE


def cutoff_of(k: int) -> float:
    """The -3 dB frequency (to 1 Hz) of a cascade of moving averages of length k."""
    freq = 1.0
    while cascade_gain(k, freq) > 1 / math.sqrt(2):
        freq += 1.0
    return freq


def length_for_cutoff(freq: float) -> int:
    """The odd moving-average length (at least 3) whose cascade's -3 dB point is nearest freq."""
    return min(range(3, 401, 2), key=lambda k: abs(cutoff_of(k) - freq))


def actual(freq: float) -> str:
    """The cutoff really used for a requested one, for the manifest's description."""
    return f'{cutoff_of(length_for_cutoff(freq)):g}'


class Graph:
    def __init__(self):
        self.nodes = []
        self.initializers = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f'{hint}_{self.count}'

    def const(self, hint: str, array: np.ndarray) -> str:
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs, hint: str, **attrs) -> str:
        out = self.name(hint)
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def slice_time(self, x: str, start: int, end: int) -> str:
        starts = self.const('start', np.array([start], np.int64))
        ends = self.const('end', np.array([end], np.int64))
        axes = self.const('axis', np.array([2], np.int64))
        return self.op('Slice', [x, starts, ends, axes], 'slice')

    def moving_average(self, x: str, k: int) -> str:
        """Centred moving average of odd length k over the time axis, zeros beyond the segment."""
        half = (k - 1) // 2
        wide = self.op('Cast', [x], 'f64', to=TensorProto.DOUBLE)
        # One extra leading zero so that sum(x[n-half..n+half]) = c[n+k] - c[n].
        pads = self.const('pads', np.array([0, 0, half + 1, 0, 0, half], np.int64))
        padded = self.op('Pad', [wide, pads], 'pad')
        total = self.op('CumSum', [padded, self.const('axis', np.array(2, np.int64))], 'cumsum')
        window = self.op('Sub', [self.slice_time(total, k, k + SEGMENT), self.slice_time(total, 0, SEGMENT)], 'window')
        narrow = self.op('Cast', [window], 'f32', to=TensorProto.FLOAT)
        return self.op('Mul', [narrow, self.const('inv_k', np.array(1.0 / k, np.float32))], 'mean')

    def low_pass(self, x: str, freq: float) -> str:
        k = length_for_cutoff(freq)
        for _ in range(CASCADE):
            x = self.moving_average(x, k)
        return x

    def band_pass(self, x: str, band) -> str:
        return self.op('Sub', [self.low_pass(x, band[1]), self.low_pass(x, band[0])], 'band')

    def centre(self, x: str) -> str:
        """The mid signal (L+R)/2 on both channels: what is panned centre."""
        mid = self.op('ReduceMean', [x], 'mid', axes=[1], keepdims=1)
        return self.op('Concat', [mid, mid], 'centre', axis=1)

    def sub_all(self, x: str, parts) -> str:
        for part in parts:
            x = self.op('Sub', [x, part], 'rest')
        return x


def build(sources) -> onnx.ModelProto:
    g = Graph()
    mix = 'mix'
    stems = {}
    stems['bass'] = g.centre(g.low_pass(mix, BASS_BELOW))
    stems['vocals'] = g.centre(g.band_pass(mix, VOCALS_BAND))
    stems['drums'] = g.op('Sub', [mix, g.low_pass(mix, DRUMS_ABOVE)], 'drums')
    other = g.sub_all(mix, [stems['drums'], stems['bass'], stems['vocals']])
    if 'guitar' in sources:
        stems['guitar'] = g.band_pass(other, GUITAR_BAND)
        stems['piano'] = g.band_pass(other, PIANO_BAND)
        other = g.sub_all(other, [stems['guitar'], stems['piano']])
    stems['other'] = other
    stacked = g.op('Concat', [stems[name] for name in sources], 'stacked', axis=1)
    shape = g.const('shape', np.array([1, len(sources), 2, SEGMENT], np.int64))
    g.nodes.append(helper.make_node('Reshape', [stacked, shape], ['stems'], name='stems'))

    graph = helper.make_graph(
        g.nodes,
        'fixed_filterbank',
        [helper.make_tensor_value_info('mix', TensorProto.FLOAT, [1, 2, SEGMENT])],
        [helper.make_tensor_value_info('stems', TensorProto.FLOAT, [1, len(sources), 2, SEGMENT])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)], producer_name='stemsplit build_baseline.py')
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def manifest(name: str, sources) -> dict:
    bands = (f'bass below {actual(BASS_BELOW)} Hz and vocals {actual(VOCALS_BAND[0])}-{actual(VOCALS_BAND[1])} Hz '
             f'of the centre (mid) channel, drums above {actual(DRUMS_ABOVE)} Hz')
    if 'guitar' in sources:
        bands += (f', guitar {actual(GUITAR_BAND[0])}-{actual(GUITAR_BAND[1])} Hz and '
                  f'piano {actual(PIANO_BAND[0])}-{actual(PIANO_BAND[1])} Hz of the remainder')
    return {
        'format': 'stemsplit-model/1',
        'name': name,
        'description': (
            f'Fixed filterbank baseline, not a learned separator: {bands}; other is the rest, so stems sum to the mix. '
            'Separation quality is poor; it exists so stemsplit works offline out of the box. Use htdemucs for real results.'
        ),
        'terms': 'MIT, as stemsplit itself; a fixed filterbank, no training data',
        'sampleRate': SAMPLE_RATE,
        'sources': list(sources),
        'segmentSamples': SEGMENT,
        'overlap': OVERLAP,
        'normalize': False,
        'input': 'waveform',
        'onnx': 'model.onnx',
        'provenance': {
            'builder': 'scripts/models/build_baseline.py',
            'kind': 'fixed-filterbank',
            'lowPass': f'{CASCADE} cascaded centred moving averages per cutoff',
            'movingAverageLengths': {f'{actual(f)}Hz': length_for_cutoff(f)
                                     for f in sorted({BASS_BELOW, *VOCALS_BAND, DRUMS_ABOVE, *GUITAR_BAND, *PIANO_BAND})},
            'trainingData': 'none',
            'licence': 'MIT',
        },
    }


def main() -> None:
    for name, sources in (('bundled-4s', ('drums', 'bass', 'other', 'vocals')),
                          ('bundled-6s', ('drums', 'bass', 'other', 'vocals', 'guitar', 'piano'))):
        folder = os.path.join(ROOT, 'models', name)
        os.makedirs(folder, exist_ok=True)
        onnx.save(build(sources), os.path.join(folder, 'model.onnx'))
        with open(os.path.join(folder, 'model.json'), 'w') as out:
            json.dump(manifest(name, sources), out, indent=2)
            out.write('\n')
        print(f'{name}: {os.path.getsize(os.path.join(folder, "model.onnx"))} bytes', file=sys.stderr)


if __name__ == '__main__':
    main()
