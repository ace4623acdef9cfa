"""Shared plumbing of the test-only PyTorch references (test code only, never shipped).

Each reference script builds its architecture from a JSON config, gives every parameter and buffer a random
value at a scale a trained network has (so wrong indexing, a missed bias or a swapped branch shows in the
output), saves the state dict as model.pth ({'params': state_dict}, what BasicSR / traiNNer write) and as
model.safetensors, and runs the model on input.bin (float32 planar 1×C×H×W, 0–1 pixels) into output.bin.

usage: /usr/bin/python3 <arch>_reference.py OUT_DIR CONFIG_JSON SEED
"""
import json
import math
import struct
import sys

import torch


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


def save_safetensors(state, path):
    header, blobs, offset = {'__metadata__': {'format': 'pt'}}, [], 0
    for k, v in state.items():
        v = v.detach().contiguous()
        dtype = {torch.float32: 'F32', torch.int64: 'I64'}[v.dtype]
        data = v.numpy().tobytes()
        header[k] = {'dtype': dtype, 'shape': list(v.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b' ' * ((8 - len(text) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(text)) + text + b''.join(blobs))


def main(build, skip=()):
    out_dir, cfg, seed = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    torch.manual_seed(seed)
    model = build(cfg).eval()
    randomize(model, seed, skip)
    # Every buffer stays, as in released files (relative_position_index, attn masks, num_batches_tracked).
    state = model.state_dict()
    torch.save({'params': state}, f'{out_dir}/model.pth')
    save_safetensors(state, f'{out_dir}/model.safetensors')
    c, h, w = cfg['input']
    x = torch.frombuffer(bytearray(open(f'{out_dir}/input.bin', 'rb').read()), dtype=torch.float32).view(1, c, h, w)
    with torch.no_grad():
        y = model(x)
    open(f'{out_dir}/output.bin', 'wb').write(y.contiguous().numpy().tobytes())
    print(json.dumps({'dims': list(y.shape)}))
