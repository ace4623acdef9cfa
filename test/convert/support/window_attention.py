"""Window attention shared by the transformer references (test code only, never shipped).

Two families, each written once here and imported by the architectures built on them:
- Swin's square windows (SwinIR, HAT, DRCT, ATD, SRFormer's partition): window_partition / window_reverse, the
  relative position index, the shifted-window mask, `WindowAttention` (its own qkv projection and index, or
  HAT's and ATD's shared index passed in, or ATD's qkv computed outside), and `windowed`, the roll, partition,
  attention, reverse and roll back of one block.
- DAT's rectangle windows (DAT, RGT's L-SA): `SpatialAttention` (H_sp×W_sp windows with a dynamic position
  bias) and `RectWindowAttention`, the two-branch, shifted-in-DAT's-pattern attention on half the channels each
  that DAT's adaptive spatial attention and RGT's L-SA both start from.
Also the transformers' common pieces: tokens/image layout, the Swin MLP and patch-embed norm, and the
pixel-shuffle tails (BasicSR's Upsample, `pixelshuffledirect`, SwinIR's `nearest+conv`).

Module and parameter names are upstream's, so the saved state dicts keep the released checkpoints' keys.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws, ws, c)


def window_reverse(windows, ws, h, w):
    b = windows.shape[0] // ((h // ws) * (w // ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


def relative_index(ws):
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing='ij')).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += ws - 1
    rel[:, :, 1] += ws - 1
    rel[:, :, 0] *= 2 * ws - 1
    return rel.sum(-1)


def region_labels(h, w, win_h, win_w, shift_h, shift_w):
    """1×h×w×1 map numbering the nine regions a cyclic shift brings together (Swin's and DAT's mask input)."""
    img = torch.zeros((1, h, w, 1))
    cnt = 0
    for hs in (slice(0, -win_h), slice(-win_h, -shift_h), slice(-shift_h, None)):
        for wsl in (slice(0, -win_w), slice(-win_w, -shift_w), slice(-shift_w, None)):
            img[:, hs, wsl, :] = cnt
            cnt += 1
    return img


def label_mask(rows, cols):
    """-100 where a query's region differs from a key's, else 0."""
    mask = rows.unsqueeze(2) - cols.unsqueeze(1)
    return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)


def shift_mask(h, w, ws, shift):
    mw = window_partition(region_labels(h, w, ws, ws, shift, shift), ws).view(-1, ws * ws)
    return label_mask(mw, mw)


def add_mask(attn, mask, heads):
    """Adds a per-window mask (nw, n, m) to attention laid out (b·nw, heads, n, m)."""
    nw, n, m = mask.shape
    return (attn.view(-1, nw, heads, n, m) + mask.unsqueeze(1).unsqueeze(0)).view(-1, heads, n, m)


class WindowAttention(nn.Module):
    """Swin's window attention. own_qkv: the block's qkv Linear lives here (SwinIR, HAT, DRCT), else the caller
    passes qkv (ATD's shared wqkv). own_index: the relative_position_index buffer lives here (SwinIR, DRCT), else
    the caller passes the network's one index (HAT, ATD)."""

    def __init__(self, dim, ws, heads, qkv_bias=True, own_qkv=True, own_index=True):
        super().__init__()
        self.ws, self.heads, self.scale = ws, heads, (dim // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * ws - 1) ** 2, heads))
        if own_index:
            self.register_buffer('relative_position_index', relative_index(ws))
        if own_qkv:
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None, rpi=None):
        qkv = self.qkv(x) if hasattr(self, 'qkv') else x
        rpi = self.relative_position_index if rpi is None else rpi
        b_, n, c3 = qkv.shape
        c = c3 // 3
        qkv = qkv.reshape(b_, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[rpi.view(-1)].view(n, n, -1)
        attn = attn + bias.permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            attn = add_mask(attn, mask, self.heads)
        return self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(b_, n, c))


def windowed(x, ws, shift, attend):
    """One block's window pass over b×h×w×c: roll by -shift, cut ws×ws windows, attend(windows of ws² tokens) →
    (windows, ws², c_out), put them back, roll by +shift. Returns b×(h·w)×c_out tokens."""
    b, h, w, _ = x.shape
    if shift > 0:
        x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
    out = attend(window_partition(x, ws).view(-1, ws * ws, x.shape[-1]))
    x = window_reverse(out.view(-1, ws, ws, out.shape[-1]), ws, h, w)
    if shift > 0:
        x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))
    return x.reshape(b, h * w, -1)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SwinTransformerBlock(nn.Module):
    """SwinIR's and DRCT's block: a training size no larger than the window shrinks the window to it and drops
    the shift (so such a checkpoint has no attn_mask buffers)."""

    def __init__(self, dim, res, heads, ws, shift, mlp_ratio, qkv_bias=True):
        super().__init__()
        if min(res) <= ws:
            shift, ws = 0, min(res)
        self.ws, self.shift, self.res = ws, shift, res
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads, qkv_bias)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.register_buffer('attn_mask', shift_mask(res[0], res[1], ws, shift) if shift > 0 else None)

    def forward(self, x, size):
        h, w = size
        b, _, c = x.shape
        mask = None
        if self.shift > 0:
            mask = self.attn_mask if tuple(size) == tuple(self.res) else shift_mask(h, w, self.ws, self.shift)
        x = x + windowed(self.norm1(x).view(b, h, w, c), self.ws, self.shift, lambda win: self.attn(win, mask))
        return x + self.mlp(self.norm2(x))


