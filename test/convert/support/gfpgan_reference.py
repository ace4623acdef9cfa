"""Reference outputs of GFPGANv1Clean for the TypeScript converter's test (test code only, never shipped).

Written from the published architecture (TencentARC/GFPGAN, gfpgan/archs/gfpganv1_clean_arch.py and
stylegan2_clean_arch.py, Apache-2.0): same module and parameter names, so the state dict saved here has
the keys of a real GFPGAN v1.3 / v1.4 checkpoint, and the forward pass GFPGANer runs
(input_is_latent=True, different_w=True, sft_half=True, randomize_noise=False: the stored noise buffers).

usage: /usr/bin/python3 gfpgan_reference.py OUT_DIR GOLDEN OUT_SIZE NUM_STYLE_FEAT NARROW SEED [tame]
("tame" scales the ToRGB layers down so the output stays in [-1, 1], as a trained restorer's does.)
writes OUT_DIR/model.pth ({'params_ema': state_dict}) and input.bin, and the golden file GOLDEN (support/golden.py):
the checkpoint and the output (1×3×S×S). The input is golden.py's uniform_pm1('<seed>/input').
"""
import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import Weights, uniform_pm1, write_golden  # noqa: E402


def channel_table(narrow, multiplier=2):
    return {
        4: int(512 * narrow), 8: int(512 * narrow), 16: int(512 * narrow), 32: int(512 * narrow),
        64: int(256 * multiplier * narrow), 128: int(128 * multiplier * narrow), 256: int(64 * multiplier * narrow),
        512: int(32 * multiplier * narrow), 1024: int(16 * multiplier * narrow),
    }


class ResBlock(nn.Module):
    def __init__(self, cin, cout, factor):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cin, 3, 1, 1)
        self.conv2 = nn.Conv2d(cin, cout, 3, 1, 1)
        self.skip = nn.Conv2d(cin, cout, 1, bias=False)
        self.factor = factor

    def forward(self, x):
        out = F.leaky_relu(self.conv1(x), 0.2)
        out = F.interpolate(out, scale_factor=self.factor, mode='bilinear', align_corners=False)
        out = F.leaky_relu(self.conv2(out), 0.2)
        x = F.interpolate(x, scale_factor=self.factor, mode='bilinear', align_corners=False)
        return out + self.skip(x)


class ModulatedConv2d(nn.Module):
    def __init__(self, cin, cout, k, style, demodulate=True, upsample=False):
        super().__init__()
        self.modulation = nn.Linear(style, cin, bias=True)
        self.weight = nn.Parameter(torch.randn(1, cout, cin, k, k) / math.sqrt(cin * k * k))
        self.demodulate, self.upsample, self.cout, self.k = demodulate, upsample, cout, k

    def forward(self, x, style):
        b, c, _, _ = x.shape
        s = self.modulation(style).view(b, 1, c, 1, 1)
        w = self.weight * s
        if self.demodulate:
            w = w * torch.rsqrt(w.pow(2).sum([2, 3, 4]) + 1e-8).view(b, self.cout, 1, 1, 1)
        w = w.view(b * self.cout, c, self.k, self.k)
        if self.upsample:
            x = F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)
        _, _, h, wd = x.shape
        out = F.conv2d(x.view(1, b * c, h, wd), w, padding=self.k // 2, groups=b)
        return out.view(b, self.cout, *out.shape[2:4])


class StyleConv(nn.Module):
    def __init__(self, cin, cout, style, upsample):
        super().__init__()
        self.modulated_conv = ModulatedConv2d(cin, cout, 3, style, True, upsample)
        self.weight = nn.Parameter(torch.zeros(1))
        self.bias = nn.Parameter(torch.zeros(1, cout, 1, 1))

    def forward(self, x, style, noise):
        out = self.modulated_conv(x, style) * 2**0.5
        out = out + self.weight * noise
        return F.leaky_relu(out + self.bias, 0.2)


class ToRGB(nn.Module):
    def __init__(self, cin, style, upsample=True):
        super().__init__()
        self.modulated_conv = ModulatedConv2d(cin, 3, 1, style, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))
        self.upsample = upsample

    def forward(self, x, style, skip=None):
        out = self.modulated_conv(x, style) + self.bias
        if skip is not None:
            if self.upsample:
                skip = F.interpolate(skip, scale_factor=2, mode='bilinear', align_corners=False)
            out = out + skip
        return out


class ConstantInput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, c, 4, 4))


