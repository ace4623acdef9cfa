"""Reference PyTorch implementations of SPAN, RealPLKSR (with and without DySample), OmniSR, RCAN, ESRGAN+, Real-CUGAN, MoSR and Swift-SRGAN for the TypeScript
converters' tests (test code only, never shipped; the app never runs Python).

Written in this project from the papers and the public architecture definitions (SPAN: hongyuanyu/SPAN;
RealPLKSR: dslisleedh/PLKSR and neosr; DySample: tiny-smart/dysample; OmniSR: Francis0625/Omni-SR; RCAN:
yulunzhang/RCAN and traiNNer-redux; ESRGAN+: ncarraz/ESRGANplus; Real-CUGAN: bilibili/ailab; MoSR: umzi2/MoSR via traiNNer-redux; Swift-SRGAN: Koushik0901/Swift-SRGAN; as spandrel reads them), with the
module and parameter names of the released checkpoints, so the state dicts saved here have the keys and shapes
real user files have. Every parameter is random (norm weights, temperatures and position biases included), and
the last convolution is scaled so the output lies in a 0-1-like range, as a trained model's does.

usage: /usr/bin/python3 sr_reference.py CONFIGS_JSON   (a list, so one interpreter start serves a test file)
each config: {"dir": output folder, "golden": golden file path (support/golden.py), "arch": "span"|"realplksr"|"omnisr"|"rcan"|"esrganplus"|"realcugan"|"mosr"|"swiftsrgan", "seed": int,
              "wrapper": "params_ema"|"params"|"state_dict"|"model"|null, ...arch options,
              "inputs": [{"file": path of float32 [1,C,H,W] data, "c": C, "h": H, "w": W}]}
writes dir/model.pth (torch.save of {wrapper: state_dict}, or the bare state dict) and dir/model.safetensors, and
stores them with the output for input i ("out<i>") in the golden file.
"""
import json
import math
import os
import struct
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import Weights, write_golden  # noqa: E402


# ---------------------------------------------------------------- SPAN


class Conv3XC(nn.Module):
    """1x1 -> 3x3 (valid) -> 1x1 on a zero-padded input, plus a 1x1 skip: the training-time form. Released
    checkpoints also carry `eval_conv` (the fused 3x3), which inference recomputes from these weights."""

    def __init__(self, c_in, c_out, gain=2):
        super().__init__()
        self.sk = nn.Conv2d(c_in, c_out, 1)
        self.conv = nn.Sequential(
            nn.Conv2d(c_in, c_in * gain, 1), nn.Conv2d(c_in * gain, c_out * gain, 3), nn.Conv2d(c_out * gain, c_out, 1)
        )
        self.eval_conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        return self.conv(F.pad(x, (1, 1, 1, 1))) + self.sk(x)


class SPAB(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1_r, self.c2_r, self.c3_r = Conv3XC(c, c), Conv3XC(c, c), Conv3XC(c, c)

    def forward(self, x):
        out1 = self.c1_r(x)
        out2 = self.c2_r(F.silu(out1))
        out3 = self.c3_r(F.silu(out2))
        att = torch.sigmoid(out3) - 0.5
        return (out3 + x) * att, out1


class SPAN(nn.Module):
    def __init__(self, cin, cout, feat, scale, norm):
        super().__init__()
        self.norm = norm
        if not norm:
            self.register_buffer("no_norm", torch.zeros(1))
        self.conv_1 = Conv3XC(cin, feat)
        for i in range(1, 7):
            setattr(self, f"block_{i}", SPAB(feat))
        self.conv_cat = nn.Conv2d(feat * 4, feat, 1)
        self.conv_2 = Conv3XC(feat, feat)
        self.upsampler = nn.Sequential(nn.Conv2d(feat, cout * scale * scale, 3, padding=1), nn.PixelShuffle(scale))

    def last_conv(self):
        return self.upsampler[0]

    def forward(self, x):
        if self.norm:
            x = (x - torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1)) * 255.0
        f = self.conv_1(x)
        b1, _ = self.block_1(f)
        b2, _ = self.block_2(b1)
        b3, _ = self.block_3(b2)
        b4, _ = self.block_4(b3)
        b5, _ = self.block_5(b4)
        b6, b5_2 = self.block_6(b5)
        b6 = self.conv_2(b6)
        return self.upsampler(self.conv_cat(torch.cat([f, b6, b1, b5_2], 1)))


# ---------------------------------------------------------------- RealPLKSR


class ChannelLayerNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.zeros(dim)), eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        return self.weight[:, None, None] * ((x - u) / torch.sqrt(s + self.eps)) + self.bias[:, None, None]


