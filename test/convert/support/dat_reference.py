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


def img2windows(img, hs, ws):
    b, c, h, w = img.shape
    return img.view(b, c, h // hs, hs, w // ws, ws).permute(0, 2, 4, 3, 5, 1).reshape(-1, hs * ws, c)


def windows2img(win, hs, ws, h, w):
    b = win.shape[0] // ((h // hs) * (w // ws))
    return win.view(b, h // hs, w // ws, hs, ws, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


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


class DynamicPosBias(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.pos_dim = dim // 4
        self.pos_proj = nn.Linear(2, self.pos_dim)
        for name, out in (('pos1', self.pos_dim), ('pos2', self.pos_dim), ('pos3', heads)):
            setattr(self, name, nn.Sequential(nn.LayerNorm(self.pos_dim), nn.ReLU(), nn.Linear(self.pos_dim, out)))

    def forward(self, biases):
        return self.pos3(self.pos2(self.pos1(self.pos_proj(biases))))


class SpatialAttention(nn.Module):
    def __init__(self, dim, idx, split_size, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.hs, self.ws = (split_size[0], split_size[1]) if idx == 0 else (split_size[1], split_size[0])
        self.pos = DynamicPosBias(dim // 4, heads)
        bh = torch.arange(1 - self.hs, self.hs)
        bw = torch.arange(1 - self.ws, self.ws)
        self.register_buffer('rpe_biases', torch.stack(torch.meshgrid([bh, bw], indexing='ij')).flatten(1).t().float())
        coords = torch.stack(torch.meshgrid([torch.arange(self.hs), torch.arange(self.ws)], indexing='ij')).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += self.hs - 1
        rel[:, :, 1] += self.ws - 1
        rel[:, :, 0] *= 2 * self.ws - 1
        self.register_buffer('relative_position_index', rel.sum(-1))

    def im2win(self, x, h, w):
        b, _, c = x.shape
        x = img2windows(x.transpose(-2, -1).reshape(b, c, h, w), self.hs, self.ws)
        return x.reshape(-1, self.hs * self.ws, self.heads, c // self.heads).permute(0, 2, 1, 3)

    def forward(self, qkv, h, w, mask=None):
        q, k, v = (self.im2win(t, h, w) for t in qkv)
        b, _, c = qkv[0].shape
        attn = (q * self.scale) @ k.transpose(-2, -1)
        n = self.hs * self.ws
        pos = self.pos(self.rpe_biases)[self.relative_position_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = attn + pos.unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = (attn.view(-1, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)).view(-1, self.heads, n, n)
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(-1, n, c)
        return windows2img(x, self.hs, self.ws, h, w)


def aim_convs(dim):
    dwconv = nn.Sequential(nn.Conv2d(dim, dim, 3, 1, 1, groups=dim), nn.BatchNorm2d(dim), nn.GELU())
    channel = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(dim, dim // 8, 1), nn.BatchNorm2d(dim // 8), nn.GELU(),
                            nn.Conv2d(dim // 8, dim, 1))
    spatial = nn.Sequential(nn.Conv2d(dim, dim // 16, 1), nn.BatchNorm2d(dim // 16), nn.GELU(),
                            nn.Conv2d(dim // 16, 1, 1))
    return dwconv, channel, spatial


def shifted(rg_idx, b_idx):
    return (rg_idx % 2 == 0 and b_idx > 0 and (b_idx - 2) % 4 == 0) or (rg_idx % 2 != 0 and b_idx % 4 == 0)


class AdaptiveSpatialAttention(nn.Module):
    def __init__(self, dim, heads, reso, split_size, qkv_bias, rg_idx, b_idx):
        super().__init__()
        self.split_size = split_size
        self.shift_size = [split_size[0] // 2, split_size[1] // 2]
        self.shifted = shifted(rg_idx, b_idx)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attns = nn.ModuleList([SpatialAttention(dim // 2, i, split_size, heads // 2) for i in range(2)])
        if self.shifted:
            m0, m1 = self.calculate_mask(reso, reso)
            self.register_buffer('attn_mask_0', m0)
            self.register_buffer('attn_mask_1', m1)
        self.dwconv, self.channel_interaction, self.spatial_interaction = aim_convs(dim)

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
        self.upsampler = cfg['upsampler']
        self.mean = torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1) if cin == 3 else torch.zeros(1, 1, 1, 1)
        self.conv_first = nn.Conv2d(cin, dim, 3, 1, 1)
        self.before_RG = nn.Sequential(nn.Identity(), nn.LayerNorm(dim))
        self.layers = nn.ModuleList([
            ResidualGroup(dim, cfg['img_size'], heads, cfg['split_size'], cfg['expansion_factor'],
                          cfg.get('qkv_bias', True), depth, cfg['resi_connection'], i)
            for i, (depth, heads) in enumerate(zip(cfg['depth'], cfg['num_heads']))])
        self.norm = nn.LayerNorm(dim)
        self.conv_after_body = resi_conv(dim, cfg['resi_connection'])
        if self.upsampler == 'pixelshuffle':
            self.conv_before_upsample = nn.Sequential(nn.Conv2d(dim, 64, 3, 1, 1), nn.LeakyReLU(inplace=True))
            ups = []
            if scale == 3:
                ups += [nn.Conv2d(64, 9 * 64, 3, 1, 1), nn.PixelShuffle(3)]
            else:
                for _ in range(scale.bit_length() - 1):
                    ups += [nn.Conv2d(64, 4 * 64, 3, 1, 1), nn.PixelShuffle(2)]
            self.upsample = nn.Sequential(*ups)
            self.conv_last = nn.Conv2d(64, cin, 3, 1, 1)
        else:
            self.upsample = nn.Sequential(nn.Conv2d(dim, scale * scale * cin, 3, 1, 1), nn.PixelShuffle(scale))

    def forward(self, x):
        x = x - self.mean
        _, _, h, w = x.shape
        x = self.conv_first(x)
        t = self.before_RG(x.flatten(2).transpose(1, 2))
        for layer in self.layers:
            t = layer(t, h, w)
        t = self.norm(t).transpose(1, 2).reshape(x.shape)
        x = self.conv_after_body(t) + x
        if self.upsampler == 'pixelshuffle':
            x = self.conv_last(self.upsample(self.conv_before_upsample(x)))
        else:
            x = self.upsample(x)
        return x + self.mean


if __name__ == '__main__':
    # The position-bias inputs and indices are fixed by the architecture, not trained.
    main(DAT, skip=('rpe_biases', 'relative_position_index', 'attn_mask'))