class Decoder(nn.Module):
    def __init__(self, out_size, style, narrow):
        super().__init__()
        ch = channel_table(narrow)
        mlp = [nn.Identity()]  # NormStyleCode has no parameters
        for _ in range(8):
            mlp.extend([nn.Linear(style, style), nn.LeakyReLU(0.2)])
        self.style_mlp = nn.Sequential(*mlp)  # unused with input_is_latent=True, kept for the keys
        self.constant_input = ConstantInput(ch[4])
        self.style_conv1 = StyleConv(ch[4], ch[4], style, False)
        self.to_rgb1 = ToRGB(ch[4], style, upsample=False)
        self.log_size = int(math.log(out_size, 2))
        self.num_layers = (self.log_size - 2) * 2 + 1
        self.style_convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        self.noises = nn.Module()
        for i in range(self.num_layers):
            r = 2 ** ((i + 5) // 2)
            self.noises.register_buffer(f'noise{i}', torch.randn(1, 1, r, r))
        cin = ch[4]
        for i in range(3, self.log_size + 1):
            cout = ch[2**i]
            self.style_convs.append(StyleConv(cin, cout, style, True))
            self.style_convs.append(StyleConv(cout, cout, style, False))
            self.to_rgbs.append(ToRGB(cout, style))
            cin = cout

    def forward(self, latent, conditions):
        noise = [getattr(self.noises, f'noise{i}') for i in range(self.num_layers)]
        out = self.constant_input.weight
        out = self.style_conv1(out, latent[:, 0], noise[0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, n1, n2, to_rgb in zip(self.style_convs[::2], self.style_convs[1::2], noise[1::2], noise[2::2], self.to_rgbs):
            out = conv1(out, latent[:, i], n1)
            if i < len(conditions):
                same, sft = torch.split(out, int(out.size(1) // 2), dim=1)
                out = torch.cat([same, sft * conditions[i - 1] + conditions[i]], dim=1)
            out = conv2(out, latent[:, i + 1], n2)
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        return skip


class GFPGANv1Clean(nn.Module):
    def __init__(self, out_size, style, narrow):
        super().__init__()
        ch = channel_table(narrow * 0.5)
        self.log_size = int(math.log(out_size, 2))
        self.style = style
        self.conv_body_first = nn.Conv2d(3, ch[out_size], 1)
        self.conv_body_down = nn.ModuleList()
        cin = ch[out_size]
        for i in range(self.log_size, 2, -1):
            self.conv_body_down.append(ResBlock(cin, ch[2 ** (i - 1)], 0.5))
            cin = ch[2 ** (i - 1)]
        self.final_conv = nn.Conv2d(cin, ch[4], 3, 1, 1)
        self.conv_body_up = nn.ModuleList()
        cin = ch[4]
        for i in range(3, self.log_size + 1):
            self.conv_body_up.append(ResBlock(cin, ch[2**i], 2))
            cin = ch[2**i]
        self.toRGB = nn.ModuleList([nn.Conv2d(ch[2**i], 3, 1) for i in range(3, self.log_size + 1)])
        self.final_linear = nn.Linear(ch[4] * 16, (self.log_size * 2 - 2) * style)
        self.stylegan_decoder = Decoder(out_size, style, narrow)
        self.condition_scale = nn.ModuleList()
        self.condition_shift = nn.ModuleList()
        for i in range(3, self.log_size + 1):
            c = ch[2**i]
            for lst in (self.condition_scale, self.condition_shift):
                lst.append(nn.Sequential(nn.Conv2d(c, c, 3, 1, 1), nn.LeakyReLU(0.2), nn.Conv2d(c, c, 3, 1, 1)))

    def forward(self, x):
        conditions, skips = [], []
        feat = F.leaky_relu(self.conv_body_first(x), 0.2)
        for block in self.conv_body_down:
            feat = block(feat)
            skips.insert(0, feat)
        feat = F.leaky_relu(self.final_conv(feat), 0.2)
        latent = self.final_linear(feat.view(feat.size(0), -1)).view(feat.size(0), -1, self.style)
        for i, block in enumerate(self.conv_body_up):
            feat = block(feat + skips[i])
            conditions.append(self.condition_scale[i](feat))
            conditions.append(self.condition_shift[i](feat))
        return self.stylegan_decoder(latent, conditions)


def main():
    out_dir, golden = sys.argv[1], sys.argv[2]
    size, style, narrow, seed = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    torch.manual_seed(seed)
    net = GFPGANv1Clean(size, style, narrow).eval()
    with torch.no_grad():
        # Make every path matter: noise strengths, biases and modulation offsets away from their zero/one inits.
        for name, p in net.named_parameters():
            if name.endswith('.weight') and p.numel() == 1:
                p.copy_(torch.randn(1) * 0.5)
            elif name.endswith('modulation.bias'):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            elif name.endswith('.bias'):
                p.copy_(0.05 * torch.randn_like(p))
        if len(sys.argv) > 7 and sys.argv[7] == 'tame':
            for name, p in net.named_parameters():
                if 'to_rgb' in name and name.endswith('modulated_conv.weight'):
                    p.mul_(0.02)
                elif 'to_rgb' in name and name.endswith('.bias') and 'modulation' not in name:
                    p.zero_()
        weights = Weights(seed)
        weights.reseed(net)
        x = torch.from_numpy(uniform_pm1(f'{seed}/input', 3 * size * size).reshape(1, 3, size, size))
        y = net(x)
    torch.save({'params_ema': net.state_dict()}, f'{out_dir}/model.pth')
    x.numpy().astype('float32').tofile(f'{out_dir}/input.bin')
    # Its check allows 0.02 and 50 dB: a 16-bit output, every 4th row and column (a whole 512² output is 1.5 MB),
    # keeps the golden small; the test samples Crisp's output the same way.
    write_golden(golden, weights, {'model.pth': f'{out_dir}/model.pth'}, {'input': f'{out_dir}/input.bin'},
                 [('output', y.numpy(), 'u16', 4)])
    print(f'{tuple(y.shape)} min {y.min().item():.4f} max {y.max().item():.4f}')


if __name__ == '__main__':
    main()
