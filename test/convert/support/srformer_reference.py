"""SRFormer (permuted self-attention, Zhou et al., ICCV 2023) for the converter's tests (test code only).

Written from the paper and the public definition (HVision-NKU/SRFormer, as packaged by spandrel-extra-arches):
the same module and parameter names, so the state dict has the keys of released SRFormer / SRFormer-light
checkpoints. Swin-style residual groups whose window attention keeps ws×ws queries but compresses keys and
values to (ws/2)² tokens (each 2×2 pixel block moved into the channels), a ConvFFN with a 5×5 depth-wise
branch, reflect padding of the input to the window multiple and a crop of the output.

config: {"input": [C, H, W], "in_chans", "embed_dim", "depths": [...], "num_heads": [...], "window_size",
         "mlp_ratio", "upscale", "upsampler": "pixelshuffle"|"pixelshuffledirect"|"nearest+conv"|"",
         "resi_connection": "1conv"|"3conv", "img_size"}
"""
import torch
from torch import nn
from torch.nn import functional as F

from ref_common import main, resi_conv
from window_attention import PatchEmbed, add_mask, add_tail, label_mask, region_labels, run_tail
from window_attention import window_partition, windowed


class DWConv(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.depthwise_conv = nn.Sequential(nn.Conv2d(hidden, hidden, 5, 1, 2, groups=hidden), nn.GELU())

    def forward(self, x, size):
        b, _, c = x.shape
        return self.depthwise_conv(x.transpose(1, 2).reshape(b, c, *size)).flatten(2).transpose(1, 2)


class ConvFFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.dwconv = DWConv(hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x, size):
        x = self.act(self.fc1(x))
        return self.fc2(x + self.dwconv(x, size))


class PSA(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.dim, self.ws, self.pw, self.heads = dim, ws, ws // 2, heads
        self.scale = (dim // heads) ** -0.5
        pw = self.pw
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * pw - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid([torch.arange(pw), torch.arange(pw)], indexing='ij')).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += pw - 1
        rel[:, :, 1] += pw - 1
        rel[:, :, 0] *= 2 * pw - 1
        idx = rel.sum(-1).reshape(pw, pw, 1, 1, pw * pw).repeat(1, 1, 2, 2, 1).permute(0, 2, 1, 3, 4)
        self.register_buffer('aligned_relative_position_index', idx.reshape(4 * pw * pw, pw * pw))
        self.kv = nn.Linear(dim, dim // 2)
        self.q = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b_, n, c = x.shape
        pw, heads = self.pw, self.heads
        kv = (self.kv(x).reshape(b_, pw, 2, pw, 2, 2, c // 4).permute(0, 1, 3, 5, 2, 4, 6)
              .reshape(b_, n // 4, 2, heads, c // heads).permute(2, 0, 3, 1, 4))
        k, v = kv[0], kv[1]
        q = self.q(x).reshape(b_, n, heads, c // heads).permute(0, 2, 1, 3) * self.scale
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.aligned_relative_position_index.view(-1)]
        attn = attn + bias.view(n, n // 4, -1).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            attn = add_mask(attn, mask, heads)
        return self.proj((attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b_, n, c))


class PSABlock(nn.Module):
    def __init__(self, dim, reso, heads, ws, shift, mlp_ratio):
        super().__init__()
        self.ws, self.pw, self.reso = ws, ws // 2, reso
        self.shift = 0 if reso <= ws else shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = PSA(dim, ws, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = ConvFFN(dim, int(dim * mlp_ratio))
        self.register_buffer('attn_mask', self.calculate_mask((reso, reso)) if self.shift > 0 else None)

    def calculate_mask(self, size):
        def labels(h, w, win, shift):
            return window_partition(region_labels(h, w, win, win, shift, shift), win).view(-1, win * win)

        h, w = size
        # Queries in ws×ws windows, keys and values in (ws/2)² ones of the half-size map.
        return label_mask(labels(h, w, self.ws, self.shift), labels(h // 2, w // 2, self.pw, self.shift // 2))

    def forward(self, x, size):
        h, w = size
        b, _, c = x.shape
        shortcut = x
        mask = None if self.shift == 0 else (self.attn_mask if size == (self.reso, self.reso) else self.calculate_mask(size))
        x = shortcut + windowed(self.norm1(x).view(b, h, w, c), self.ws, self.shift, lambda win: self.attn(win, mask))
        return x + self.mlp(self.norm2(x), size)


class ResidualGroupBody(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)


class PSAGroup(nn.Module):
    def __init__(self, dim, reso, depth, heads, ws, mlp_ratio, resi):
        super().__init__()
        self.residual_group = ResidualGroupBody(
            [PSABlock(dim, reso, heads, ws, 0 if i % 2 == 0 else ws // 2, mlp_ratio) for i in range(depth)])
        self.conv = resi_conv(dim, resi)

    def forward(self, x, size):
        res = x
        for blk in self.residual_group.blocks:
            x = blk(x, size)
        b, _, c = x.shape
        return self.conv(x.transpose(1, 2).reshape(b, c, *size)).flatten(2).transpose(1, 2) + res


class SRFormer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        cin, dim, ws, scale = cfg['in_chans'], cfg['embed_dim'], cfg['window_size'], cfg['upscale']
        self.ws, self.scale, self.upsampler = ws, scale, cfg['upsampler']
        self.mean = torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1) if cin == 3 else torch.zeros(1, 1, 1, 1)
        img = cfg['img_size'] + (ws - cfg['img_size'] % ws) % ws
        self.conv_first = nn.Conv2d(cin, dim, 3, 1, 1)
        self.patch_embed = PatchEmbed(dim)
        self.layers = nn.ModuleList([
            PSAGroup(dim, img, d, h, ws, cfg['mlp_ratio'], cfg['resi_connection'])
            for d, h in zip(cfg['depths'], cfg['num_heads'])])
        self.norm = nn.LayerNorm(dim)
        self.conv_after_body = resi_conv(dim, cfg['resi_connection'])
        add_tail(self, self.upsampler, dim, 64, cin, scale)

    def forward(self, x):
        h, w = x.shape[2:]
        ph, pw = (self.ws - h % self.ws) % self.ws, (self.ws - w % self.ws) % self.ws
        x = F.pad(x, (0, pw, 0, ph), 'reflect') - self.mean
        size = (x.shape[2], x.shape[3])
        first = self.conv_first(x)
        t = self.patch_embed.norm(first.flatten(2).transpose(1, 2))
        for layer in self.layers:
            t = layer(t, size)
        body = self.conv_after_body(self.norm(t).transpose(1, 2).reshape(first.shape)) + first
        y = x + self.conv_last(body) if self.upsampler == '' else run_tail(self, self.upsampler, self.scale, body)
        return (y + self.mean)[:, :, : h * self.scale, : w * self.scale]


if __name__ == '__main__':
    main(SRFormer, skip=('aligned_relative_position_index', 'attn_mask'))
