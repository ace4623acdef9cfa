"""Shared plumbing of the test-only PyTorch references (test code only, never shipped).

Each reference script builds its architecture from a JSON config, gives every parameter and buffer a random
value at a scale a trained network has (so wrong indexing, a missed bias or a swapped branch shows in the
output), saves the state dict as model.pth ({'params': state_dict}, what BasicSR / traiNNer write) and as
model.safetensors, and runs the model on each <name>.bin (float32 planar 1×C×H×W, 0–1 pixels); the checkpoints and outputs go into
the job's golden file (support/golden.py), for the jobs support/transformerReference.ts writes.

usage: /usr/bin/python3 <arch>_reference.py JOBS_JSON
"""
import json
import math
import os
import sys

import numpy
import torch
from torch import nn

from golden import Weights, write_golden
from safetensors_write import save_safetensors


def resi_conv(dim, kind):
    """The residual conv after each group and the body (SwinIR, DAT, SRFormer): one 3×3, or '3conv'
    (3×3 to dim/4, 1×1, 3×3 back, LeakyReLU 0.2 between), the same Sequential indices as the released keys."""
    if kind == '1conv':
        return nn.Conv2d(dim, dim, 3, 1, 1)
    return nn.Sequential(nn.Conv2d(dim, dim // 4, 3, 1, 1), nn.LeakyReLU(0.2), nn.Conv2d(dim // 4, dim // 4, 1),
                         nn.LeakyReLU(0.2), nn.Conv2d(dim // 4, dim, 3, 1, 1))


def randomize(model, seed, skip=()):
    """Random weights: fan-in scaled for Linear/Conv, near-one norms, varied BatchNorm statistics."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.state_dict(keep_vars=True).items()):
            if not t.is_floating_point() or any(s in name for s in skip):
                continue
            leaf = name.rsplit('.', 1)[-1]
            if leaf == 'running_var':
                t.copy_(0.5 + torch.rand(t.shape, generator=g))
            elif leaf == 'running_mean':
                t.copy_(0.1 * torch.randn(t.shape, generator=g))
            elif leaf == 'num_batches_tracked':
                continue
            elif t.dim() >= 2 and 'relative_position_bias_table' not in name:
                fan_in = t[0].numel()
                t.copy_(torch.randn(t.shape, generator=g) / math.sqrt(fan_in))
            elif leaf == 'weight' or leaf == 'temperature':
                t.copy_(1 + 0.2 * torch.randn(t.shape, generator=g))
            else:
                t.copy_(0.3 * torch.randn(t.shape, generator=g))


def main(build, skip=(), randomizer=None, default_wrapper='params', min_numel=256):
    """Runs the jobs transformerReference.ts writes: [{dir, golden, seed, config, wrapper, inputs: [{name, shape}]}].
    randomizer(model, seed) replaces `randomize` where a reference keeps its own scales (SwinIR's and HAT's);
    min_numel: the smallest tensor the golden generates rather than stores (golden.Weights)."""
    jobs = json.load(open(sys.argv[1]))
    torch.set_num_threads(1)
    for job in jobs:
        torch.manual_seed(job['seed'])
        model = build(job['config']).eval()
        if randomizer is None:
            randomize(model, job['seed'], skip)
        else:
            randomizer(model, job['seed'])
        weights = Weights(job['seed'], min_numel)
        weights.reseed(model, skip)
        # Every buffer stays, as in released files (relative_position_index, attn masks, num_batches_tracked).
        state = model.state_dict()
        files = {'model.pth': os.path.join(job['dir'], 'model.pth'),
                 'model.safetensors': os.path.join(job['dir'], 'model.safetensors')}
        torch.save({job.get('wrapper', default_wrapper): state}, files['model.pth'])
        save_safetensors(state, files['model.safetensors'])
        inputs, outputs = {}, []
        for inp in job['inputs']:
            base = os.path.join(job['dir'], inp['name'])
            x = torch.from_numpy(numpy.fromfile(base + '.bin', dtype='float32').reshape(inp['shape']).copy())
            with torch.no_grad():
                y = model(x)
            inputs[inp['name']] = base + '.bin'
            outputs.append((inp['name'], y.numpy(), 'f32'))
        write_golden(job['golden'], weights, files, inputs, outputs)
