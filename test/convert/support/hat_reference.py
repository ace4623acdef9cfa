"""HAT reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Chen et al., "Activating More Pixels in Image Super-Resolution Transformer", CVPR 2023)
and the public architecture definition (XPixelGroup/HAT hat/archs/hat_arch.py, Apache-2.0): the same module and
parameter names and buffers (relative_position_index_SA / _OCA), so the saved state dict has the keys of the
released HAT-S, HAT and HAT-L checkpoints.

usage: /usr/bin/python3 hat_reference.py JOBS.json   (the job format of swinir_reference.py)
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_common import main  # noqa: E402
from swinir_reference import randomize  # noqa: E402
from window_attention import Mlp, PatchEmbed, WindowAttention, add_tail, classical_forward, image  # noqa: E402
from window_attention import relative_index, shift_mask, swin_features, tokens, window_partition  # noqa: E402
from window_attention import window_reverse, windowed  # noqa: E402


def oca_index(ws, ows):
    ori = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing='ij')).flatten(1)
    ext = torch.stack(torch.meshgrid(torch.arange(ows), torch.arange(ows), indexing='ij')).flatten(1)
    rel = (ext[:, None, :] - ori[:, :, None]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += ws - ows + 1
    rel[:, :, 1] += ws - ows + 1
    rel[:, :, 0] *= ws + ows - 1
    return rel.sum(-1)  # negative entries wrap around when indexing, as in HAT


class ChannelAttention(nn.Module):
    def __init__(self, dim, squeeze):
        super().__init__()
        self.attention = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dim, dim // squeeze, 1), nn.ReLU(True),
                                       nn.Conv2d(dim // squeeze, dim, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.attention(x)


class CAB(nn.Module):
    def __init__(self, dim, compress, squeeze):
        super().__init__()
        self.cab = nn.Sequential(nn.Conv2d(dim, dim // compress, 3, 1, 1), nn.GELU(),
                                 nn.Conv2d(dim // compress, dim, 3, 1, 1), ChannelAttention(dim, squeeze))

    def forward(self, x):
        return self.cab(x)


class HAB(nn.Module):
    def __init__(self, dim, heads, ws, shift, compress, squeeze, mlp_ratio, qkv_bias, conv_scale):
        super().__init__()
        self.ws, self.shift, self.conv_scale = ws, shift, conv_scale
        self.norm1 = nn.LayerNorm(dim)
        # HAT's window attention takes the network's one relative position index.
        self.attn = WindowAttention(dim, ws, heads, qkv_bias, own_index=False)
        self.conv_block = CAB(dim, compress, squeeze)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x, size, rpi, mask):
        h, w = size
        b, _, c = x.shape
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        conv_x = self.conv_block(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1).reshape(b, h * w, c)
        x = windowed(x, self.ws, self.shift, lambda win: self.attn(win, mask if self.shift > 0 else None, rpi))
        x = shortcut + x + conv_x * self.conv_scale
        return x + self.mlp(self.norm2(x))


class OCAB(nn.Module):
    def __init__(self, dim, ws, overlap_ratio, heads, qkv_bias, mlp_ratio):
        super().__init__()
        self.dim, self.ws, self.heads = dim, ws, heads
        self.scale = (dim // heads) ** -0.5
        self.ows = int(ws * overlap_ratio) + ws
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.unfold = nn.Unfold(kernel_size=(self.ows, self.ows), stride=ws, padding=(self.ows - ws) // 2)
        self.relative_position_bias_table = nn.Parameter(torch.zeros((ws + self.ows - 1) ** 2, heads))
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x, size, rpi):
        h, w = size
        b, _, c = x.shape
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        qkv = self.qkv(x).reshape(b, h, w, 3, c).permute(3, 0, 4, 1, 2)
        q = qkv[0].permute(0, 2, 3, 1)
        kv = torch.cat((qkv[1], qkv[2]), dim=1)
        qw = window_partition(q, self.ws).view(-1, self.ws * self.ws, c)
        kvw = self.unfold(kv)  # b, 2·c·ows·ows, nw  (channel-major: nc, ch, owh, oww)
        nw = kvw.shape[-1]
        kvw = kvw.view(b, 2, c, self.ows, self.ows, nw).permute(1, 0, 5, 3, 4, 2)
        kvw = kvw.reshape(2, b * nw, self.ows * self.ows, c)
        kw, vw = kvw[0], kvw[1]
        b_, nq, _ = qw.shape
        n = kw.shape[1]
        d = c // self.heads
        q = qw.reshape(b_, nq, self.heads, d).permute(0, 2, 1, 3) * self.scale
        k = kw.reshape(b_, n, self.heads, d).permute(0, 2, 1, 3)
        v = vw.reshape(b_, n, self.heads, d).permute(0, 2, 1, 3)
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[rpi.view(-1)].view(nq, n, -1).permute(2, 0, 1)
        attn = (attn + bias.unsqueeze(0)).softmax(-1)
        out = (attn @ v).transpose(1, 2).reshape(b_, nq, c).view(-1, self.ws, self.ws, c)
        x = window_reverse(out, self.ws, h, w).reshape(b, h * w, c)
        x = self.proj(x) + shortcut
        return x + self.mlp(self.norm2(x))


class AttenBlocks(nn.Module):
    def __init__(self, dim, depth, heads, ws, compress, squeeze, overlap_ratio, mlp_ratio, qkv_bias, conv_scale):
        super().__init__()
        self.blocks = nn.ModuleList([HAB(dim, heads, ws, 0 if i % 2 == 0 else ws // 2, compress, squeeze, mlp_ratio,
                                         qkv_bias, conv_scale) for i in range(depth)])
        self.overlap_attn = OCAB(dim, ws, overlap_ratio, heads, qkv_bias, mlp_ratio)

    def forward(self, x, size, p):
        for blk in self.blocks:
            x = blk(x, size, p['rpi_sa'], p['mask'])
        return self.overlap_attn(x, size, p['rpi_oca'])


class RHAG(nn.Module):
    def __init__(self, dim, resi, **kw):
        super().__init__()
        self.residual_group = AttenBlocks(dim, **kw)
        self.conv = nn.Conv2d(dim, dim, 3, 1, 1) if resi == '1conv' else nn.Identity()

    def forward(self, x, size, p):
        return tokens(self.conv(image(self.residual_group(x, size, p), size))) + x


class HAT(nn.Module):
    def __init__(self, in_chans=3, embed_dim=96, depths=(6, 6, 6, 6), num_heads=(6, 6, 6, 6), window_size=7,
                 compress_ratio=3, squeeze_factor=30, conv_scale=0.01, overlap_ratio=0.5, mlp_ratio=4.0,
                 qkv_bias=True, upscale=2, img_range=1.0, resi_connection='1conv', num_feat=64):
        super().__init__()
        self.ws, self.shift, self.upscale, self.img_range = window_size, window_size // 2, upscale, img_range
        self.mean = torch.Tensor((0.4488, 0.4371, 0.4040)).view(1, 3, 1, 1) if in_chans == 3 else torch.zeros(1, 1, 1, 1)
        self.register_buffer('relative_position_index_SA', relative_index(window_size))
        self.register_buffer('relative_position_index_OCA',
                             oca_index(window_size, window_size + int(overlap_ratio * window_size)))
        self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.patch_embed = PatchEmbed(embed_dim)
        self.layers = nn.ModuleList([
            RHAG(embed_dim, resi_connection, depth=d, heads=h, ws=window_size, compress=compress_ratio,
                 squeeze=squeeze_factor, overlap_ratio=overlap_ratio, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                 conv_scale=conv_scale) for d, h in zip(depths, num_heads)])
        self.norm = nn.LayerNorm(embed_dim)
        self.conv_after_body = nn.Conv2d(embed_dim, embed_dim, 3, 1, 1) if resi_connection == '1conv' else nn.Identity()
        add_tail(self, 'pixelshuffle', embed_dim, num_feat, in_chans, upscale)

    def features(self, x):
        size = (x.shape[2], x.shape[3])
        p = {'mask': shift_mask(size[0], size[1], self.ws, self.shift),
             'rpi_sa': self.relative_position_index_SA, 'rpi_oca': self.relative_position_index_OCA}
        return swin_features(self, x, p)

    def forward(self, x):
        return classical_forward(self, x)

if __name__ == '__main__':
    main(lambda cfg: HAT(**cfg), randomizer=randomize, default_wrapper='params_ema')
