"""SwinIR reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Liang et al., "SwinIR: Image Restoration Using Swin Transformer", 2021) and the public
architecture definition (JingyunLiang/SwinIR models/network_swinir.py, Apache-2.0): the same module and
parameter names, so the saved state dict has the keys of the released checkpoints (classical `pixelshuffle`,
lightweight `pixelshuffledirect`, real-world `nearest+conv`, and the 1x denoise/JPEG models), buffers included.

usage: /usr/bin/python3 swinir_reference.py JOBS.json
JOBS.json: [{"dir": ..., "golden": ..., "seed": n, "config": {...SwinIR kwargs...},
             "inputs": [{"name": ..., "shape": [1,C,H,W]}]}]
For each job: dir/model.pth ({"params": state_dict}), dir/model.safetensors (bare state dict), and for each
input dir/<name>.bin (float32, written by the test) PyTorch's output, all stored in the golden file
(support/golden.py).
"""
import json
import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import Weights, write_golden  # noqa: E402
from ref_common import resi_conv  # noqa: E402
from safetensors_write import save_safetensors  # noqa: E402


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws, ws, c)


def window_reverse(windows, ws, h, w):
    b = windows.shape[0] // ((h // ws) * (w // ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


def relative_index(ws):
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing='ij')).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += ws - 1
    rel[:, :, 1] += ws - 1
    rel[:, :, 0] *= 2 * ws - 1
    return rel.sum(-1)


