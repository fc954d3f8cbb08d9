"""A small spectrogram-mask U-Net (6 sources) with its STFT/iSTFT inside the model.

The STFT has two interchangeable implementations with identical results:
  - training: torch.fft on unfolded frames (fast on the CPU),
  - export:   Conv1d / ConvTranspose1d with fixed DFT kernels (plain ONNX ops, waveform in/out).
Frames: sqrt-Hann window, n_fft 2048, hop 1024 (50 % overlap: the squared window sums to 1, so
overlap-add needs no normalisation). A signal of L samples (L a multiple of the hop) gives L/hop + 1 frames.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

N_FFT = 2048
HOP = 1024
BINS = N_FFT // 2 + 1
SOURCES = ["vocals", "drums", "bass", "other", "guitar", "piano"]  # training order (music.STEMS)


def _window():
    return torch.hann_window(N_FFT, periodic=True).sqrt()


class Spectrogram(nn.Module):
    """x [B, C, L] <-> complex spectrogram as (re, im) [B, C, BINS, frames]."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", _window(), persistent=False)
        self.register_buffer("bin_index", torch.arange(BINS).float()[:, None], persistent=False)
        self.register_buffer("time_index", torch.arange(N_FFT).float()[None], persistent=False)
        scale = torch.full((BINS, 1), 2.0 / N_FFT)
        scale[0] = scale[-1] = 1.0 / N_FFT  # DC and Nyquist appear once in the full spectrum, the others twice
        self.register_buffer("inverse_scale", scale, persistent=False)
        self.export_mode = False

    def _kernels(self):
        """DFT kernels [2*BINS, 1, N_FFT], computed in the graph (about 17 MB each if stored as weights).
        k*n is reduced modulo N_FFT first: exact in float32, and keeps cos/sin arguments small."""
        ang = torch.fmod(self.bin_index * self.time_index, float(N_FFT)) * (2 * math.pi / N_FFT)
        cos, sin = torch.cos(ang) * self.window, torch.sin(ang) * self.window
        fwd = torch.cat([cos, -sin])[:, None]
        inv = torch.cat([cos * self.inverse_scale, -sin * self.inverse_scale])[:, None]
        return fwd, inv

    def stft(self, x):
        b, c, length = x.shape
        if self.export_mode:
            spec = F.conv1d(x.reshape(b * c, 1, length), self._kernels()[0], stride=HOP, padding=N_FFT - HOP)
            spec = spec.reshape(b, c, 2, BINS, -1)
            return spec[:, :, 0], spec[:, :, 1]
        frames = F.pad(x, (N_FFT - HOP, N_FFT - HOP)).unfold(-1, N_FFT, HOP) * self.window
        spec = torch.fft.rfft(frames, dim=-1).transpose(-1, -2)
        return spec.real, spec.imag

    def istft(self, re, im, length):
        lead = re.shape[:-2]
        frames = re.shape[-1]
        if self.export_mode:
            spec = torch.cat([re, im], -2).reshape(-1, 2 * BINS, frames)
            y = F.conv_transpose1d(spec, self._kernels()[1], stride=HOP, padding=N_FFT - HOP)
            return y.reshape(*lead, length)
        y = torch.fft.irfft(torch.complex(re, im).transpose(-1, -2), n=N_FFT, dim=-1) * self.window
        y = y.reshape(-1, frames, N_FFT).transpose(1, 2)
        total = (frames - 1) * HOP + N_FFT
        y = F.fold(y, (1, total), (1, N_FFT), stride=(1, HOP)).reshape(*lead, total)
        return y[..., N_FFT - HOP: N_FFT - HOP + length]


def _down(cin, cout, k, s, p):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p), nn.BatchNorm2d(cout), nn.GELU())


class FreqUp(nn.Module):
    """Frequency upsampling by `ratio` as a sub-pixel convolution (much faster than ConvTranspose2d on CPUs)."""

    def __init__(self, cin, cout, ratio=4, norm=True):
        super().__init__()
        self.ratio, self.cout = ratio, cout
        self.conv = nn.Conv2d(cin, cout * ratio, (3, 3), padding=(1, 1))
        self.post = nn.Sequential(nn.BatchNorm2d(cout), nn.GELU()) if norm else nn.Identity()

    def forward(self, x):
        b, _, f, t = x.shape
        y = self.conv(x).reshape(b, self.cout, self.ratio, f, t).transpose(2, 3).reshape(b, self.cout, f * self.ratio, t)
        return self.post(y)


class TimeBlock(nn.Module):
    """Residual dilated convolution over frames: the long-range context of the bottleneck."""

    def __init__(self, ch, hidden, dilation):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(ch, hidden, 3, padding=dilation, dilation=dilation), nn.BatchNorm1d(hidden),
                                 nn.GELU(), nn.Conv1d(hidden, ch, 1), nn.BatchNorm1d(ch))

    def forward(self, x):
        return x + self.net(x)


class MaskUNet(nn.Module):
    def __init__(self, channels=(24, 48, 96, 128), hidden=320, dilations=(1, 2, 4, 8), sources=len(SOURCES)):
        super().__init__()
        c1, c2, c3, c4 = channels
        self.sources = sources
        self.spec = Spectrogram()
        k, s, p = (8, 3), (4, 1), (2, 1)
        self.enc = nn.ModuleList([_down(2, c1, k, s, p), _down(c1, c2, k, s, p), _down(c2, c3, k, s, p),
                                  _down(c3, c4, (4, 3), (4, 1), (0, 1))])
        bott = c4 * 4  # 1024 bins / 4**4 = 4 frequency rows left
        self.time = nn.Sequential(*[TimeBlock(bott, hidden, d) for d in dilations])
        self.dec = nn.ModuleList([FreqUp(c4, c3), FreqUp(c3, c2), FreqUp(c2, c1)])
        self.head = FreqUp(c1, sources * 2, norm=False)

    def masks(self, mag):
        """mag [B, 2, 1024, T] -> soft masks [B, S, 2, 1024, T] that sum to one over sources."""
        x = torch.log1p(mag)
        skips = []
        for layer in self.enc:
            x = layer(x)
            skips.append(x)
        b, c, f, t = x.shape
        x = self.time(x.reshape(b, c * f, t)).reshape(b, c, f, t)
        for layer, skip in zip(self.dec, reversed(skips[:-1])):
            x = layer(x) + skip
        logits = self.head(x).reshape(b, self.sources, 2, f * 256, t)
        return torch.softmax(logits, dim=1)

    def forward(self, mix, groups=None):
        """mix [B, 2, L] -> stems [B, S, 2, L] (L a multiple of HOP). `groups` (lists of source indices)
        sums masks before the inverse STFT, e.g. to fold guitar and piano into other at no extra cost."""
        length = mix.shape[-1]
        re, im = self.spec.stft(mix)
        mag = torch.sqrt(re[:, :, :-1] ** 2 + im[:, :, :-1] ** 2 + 1e-10)
        m = self.masks(mag)
        if groups is not None:
            m = torch.stack([sum(m[:, i] for i in g) for g in groups], 1)
        m = torch.cat([m, m[:, :, :, -1:]], 3)  # the Nyquist bin follows its neighbour
        return self.spec.istft(m * re[:, None], m * im[:, None], length)