def tokens(x):
    return x.flatten(2).transpose(1, 2)


def image(x, size):
    return x.transpose(1, 2).view(x.shape[0], x.shape[2], size[0], size[1])


class PatchEmbed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)


def pixelshuffle_upsample(num_feat, upscale):
    """BasicSR's Upsample (SwinIR's and HAT's classical tail): a conv and ×2 shuffle per power of two, or one ×3."""
    m = []
    if upscale & (upscale - 1) == 0:
        for _ in range(int(math.log2(upscale))):
            m += [nn.Conv2d(num_feat, 4 * num_feat, 3, 1, 1), nn.PixelShuffle(2)]
    else:
        m += [nn.Conv2d(num_feat, 9 * num_feat, 3, 1, 1), nn.PixelShuffle(3)]
    return nn.Sequential(*m)


def add_tail(net, upsampler, dim, num_feat, in_chans, upscale):
    """The reconstruction tail of SwinIR, ATD and SRFormer, by upsampler ('' = 1× restoration: conv_last only),
    with upstream's attribute names and registration order."""
    if upsampler in ('pixelshuffle', 'nearest+conv'):
        net.conv_before_upsample = nn.Sequential(nn.Conv2d(dim, num_feat, 3, 1, 1), nn.LeakyReLU(inplace=True))
    if upsampler == 'pixelshuffle':
        net.upsample = pixelshuffle_upsample(num_feat, upscale)
        net.conv_last = nn.Conv2d(num_feat, in_chans, 3, 1, 1)
    elif upsampler == 'pixelshuffledirect':
        net.upsample = nn.Sequential(nn.Conv2d(dim, upscale ** 2 * in_chans, 3, 1, 1), nn.PixelShuffle(upscale))
    elif upsampler == 'nearest+conv':
        net.conv_up1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        if upscale >= 4:
            net.conv_up2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        if upscale == 8:
            net.conv_up3 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        net.conv_hr = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        net.conv_last = nn.Conv2d(num_feat, in_chans, 3, 1, 1)
    else:
        net.conv_last = nn.Conv2d(dim, in_chans, 3, 1, 1)


