"""CRAFT reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Li et al., "Feature Modulation Transformer: Cross-Refinement and Spatial Aggregation
Transformer for Image Super-Resolution", ICCV 2023) and the public architecture definition (AVC2-UESTC/CRAFT-SR,
MIT; the copy spandrel loads, libs/spandrel/spandrel/architectures/CRAFT/__arch/CRAFT.py): the same module and
parameter names and buffers (the network-level relative_position_index_h/_v and biases_h/_v), so the saved state
dict has the keys of the released checkpoints.

Each residual group (RCRFG) runs, per step: two SRWA blocks (DAT's rectangle-window attention, window_attention.py,
on H_sp×W_sp and W_sp×H_sp windows, the second block shifted by half a window and, as upstream, without a mask;
plus a depth-wise conv of v, proj, and an MLP) on the map as tokens ("low"), an HFERB on the map itself ("high":
a 3×3 conv on half the channels, a 3×3 max-pool and 1×1 conv on the other half, GELU, a 1×1 conv, plus its input),
and an HFB joining them (Restormer's transposed attention with queries from "high", keys and values from the
LayerNormed "low", then Restormer's gated depth-wise FFN); then a 3×3 conv and the group's residual. The network
mirror-pads its input to the next multiple of its 16-pixel window (a whole window more when already a multiple),
and crops the one-step pixel-shuffle output back.

usage: /usr/bin/python3 craft_reference.py JOBS.json   (the job format of swinir_reference.py)
config: CRAFT's keyword arguments (in_chans, embed_dim, depths, num_heads, split_size_0, split_size_1,
        mlp_ratio, qkv_bias, upscale, resi_connection)
"""
import torch
from torch import nn
from torch.nn import functional as F

from ditn_reference import FeedForward  # Restormer's gated depth-wise FFN
from ref_common import main
from window_attention import Mlp, RectWindowAttention, image, rect_offsets, tokens

WINDOW = 16
FFN_EXPANSION = 2.66


class SRWAB(RectWindowAttention):
    """Shifted rectangle-window attention block: DAT's two-branch attention given the network's offsets and
    index (CRAFT's branches keep no buffers of their own) and no mask, a depth-wise conv of v, proj, an MLP."""

    def __init__(self, dim, heads, split_size, shifted, mlp_ratio, qkv_bias):
        super().__init__(dim, heads, None, split_size, qkv_bias, shifted, masked=False, own_offsets=False)
        self.norm1 = nn.LayerNorm(dim)
        self.get_v = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x, size, offsets):
        h, w = size
        b, l, c = x.shape
        att, v = self.spatial(self.norm1(x), h, w, offsets)
        x = x + self.proj(att + self.get_v(v).permute(0, 2, 3, 1).reshape(b, l, c))
        return x + self.mlp(self.norm2(x))


