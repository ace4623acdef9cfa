"""Writes a .safetensors file without the safetensors package (Debian ships only torch); test code only.

Format: 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw
little-endian tensor bytes, as https://github.com/huggingface/safetensors documents.
"""
import json
import struct

import torch

DTYPES = {torch.float32: 'F32', torch.float16: 'F16', torch.int64: 'I64', torch.bool: 'BOOL', torch.uint8: 'U8'}


def save_safetensors(state_dict, path):
    header, blobs, offset = {}, [], 0
    for name, t in state_dict.items():
        t = t.detach().contiguous().cpu()
        data = t.numpy().tobytes()
        header[name] = {'dtype': DTYPES[t.dtype], 'shape': list(t.shape), 'data_offsets': [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(',', ':')).encode()
    head += b' ' * (-len(head) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)
