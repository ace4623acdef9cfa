"""FDAT (Fast Dual Aggregation Transformer, traiNNer-redux 2025; stinkybread/fdat as spandrel packages it) for the
converter's tests (test code only).

Written from the public definition, with its module and parameter names, so the state dict has the keys of
released FDAT files (including the uint8 `upsampler.MetaUpsample` buffer the loaders read the upsampler from).
Residual groups of blocks that alternate non-shifted window attention (a learned [heads, ws², ws²] bias, the map
zero-padded to the window inside the attention) and channel attention (L2-normalised q, k over all tokens,
a learned temperature), each fused with a depth-wise conv branch by a simplified interaction module, then a
conv-FFN; the `UniUpsampleV3` tails (conv, pixelshuffle(direct), nearest+conv, dysample, transpose+conv, pa_up).

config: {"in_chans", "out_ch", "scale", "embed_dim", "num_groups", "depth_per_group", "num_heads", "window_size",
         "ffn_expansion_ratio", "aim_reduction_ratio", "mid_dim", "upsampler_type", "unshuffle_mod"}
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

import ref_common
from ref_common import main
from sr_reference import DySample

MODES = ["conv", "pixelshuffledirect", "pixelshuffle", "nearest+conv", "dysample", "transpose+conv", "lda", "pa_up"]


class PA(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(dim, dim, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.conv(x)


def stages(scale):
    if scale & (scale - 1) == 0:
        return [2] * int(math.log2(scale))
    if scale == 3:
        return [3]
    raise ValueError(scale)


class Upsampler(nn.Sequential):
    def __init__(self, mode, scale, in_dim, out_dim, mid_dim, group=4):
        m = []
        # What the released files record as in_dim: pa_up's 2^n loop rebinds it to mid_dim.
        meta_in = mid_dim if mode == "pa_up" and scale != 1 and scale & (scale - 1) == 0 else in_dim
        if scale == 1 or mode == "conv":
            m.append(nn.Conv2d(in_dim, out_dim, 3, 1, 1))
        elif mode == "pixelshuffledirect":
            m += [nn.Conv2d(in_dim, out_dim * scale**2, 3, 1, 1), nn.PixelShuffle(scale)]
        elif mode == "pixelshuffle":
            m += [nn.Conv2d(in_dim, mid_dim, 3, 1, 1), nn.LeakyReLU()]
            for r in stages(scale):
                m += [nn.Conv2d(mid_dim, r * r * mid_dim, 3, 1, 1), nn.PixelShuffle(r)]
            m.append(nn.Conv2d(mid_dim, out_dim, 3, 1, 1))
        elif mode == "nearest+conv":
            for r in stages(scale):
                m += [nn.Conv2d(in_dim, in_dim, 3, 1, 1), nn.Upsample(scale_factor=r), nn.LeakyReLU(0.2)]
            m += [nn.Conv2d(in_dim, in_dim, 3, 1, 1), nn.LeakyReLU(0.2), nn.Conv2d(in_dim, out_dim, 3, 1, 1)]
        elif mode == "dysample":
            if mid_dim != in_dim:
                m += [nn.Conv2d(in_dim, mid_dim, 3, 1, 1), nn.LeakyReLU()]
            m.append(DySample(mid_dim, out_dim, scale, group, True))
        elif mode == "transpose+conv":
            if scale == 2:
                m.append(nn.ConvTranspose2d(in_dim, out_dim, 4, 2, 1))
            elif scale == 3:
                m.append(nn.ConvTranspose2d(in_dim, out_dim, 3, 3, 0))
            else:
                m += [nn.ConvTranspose2d(in_dim, in_dim, 4, 2, 1), nn.GELU(), nn.ConvTranspose2d(in_dim, out_dim, 4, 2, 1)]
            m.append(nn.Conv2d(out_dim, out_dim, 3, 1, 1))
        elif mode == "pa_up":
            for r in stages(scale):
                m += [nn.Upsample(scale_factor=r), nn.Conv2d(in_dim, mid_dim, 3, 1, 1), PA(mid_dim), nn.LeakyReLU(0.2),
                      nn.Conv2d(mid_dim, mid_dim, 3, 1, 1), nn.LeakyReLU(0.2)]
                in_dim = mid_dim
            m.append(nn.Conv2d(mid_dim, out_dim, 3, 1, 1))
        super().__init__(*m)
        meta = [3, MODES.index(mode), scale, meta_in, out_dim, mid_dim, group]
        self.register_buffer("MetaUpsample", torch.tensor(meta, dtype=torch.uint8))


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads, qkv_bias):
        super().__init__()
        self.ws, self.nh, self.scale = ws, heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, dim * 3, bias=qkv_bias), nn.Linear(dim, dim)
        self.bias = nn.Parameter(torch.zeros(heads, ws * ws, ws * ws))

    def forward(self, x, h, w):
        b, n, c = x.shape
        ws = self.ws
        pr, pb = (ws - w % ws) % ws, (ws - h % ws) % ws
        x = F.pad(x.view(b, h, w, c), (0, 0, 0, pr, 0, pb))
        hp, wp = h + pb, w + pr
        x = x.view(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)
        q, k, v = self.qkv(x).view(-1, ws * ws, 3, self.nh, c // self.nh).permute(2, 0, 3, 1, 4).unbind(0)
        attn = F.softmax((q * self.scale) @ k.transpose(-2, -1) + self.bias, dim=-1)
        x = self.proj((attn @ v).transpose(1, 2).reshape(-1, ws * ws, c))
        x = x.view(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b, hp, wp, c)
        return x[:, :h, :w, :].reshape(b, n, c)


class ChannelAttention(nn.Module):
    def __init__(self, dim, heads, qkv_bias):
        super().__init__()
        self.nh = heads
        self.temp = nn.Parameter(torch.ones(heads, 1, 1))
        self.qkv, self.proj = nn.Linear(dim, dim * 3, bias=qkv_bias), nn.Linear(dim, dim)

    def forward(self, x, h, w):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.nh, c // self.nh).permute(2, 0, 3, 1, 4).unbind(0)
        q, k = F.normalize(q.transpose(-2, -1), dim=-1), F.normalize(k.transpose(-2, -1), dim=-1)
        attn = F.softmax((q @ k.transpose(-2, -1)) * self.temp, dim=-1)
        return self.proj((attn @ v.transpose(-2, -1)).permute(0, 3, 1, 2).reshape(b, n, c))


class Interaction(nn.Module):
    def __init__(self, dim, reduction):
        super().__init__()
        self.sg = nn.Sequential(nn.Conv2d(dim, 1, 1, bias=False), nn.Sigmoid())
        self.cg = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dim, dim // reduction, 1, bias=False), nn.GELU(),
                                nn.Conv2d(dim // reduction, dim, 1, bias=False), nn.Sigmoid())

    def forward(self, attn, conv, spatial_block, h, w):
        b, n, c = attn.shape
        if not spatial_block:  # the spatial gate of the attention output modulates the conv branch
            sm = self.sg(attn.transpose(1, 2).reshape(b, c, h, w)).view(b, 1, n).transpose(1, 2)
            return attn + conv * sm
        cm = self.cg(conv.transpose(1, 2).reshape(b, c, h, w)).view(b, c, 1).transpose(1, 2)
        return attn * cm + conv


class FFN(nn.Module):
    def __init__(self, dim, ratio):
        super().__init__()
        hd = int(dim * ratio)
        self.fc1, self.fc2 = nn.Linear(dim, hd, False), nn.Linear(hd, dim, False)
        self.smix = nn.Conv2d(hd, hd, 3, 1, 1, groups=hd, bias=False)

    def forward(self, x, h, w):
        b, n, _ = x.shape
        x = F.gelu(self.fc1(x))
        hd = x.shape[-1]
        return self.fc2(self.smix(x.transpose(1, 2).reshape(b, hd, h, w)).view(b, hd, n).transpose(1, 2))


class Block(nn.Module):
    def __init__(self, dim, heads, ws, ffn, aim, spatial, qkv_bias=False):
        super().__init__()
        self.spatial = spatial
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads, qkv_bias) if spatial else ChannelAttention(dim, heads, qkv_bias)
        self.conv = nn.Sequential(nn.Conv2d(dim, dim, 3, 1, 1, groups=dim, bias=False), nn.GELU())
        self.inter = Interaction(dim, aim)
        self.ffn = FFN(dim, ffn)

    def forward(self, x, h, w):
        b, n, c = x.shape
        n1 = self.n1(x)
        conv = self.conv(n1.transpose(1, 2).reshape(b, c, h, w)).view(b, c, n).transpose(1, 2)
        x = x + self.inter(self.attn(n1, h, w), conv, self.spatial, h, w)
        return x + self.ffn(self.n2(x), h, w)


class Group(nn.Module):
    def __init__(self, dim, depth, heads, ws, ffn, aim):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, heads, ws, ffn, aim, i % 2 == 0) for i in range(depth)])
        self.conv = nn.Conv2d(dim, dim, 3, 1, 1, bias=False)

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.view(b, c, h * w).transpose(1, 2)
        for blk in self.blocks:
            t = blk(t, h, w)
        return self.conv(t.transpose(1, 2).reshape(b, c, h, w)) + x


class FDAT(nn.Module):
    def __init__(self, in_chans=3, out_ch=3, scale=4, embed_dim=120, num_groups=4, depth_per_group=3, num_heads=4,
                 window_size=8, ffn_expansion_ratio=2.0, aim_reduction_ratio=8, mid_dim=64,
                 upsampler_type="transpose+conv", unshuffle_mod=False):
        super().__init__()
        self.upscale, self.pad = scale, 0
        if unshuffle_mod and scale < 3:
            u = 4 // scale
            scale = 4
            self.conv_first = nn.Sequential(nn.PixelUnshuffle(u), nn.Conv2d(in_chans * u * u, embed_dim, 3, 1, 1))
            self.pad = u
        else:
            self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.groups = nn.Sequential(*[
            Group(embed_dim, 2 * depth_per_group, num_heads, window_size, ffn_expansion_ratio, aim_reduction_ratio)
            for _ in range(num_groups)])
        self.conv_after = nn.Conv2d(embed_dim, embed_dim, 3, 1, 1, bias=False)
        self.upsampler = Upsampler(upsampler_type, scale, embed_dim, out_ch, mid_dim)

    def forward(self, x):
        _, _, h, w = x.shape
        if self.pad:
            x = F.pad(x, (0, (self.pad - w % self.pad) % self.pad, 0, (self.pad - h % self.pad) % self.pad), "reflect")
        shallow = self.conv_first(x)
        y = self.upsampler(self.conv_after(self.groups(shallow)) + shallow)
        return y[:, :, : h * self.upscale, : w * self.upscale]


_randomize = ref_common.randomize


def randomize(model, seed, skip=()):
    """ref_common's fan-in init, then attention biases and temperatures at a trained network's scale (fan-in
    would make a [heads, 64, 64] bias ~0.02, too small to show a wrong index), and the last conv scaled so the
    output spreads like a trained model's (std ~0.25 on a random 24² input) instead of tens, where float32's
    rounding alone would approach the tests' 1e-4 bound."""
    _randomize(model, seed, skip)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, t in model.state_dict(keep_vars=True).items():
            if name.endswith("attn.bias") and t.dim() == 3:
                t.copy_(0.5 * torch.randn(t.shape, generator=g))
            elif name.endswith("attn.temp"):
                t.copy_(1 + 0.5 * torch.rand(t.shape, generator=g))
        tail = list(model.upsampler.children())
        last = tail[-1].end_conv if isinstance(tail[-1], DySample) else [c for c in tail if isinstance(c, nn.Conv2d)][-1]
        x = torch.rand((1, model.conv_first.weight.shape[1] if isinstance(model.conv_first, nn.Conv2d) else 3, 24, 24),
                       generator=g)
        k = 0.25 / max(model(x).std().item(), 1e-6)
        last.weight.mul_(k)
        if last.bias is not None:
            last.bias.mul_(k)


ref_common.randomize = randomize

if __name__ == "__main__":
    main(lambda cfg: FDAT(**cfg))
