"""A tiny standard-MIDI-file writer: just what the renderer needs (notes, programs, banks, pitch bend)."""
import struct
from dataclasses import dataclass, field

TICKS_PER_SECOND = 960  # 480 ticks per quarter at a fixed 120 bpm: event times are in seconds.


@dataclass
class Track:
    """One MIDI channel's worth of events; times in seconds."""
    channel: int
    program: int
    bank: int = 0  # ignored on channel 9
    notes: list = field(default_factory=list)   # (start_s, dur_s, pitch, velocity)
    bends: list = field(default_factory=list)   # (time_s, value in [-8192, 8191])
    volume: int = 100


def _vlq(n: int) -> bytes:
    out = [n & 0x7F]
    n >>= 7
    while n:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(reversed(out))


def _events(track: Track):
    c = track.channel
    if c != 9:  # channel 10 is the drum channel: fluidsynth gives it bank 128 by itself
        yield 0.0, 0, bytes([0xB0 | c, 0, track.bank])
    yield 0.0, 0, bytes([0xB0 | c, 7, track.volume])
    yield 0.0, 0, bytes([0xC0 | c, track.program])
    for start, dur, pitch, vel in track.notes:
        yield start, 2, bytes([0x90 | c, int(pitch), max(1, min(127, int(vel)))])
        yield start + dur, 1, bytes([0x80 | c, int(pitch), 0])
    for t, value in track.bends:
        v = max(0, min(16383, int(value) + 8192))
        yield t, 0, bytes([0xE0 | c, v & 0x7F, v >> 7])


def write_midi(path: str, tracks: list) -> None:
    """Writes a format-0 file; note-offs sort before note-ons at equal times so repeated notes retrigger."""
    events = sorted((int(round(t * TICKS_PER_SECOND)), order, msg)
                    for tr in tracks for t, order, msg in _events(tr))
    data = bytearray(b"\x00\xff\x51\x03" + struct.pack(">I", 500000)[1:])
    last = 0
    for tick, _, msg in events:
        data += _vlq(max(0, tick - last)) + msg
        last = max(last, tick)
    data += b"\x00\xff\x2f\x00"
    header = b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480)
    with open(path, "wb") as f:
        f.write(header + b"MTrk" + struct.pack(">I", len(data)) + bytes(data))