def run_tail(net, upsampler, upscale, x):
    """The upsampling tails of add_tail on the body's features x (the '' case is each network's own)."""
    if upsampler == 'pixelshuffle':
        return net.conv_last(net.upsample(net.conv_before_upsample(x)))
    if upsampler == 'pixelshuffledirect':
        return net.upsample(x)
    up = lambda t: F.interpolate(t, scale_factor=2, mode='nearest')  # noqa: E731
    x = F.leaky_relu(net.conv_up1(up(net.conv_before_upsample(x))), 0.2)
    if upscale >= 4:
        x = F.leaky_relu(net.conv_up2(up(x)), 0.2)
    if upscale == 8:
        x = F.leaky_relu(net.conv_up3(up(x)), 0.2)
    return net.conv_last(F.leaky_relu(net.conv_hr(x), 0.2))


def rect_offsets(hs, ws):
    """Every relative offset (dh, dw) of an hs×ws window as float rows (DAT's rpe_biases), and the index of each
    query-key pair into them."""
    bh, bw = torch.arange(1 - hs, hs), torch.arange(1 - ws, ws)
    biases = torch.stack(torch.meshgrid([bh, bw], indexing='ij')).flatten(1).t().float()
    coords = torch.stack(torch.meshgrid([torch.arange(hs), torch.arange(ws)], indexing='ij')).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += hs - 1
    rel[:, :, 1] += ws - 1
    rel[:, :, 0] *= 2 * ws - 1
    return biases, rel.sum(-1)


