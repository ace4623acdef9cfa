"""RGT (Recursive Generalization Transformer, Chen et al., ICLR 2024; zhengchen1999/RGT, Apache-2.0, as spandrel
packages it) for the converter's tests (test code only).

Written from the paper and the public definition, with the module and parameter names of released RGT / RGT-S
checkpoints. Residual groups of blocks that alternate L-SA (even index: DAT's rectangle-window spatial attention,
two branches, dynamic position bias, shifted in DAT's pattern, plus a depth-wise conv of v; reused from
dat_reference.py) and RG-SA (odd index: queries from every token, keys and values from a map reduced by a
depth-wise 4×4 stride-4 conv applied twice — the recursion count the reference uses for sides of 16 to 1023
pixels — then a 3×3 depth-wise conv, a 1×1 conv to C·c_ratio, LayerNorm and GELU; a depth-wise conv position
encoding on v), each followed by the gated MLP; every block adds its input scaled by a learned `gamma` (HAI).

config: {"in_chans", "embed_dim", "depth": [...], "num_heads": [...], "mlp_ratio", "qkv_bias", "upscale",
         "resi_connection": "1conv"|"3conv", "split_size": [a, b], "c_ratio", "img_size"}
"""
import math

import torch
from torch import nn

from dat_reference import SGFN, dat_forward
from ref_common import main, resi_conv
from window_attention import RectWindowAttention, add_tail, rect_shifted


class LSA(RectWindowAttention):
    """DAT's rectangle-window attention (window_attention.py) plus a depth-wise conv of v."""

    def __init__(self, dim, heads, reso, split_size, qkv_bias, rs_id, idx):
        super().__init__(dim, heads, reso, split_size, qkv_bias, rect_shifted(rs_id, idx))
        self.get_v = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)

    def forward(self, x, h, w):
        b, l, c = x.shape
        att, v = self.spatial(x, h, w)
        return self.proj(att + self.get_v(v).permute(0, 2, 3, 1).reshape(b, l, c))


class RGSA(nn.Module):
    def __init__(self, dim, heads, qkv_bias, c_ratio):
        super().__init__()
        self.heads = heads
        self.cr = int(dim * c_ratio)
        self.scale = (dim // heads * c_ratio) ** -0.5
        self.reduction1 = nn.Conv2d(dim, dim, 4, 4, groups=dim)
        self.dwconv = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)
        self.conv = nn.Conv2d(dim, self.cr, 1)
        self.norm_act = nn.Sequential(nn.LayerNorm(self.cr), nn.GELU())
        self.q = nn.Linear(dim, self.cr, bias=qkv_bias)
        self.k = nn.Linear(self.cr, self.cr, bias=qkv_bias)
        self.v = nn.Linear(self.cr, dim, bias=qkv_bias)
        self.cpe = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, h, w):
        b, n, c = x.shape
        r = x.permute(0, 2, 1).reshape(b, c, h, w)
        times = max(2, max(int(math.log(h // 16, 4)), int(math.log(w // 16, 4))))
        for _ in range(times):
            r = self.reduction1(r)
        r = self.norm_act(self.conv(self.dwconv(r)).reshape(b, self.cr, -1).permute(0, 2, 1))
        q = self.q(x).reshape(b, n, self.heads, self.cr // self.heads).permute(0, 2, 1, 3)
        k = self.k(r).reshape(b, -1, self.heads, self.cr // self.heads).permute(0, 2, 1, 3)
        v = self.v(r).reshape(b, -1, self.heads, c // self.heads).permute(0, 2, 1, 3)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        s = 4 ** times
        pe = self.cpe(v.transpose(1, 2).reshape(b, -1, c).transpose(1, 2).reshape(b, c, h // s, w // s))
        v = v + pe.reshape(b, self.heads, c // self.heads, -1).transpose(-1, -2)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class Block(nn.Module):
    def __init__(self, dim, heads, reso, split_size, mlp_ratio, qkv_bias, c_ratio, rs_id, idx):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        if idx % 2 == 0:
            self.attn = LSA(dim, heads, reso, split_size, qkv_bias, rs_id, idx)
        else:
            self.attn = RGSA(dim, heads, qkv_bias, c_ratio)
        self.mlp = SGFN(dim, int(dim * mlp_ratio))
        self.norm2 = nn.LayerNorm(dim)
        self.gamma = nn.Parameter(1e-4 * torch.ones(dim))

    def forward(self, x, h, w):
        res = x
        x = x + self.attn(self.norm1(x), h, w)
        x = x + self.mlp(self.norm2(x), h, w)
        return x + res * self.gamma


class ResidualGroup(nn.Module):
    def __init__(self, dim, reso, heads, split_size, mlp_ratio, qkv_bias, c_ratio, depth, resi, rs_id):
        super().__init__()
        self.blocks = nn.ModuleList(
            [Block(dim, heads, reso, split_size, mlp_ratio, qkv_bias, c_ratio, rs_id, i) for i in range(depth)])
        self.conv = resi_conv(dim, resi)

    def forward(self, x, h, w):
        res = x
        for blk in self.blocks:
            x = blk(x, h, w)
        b, _, c = x.shape
        return res + self.conv(x.transpose(1, 2).reshape(b, c, h, w)).flatten(2).transpose(1, 2)


class RGT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        cin, dim, scale = cfg['in_chans'], cfg['embed_dim'], cfg['upscale']
        self.mean = torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1) if cin == 3 else torch.zeros(1, 1, 1, 1)
        self.conv_first = nn.Conv2d(cin, dim, 3, 1, 1)
        self.before_RG = nn.Sequential(nn.Identity(), nn.LayerNorm(dim))
        self.layers = nn.ModuleList([
            ResidualGroup(dim, cfg.get('img_size', 64), heads, cfg['split_size'], cfg['mlp_ratio'],
                          cfg.get('qkv_bias', True), cfg.get('c_ratio', 0.5), depth, cfg['resi_connection'], i)
            for i, (depth, heads) in enumerate(zip(cfg['depth'], cfg['num_heads']))])
        self.norm = nn.LayerNorm(dim)
        self.conv_after_body = resi_conv(dim, cfg['resi_connection'])
        self.upsampler, self.scale = 'pixelshuffle', scale
        add_tail(self, self.upsampler, dim, 64, cin, scale)

    def forward(self, x):
        return dat_forward(self, x)


if __name__ == '__main__':
    # The position-bias inputs and indices are fixed by the architecture, not trained.
    main(RGT, skip=('rpe_biases', 'relative_position_index', 'attn_mask'))
