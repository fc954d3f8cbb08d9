"""python-audio-separator's VRSeparator.separate on the VR params not at 44.1 kHz, for
scripts/bench/vr-rates-split.ts to compare `stemsplit split` with (runs outside the project).

    python3 scripts/bench/vr_official_rates.py ASEP_ROOT FIXTURES_VR OUT_DIR [params,...]

ASEP_ROOT holds the `audio_separator` package of python-audio-separator (commit 0a644db, e.g.
`git archive HEAD audio_separator | tar -x -C ASEP_ROOT`); librosa 0.11, python-soxr, resampy,
scipy, soundfile and torch must be importable, and Debian's libsamplerate0 installed
(python-samplerate 0.1.0's `resample()` is stood in for over ctypes, as the VR fixtures do;
pydub and the package's __init__ chain are not needed). The network is the VR fixtures'
vr_a_v50_1band_inst.pth (VR 5.0 at width 2: a 5.0 net fits any params' bins), run by the
official code with each params file; write_audio is captured (float64 [M, 2]) and saved as
NAME.out.f32 [stem][channel][sample] like the fixtures, with manifest.json.
"""
import ctypes
import ctypes.util
import json
import logging
import os
import shutil
import sys
import types

import numpy as np
import soundfile as sf
import torch


def samplerate_module():
    """python-samplerate 0.1.0's resample() over ctypes and the real libsamplerate."""
    lib = ctypes.CDLL(ctypes.util.find_library('samplerate'))

    class SrcData(ctypes.Structure):
        _fields_ = [('data_in', ctypes.POINTER(ctypes.c_float)), ('data_out', ctypes.POINTER(ctypes.c_float)),
                    ('input_frames', ctypes.c_long), ('output_frames', ctypes.c_long),
                    ('input_frames_used', ctypes.c_long), ('output_frames_gen', ctypes.c_long),
                    ('end_of_input', ctypes.c_int), ('src_ratio', ctypes.c_double)]

    lib.src_simple.argtypes = [ctypes.POINTER(SrcData), ctypes.c_int, ctypes.c_int]
    types_ = {'sinc_best': 0, 'sinc_medium': 1, 'sinc_fastest': 2, 'zero_order_hold': 3, 'linear': 4}

    def resample(input_data, ratio, converter_type='sinc_best', verbose=False):
        input_data = np.require(input_data, requirements='C', dtype=np.float32)
        channels = 1 if input_data.ndim == 1 else input_data.shape[1]
        frames = input_data.shape[0]
        output = np.empty((int(frames * ratio),) + input_data.shape[1:], dtype=np.float32)
        data = SrcData(input_data.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), output.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                       frames, output.shape[0], 0, 0, 0, ratio)
        if lib.src_simple(ctypes.byref(data), types_[converter_type], channels) != 0:
            raise RuntimeError('src_simple failed')
        return output[:data.output_frames_gen]

    module = types.ModuleType('samplerate')
    module.resample = resample
    return module


def main():
    asep_root, fixtures, out_dir = sys.argv[1:4]
    params_list = sys.argv[4].split(',') if len(sys.argv) > 4 else ['1band_sr16000_hl512', '1band_sr32000_hl512', '1band_sr33075_hl384', '2band_32000', '2band_48000']
    sys.modules['samplerate'] = samplerate_module()
    pydub = types.ModuleType('pydub')
    pydub.AudioSegment = None
    sys.modules['pydub'] = pydub
    for name, sub in (('audio_separator', 'audio_separator'), ('audio_separator.separator', 'audio_separator/separator')):
        module = types.ModuleType(name)
        module.__path__ = [os.path.join(asep_root, sub)]
        sys.modules[name] = module
    from audio_separator.separator.architectures import vr_separator
    from audio_separator.separator.uvr_lib_v5.vr_network import nets

    vr_separator.tqdm = lambda x, *a, **k: x
    net = os.path.join(fixtures, 'vr_a_v50_1band_inst.pth')
    ch = torch.load(net, map_location='cpu')['stg1_low_band_net.enc1.conv1.conv.0.weight'].shape[0]

    def small_capacity(n_fft_bins, nn_architecture):
        capacity = [(2, ch), (2, ch), (ch + 2, ch // 2, 1, 1, 0), (ch // 2, ch), (2 * ch + 2, ch, 1, 1, 0), (ch, 2 * ch), (2 * ch, 2, 1), (ch, 2, 1), (ch, 2, 1)]
        return nets.CascadedASPPNet(n_fft_bins, capacity, nn_architecture)

    nets.determine_model_capacity = small_capacity
    os.makedirs(out_dir, exist_ok=True)
    mix = np.fromfile(os.path.join(fixtures, 'mix_20260511_3s_stereo.in.f32'), dtype='<f4').reshape(2, -1)
    wav = os.path.join(out_dir, 'song.wav')
    sf.write(wav, mix.T, 44100, subtype='FLOAT')
    manifest = {}
    for params in params_list:
        name = f'vr_{params}'
        model_path = os.path.join(out_dir, f'{name}.pth')
        shutil.copyfile(net, model_path)
        model_data = {'vr_model_param': params, 'primary_stem': 'Instrumental'}
        with open(os.path.join(out_dir, f'{name}.json'), 'w') as fh:
            json.dump(model_data, fh)
        options = {'batch_size': 1, 'window_size': 512, 'aggression': 5, 'enable_tta': False, 'enable_post_process': False,
                   'post_process_threshold': 0.2, 'high_end_process': params == '2band_48000'}
        config = {'logger': logging.getLogger('vr'), 'log_level': logging.WARNING, 'torch_device': torch.device('cpu'),
                  'torch_device_cpu': torch.device('cpu'), 'torch_device_mps': None, 'onnx_execution_provider': None,
                  'model_name': name, 'model_path': model_path, 'model_data': model_data, 'output_dir': out_dir,
                  'output_format': 'WAV', 'output_bitrate': None, 'normalization_threshold': 0.9, 'amplification_threshold': 0.0,
                  'enable_denoise': False, 'output_single_stem': None, 'invert_using_spec': False, 'sample_rate': 44100,
                  'use_soundfile': True}
        separator = vr_separator.VRSeparator(config, options)
        captured = []
        separator.write_audio = lambda path, source: captured.append(np.asarray(source))
        separator.separate(wav)
        stems = np.stack([c.T for c in captured]).astype('<f4')
        stems.tofile(os.path.join(out_dir, f'{name}.out.f32'))
        manifest[name] = {'params': params, 'shape': list(stems.shape), 'options': options,
                          'stems': [separator.primary_stem_name, separator.secondary_stem_name]}
        print(name, stems.shape, flush=True)
    with open(os.path.join(out_dir, 'manifest.json'), 'w') as fh:
        json.dump(manifest, fh, indent=1)


if __name__ == '__main__':
    main()
