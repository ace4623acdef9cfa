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
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_common  # noqa: E402
from ref_common import resi_conv  # noqa: E402
from window_attention import PatchEmbed, SwinTransformerBlock, add_tail, image, pad_to_window, run_tail  # noqa: E402
from window_attention import swin_features, tokens  # noqa: E402


class BasicLayer(nn.Module):
    def __init__(self, dim, res, depth, heads, ws, mlp_ratio):
        super().__init__()
        self.blocks = nn.ModuleList(
            [SwinTransformerBlock(dim, res, heads, ws, 0 if i % 2 == 0 else ws // 2, mlp_ratio) for i in range(depth)])

    def forward(self, x, size):
        for blk in self.blocks:
            x = blk(x, size)
        return x


class RSTB(nn.Module):
    def __init__(self, dim, res, depth, heads, ws, mlp_ratio, resi):
        super().__init__()
        self.residual_group = BasicLayer(dim, res, depth, heads, ws, mlp_ratio)
        self.conv = resi_conv(dim, resi)

    def forward(self, x, size):
        return tokens(self.conv(image(self.residual_group(x, size), size))) + x


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
        add_tail(self, upsampler, embed_dim, num_feat, in_chans, upscale)

    def features(self, x):
        return swin_features(self, x)

    def forward(self, x):
        h, w = x.shape[2:]
        x = (pad_to_window(x, self.ws) - self.mean) * self.img_range
        if self.upsampler == '':
            first = self.conv_first(x)
            x = x + self.conv_last(self.conv_after_body(self.features(first)) + first)
        else:
            x = self.conv_first(x)
            x = self.conv_after_body(self.features(x)) + x
            x = run_tail(self, self.upsampler, self.upscale, x)
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


if __name__ == '__main__':
    ref_common.main(lambda cfg: SwinIR(**cfg), randomizer=randomize)
