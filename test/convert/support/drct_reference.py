"""DRCT reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Hsu et al., "DRCT: Saving Image Super-resolution away from Information Bottleneck",
CVPRW 2024) and the public architecture definition (ming053l/DRCT drct_arch.py, MIT; the copy spandrel loads,
libs/spandrel/spandrel/architectures/DRCT/__arch/drct_arch.py): the same module and parameter names and buffers
(each block's relative_position_index, the shifted blocks' attn_mask of the training size), so the saved state dict
has the keys of the released DRCT and DRCT-L checkpoints.

Each residual dense group (RDG) runs five Swin blocks on a growing concatenation: block k sees the group input
and the k earlier blocks' outputs, each squeezed to `gc` channels by a 1×1 conv (LeakyReLU 0.2); block k's width
is dim + k·gc with num_heads − (width mod num_heads) heads (the first keeps num_heads), blocks 4 and 5 have an MLP ratio of 1, and the fifth
1×1 conv maps back to dim for the group's residual, scaled by 0.2. The network itself does not pad; DRCT's model
wrapper (drct_model.py pre_process / post_process) reflect-pads the input to the window multiple and crops the
output, which forward() does here, as the HAT reference does.

usage: /usr/bin/python3 drct_reference.py JOBS.json   (the job format of swinir_reference.py)
"""
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_common import main  # noqa: E402
from swinir_reference import Mlp, PatchEmbed, image, pixelshuffle_upsample, relative_index, shift_mask  # noqa: E402
from swinir_reference import tokens, window_partition, window_reverse  # noqa: E402


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads, qkv_bias):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * ws - 1) ** 2, heads))
        self.register_buffer('relative_position_index', relative_index(ws))
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
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
    """DRCT's Swin block: a training size no larger than the window shrinks the window to it and drops the shift
    (so such a checkpoint has no attn_mask buffers)."""

    def __init__(self, dim, res, heads, ws, shift, mlp_ratio, qkv_bias):
        super().__init__()
        if min(res) <= ws:
            shift, ws = 0, min(res)
        self.ws, self.shift, self.res = ws, shift, res
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads, qkv_bias)
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
        x = shortcut + x.reshape(b, h * w, c)
        return x + self.mlp(self.norm2(x))


class RDG(nn.Module):
    def __init__(self, dim, res, heads, ws, mlp_ratio, qkv_bias, gc):
        super().__init__()
        for k in range(5):
            width = dim + k * gc
            block = SwinTransformerBlock(width, res, heads if k == 0 else heads - width % heads, ws, ws // 2 if k % 2 == 1 else 0,
                                         mlp_ratio if k < 3 else 1, qkv_bias)
            setattr(self, f'swin{k + 1}', block)
            setattr(self, f'adjust{k + 1}', nn.Conv2d(width, gc if k < 4 else dim, 1))

    def forward(self, x, size):
        feats = [x]
        for k in range(5):
            y = getattr(self, f'swin{k + 1}')(torch.cat(feats, -1), size)
            y = getattr(self, f'adjust{k + 1}')(image(y, size))
            feats.append(tokens(F.leaky_relu(y, 0.2) if k < 4 else y))
        return feats[5] * 0.2 + x


class DRCT(nn.Module):
    def __init__(self, img_size=64, in_chans=3, embed_dim=180, depths=(6,) * 6, num_heads=(6,) * 6, window_size=16,
                 mlp_ratio=2.0, qkv_bias=True, upscale=2, img_range=1.0, resi_connection='1conv', gc=32,
                 patch_norm=True, num_feat=64):
        super().__init__()
        self.ws, self.upscale, self.img_range = window_size, upscale, img_range
        self.mean = torch.Tensor((0.4488, 0.4371, 0.4040)).view(1, 3, 1, 1) if in_chans == 3 else torch.zeros(1, 1, 1, 1)
        self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.patch_embed = PatchEmbed(embed_dim) if patch_norm else nn.Module()
        res = (img_size, img_size)
        # depths only sets the stochastic-depth schedule in DRCT: every RDG has five blocks whatever it says.
        self.layers = nn.ModuleList([RDG(embed_dim, res, h, window_size, mlp_ratio, qkv_bias, gc) for h in num_heads])
        self.norm = nn.LayerNorm(embed_dim)
        self.conv_after_body = nn.Conv2d(embed_dim, embed_dim, 3, 1, 1) if resi_connection == '1conv' else nn.Identity()
        self.conv_before_upsample = nn.Sequential(nn.Conv2d(embed_dim, num_feat, 3, 1, 1), nn.LeakyReLU(inplace=True))
        self.upsample = pixelshuffle_upsample(num_feat, upscale)
        self.conv_last = nn.Conv2d(num_feat, in_chans, 3, 1, 1)

    def features(self, x):
        size = (x.shape[2], x.shape[3])
        x = tokens(x)
        if hasattr(self.patch_embed, 'norm'):
            x = self.patch_embed.norm(x)
        for layer in self.layers:
            x = layer(x, size)
        return image(self.norm(x), size)

    def forward(self, x):
        h, w = x.shape[2:]
        ph, pw = (self.ws - h % self.ws) % self.ws, (self.ws - w % self.ws) % self.ws
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), 'reflect')
        x = (x - self.mean) * self.img_range
        x = self.conv_first(x)
        x = self.conv_after_body(self.features(x)) + x
        x = self.conv_last(self.upsample(self.conv_before_upsample(x)))
        x = x / self.img_range + self.mean
        return x[:, :, :h * self.upscale, :w * self.upscale]


if __name__ == '__main__':
    main(lambda cfg: DRCT(**cfg), skip=('attn_mask',))
