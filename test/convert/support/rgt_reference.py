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
from torch.nn import functional as F

from dat_reference import SGFN, SpatialAttention, shifted
from ref_common import main, resi_conv


class LSA(nn.Module):
    def __init__(self, dim, heads, reso, split_size, qkv_bias, rs_id, idx):
        super().__init__()
        self.split_size = split_size
        self.shift_size = [split_size[0] // 2, split_size[1] // 2]
        self.shifted = shifted(rs_id, idx)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attns = nn.ModuleList([SpatialAttention(dim // 2, i, split_size, heads // 2) for i in range(2)])
        if self.shifted:
            m0, m1 = self.calculate_mask(reso, reso)
            self.register_buffer('attn_mask_0', m0)
            self.register_buffer('attn_mask_1', m1)
        self.get_v = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)

    def calculate_mask(self, h, w):
        def one(sh, sw, th, tw):
            img = torch.zeros((1, h, w, 1))
            cnt = 0
            for hs in (slice(0, -sh), slice(-sh, -th), slice(-th, None)):
                for ws in (slice(0, -sw), slice(-sw, -tw), slice(-tw, None)):
                    img[:, hs, ws, :] = cnt
                    cnt += 1
            win = img.view(1, h // sh, sh, w // sw, sw, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, sh * sw)
            m = win.unsqueeze(1) - win.unsqueeze(2)
            return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)

        (a, b), (s, t) = self.split_size, self.shift_size
        return one(a, b, s, t), one(b, a, t, s)

    def forward(self, x, h, w):
        b, l, c = x.shape
        qkv = self.qkv(x).reshape(b, -1, 3, c).permute(2, 0, 1, 3)
        v = qkv[2].transpose(-2, -1).reshape(b, c, h, w)
        m = max(self.split_size)
        pad_r, pad_b = (m - w % m) % m, (m - h % m) % m
        qkv = qkv.reshape(3 * b, h, w, c).permute(0, 3, 1, 2)
        qkv = F.pad(qkv, (0, pad_r, 0, pad_b)).reshape(3, b, c, -1).transpose(-2, -1)
        hp, wp = h + pad_b, w + pad_r
        if self.shifted:
            qkv = qkv.view(3, b, hp, wp, c)
            s0, s1 = self.shift_size
            q0 = torch.roll(qkv[..., : c // 2], shifts=(-s0, -s1), dims=(2, 3)).reshape(3, b, hp * wp, c // 2)
            q1 = torch.roll(qkv[..., c // 2:], shifts=(-s1, -s0), dims=(2, 3)).reshape(3, b, hp * wp, c // 2)
            m0, m1 = self.calculate_mask(hp, wp)
            x1 = torch.roll(self.attns[0](q0, hp, wp, m0), shifts=(s0, s1), dims=(1, 2))
            x2 = torch.roll(self.attns[1](q1, hp, wp, m1), shifts=(s1, s0), dims=(1, 2))
        else:
            x1 = self.attns[0](qkv[..., : c // 2], hp, wp)
            x2 = self.attns[1](qkv[..., c // 2:], hp, wp)
        att = torch.cat([x1[:, :h, :w].reshape(b, l, c // 2), x2[:, :h, :w].reshape(b, l, c // 2)], dim=2)
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
        self.conv_before_upsample = nn.Sequential(nn.Conv2d(dim, 64, 3, 1, 1), nn.LeakyReLU(inplace=True))
        ups = []
        if scale == 3:
            ups += [nn.Conv2d(64, 9 * 64, 3, 1, 1), nn.PixelShuffle(3)]
        else:
            for _ in range(scale.bit_length() - 1):
                ups += [nn.Conv2d(64, 4 * 64, 3, 1, 1), nn.PixelShuffle(2)]
        self.upsample = nn.Sequential(*ups)
        self.conv_last = nn.Conv2d(64, cin, 3, 1, 1)

    def forward(self, x):
        x = x - self.mean
        _, _, h, w = x.shape
        x = self.conv_first(x)
        t = self.before_RG(x.flatten(2).transpose(1, 2))
        for layer in self.layers:
            t = layer(t, h, w)
        t = self.norm(t).transpose(1, 2).reshape(x.shape)
        x = self.conv_after_body(t) + x
        return self.conv_last(self.upsample(self.conv_before_upsample(x))) + self.mean


if __name__ == '__main__':
    # The position-bias inputs and indices are fixed by the architecture, not trained.
    main(RGT, skip=('rpe_biases', 'relative_position_index', 'attn_mask'))
