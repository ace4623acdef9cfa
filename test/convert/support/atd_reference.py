"""ATD reference for the TypeScript converter's tests (test code only, never shipped).

Written from the paper (Zhang et al., "Transcending the Limit of Local Window: Advanced Super-Resolution
Transformer with Adaptive Token Dictionary", CVPR 2024) and the public architecture definition (LabShuHangGU/
Adaptive-Token-Dictionary atd_arch.py, Apache-2.0; the copy spandrel loads, libs/spandrel/spandrel/architectures/
ATD/__arch/atd_arch.py): the same module and parameter names and buffers (relative_position_index_SA, the
`no_norm` marker), so the saved state dict has the keys of the released ATD and ATD-light checkpoints.

Each layer adds three attentions to its input: Swin window attention (plain and shifted in turn) on one shared
qkv projection; token-dictionary cross-attention (ATD-CA: cosine similarity of reduced queries and keys against a
learned dictionary of num_tokens entries, a learned per-entry temperature); and category attention (AC-MSA): each
token's category is its most similar dictionary entry, tokens are sorted by category, cut into groups of
category_size (the last group filled with the sequence's end, reversed), and attend within their group. Then a
ConvFFN (fc1, GELU, plus a depthwise conv branch, fc2), and, except in a group's last layer, the dictionary is
refined from the tokens it attracted (InstanceNorm1d over the similarities, softmax, a learned sigmoid mix).

One deliberate difference from upstream: the category sort is stable (ties, i.e. tokens of one category, keep
their raster order). Upstream asks for torch.sort(stable=False), which leaves the order of ties to the backend
(PyTorch's CPU sort here does not keep it), and the order decides which tokens of a category fall into which
group at a group boundary, so upstream's own output depends on the backend. Crisp's graph sorts stably, and so
does this reference.

usage: /usr/bin/python3 atd_reference.py JOBS.json   (the job format of swinir_reference.py)
"""
import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_common import main, resi_conv  # noqa: E402
from window_attention import PatchEmbed, WindowAttention, add_tail, image, relative_index, run_tail  # noqa: E402
from window_attention import shift_mask, swin_features, tokens, windowed  # noqa: E402

STABLE_SORT = True  # atd_sort_ties.py sets it False to measure what the order of ties changes


