"""DAT (Dual Aggregation Transformer, Chen et al., ICCV 2023) for the converter's tests (test code only).

Written from the paper and the public definition (zhengchen1999/DAT, as packaged by spandrel): the same
module and parameter names, so the state dict has the keys of released DAT / DAT-S / DAT-2 / DAT-light
checkpoints. Blocks alternate spatial-window attention (two branches on half the channels each, rectangle
windows H_sp×W_sp and W_sp×H_sp, dynamic position bias, shifted in a fixed pattern) and channel attention,
each fused with a depth-wise conv branch by the adaptive interaction module, followed by the spatial-gate FFN.

config: {"input": [C, H, W], "in_chans", "embed_dim", "split_size": [a, b], "depth": [...], "num_heads": [...],
         "expansion_factor", "upscale", "upsampler": "pixelshuffle"|"pixelshuffledirect",
         "resi_connection": "1conv"|"3conv", "img_size", "qkv_bias"}
"""
import torch
from torch import nn
from torch.nn import functional as F

from ref_common import main, resi_conv
from window_attention import RectWindowAttention, add_tail, rect_shifted, run_tail


class SpatialGate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.conv = nn.Conv2d(dim, dim, 3, 1, 1, groups=dim)

    def forward(self, x, h, w):
        x1, x2 = x.chunk(2, dim=-1)
        b, _, c = x.shape
        x2 = self.conv(self.norm(x2).transpose(1, 2).reshape(b, c // 2, h, w)).flatten(2).transpose(-1, -2)
        return x1 * x2


class SGFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.sg = SpatialGate(hidden // 2)
        self.fc2 = nn.Linear(hidden // 2, dim)

    def forward(self, x, h, w):
        return self.fc2(self.sg(self.act(self.fc1(x)), h, w))


def aim_convs(dim):
    dwconv = nn.Sequential(nn.Conv2d(dim, dim, 3, 1, 1, groups=dim), nn.BatchNorm2d(dim), nn.GELU())
    channel = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dim, dim // 8, 1), nn.BatchNorm2d(dim // 8), nn.GELU(),
                            nn.Conv2d(dim // 8, dim, 1))
    spatial = nn.Sequential(nn.Conv2d(dim, dim // 16, 1), nn.BatchNorm2d(dim // 16), nn.GELU(),
                            nn.Conv2d(dim // 16, 1, 1))
    return dwconv, channel, spatial


class AdaptiveSpatialAttention(RectWindowAttention):
    """The rectangle-window attention (window_attention.py) fused with a depth-wise conv of v by the adaptive
    interaction module."""

    def __init__(self, dim, heads, reso, split_size, qkv_bias, rg_idx, b_idx):
        super().__init__(dim, heads, reso, split_size, qkv_bias, rect_shifted(rg_idx, b_idx))
        self.dwconv, self.channel_interaction, self.spatial_interaction = aim_convs(dim)

    def forward(self, x, h, w):
        b, l, c = x.shape
        att, v = self.spatial(x, h, w)
        conv_x = self.dwconv(v)
        channel_map = self.channel_interaction(conv_x).permute(0, 2, 3, 1).reshape(b, 1, c)
        spatial_map = self.spatial_interaction(att.transpose(-2, -1).reshape(b, c, h, w))
        att = att * torch.sigmoid(channel_map)
        conv_x = (torch.sigmoid(spatial_map) * conv_x).permute(0, 2, 3, 1).reshape(b, l, c)
        return self.proj(att + conv_x)


class AdaptiveChannelAttention(nn.Module):
    def __init__(self, dim, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.dwconv, self.channel_interaction, self.spatial_interaction = aim_convs(dim)

    def forward(self, x, h, w):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = (t.transpose(-2, -1) for t in qkv)
        v_ = v.reshape(b, c, n).view(b, c, h, w)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        attn = ((q @ k.transpose(-2, -1)) * self.temperature).softmax(dim=-1)
        att = (attn @ v).permute(0, 3, 1, 2).reshape(b, n, c)
        conv_x = self.dwconv(v_)
        channel_map = self.channel_interaction(att.transpose(-2, -1).reshape(b, c, h, w))
        spatial_map = self.spatial_interaction(conv_x).permute(0, 2, 3, 1).reshape(b, n, 1)
        att = att * torch.sigmoid(spatial_map)
        conv_x = (conv_x * torch.sigmoid(channel_map)).permute(0, 2, 3, 1).reshape(b, n, c)
        return self.proj(att + conv_x)


class DATB(nn.Module):
    def __init__(self, dim, heads, reso, split_size, expansion, qkv_bias, rg_idx, b_idx):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        if b_idx % 2 == 0:
            self.attn = AdaptiveSpatialAttention(dim, heads, reso, split_size, qkv_bias, rg_idx, b_idx)
        else:
            self.attn = AdaptiveChannelAttention(dim, heads, qkv_bias)
        self.ffn = SGFN(dim, int(dim * expansion))
        self.norm2 = nn.LayerNorm(dim)

    def forward(self, x, h, w):
        x = x + self.attn(self.norm1(x), h, w)
        return x + self.ffn(self.norm2(x), h, w)


class ResidualGroup(nn.Module):
    def __init__(self, dim, reso, heads, split_size, expansion, qkv_bias, depth, resi, rg_idx):
        super().__init__()
        self.blocks = nn.ModuleList(
            [DATB(dim, heads, reso, split_size, expansion, qkv_bias, rg_idx, i) for i in range(depth)])
        self.conv = resi_conv(dim, resi)

    def forward(self, x, h, w):
        res = x
        for blk in self.blocks:
            x = blk(x, h, w)
        b, _, c = x.shape
        x = self.conv(x.transpose(1, 2).reshape(b, c, h, w)).flatten(2).transpose(1, 2)
        return res + x


class DAT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        cin, dim, scale = cfg['in_chans'], cfg['embed_dim'], cfg['upscale']
        self.upsampler, self.scale = cfg['upsampler'], scale
        self.mean = torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1) if cin == 3 else torch.zeros(1, 1, 1, 1)
        self.conv_first = nn.Conv2d(cin, dim, 3, 1, 1)
        self.before_RG = nn.Sequential(nn.Identity(), nn.LayerNorm(dim))
        self.layers = nn.ModuleList([
            ResidualGroup(dim, cfg['img_size'], heads, cfg['split_size'], cfg['expansion_factor'],
                          cfg.get('qkv_bias', True), depth, cfg['resi_connection'], i)
            for i, (depth, heads) in enumerate(zip(cfg['depth'], cfg['num_heads']))])
        self.norm = nn.LayerNorm(dim)
        self.conv_after_body = resi_conv(dim, cfg['resi_connection'])
        add_tail(self, self.upsampler, dim, 64, cin, scale)

    def forward(self, x):
        return dat_forward(self, x)


def dat_forward(net, x):
    """DAT's outline (RGT's too): mean, conv_first, LayerNorm'd tokens through the residual groups, LayerNorm,
    conv_after_body plus the shallow features, the tail, mean back. DAT and RGT never pad."""
    x = x - net.mean
    _, _, h, w = x.shape
    x = net.conv_first(x)
    t = net.before_RG(x.flatten(2).transpose(1, 2))
    for layer in net.layers:
        t = layer(t, h, w)
    t = net.norm(t).transpose(1, 2).reshape(x.shape)
    x = net.conv_after_body(t) + x
    return run_tail(net, net.upsampler, net.scale, x) + net.mean


if __name__ == '__main__':
    # The position-bias inputs and indices are fixed by the architecture, not trained.
    main(DAT, skip=('rpe_biases', 'relative_position_index', 'attn_mask'))