class HFERB(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mid = dim // 2
        self.last_fc = nn.Conv2d(dim, dim, 1)
        self.fc = nn.Conv2d(self.mid, self.mid, 1)
        self.conv = nn.Conv2d(self.mid, self.mid, 3, 1, 1)

    def forward(self, x):
        lfe = F.gelu(self.conv(x[:, :self.mid]))
        hfe = F.gelu(self.fc(F.max_pool2d(x[:, self.mid:], 3, 1, 1)))
        return x + self.last_fc(torch.cat([lfe, hfe], dim=1))


class ChannelLayerNorm(nn.Module):
    """Restormer's WithBias LayerNorm over the channels of an NCHW map (`body` holds its weight and bias)."""

    def __init__(self, dim):
        super().__init__()
        self.body = nn.Module()
        self.body.weight = nn.Parameter(torch.ones(dim))
        self.body.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        t = tokens(x)
        mu = t.mean(-1, keepdim=True)
        sigma = t.var(-1, keepdim=True, unbiased=False)
        t = (t - mu) / torch.sqrt(sigma + 1e-5) * self.body.weight + self.body.bias
        return image(t, x.shape[2:])


class TransposedAttention(nn.Module):
    """Restormer's channel attention, queries from `high`, keys and values from `low` (no biases in CRAFT)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
        self.q = nn.Conv2d(dim, dim, 1, bias=False)
        self.q_dwconv = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim, bias=False)
        self.kv = nn.Conv2d(dim, dim * 2, 1, bias=False)
        self.kv_dwconv = nn.Conv2d(dim * 2, dim * 2, 3, 1, 1, groups=dim * 2, bias=False)
        self.project_out = nn.Conv2d(dim, dim, 1, bias=False)

    def forward(self, low, high):
        b, c, h, w = low.shape
        q = self.q_dwconv(self.q(high))
        k, v = self.kv_dwconv(self.kv(low)).chunk(2, dim=1)
        q, k, v = (t.reshape(b, self.heads, c // self.heads, h * w) for t in (q, k, v))
        attn = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)) * self.temperature
        return self.project_out((attn.softmax(dim=-1) @ v).reshape(b, c, h, w))


class HFB(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = ChannelLayerNorm(dim)
        self.attn = TransposedAttention(dim, heads)
        self.norm2 = ChannelLayerNorm(dim)
        self.ffn = FeedForward(dim, FFN_EXPANSION, bias=False)

    def forward(self, low, high):
        x = low + self.attn(self.norm1(low), high)
        return x + self.ffn(self.norm2(x))


class CRFB(nn.Module):
    def __init__(self, dim, depth, heads, split_size, mlp_ratio, qkv_bias):
        super().__init__()
        self.depth = depth
        self.srwa_blocks = nn.ModuleList(
            [SRWAB(dim, heads, split_size, i % 2 == 1, mlp_ratio, qkv_bias) for i in range(2 * depth)])
        self.hfer_blocks = nn.ModuleList([HFERB(dim) for _ in range(depth)])
        self.hf_blocks = nn.ModuleList([HFB(dim, heads) for _ in range(depth)])

    def forward(self, x, offsets):
        size = x.shape[2:]
        for i in range(self.depth):
            low = tokens(x)
            for blk in self.srwa_blocks[2 * i:2 * i + 2]:
                low = blk(low, size, offsets)
            x = self.hf_blocks[i](image(low, size), self.hfer_blocks[i](x))
        return x


class RCRFG(nn.Module):
    def __init__(self, dim, depth, heads, split_size, mlp_ratio, qkv_bias):
        super().__init__()
        self.residual_group = CRFB(dim, depth, heads, split_size, mlp_ratio, qkv_bias)
        self.conv = nn.Conv2d(dim, dim, 3, 1, 1)

    def forward(self, x, offsets):
        return self.conv(self.residual_group(x, offsets)) + x


class CRAFT(nn.Module):
    def __init__(self, in_chans=3, embed_dim=48, depths=(2, 2, 2, 2), num_heads=(6, 6, 6, 6), split_size_0=4,
                 split_size_1=16, mlp_ratio=2.0, qkv_bias=True, upscale=4, resi_connection='1conv'):
        super().__init__()
        self.upscale = upscale
        self.mean = torch.Tensor((0.4488, 0.4371, 0.4040)).view(1, 3, 1, 1) if in_chans == 3 else torch.zeros(1, 1, 1, 1)
        split = (split_size_0, split_size_1)
        biases_h, index_h = rect_offsets(split[0], split[1])
        biases_v, index_v = rect_offsets(split[1], split[0])
        self.register_buffer('relative_position_index_h', index_h)
        self.register_buffer('relative_position_index_v', index_v)
        self.register_buffer('biases_v', biases_v)
        self.register_buffer('biases_h', biases_h)
        self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.layers = nn.ModuleList(
            [RCRFG(embed_dim, d, h, split, mlp_ratio, qkv_bias) for d, h in zip(depths, num_heads)])
        self.norm = ChannelLayerNorm(embed_dim)
        self.conv_after_body = nn.Conv2d(embed_dim, embed_dim, 3, 1, 1) if resi_connection == '1conv' else nn.Identity()
        self.upsample = nn.Sequential(nn.Conv2d(embed_dim, upscale ** 2 * in_chans, 3, 1, 1), nn.PixelShuffle(upscale))

    def forward(self, x):
        h, w = x.shape[2:]
        # CRAFT's own padding: to the next window multiple, a whole window more when already one; mirrored with
        # the edge row included (upstream always pads, so a multiple of 16 grows by 16).
        ph, pw = (h // WINDOW + 1) * WINDOW - h, (w // WINDOW + 1) * WINDOW - w
        x = torch.cat([x, torch.flip(x, [2])], 2)[:, :, :h + ph, :]
        x = torch.cat([x, torch.flip(x, [3])], 3)[:, :, :, :w + pw]
        x = self.conv_first(x - self.mean)
        offsets = ((self.biases_h, self.relative_position_index_h), (self.biases_v, self.relative_position_index_v))
        body = x
        for layer in self.layers:
            body = layer(body, offsets)
        x = self.upsample(self.conv_after_body(self.norm(body)) + x) + self.mean
        return x[..., :h * self.upscale, :w * self.upscale]


if __name__ == '__main__':
    # The offsets and their index are fixed by the window, not trained.
    main(lambda cfg: CRAFT(**cfg), skip=('biases_', 'relative_position_index'), min_numel=64)
