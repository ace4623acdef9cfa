"""Golden files for the PyTorch reference checks (maintainer tool, test code only; `npm test` never runs Python).

A reference run saves a random-weight checkpoint with torch.save (and .safetensors) and PyTorch's outputs on real
photo crops. Committing the checkpoints would cost hundreds of MB, so the weights are made reproducible instead:
`reseed` replaces every random-looking float32 tensor of the model with values from a counter-based generator that
support/golden.ts reproduces bit for bit in TypeScript (keeping the tensor's mean and standard deviation, so the
network keeps the scales the script chose), and `write_golden` stores each saved file as a list of segments:
literal bytes (zip headers, torch's own data.pkl, small and structured tensors) and references to generated
tensors. The TypeScript side rebuilds the exact bytes torch wrote (sha256 checked) and compares Crisp's conversion
with the stored outputs.

The generator: key32 = FNV-1a of the key's UTF-8; for element i, h_k = mix32(mix32(2i + k) ^ key32) for k = 0, 1
(mix32 = lowbias32), u_k = (h_k >> 8) / 2^24, z = (u_0 + u_1 - 1) * sqrt(6) (unit variance), value =
float32(mean + std * z). Every step is exact or one correctly rounded IEEE operation, so numpy and V8 agree.
"""
import gzip
import hashlib
import json
import math
import os
import struct
import zipfile

import numpy
import torch

SQRT6 = math.sqrt(6.0)
CHUNK = 1 << 22


def _mix32(x):
    x = x ^ (x >> numpy.uint32(16))
    x = x * numpy.uint32(0x7FEB352D)
    x = x ^ (x >> numpy.uint32(15))
    x = x * numpy.uint32(0x846CA68B)
    return x ^ (x >> numpy.uint32(16))


def key32(key):
    h = 0x811C9DC5
    for b in key.encode('utf-8'):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return numpy.uint32(h)


def _uniforms(key, start, n, per):
    """per uniforms for each element in [start, start + n): shape (n, per), values k/2^24."""
    c = numpy.arange(start * per, (start + n) * per, dtype=numpy.uint64).astype(numpy.uint32)
    h = _mix32(_mix32(c) ^ key32(key))
    return ((h >> numpy.uint32(8)).astype(numpy.float64) / 16777216.0).reshape(n, per)


def normal(key, n, mean, std):
    """n float32 values with the given mean and standard deviation (triangular, from two uniforms)."""
    out = numpy.empty(n, dtype=numpy.float32)
    for s in range(0, n, CHUNK):
        m = min(CHUNK, n - s)
        u = _uniforms(key, s, m, 2)
        z = (u[:, 0] + u[:, 1] - 1.0) * SQRT6
        out[s:s + m] = (mean + std * z).astype(numpy.float32)
    return out


def uniform_pm1(key, n):
    """n float32 values uniform in [-1, 1) (inputs of the face model check)."""
    u = _uniforms(key, 0, n, 1)[:, 0]
    return (u * 2.0 - 1.0).astype(numpy.float32)