def gather_tokens(x, index):
    return torch.gather(x, 1, index.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


class ATD_CA(nn.Module):
    def __init__(self, dim, num_tokens, reducted_dim, qkv_bias):
        super().__init__()
        self.num_tokens = num_tokens
        self.wq = nn.Linear(dim, reducted_dim, bias=qkv_bias)
        self.wk = nn.Linear(dim, reducted_dim, bias=qkv_bias)
        self.wv = nn.Linear(dim, dim, bias=qkv_bias)
        self.scale = nn.Parameter(torch.ones([num_tokens]) * 0.5)

    def forward(self, x, td):
        attn = F.normalize(self.wq(x), dim=-1) @ F.normalize(self.wk(td), dim=-1).transpose(-2, -1)
        attn = (attn * (1 + torch.clamp(self.scale, 0, 1) * math.log(self.num_tokens))).softmax(-1)
        return attn @ self.wv(td), attn


class AC_MSA(nn.Module):
    def __init__(self, dim, heads, category_size, qkv_bias):
        super().__init__()
        self.heads, self.category_size = heads, category_size
        self.proj = nn.Linear(dim, dim, bias=qkv_bias)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((1, 1))))

    def forward(self, qkv, sim):
        b, n, c3 = qkv.shape
        c = c3 // 3
        gs = min(n, self.category_size)
        ng = (n + gs - 1) // gs
        order = torch.sort(torch.argmax(sim, dim=-1), dim=-1, stable=STABLE_SORT)[1]
        shuffled = gather_tokens(qkv, order)
        pad_n = ng * gs - n
        y = torch.cat((shuffled, torch.flip(shuffled[:, n - pad_n:n, :], dims=[1])), dim=1)
        qkv = y.reshape(b, ng, gs, 3, self.heads, c // self.heads).permute(3, 0, 1, 4, 2, 5)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1) * torch.clamp(self.logit_scale, max=math.log(1.0 / 0.01)).exp()
        y = (attn.softmax(-1) @ v).permute(0, 1, 3, 2, 4).reshape(b, n + pad_n, c)[:, :n, :]
        out = torch.empty_like(y)
        out.scatter_(1, order.unsqueeze(-1).expand(-1, -1, c), y)
        return self.proj(out)


class DWConv(nn.Module):
    def __init__(self, hidden, k):
        super().__init__()
        self.depthwise_conv = nn.Sequential(nn.Conv2d(hidden, hidden, k, 1, (k - 1) // 2, groups=hidden), nn.GELU())

    def forward(self, x, size):
        return tokens(self.depthwise_conv(image(x, size)))


class ConvFFN(nn.Module):
    def __init__(self, dim, hidden, k):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.dwconv = DWConv(hidden, k)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x, size):
        x = F.gelu(self.fc1(x))
        return self.fc2(x + self.dwconv(x, size))


class ATDTransformerLayer(nn.Module):
    def __init__(self, dim, heads, ws, shift, category_size, num_tokens, reducted_dim, kernel, mlp_ratio, qkv_bias,
                 is_last):
        super().__init__()
        self.ws, self.shift, self.is_last = ws, shift, is_last
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        if not is_last:
            self.norm3 = nn.InstanceNorm1d(num_tokens, affine=True)
            self.sigma = nn.Parameter(torch.zeros([num_tokens, 1]))
        self.wqkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        # The window attention runs on the layer's shared wqkv, with the network's one position index.
        self.attn_win = WindowAttention(dim, ws, heads, own_qkv=False, own_index=False)
        self.attn_atd = ATD_CA(dim, num_tokens, reducted_dim, qkv_bias)
        self.attn_aca = AC_MSA(dim, heads, category_size, qkv_bias)
        self.convffn = ConvFFN(dim, int(dim * mlp_ratio), kernel)

    def forward(self, x, td, size, p):
        h, w = size
        b, n, c = x.shape
        shortcut = x
        x = self.norm1(x)
        qkv = self.wqkv(x)
        x_atd, sim = self.attn_atd(x, td)
        x_aca = self.attn_aca(qkv, sim)
        mask = p['mask'] if self.shift > 0 else None
        x_win = windowed(qkv.reshape(b, h, w, 3 * c), self.ws, self.shift,
                         lambda win: self.attn_win(win, mask, p['rpi_sa']))
        x = shortcut + x_win + x_atd + x_aca
        x = x + self.convffn(self.norm2(x), size)
        if not self.is_last:
            mask_soft = self.norm3(sim.transpose(-1, -2)).softmax(-1)
            s = torch.sigmoid(self.sigma)
            td = s * td + (1 - s) * torch.einsum('btn,bnc->btc', mask_soft, x)
        return x, td


class BasicBlock(nn.Module):
    def __init__(self, dim, depth, heads, ws, num_tokens, **kw):
        super().__init__()
        self.layers = nn.ModuleList([
            ATDTransformerLayer(dim, heads, ws, 0 if i % 2 == 0 else ws // 2, num_tokens=num_tokens,
                                is_last=i == depth - 1, **kw) for i in range(depth)])
        self.td = nn.Parameter(torch.randn([num_tokens, dim]))

    def forward(self, x, size, p):
        td = self.td.repeat([x.shape[0], 1, 1])
        for layer in self.layers:
            x, td = layer(x, td, size, p)
        return x


class ATDB(nn.Module):
    def __init__(self, dim, resi, **kw):
        super().__init__()
        self.residual_group = BasicBlock(dim, **kw)
        self.conv = resi_conv(dim, resi)

    def forward(self, x, size, p):
        return tokens(self.conv(image(self.residual_group(x, size, p), size))) + x


class ATD(nn.Module):
    def __init__(self, in_chans=3, embed_dim=90, depths=(6, 6, 6, 6), num_heads=(6, 6, 6, 6), window_size=8,
                 category_size=256, num_tokens=64, reducted_dim=4, convffn_kernel_size=5, mlp_ratio=2.0,
                 qkv_bias=True, upscale=1, img_range=1.0, upsampler='', resi_connection='1conv', norm=True,
                 num_feat=64):
        super().__init__()
        self.ws, self.upscale, self.upsampler, self.img_range = window_size, upscale, upsampler, img_range
        self.mean = torch.Tensor((0.4488, 0.4371, 0.4040)).view(1, 3, 1, 1) if in_chans == 3 else torch.zeros(1, 1, 1, 1)
        if not norm:
            self.register_buffer('no_norm', torch.zeros(1))
        self.is_norm = norm
        self.conv_first = nn.Conv2d(in_chans, embed_dim, 3, 1, 1)
        self.patch_embed = PatchEmbed(embed_dim)
        self.register_buffer('relative_position_index_SA', relative_index(window_size))
        self.layers = nn.ModuleList([
            ATDB(embed_dim, resi_connection, depth=d, heads=h, ws=window_size, category_size=category_size,
                 num_tokens=num_tokens, reducted_dim=reducted_dim, kernel=convffn_kernel_size, mlp_ratio=mlp_ratio,
                 qkv_bias=qkv_bias) for d, h in zip(depths, num_heads)])
        self.norm = nn.LayerNorm(embed_dim)
        self.conv_after_body = resi_conv(embed_dim, resi_connection)
        add_tail(self, upsampler, embed_dim, num_feat, in_chans, upscale)

    def features(self, x, p):
        return swin_features(self, x, p)

    def forward(self, x):
        h_ori, w_ori = x.shape[2:]
        h = (h_ori + self.ws - 1) // self.ws * self.ws
        w = (w_ori + self.ws - 1) // self.ws * self.ws
        # ATD's own padding: the image, then its mirror (edge row included), cut to the window multiple.
        x = torch.cat([x, torch.flip(x, [2])], 2)[:, :, :h, :]
        x = torch.cat([x, torch.flip(x, [3])], 3)[:, :, :, :w]
        if self.is_norm:
            x = (x - self.mean) * self.img_range
        p = {'mask': shift_mask(h, w, self.ws, self.ws // 2), 'rpi_sa': self.relative_position_index_SA}
        if self.upsampler == '':
            first = self.conv_first(x)
            x = x + self.conv_last(self.conv_after_body(self.features(first, p)) + first)
        else:
            x = self.conv_first(x)
            x = self.conv_after_body(self.features(x, p)) + x
            x = run_tail(self, self.upsampler, self.upscale, x)
        if self.is_norm:
            x = x / self.img_range + self.mean
        return x[..., :h_ori * self.upscale, :w_ori * self.upscale]


if __name__ == '__main__':
    main(lambda cfg: ATD(**cfg))