def shift_mask(h, w, ws, shift):
    img = torch.zeros(1, h, w, 1)
    cnt = 0
    for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
        for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            img[:, hs, wsl, :] = cnt
            cnt += 1
    mw = window_partition(img, ws).view(-1, ws * ws)
    mask = mw.unsqueeze(1) - mw.unsqueeze(2)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.ws, self.heads, self.scale = ws, heads, (dim // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * ws - 1) ** 2, heads))
        self.register_buffer('relative_position_index', relative_index(ws))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b_, n, c = x.shape
        qkv = self.qkv(x).reshape(b_, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
        attn = attn + bias.permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(b_ // nw, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, n, n)
        return self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(b_, n, c))


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim, res, heads, ws, shift, mlp_ratio):
        super().__init__()
        if min(res) <= ws:
            shift, ws = 0, min(res)
        self.ws, self.shift, self.res = ws, shift, res
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.register_buffer('attn_mask', shift_mask(res[0], res[1], ws, shift) if shift > 0 else None)

    def forward(self, x, size):
        h, w = size
        b, _, c = x.shape
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        if self.shift > 0:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = window_partition(x, self.ws).view(-1, self.ws * self.ws, c)
        mask = None
        if self.shift > 0:
            mask = self.attn_mask if tuple(size) == tuple(self.res) else shift_mask(h, w, self.ws, self.shift)
        x = window_reverse(self.attn(win, mask).view(-1, self.ws, self.ws, c), self.ws, h, w)
        if self.shift > 0:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x.view(b, h * w, c)
        return x + self.mlp(self.norm2(x))


class BasicLayer(nn.Module):
    def __init__(self, dim, res, depth, heads, ws, mlp_ratio):
        super().__init__()
        self.blocks = nn.ModuleList(
            [SwinTransformerBlock(dim, res, heads, ws, 0 if i % 2 == 0 else ws // 2, mlp_ratio) for i in range(depth)])

    def forward(self, x, size):
        for blk in self.blocks:
            x = blk(x, size)
        return x


def tokens(x):
    return x.flatten(2).transpose(1, 2)


def image(x, size):
    return x.transpose(1, 2).view(x.shape[0], x.shape[2], size[0], size[1])


class RSTB(nn.Module):
    def __init__(self, dim, res, depth, heads, ws, mlp_ratio, resi):
        super().__init__()
        self.residual_group = BasicLayer(dim, res, depth, heads, ws, mlp_ratio)
        self.conv = resi_conv(dim, resi)

    def forward(self, x, size):
        return tokens(self.conv(image(self.residual_group(x, size), size))) + x


class PatchEmbed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)


def pixelshuffle_upsample(num_feat, upscale):
    """BasicSR's Upsample (SwinIR's and HAT's classical tail): a conv and ×2 shuffle per power of two, or one ×3."""
    m = []
    if upscale & (upscale - 1) == 0:
        for _ in range(int(math.log2(upscale))):
            m += [nn.Conv2d(num_feat, 4 * num_feat, 3, 1, 1), nn.PixelShuffle(2)]
    else:
        m += [nn.Conv2d(num_feat, 9 * num_feat, 3, 1, 1), nn.PixelShuffle(3)]
    return nn.Sequential(*m)


class SwinIR(nn.Module):
    def __init__(self, img_size=64, in_chans=3, embed_dim=96, depths=(6, 6, 6, 6), num_heads=(6, 6, 6, 6),
                 window_size=7, mlp_ratio=4.0, upscale=2, img_range=1.0, upsampler='', resi_connection='1conv',
                 num_feat=64):
        super().__init__()
        self.img_range, self.upscale, self.upsampler, self.ws = img_range, upscale, upsampler, window_size
        self.mean = torch.Tensor((0.4488, 0.4371, 0.4040)).view(1, 3, 1, 1) if in_chans == 3 else torch.zeros(1, 1, 1, 1)
        self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.patch_embed = PatchEmbed(embed_dim)
        res = (img_size, img_size)
        self.layers = nn.ModuleList(
            [RSTB(embed_dim, res, d, h, window_size, mlp_ratio, resi_connection) for d, h in zip(depths, num_heads)])
        self.norm = nn.LayerNorm(embed_dim)
        self.conv_after_body = resi_conv(embed_dim, resi_connection)
        if upsampler == 'pixelshuffle':
            self.conv_before_upsample = nn.Sequential(nn.Conv2d(embed_dim, num_feat, 3, 1, 1), nn.LeakyReLU(inplace=True))
            self.upsample = pixelshuffle_upsample(num_feat, upscale)
            self.conv_last = nn.Conv2d(num_feat, in_chans, 3, 1, 1)
        elif upsampler == 'pixelshuffledirect':
            self.upsample = nn.Sequential(nn.Conv2d(embed_dim, upscale ** 2 * in_chans, 3, 1, 1), nn.PixelShuffle(upscale))
        elif upsampler == 'nearest+conv':
            self.conv_before_upsample = nn.Sequential(nn.Conv2d(embed_dim, num_feat, 3, 1, 1), nn.LeakyReLU(inplace=True))
            self.conv_up1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
            if upscale >= 4:
                self.conv_up2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
            if upscale == 8:
                self.conv_up3 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
            self.conv_hr = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
            self.conv_last = nn.Conv2d(num_feat, in_chans, 3, 1, 1)
        else:
            self.conv_last = nn.Conv2d(embed_dim, in_chans, 3, 1, 1)

    def features(self, x):
        size = (x.shape[2], x.shape[3])
        x = self.patch_embed.norm(tokens(x))
        for layer in self.layers:
            x = layer(x, size)
        return image(self.norm(x), size)

    def forward(self, x):
        h, w = x.shape[2:]
        ph, pw = (self.ws - h % self.ws) % self.ws, (self.ws - w % self.ws) % self.ws
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), 'reflect')
        x = (x - self.mean) * self.img_range
        if self.upsampler == '':
            first = self.conv_first(x)
            x = x + self.conv_last(self.conv_after_body(self.features(first)) + first)
        else:
            x = self.conv_first(x)
            x = self.conv_after_body(self.features(x)) + x
            if self.upsampler == 'pixelshuffle':
                x = self.conv_last(self.upsample(self.conv_before_upsample(x)))
            elif self.upsampler == 'pixelshuffledirect':
                x = self.upsample(x)
            else:
                up = lambda t: F.interpolate(t, scale_factor=2, mode='nearest')  # noqa: E731
                x = F.leaky_relu(self.conv_up1(up(self.conv_before_upsample(x))), 0.2)
                if self.upscale >= 4:
                    x = F.leaky_relu(self.conv_up2(up(x)), 0.2)
                if self.upscale == 8:
                    x = F.leaky_relu(self.conv_up3(up(x)), 0.2)
                x = self.conv_last(F.leaky_relu(self.conv_hr(x), 0.2))
        x = x / self.img_range + self.mean
        return x[:, :, :h * self.upscale, :w * self.upscale]


def randomize(net, seed):
    """Every parameter away from its init (LayerNorm 1/0, zero biases and bias tables), at scales that keep a
    random network's activations near 1, so a wrong key, transpose or order shows in the output."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if 'norm' in name and name.endswith('weight'):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith('bias') or 'bias_table' in name:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))


def main(build=lambda cfg: SwinIR(**cfg), default_wrapper='params'):
    """Runs the jobs (the format above; hat_reference.py shares it, with its own model and wrapper)."""
    jobs = json.load(open(sys.argv[1]))
    torch.set_num_threads(1)
    for job in jobs:
        net = build(job['config']).eval()
        randomize(net, job['seed'])
        weights = Weights(job['seed'])
        weights.reseed(net)
        sd = net.state_dict()
        files = {'model.pth': os.path.join(job['dir'], 'model.pth'),
                 'model.safetensors': os.path.join(job['dir'], 'model.safetensors')}
        torch.save({job.get('wrapper', default_wrapper): sd}, files['model.pth'])
        save_safetensors(sd, files['model.safetensors'])
        inputs, outputs = {}, []
        for inp in job['inputs']:
            base = os.path.join(job['dir'], inp['name'])
            x = torch.from_numpy(
                __import__('numpy').fromfile(base + '.bin', dtype='float32').reshape(inp['shape']).copy())
            with torch.no_grad():
                y = net(x)
            inputs[inp['name']] = base + '.bin'
            outputs.append((inp['name'], y.numpy(), 'f32'))
            print(job['dir'], inp['name'], tuple(y.shape), f'{y.min().item():.3f}..{y.max().item():.3f}')
        write_golden(job['golden'], weights, files, inputs, outputs)

if __name__ == '__main__':
    main()