class Weights:
    """The generated tensors of one case: name → (key, n, mean, std), in the order they were made."""

    def __init__(self, seed, min_numel=256):
        self.seed = seed
        # Smaller tensors are stored literally. A network of many small layers (DCTLSA's 24 blocks at a test
        # width) lowers it, so its golden holds few literal floats.
        self.min_numel = min_numel
        self.records = {}

    def make(self, name, shape, mean, std, salt=''):
        key = f'{self.seed}/{salt}{name}'
        n = int(numpy.prod(shape)) if len(shape) else 1
        mean, std = float(numpy.float32(mean)), float(numpy.float32(std))
        self.records[f'{salt}{name}'] = {'key': key, 'n': n, 'mean': mean, 'std': std}
        return torch.from_numpy(normal(key, n, mean, std).reshape(shape))

    def reseed(self, model, skip=()):
        """Every random-looking float32 parameter or buffer of `model` (more than 255 values, more than 16 of
        them distinct, name not in `skip`) gets generated values of the same mean and standard deviation.
        Constant, structured and small tensors stay as they are and are stored literally."""
        with torch.no_grad():
            for name, t in model.state_dict(keep_vars=True).items():
                if t.dtype != torch.float32 or t.numel() < self.min_numel or any(s in name for s in skip):
                    continue
                if torch.unique(t).numel() <= min(16, t.numel() // 2):
                    continue
                d = t.detach().double()
                t.copy_(self.make(name, tuple(t.shape), d.mean().item(), d.std().item()))


def _ranges(data):
    """(start, length) of each stored member of a torch zip, or each tensor of a .safetensors file."""
    if data[:4] == b'PK\x03\x04':
        import io
        out = []
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                if info.compress_type != zipfile.ZIP_STORED:
                    continue
                o = info.header_offset
                name_len, extra_len = struct.unpack('<HH', data[o + 26:o + 30])
                out.append((o + 30 + name_len + extra_len, info.compress_size))
        return out
    n = struct.unpack('<Q', data[:8])[0]
    if 0 < n < len(data) and data[8:9] == b'{':
        header = json.loads(data[8:8 + n])
        return [(8 + n + v['data_offsets'][0], v['data_offsets'][1] - v['data_offsets'][0])
                for k, v in header.items() if k != '__metadata__']
    return []


class Blob:
    """The literal bytes of a golden; a chunk seen before (a small tensor in both the .pth and the .safetensors)
    is stored once."""

    def __init__(self):
        self.parts, self.size, self.seen = [], 0, {}

    def add(self, b):
        h = hashlib.sha256(b).digest()
        if h not in self.seen:
            self.parts.append(b)
            self.seen[h] = [self.size, len(b)]
            self.size += len(b)
        return self.seen[h]


def write_golden(path, weights, files, inputs, outputs):
    """Writes <path>.json and <path>.bin.gz. files: {name: file path} (saved checkpoints); inputs: {name: file
    path) of the float32 inputs (their sha256 is checked by the TS side); outputs: [(name, array, 'f32' | 'u16'[,
    stride])], u16 = linear over the array's own min..max (for checks whose tolerance is far above its step);
    stride s keeps every s-th row and column of an [n, c, h, w] output (large outputs: the test samples alike)."""
    names = list(weights.records)
    by_hash = {}
    for i, name in enumerate(names):
        r = weights.records[name]
        by_hash.setdefault(hashlib.sha256(normal(r['key'], r['n'], r['mean'], r['std']).tobytes()).digest(), i)
    blob = Blob()
    out = {'generated': [weights.records[n] for n in names], 'files': {}, 'inputs': {}, 'outputs': []}
    for fname, fpath in files.items():
        data = open(fpath, 'rb').read()
        segments, at = [], 0
        for start, length in sorted(_ranges(data)):
            if start > at:
                segments.append(['lit', *blob.add(data[at:start])])
            i = by_hash.get(hashlib.sha256(data[start:start + length]).digest()) if length >= 4 * weights.min_numel else None
            segments.append(['gen', i] if i is not None else ['lit', *blob.add(data[start:start + length])])
            at = start + length
        if at < len(data):
            segments.append(['lit', *blob.add(data[at:])])
        out['files'][fname] = {'sha256': hashlib.sha256(data).hexdigest(), 'size': len(data), 'segments': segments}
    for iname, ipath in inputs.items():
        out['inputs'][iname] = hashlib.sha256(open(ipath, 'rb').read()).hexdigest()
    for oname, arr, kind, *rest in outputs:
        stride = rest[0] if rest else 1
        a = numpy.ascontiguousarray(arr[..., ::stride, ::stride], dtype=numpy.float32)
        entry = {'name': oname, 'shape': list(a.shape), 'dtype': kind, **({'stride': stride} if stride > 1 else {})}
        if kind == 'u16':
            lo, hi = float(a.min()), float(a.max())
            q = numpy.round((a.astype(numpy.float64) - lo) / (hi - lo) * 65535).astype('<u2')
            entry.update(min=lo, max=hi, at=blob.add(q.tobytes()))
        else:
            entry['at'] = blob.add(a.astype('<f4').tobytes())
        out['outputs'].append(entry)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.json', 'w') as f:
        # One generated tensor, file or output per line: small diffs when a case changes.
        c = lambda v: json.dumps(v, separators=(',', ':'))  # noqa: E731
        f.write('{\n"generated": [\n' + ',\n'.join(c(g) for g in out['generated']) + '\n],\n')
        f.write('"files": {\n' + ',\n'.join(f'{c(k)}: {c(v)}' for k, v in out['files'].items()) + '\n},\n')
        f.write('"inputs": ' + c(out['inputs']) + ',\n')
        f.write('"outputs": [\n' + ',\n'.join(c(o) for o in out['outputs']) + '\n]\n}\n')
    with gzip.GzipFile(path + '.bin.gz', 'wb', compresslevel=9, mtime=0) as f:
        for p in blob.parts:
            f.write(p)