def img2windows(img, hs, ws):
    b, c, h, w = img.shape
    return img.view(b, c, h // hs, hs, w // ws, ws).permute(0, 2, 4, 3, 5, 1).reshape(-1, hs * ws, c)


def windows2img(win, hs, ws, h, w):
    b = win.shape[0] // ((h // hs) * (w // ws))
    return win.view(b, h // hs, w // ws, hs, ws, -1).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


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
    """DAT's attention in H_sp×W_sp rectangles (idx 0) or W_sp×H_sp (idx 1), with a dynamic position bias of the
    window's offsets. own_offsets: the offsets and their index are this module's buffers (DAT, RGT), else the
    caller passes the network's (CRAFT)."""

    def __init__(self, dim, idx, split_size, heads, own_offsets=True):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.hs, self.ws = (split_size[0], split_size[1]) if idx == 0 else (split_size[1], split_size[0])
        self.pos = DynamicPosBias(dim // 4, heads)
        if own_offsets:
            biases, index = rect_offsets(self.hs, self.ws)
            self.register_buffer('rpe_biases', biases)
            self.register_buffer('relative_position_index', index)

    def im2win(self, x, h, w):
        b, _, c = x.shape
        x = img2windows(x.transpose(-2, -1).reshape(b, c, h, w), self.hs, self.ws)
        return x.reshape(-1, self.hs * self.ws, self.heads, c // self.heads).permute(0, 2, 1, 3)

    def forward(self, qkv, h, w, mask=None, offsets=None):
        biases, index = offsets or (self.rpe_biases, self.relative_position_index)
        q, k, v = (self.im2win(t, h, w) for t in qkv)
        b, _, c = qkv[0].shape
        attn = (q * self.scale) @ k.transpose(-2, -1)
        n = self.hs * self.ws
        pos = self.pos(biases)[index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = attn + pos.unsqueeze(0)
        if mask is not None:
            attn = add_mask(attn, mask, self.heads)
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(-1, n, c)
        return windows2img(x, self.hs, self.ws, h, w)


def rect_shifted(rg_idx, b_idx):
    """DAT's (and RGT's) shift pattern: which rectangle-window blocks of which residual group are shifted."""
    return (rg_idx % 2 == 0 and b_idx > 0 and (b_idx - 2) % 4 == 0) or (rg_idx % 2 != 0 and b_idx % 4 == 0)


class RectWindowAttention(nn.Module):
    """The rectangle-window half of DAT's adaptive spatial attention, RGT's L-SA and CRAFT's SRWA block: qkv,
    proj, and two SpatialAttention branches on half the channels each (a×b and b×a windows), shifted by half a
    window when `shifted` (DAT and RGT: where rect_shifted says), with the training size's masks as buffers
    unless not `masked` (CRAFT shifts without a mask). Subclasses add their own branch after."""

    def __init__(self, dim, heads, reso, split_size, qkv_bias, shifted, masked=True, own_offsets=True):
        super().__init__()
        self.split_size = split_size
        self.shift_size = [split_size[0] // 2, split_size[1] // 2]
        self.shifted, self.masked = shifted, masked
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attns = nn.ModuleList(
            [SpatialAttention(dim // 2, i, split_size, heads // 2, own_offsets) for i in range(2)])
        if self.shifted and masked:
            m0, m1 = self.calculate_mask(reso, reso)
            self.register_buffer('attn_mask_0', m0)
            self.register_buffer('attn_mask_1', m1)

    def calculate_mask(self, h, w):
        def one(sh, sw, th, tw):
            img = region_labels(h, w, sh, sw, th, tw)
            win = img.view(1, h // sh, sh, w // sw, sw, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, sh * sw)
            return label_mask(win, win)

        (a, b), (s, t) = self.split_size, self.shift_size
        return one(a, b, s, t), one(b, a, t, s)

    def spatial(self, x, h, w, offsets=(None, None)):
        """(attention output b×l×c, v as b×c×h×w for the caller's own conv branch); offsets: each branch's
        (offsets, index) where the network holds them."""
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
            m0, m1 = self.calculate_mask(hp, wp) if self.masked else (None, None)
            x1 = torch.roll(self.attns[0](q0, hp, wp, m0, offsets[0]), shifts=(s0, s1), dims=(1, 2))
            x2 = torch.roll(self.attns[1](q1, hp, wp, m1, offsets[1]), shifts=(s1, s0), dims=(1, 2))
        else:
            x1 = self.attns[0](qkv[..., : c // 2], hp, wp, None, offsets[0])
            x2 = self.attns[1](qkv[..., c // 2:], hp, wp, None, offsets[1])
        att = torch.cat([x1[:, :h, :w].reshape(b, l, c // 2), x2[:, :h, :w].reshape(b, l, c // 2)], dim=2)
        return att, v


def pad_to_window(x, ws):
    """Reflect-pads an NCHW image at the bottom and right to multiples of ws (SwinIR's check_image_size)."""
    h, w = x.shape[2:]
    ph, pw = (ws - h % ws) % ws, (ws - w % ws) % ws
    return F.pad(x, (0, pw, 0, ph), 'reflect') if ph or pw else x


def swin_features(net, x, *args):
    """The Swin family's body on conv_first's output: tokens, the patch-embed LayerNorm (where the network has
    one), each residual group (given the size and any shared buffers), the final LayerNorm, back to an image."""
    size = (x.shape[2], x.shape[3])
    t = tokens(x)
    if hasattr(net.patch_embed, 'norm'):
        t = net.patch_embed.norm(t)
    for layer in net.layers:
        t = layer(t, size, *args)
    return image(net.norm(t), size)


def classical_forward(net, x):
    """SwinIR's outline with the classical pixel-shuffle tail (HAT, DRCT): pad to the window, normalise,
    conv_first, body plus residual, tail, denormalise, crop. Reflect padding commutes with the per-channel
    normalisation, so the networks that normalise first (HAT) and those that pad first (DRCT) agree bit for bit."""
    h, w = x.shape[2:]
    x = (pad_to_window(x, net.ws) - net.mean) * net.img_range
    x = net.conv_first(x)
    x = run_tail(net, 'pixelshuffle', net.upscale, net.conv_after_body(net.features(x)) + x)
    return (x / net.img_range + net.mean)[:, :, :h * net.upscale, :w * net.upscale]
