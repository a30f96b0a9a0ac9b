"""The front end through torchaudio (Kaldi fbank) and numpy (LFR 7/6, CMVN) on one thread, for
bench/speech/run.ts: prints the seconds of audio featurised per CPU-second over `seconds` of work.

usage: torchaudio-front-end.py <seconds> <wav>...
"""
import sys
import time

import numpy as np
import torch
import torchaudio

torch.set_num_threads(1)
budget = float(sys.argv[1])
waves = [torchaudio.load(path)[0][0:1] * 32768 for path in sys.argv[2:]]
shift = np.full(560, -10.0, dtype=np.float32)
scale = np.full(560, 0.3, dtype=np.float32)


def front_end(wave):
    fb = torchaudio.compliance.kaldi.fbank(wave, num_mel_bins=80, frame_length=25, frame_shift=10, dither=0.0,
                                           window_type="hamming", energy_floor=0.0, sample_frequency=16000).numpy()
    padded = np.vstack([np.tile(fb[0], (3, 1)), fb])
    rows = [padded[[min(i * 6 + j, len(padded) - 1) for j in range(7)]].reshape(-1) for i in range(int(np.ceil(len(fb) / 6)))]
    return (np.array(rows) + shift) * scale


audio_s = 0.0
start = time.process_time()
while time.process_time() - start < budget:
    for wave in waves:
        front_end(wave)
        audio_s += wave.shape[1] / 16000
print("%.1f" % (audio_s / (time.process_time() - start)))