class PLKConv(nn.Module):
    def __init__(self, pdim, k):
        super().__init__()
        self.conv = nn.Conv2d(pdim, pdim, k, 1, k // 2)
        self.pdim = pdim

    def forward(self, x):
        return torch.cat([self.conv(x[:, : self.pdim]), x[:, self.pdim :]], 1)


class EA(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(dim, dim, 3, 1, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.f(x)


class PLKBlock(nn.Module):
    def __init__(self, dim, k, split, use_ea, layer_norm):
        super().__init__()
        self.layer_norm = ChannelLayerNorm(dim, 1e-6) if layer_norm else nn.Identity()
        self.channel_mixer = nn.Sequential(nn.Conv2d(dim, dim * 2, 3, 1, 1), nn.Mish(), nn.Conv2d(dim * 2, dim, 3, 1, 1))
        self.lk = PLKConv(int(dim * split), k)
        self.attn = EA(dim) if use_ea else nn.Identity()
        self.refine = nn.Conv2d(dim, dim, 1)
        self.norm = nn.Identity() if layer_norm else nn.GroupNorm(4, dim)

    def forward(self, x):
        y = self.refine(self.attn(self.lk(self.channel_mixer(self.layer_norm(x)))))
        return self.norm(y) + x


class DySample(nn.Module):
    def __init__(self, cin, cout, scale, groups, end_conv):
        super().__init__()
        self.scale, self.groups = scale, groups
        if end_conv:
            self.end_conv = nn.Conv2d(cin, cout, 1)
        self.offset = nn.Conv2d(cin, 2 * groups * scale * scale, 1)
        self.scope = nn.Conv2d(cin, 2 * groups * scale * scale, 1, bias=False)
        h = (torch.arange(scale, dtype=torch.float32) - (scale - 1) / 2) / scale
        ys, xs = torch.meshgrid(h, h, indexing="ij")
        # Channel 0 holds x offsets (varying along the width), channel 1 y offsets, each repeated per group.
        pos = torch.stack([xs, ys]).repeat(1, groups, 1).reshape(1, -1, 1, 1)
        self.register_buffer("init_pos", pos)

    def forward(self, x):
        b, c, h, w = x.shape
        s, g = self.scale, self.groups
        off = self.offset(x) * self.scope(x).sigmoid() * 0.5 + self.init_pos
        off = off.view(b, 2, g * s * s, h, w)
        gx = (torch.arange(w, dtype=x.dtype) + 0.5).view(1, 1, 1, 1, w).expand(1, 1, 1, h, w)
        gy = (torch.arange(h, dtype=x.dtype) + 0.5).view(1, 1, 1, h, 1).expand(1, 1, 1, h, w)
        base = torch.cat([gx, gy], 1)
        norm = torch.tensor([w, h], dtype=x.dtype).view(1, 2, 1, 1, 1)
        coords = 2 * (base + off) / norm - 1
        coords = F.pixel_shuffle(coords.reshape(b, -1, h, w), s)
        coords = coords.view(b, 2, g, s * h, s * w).permute(0, 2, 3, 4, 1).reshape(b * g, s * h, s * w, 2)
        out = F.grid_sample(
            x.reshape(b * g, c // g, h, w), coords, mode="bilinear", align_corners=False, padding_mode="border"
        ).view(b, c, s * h, s * w)
        return self.end_conv(out) if hasattr(self, "end_conv") else out


class RealPLKSR(nn.Module):
    def __init__(self, dim, blocks, scale, k, split, use_ea, layer_norm, dysample):
        super().__init__()
        self.scale = scale
        self.feats = nn.Sequential(
            nn.Conv2d(3, dim, 3, 1, 1),
            *[PLKBlock(dim, k, split, use_ea, layer_norm) for _ in range(blocks)],
            nn.Dropout2d(0),
            nn.Conv2d(dim, 3 * scale * scale, 3, 1, 1),
        )
        if dysample:
            self.to_img = DySample(3 * scale * scale, 3, scale, 3 if scale % 2 else 4, scale != 1)
        else:
            self.to_img = nn.PixelShuffle(scale)

    def last_conv(self):
        return self.to_img.end_conv if hasattr(self.to_img, "end_conv") else self.feats[-1]

    def forward(self, x):
        return self.to_img(self.feats(x) + torch.repeat_interleave(x, self.scale * self.scale, dim=1))


# ---------------------------------------------------------------- OmniSR


class LayerNorm2d(ChannelLayerNorm):
    def __init__(self, dim):
        super().__init__(dim, 1e-6)


class MBConvFn(nn.Sequential):
    def __init__(self, c):
        hidden = int(c * 0.25)
        gate = nn.Sequential(nn.Identity(), nn.Linear(c, hidden, bias=False), nn.SiLU(), nn.Linear(hidden, c, bias=False))
        super().__init__(nn.Conv2d(c, c, 1), nn.GELU(), nn.Conv2d(c, c, 3, padding=1, groups=c), nn.GELU(), SE(gate), nn.Conv2d(c, c, 1))


class SE(nn.Module):
    def __init__(self, gate):
        super().__init__()
        self.gate = gate

    def forward(self, x):
        y = self.gate(x.mean((2, 3)))
        return x * torch.sigmoid(y)[:, :, None, None]


class MBConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fn = MBConvFn(c)

    def forward(self, x):
        return self.fn(x) + x


class WindowAttention(nn.Module):
    """Attention within ws x ws windows (block or grid) with a learned relative position bias; input is
    [windows, ws*ws, C]."""

    def __init__(self, dim, ws, pe):
        super().__init__()
        self.heads = dim // (dim // 4)
        self.dh = dim // 4
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(dim, dim, bias=False))
        self.pe = pe
        if pe:
            self.rel_pos_bias = nn.Embedding((2 * ws - 1) ** 2, self.heads)
            pos = torch.arange(ws)
            grid = torch.stack(torch.meshgrid(pos, pos, indexing="ij")).reshape(2, -1).t()
            rel = grid[:, None, :] - grid[None, :, :] + ws - 1
            self.register_buffer("idx", rel[..., 0] * (2 * ws - 1) + rel[..., 1], persistent=False)

    def forward(self, x):
        n, t, c = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(n, t, self.heads, self.dh).transpose(1, 2) for z in (q, k, v))
        sim = (q * self.dh**-0.5) @ k.transpose(-1, -2)
        if self.pe:
            sim = sim + self.rel_pos_bias(self.idx).permute(2, 0, 1)
        out = sim.softmax(-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(n, t, c))


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm, self.fn = nn.LayerNorm(dim), fn

    def forward(self, x):
        return self.fn(self.norm(x)) + x


class ConvPreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm, self.fn = LayerNorm2d(dim), fn

    def forward(self, x):
        return self.fn(self.norm(x)) + x


class GatedFFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.project_in = nn.Conv2d(c, c * 2, 1, bias=False)
        self.dwconv = nn.Conv2d(c * 2, c * 2, 3, padding=1, groups=c * 2, bias=False)
        self.project_out = nn.Conv2d(c, c, 1, bias=False)

    def forward(self, x):
        a, b = self.dwconv(self.project_in(x)).chunk(2, dim=1)
        return self.project_out(F.gelu(a) * b)


class ChannelAttention(nn.Module):
    """Transposed (channel) attention inside each ws x ws window, per head."""

    def __init__(self, c, ws, heads=4):
        super().__init__()
        self.heads, self.ws = heads, ws
        self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
        self.qkv = nn.Conv2d(c, c * 3, 1, bias=False)
        self.qkv_dwconv = nn.Conv2d(c * 3, c * 3, 3, padding=1, groups=c * 3, bias=False)
        self.project_out = nn.Conv2d(c, c, 1, bias=False)

    def forward(self, x):
        b, c, h, w = x.shape
        ws, hd = self.ws, self.heads

        def split(t):  # b (head d) (nh ws) (nw ws) -> b (nh nw) head d (ws ws)
            t = t.view(b, hd, c // hd, h // ws, ws, w // ws, ws).permute(0, 3, 5, 1, 2, 4, 6)
            return t.reshape(b, (h // ws) * (w // ws), hd, c // hd, ws * ws)

        q, k, v = (split(t) for t in self.qkv_dwconv(self.qkv(x)).chunk(3, dim=1))
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        out = ((q @ k.transpose(-2, -1)) * self.temperature).softmax(-1) @ v
        out = out.view(b, h // ws, w // ws, hd, c // hd, ws, ws).permute(0, 3, 4, 1, 5, 2, 6).reshape(b, c, h, w)
        return self.project_out(out)


def to_windows(x, ws, grid):
    b, c, h, w = x.shape
    if grid:  # b d (w1 x) (w2 y) -> (b x y) (w1 w2) d
        t = x.view(b, c, ws, h // ws, ws, w // ws).permute(0, 3, 5, 2, 4, 1)
    else:  # b d (x w1) (y w2) -> (b x y) (w1 w2) d
        t = x.view(b, c, h // ws, ws, w // ws, ws).permute(0, 2, 4, 3, 5, 1)
    return t.reshape(-1, ws * ws, c)


def from_windows(t, shape, ws, grid):
    b, c, h, w = shape
    t = t.view(b, h // ws, w // ws, ws, ws, c)
    if grid:
        return t.permute(0, 5, 3, 1, 4, 2).reshape(b, c, h, w)
    return t.permute(0, 5, 1, 3, 2, 4).reshape(b, c, h, w)


class Windowed(nn.Module):
    """A parameter-free layer position (the checkpoints' Rearrange entries) so indices line up."""

    def forward(self, x):
        return x


class OSABlock(nn.Module):
    def __init__(self, c, ws, pe):
        super().__init__()
        self.ws = ws
        self.layer = nn.Sequential(
            MBConv(c),
            Windowed(),
            PreNormResidual(c, WindowAttention(c, ws, pe)),
            Windowed(),
            ConvPreNormResidual(c, GatedFFN(c)),
            ConvPreNormResidual(c, ChannelAttention(c, ws)),
            ConvPreNormResidual(c, GatedFFN(c)),
            Windowed(),
            PreNormResidual(c, WindowAttention(c, ws, pe)),
            Windowed(),
            ConvPreNormResidual(c, GatedFFN(c)),
        )

    def forward(self, x):
        L = self.layer
        x = L[0](x)
        x = from_windows(L[2](to_windows(x, self.ws, False)), x.shape, self.ws, False)
        x = L[6](L[5](L[4](x)))
        x = from_windows(L[8](to_windows(x, self.ws, True)), x.shape, self.ws, True)
        return L[10](x)


class ESA(nn.Module):
    def __init__(self, f, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, f, 1)
        self.conv_f = nn.Conv2d(f, f, 1)
        self.conv2 = nn.Conv2d(f, f, 3, stride=2)
        self.conv3 = nn.Conv2d(f, f, 3, padding=1)
        self.conv4 = nn.Conv2d(f, c, 1)

    def forward(self, x):
        c1_ = self.conv1(x)
        c3 = self.conv3(F.max_pool2d(self.conv2(c1_), kernel_size=7, stride=3))
        c3 = F.interpolate(c3, (x.size(2), x.size(3)), mode="bilinear", align_corners=False)
        return x * torch.sigmoid(self.conv4(c3 + self.conv_f(c1_)))


class OSAG(nn.Module):
    def __init__(self, c, blocks, ws, pe, bias):
        super().__init__()
        self.residual_layer = nn.Sequential(*[OSABlock(c, ws, pe) for _ in range(blocks)], nn.Conv2d(c, c, 1, bias=bias))
        self.esa = ESA(max(c // 4, 16), c)

    def forward(self, x):
        return self.esa(self.residual_layer(x) + x)


class OmniSR(nn.Module):
    def __init__(self, cin, cout, feat, blocks, groups, ws, pe, scale, bias):
        super().__init__()
        self.ws, self.scale = ws, scale
        self.residual_layer = nn.Sequential(*[OSAG(feat, blocks, ws, pe, bias) for _ in range(groups)])
        self.input = nn.Conv2d(cin, feat, 3, padding=1, bias=bias)
        self.output = nn.Conv2d(feat, feat, 3, padding=1, bias=bias)
        self.up = nn.Sequential(nn.Conv2d(feat, cout * scale * scale, 3, padding=1, bias=bias), nn.PixelShuffle(scale))

    def last_conv(self):
        return self.up[0]

    def forward(self, x):
        h, w = x.shape[2:]
        x = F.pad(x, (0, (self.ws - w % self.ws) % self.ws, 0, (self.ws - h % self.ws) % self.ws))
        r = self.input(x)
        out = self.up(self.output(self.residual_layer(r)) + r)
        return out[:, :, : h * self.scale, : w * self.scale]


# ---------------------------------------------------------------- RCAN


class MeanShift(nn.Conv2d):
    """RCAN's fixed 1x1 conv that subtracts (sign -1) or adds the DIV2K mean at rgb_range 255; stored in the
    checkpoint like any conv (sub_mean.* / add_mean.*)."""

    def __init__(self, sign):
        super().__init__(3, 3, 1)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.bias.data = sign * 255 * torch.tensor([0.4488, 0.4371, 0.4040])


class CALayer(nn.Module):
    def __init__(self, c, reduction):
        super().__init__()
        self.conv_du = nn.Sequential(nn.Conv2d(c, c // reduction, 1), nn.ReLU(), nn.Conv2d(c // reduction, c, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.conv_du(x.mean((2, 3), keepdim=True))


class RCAB(nn.Module):
    def __init__(self, c, k, reduction):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, k, padding=k // 2), nn.ReLU(), nn.Conv2d(c, c, k, padding=k // 2), CALayer(c, reduction))

    def forward(self, x):
        return self.body(x) + x


class ResidualGroup(nn.Module):
    def __init__(self, c, k, reduction, blocks):
        super().__init__()
        self.body = nn.Sequential(*[RCAB(c, k, reduction) for _ in range(blocks)], nn.Conv2d(c, c, k, padding=k // 2))

    def forward(self, x):
        return self.body(x) + x


class RCAN(nn.Module):
    """Zhang et al. 2018 (yulunzhang/RCAN, EDSR-PyTorch code base), with traiNNer-redux's options: norm off (no
    mean shift, rgb_range 1) and unshuffle_mod (1x/2x models: pixel-unshuffle to a 4x network, reflect-padded to
    the unshuffle factor and cropped back)."""

    def __init__(self, colors, feat, groups, blocks, reduction, scale, kernel, norm, unshuffle):
        super().__init__()
        self.scale, self.norm = scale, norm
        self.rgb_range = 255 if norm else 1
        if norm:
            self.sub_mean, self.add_mean = MeanShift(-1), MeanShift(1)
        self.down = 4 // scale if unshuffle and scale <= 2 else 1
        inner = 4 if self.down > 1 else scale
        pad = kernel // 2
        head = [nn.Conv2d(colors * self.down * self.down, feat, kernel, padding=pad)]
        self.head = nn.Sequential(nn.PixelUnshuffle(self.down), *head) if self.down > 1 else nn.Sequential(*head)
        self.body = nn.Sequential(*[ResidualGroup(feat, kernel, reduction, blocks) for _ in range(groups)], nn.Conv2d(feat, feat, kernel, padding=pad))
        up = []
        if inner & (inner - 1) == 0:
            for _ in range(int(math.log2(inner))):
                up += [nn.Conv2d(feat, 4 * feat, 3, padding=1), nn.PixelShuffle(2)]
        else:
            up += [nn.Conv2d(feat, 9 * feat, 3, padding=1), nn.PixelShuffle(3)]
        self.tail = nn.Sequential(nn.Sequential(*up), nn.Conv2d(feat, colors, kernel, padding=pad))

    def last_conv(self):
        return self.tail[1]

    def forward(self, x):
        h, w = x.shape[2:]
        d = self.down
        if (h % d) or (w % d):
            x = F.pad(x, (0, (d - w % d) % d, 0, (d - h % d) % d), mode="reflect")
        x = x * self.rgb_range
        if self.norm:
            x = self.sub_mean(x)
        x = self.head(x)
        x = self.tail(self.body(x) + x)
        if self.norm:
            x = self.add_mean(x)
        return (x / self.rgb_range)[:, :, : h * self.scale, : w * self.scale]


# ---------------------------------------------------------------- ESRGAN+


class RDBPlus(nn.Module):
    """ESRGAN's residual dense block with ESRGAN+'s two extra residual paths (Rakotonirina & Rasoanaivo 2020,
    ncarraz/ESRGANplus): a bias-free 1x1 conv of the input added to x2, and x2 added to x4. Old-arch key names
    (convJ.0 inside each conv block). ESRGAN+'s Gaussian noise is a training-time layer with no parameters."""

    def __init__(self, nf, gc):
        super().__init__()
        self.conv1x1 = nn.Conv2d(nf, gc, 1, bias=False)
        for j in range(1, 6):
            cin, cout = nf + (j - 1) * gc, gc if j < 5 else nf
            layers = [nn.Conv2d(cin, cout, 3, padding=1)] + ([nn.LeakyReLU(0.2)] if j < 5 else [])
            setattr(self, f"conv{j}", nn.Sequential(*layers))

    def forward(self, x):
        x1 = self.conv1(x)
        x2 = self.conv2(torch.cat((x, x1), 1)) + self.conv1x1(x)
        x3 = self.conv3(torch.cat((x, x1, x2), 1))
        x4 = self.conv4(torch.cat((x, x1, x2, x3), 1)) + x2
        x5 = self.conv5(torch.cat((x, x1, x2, x3, x4), 1))
        return x5 * 0.2 + x


class RRDBPlus(nn.Module):
    def __init__(self, nf, gc):
        super().__init__()
        self.RDB1, self.RDB2, self.RDB3 = RDBPlus(nf, gc), RDBPlus(nf, gc), RDBPlus(nf, gc)

    def forward(self, x):
        return self.RDB3(self.RDB2(self.RDB1(x))) * 0.2 + x


class Shortcut(nn.Module):
    def __init__(self, sub):
        super().__init__()
        self.sub = sub

    def forward(self, x):
        return x + self.sub(x)


class EsrganPlus(nn.Module):
    """The old-arch ESRGAN sequence: model.0 conv, model.1 shortcut over the RRDBs and the LR conv, then per 2x an
    Upsample / conv / LeakyReLU triple, the HR conv, LeakyReLU and the last conv. With `shuffle` (Real-ESRGAN's
    1x/2x trick) the input is reflect-padded to the factor and pixel-unshuffled first, and the output cropped."""

    def __init__(self, cin, cout, nf, gc, blocks, ups, shuffle):
        super().__init__()
        self.shuffle, self.scale = shuffle, 2**ups // shuffle
        layers = [nn.Conv2d(cin * shuffle * shuffle, nf, 3, padding=1)]
        layers.append(Shortcut(nn.Sequential(*[RRDBPlus(nf, gc) for _ in range(blocks)], nn.Conv2d(nf, nf, 3, padding=1))))
        for _ in range(ups):
            layers += [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(nf, nf, 3, padding=1), nn.LeakyReLU(0.2)]
        layers += [nn.Conv2d(nf, nf, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(nf, cout, 3, padding=1)]
        self.model = nn.Sequential(*layers)

    def last_conv(self):
        return self.model[-1]

    def forward(self, x):
        if self.shuffle == 1:
            return self.model(x)
        h, w = x.shape[2:]
        s = self.shuffle
        if (h % s) or (w % s):
            x = F.pad(x, (0, (s - w % s) % s, 0, (s - h % s) % s), mode="reflect")
        return self.model(F.pixel_unshuffle(x, s))[:, :, : h * self.scale, : w * self.scale]


# ---------------------------------------------------------------- Real-CUGAN


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c // 8, 1)
        self.conv2 = nn.Conv2d(c // 8, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.conv2(F.relu(self.conv1(x.mean((2, 3), keepdim=True)))))


class CuganConv(nn.Module):
    """Two valid 3x3 convs with LeakyReLU(0.1), then squeeze-excitation on the deeper levels."""

    def __init__(self, cin, mid, cout, se):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(cin, mid, 3), nn.LeakyReLU(0.1), nn.Conv2d(mid, cout, 3), nn.LeakyReLU(0.1))
        if se:
            self.seblock = SE(cout)
        self.se = se

    def forward(self, x):
        z = self.conv(x)
        return self.seblock(z) if self.se else z


def crop(x, n):
    return x[:, :, n:-n, n:-n]


class CuganUNet1(nn.Module):
    """Real-CUGAN's shallow U-Net (valid convs, so it shrinks its input); its last layer upsamples 2x (k4 s2 p3)
    or 3x (k5 s3 p2) by a transposed conv, or is a valid 3x3 conv."""

    def __init__(self, cin, cout, bottom):
        super().__init__()
        self.conv1 = CuganConv(cin, 32, 64, False)
        self.conv1_down = nn.Conv2d(64, 64, 2, 2)
        self.conv2 = CuganConv(64, 128, 64, True)
        self.conv2_up = nn.ConvTranspose2d(64, 64, 2, 2)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.conv_bottom = {"x2": lambda: nn.ConvTranspose2d(64, cout, 4, 2, 3), "x3": lambda: nn.ConvTranspose2d(64, cout, 5, 3, 2), "conv": lambda: nn.Conv2d(64, cout, 3)}[bottom]()

    def forward(self, x):
        x1 = self.conv1(x)
        x2 = self.conv2(F.leaky_relu(self.conv1_down(x1), 0.1))
        x2 = F.leaky_relu(self.conv2_up(x2), 0.1)
        return self.conv_bottom(F.leaky_relu(self.conv3(crop(x1, 4) + x2), 0.1))


class CuganUNet2(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = CuganConv(cin, 32, 64, False)
        self.conv1_down = nn.Conv2d(64, 64, 2, 2)
        self.conv2 = CuganConv(64, 64, 128, True)
        self.conv2_down = nn.Conv2d(128, 128, 2, 2)
        self.conv3 = CuganConv(128, 256, 128, True)
        self.conv3_up = nn.ConvTranspose2d(128, 128, 2, 2)
        self.conv4 = CuganConv(128, 64, 64, True)
        self.conv4_up = nn.ConvTranspose2d(64, 64, 2, 2)
        self.conv5 = nn.Conv2d(64, 64, 3)
        self.conv_bottom = nn.Conv2d(64, cout, 3)

    def forward(self, x):
        x1 = self.conv1(x)
        x2 = self.conv2(F.leaky_relu(self.conv1_down(x1), 0.1))
        x3 = self.conv3(F.leaky_relu(self.conv2_down(x2), 0.1))
        x3 = F.leaky_relu(self.conv3_up(x3), 0.1)
        x4 = F.leaky_relu(self.conv4_up(self.conv4(crop(x2, 4) + x3)), 0.1)
        return self.conv_bottom(F.leaky_relu(self.conv5(crop(x1, 16) + x4), 0.1))


class RealCugan(nn.Module):
    """bilibili/ailab Real-CUGAN (UpCunet2x, 3x, 4x and 2x_fast, as spandrel defines them): the input is
    reflect-padded by a fixed border (and to the scale's multiple), runs through two U-Nets whose sum is cropped
    back; 4x and fast end in a conv + pixel shuffle and add the nearest-upscaled input. "pro" models (a `pro`
    buffer) work on x * 0.7 + 0.15."""

    def __init__(self, variant, cin, cout, pro):
        super().__init__()
        self.variant = variant
        if pro:
            self.register_buffer("pro", torch.zeros(1))
        self.is_pro = pro
        if variant == "2x":
            self.unet1, self.unet2 = CuganUNet1(cin, cout, "x2"), CuganUNet2(cin, cout)
        elif variant == "3x":
            self.unet1, self.unet2 = CuganUNet1(cin, cout, "x3"), CuganUNet2(cin, cout)
        else:
            self.unet1 = CuganUNet1(cin * 4 if variant == "fast" else cin, 64, "x2")
            self.unet2 = CuganUNet2(64, 64)
            self.conv_final = nn.Conv2d(64, 4 * cout, 3)

    def last_convs(self):
        return [self.unet2.conv_bottom] if self.variant in ("2x", "3x") else [self.conv_final]

    def forward(self, x):
        h, w = x.shape[2:]
        if self.is_pro:
            x = x * 0.7 + 0.15
        x00 = x
        v = self.variant
        border, mult, scale = {"2x": (18, 2, 2), "3x": (14, 4, 3), "4x": (19, 2, 4), "fast": (38, 2, 2)}[v]
        ph, pw = ((h - 1) // mult + 1) * mult, ((w - 1) // mult + 1) * mult
        x = F.pad(x, (border, border + pw - w, border, border + ph - h), "reflect")
        if v == "fast":
            x = F.pixel_unshuffle(x, 2)
        x = self.unet1(x)
        x = self.unet2(x) + crop(x, 20)
        if v in ("4x", "fast"):
            x = F.pixel_shuffle(crop(self.conv_final(x), 1), 2)
        x = x[:, :, : h * scale, : w * scale]
        if v in ("4x", "fast"):
            x = x + F.interpolate(x00, scale_factor=scale, mode="nearest")
        if self.is_pro:
            x = (x - 0.15) / 0.7
        return x


# ---------------------------------------------------------------- MoSR (umzi2 / traiNNer-redux, as spandrel reads it)


class MoSRGatedBlock(nn.Module):
    """MambaOut's gated CNN unit: norm → 3×3 fc1 → (gate, identity, depthwise part) → Mish(fc2(Mish(g)·[i, c]))."""

    def __init__(self, dim, expansion, kernel, conv_ratio):
        super().__init__()
        self.norm = ChannelLayerNorm(dim, 1e-6)
        hidden = int(expansion * dim)
        conv = int(conv_ratio * dim)
        self.fc1 = nn.Conv2d(dim, hidden * 2, 3, 1, 1)
        self.split = [hidden, hidden - conv, conv]
        self.conv = nn.Conv2d(conv, conv, kernel, 1, kernel // 2, groups=conv)
        self.fc2 = nn.Conv2d(hidden, dim, 3, 1, 1)

    def forward(self, x):
        g, i, c = torch.split(self.fc1(self.norm(x)), self.split, dim=1)
        y = F.mish(self.fc2(F.mish(g) * torch.cat((i, self.conv(c)), dim=1)))
        return y + (x - 0.5)


class MoSRConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.Mish(), nn.Conv2d(cout, cout, 3, 1, 1), nn.Mish())
        self.conv11 = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        return self.block(x) + self.conv11(x)


class MoSRGPS(nn.Module):
    """Geo-ensemble PixelShuffle: 8 predictions of out·s² channels, averaged, then shuffled."""

    def __init__(self, dim, scale, out):
        super().__init__()
        self.in_to_k = nn.Conv2d(dim, scale * scale * out * 8, 3, 1, 1)
        self.scale = scale

    def forward(self, x):
        y = self.in_to_k(x)
        y = y.reshape(y.shape[0], 8, -1, y.shape[-2], y.shape[-1]).mean(dim=1)
        return F.pixel_shuffle(y, self.scale)


class MoSR(nn.Module):
    def __init__(self, cin, cout, scale, blocks, dim, upsampler, kernel, expansion, conv_ratio):
        super().__init__()
        if upsampler in ("ps", "gps"):
            cout = cin
        self.gblocks = nn.Sequential(
            nn.Conv2d(cin, dim, 3, 1, 1),
            *[MoSRGatedBlock(dim, expansion, kernel, conv_ratio) for _ in range(blocks)],
            nn.Conv2d(dim, dim * 2, 3, 1, 1),
            nn.Mish(),
            nn.Conv2d(dim * 2, dim, 3, 1, 1),
            nn.Mish(),
            nn.Conv2d(dim, dim, 1, 1),
        )
        self.shortcut = MoSRConvBlock(cin, dim)
        if upsampler == "ps":
            self.upsampler = nn.Sequential(nn.Conv2d(dim, cout * scale * scale, 3, 1, 1), nn.PixelShuffle(scale))
        elif upsampler == "gps":
            self.upsampler = MoSRGPS(dim, scale, cout)
        else:
            self.upsampler = DySample(dim, cout, scale, 4, True)

    def last_conv(self):
        u = self.upsampler
        return u[0] if isinstance(u, nn.Sequential) else u.in_to_k if isinstance(u, MoSRGPS) else u.end_conv

    def forward(self, x):
        return self.upsampler(self.gblocks(x) + (self.shortcut(x) - 0.5))


# ---------------------------------------------------------------- Swift-SRGAN (Koushik0901, as spandrel reads it)


class SeparableConv(nn.Module):
    def __init__(self, cin, cout, k, bias=True):
        super().__init__()
        self.depthwise = nn.Conv2d(cin, cin, k, 1, k // 2, groups=cin, bias=bias)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=bias)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def random_bn_prelu(module, gen):
    """BatchNorm statistics and affine, and PReLU slopes, away from their constant defaults (the converter folds
    them; defaults would hide a wrong fold)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))
                m.weight.copy_(1 + 0.2 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            elif isinstance(m, nn.PReLU):
                m.weight.copy_(0.25 + 0.1 * torch.randn(m.weight.shape, generator=gen))


class SwiftConvBlock(nn.Module):
    def __init__(self, cin, cout, k, act=True, bn=True):
        super().__init__()
        self.use_act = act
        self.cnn = SeparableConv(cin, cout, k, bias=not bn)
        self.bn = nn.BatchNorm2d(cout) if bn else nn.Identity()
        self.act = nn.PReLU(cout)

    def forward(self, x):
        y = self.bn(self.cnn(x))
        return self.act(y) if self.use_act else y


class SwiftResidual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block1 = SwiftConvBlock(c, c, 3)
        self.block2 = SwiftConvBlock(c, c, 3, act=False)

    def forward(self, x):
        return self.block2(self.block1(x)) + x


class SwiftUpsample(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = SeparableConv(c, 4 * c, 3)
        self.act = nn.PReLU(c)

    def forward(self, x):
        return self.act(F.pixel_shuffle(self.conv(x), 2))


class SwiftSRGAN(nn.Module):
    def __init__(self, cin, feat, blocks, scale, seed):
        super().__init__()
        self.initial = SwiftConvBlock(cin, feat, 9, bn=False)
        self.residual = nn.Sequential(*[SwiftResidual(feat) for _ in range(blocks)])
        self.convblock = SwiftConvBlock(feat, feat, 3, act=False)
        self.upsampler = nn.Sequential(*[SwiftUpsample(feat) for _ in range(int(math.log2(scale)))])
        self.final_conv = SeparableConv(feat, cin, 9)
        random_bn_prelu(self, torch.Generator().manual_seed(seed + 1))

    def last_conv(self):
        return self.final_conv.pointwise

    def forward(self, x):
        initial = self.initial(x)
        x = self.convblock(self.residual(initial)) + initial
        return (torch.tanh(self.final_conv(self.upsampler(x))) + 1) / 2


# ---------------------------------------------------------------- driver


def build(cfg):
    arch = cfg["arch"]
    if arch == "span":
        return SPAN(cfg["in"], cfg["out"], cfg["feat"], cfg["scale"], cfg["norm"])
    if arch == "realplksr":
        return RealPLKSR(
            cfg["dim"], cfg["blocks"], cfg["scale"], cfg["kernel"], cfg["split"], cfg["ea"], cfg["layerNorm"], cfg["dysample"]
        )
    if arch == "omnisr":
        return OmniSR(
            cfg["in"], cfg["out"], cfg["feat"], cfg["blocks"], cfg["groups"], cfg["window"], cfg["pe"], cfg["scale"], cfg["bias"]
        )
    if arch == "rcan":
        return RCAN(
            cfg["colors"], cfg["feat"], cfg["groups"], cfg["blocks"], cfg["reduction"], cfg["scale"], cfg.get("kernel", 3), cfg["norm"], cfg.get("unshuffle", False)
        )
    if arch == "esrganplus":
        return EsrganPlus(cfg["in"], cfg["out"], cfg["feat"], cfg["grow"], cfg["blocks"], cfg["ups"], cfg.get("shuffle", 1))
    if arch == "realcugan":
        return RealCugan(cfg["variant"], cfg.get("in", 3), cfg.get("out", 3), cfg.get("pro", False))
    if arch == "mosr":
        return MoSR(
            cfg.get("in", 3), cfg.get("out", 3), cfg["scale"], cfg["blocks"], cfg["dim"], cfg["upsampler"],
            cfg.get("kernel", 7), cfg.get("expansion", 1.5), cfg.get("convRatio", 1.0)
        )
    if arch == "swiftsrgan":
        return SwiftSRGAN(cfg.get("in", 3), cfg["feat"], cfg["blocks"], cfg["scale"], cfg["seed"])
    raise SystemExit(f"unknown arch {arch}")


def randomise(model, gen):
    """Default init for weights; the parameters torch initialises to constants get random values too."""
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if ("norm" in name or "layer_norm" in name) and p.dim() == 1:
            p.data = (1 + 0.2 * torch.randn(p.shape, generator=gen)) if leaf == "weight" else 0.1 * torch.randn(p.shape, generator=gen)
        elif leaf == "temperature":
            p.data = 1 + 0.3 * torch.randn(p.shape, generator=gen)
        elif name.startswith(("sub_mean.", "add_mean.")):
            continue  # RCAN's mean shift is fixed, as in every released checkpoint
        elif leaf == "bias":
            p.data = 0.05 * torch.randn(p.shape, generator=gen)


def save_safetensors(sd, path, metadata):
    header, blobs, offset = {"__metadata__": {"format": "pt", **metadata}}, [], 0
    for k, t in sd.items():
        b = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    js = json.dumps(header).encode()
    js += b" " * ((8 - (8 + len(js)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))


def main():
    for cfg in json.loads(sys.argv[1]):
        run(cfg["dir"], cfg)


def run(out_dir, cfg):
    torch.manual_seed(cfg["seed"])
    gen = torch.Generator().manual_seed(cfg["seed"])
    model = build(cfg)
    randomise(model, gen)
    model.eval()
    inputs = []
    for spec in cfg["inputs"]:
        with open(spec["file"], "rb") as f:
            data = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
        inputs.append(data.view(1, spec["c"], spec["h"], spec["w"]))
    weights = Weights(cfg["seed"])
    with torch.no_grad():
        # Tame the random network: scale its last convolution so the first output has a spread of about 0.25.
        for last in model.last_convs() if hasattr(model, "last_convs") else [model.last_conv()]:
            first = model(inputs[0])
            k = 0.25 / max(first.std().item(), 1e-6)
            last.weight.data *= k
            if last.bias is not None:
                last.bias.data *= k
        weights.reseed(model)
        outs = [model(x) for x in inputs]
    sd = model.state_dict()
    if cfg["arch"] == "span":
        # Real checkpoints carry stale fused eval_conv weights; the converter must not use them.
        for key in [k for k in sd if k.endswith("eval_conv.weight")]:
            sd[key] = weights.make(key, tuple(sd[key].shape), 0.0, 1.0, salt="stale:")
    if cfg["arch"] == "omnisr" and cfg.get("thop"):
        # Checkpoints trained with thop's profiler carry counters on every module; loaders drop them.
        for name, _ in list(model.named_modules()):
            for counter in ("total_ops", "total_params"):
                sd[f"{name}.{counter}" if name else counter] = torch.zeros(1, dtype=torch.float64)
    wrapper = cfg.get("wrapper")
    files = {"model.pth": os.path.join(out_dir, "model.pth"), "model.safetensors": os.path.join(out_dir, "model.safetensors")}
    torch.save({wrapper: sd} if wrapper else sd, files["model.pth"])
    save_safetensors(sd, files["model.safetensors"], cfg.get("metadata", {}))
    write_golden(
        cfg["golden"],
        weights,
        files,
        {f"in{i}": spec["file"] for i, spec in enumerate(cfg["inputs"])},
        [(f"out{i}", o.contiguous().numpy(), "f32") for i, o in enumerate(outs)],
    )


if __name__ == "__main__":
    main()
