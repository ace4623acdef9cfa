/**
 * Names checkpoints of architectures Crisp does not convert, from the key patterns their state dicts carry
 * (the same signatures chaiNNer/spandrel detect them by), so the user reads "this is a CodeFormer checkpoint;
 * CodeFormer is not supported" instead of a list of tensor names.
 *
 * `early` entries are checked before the supported architectures because their keys include a supported
 * one's (MMRealSR embeds an RRDBNet); the rest only when nothing supported matched.
 */
import type { StateDict } from '../checkpoint/stateDict.js';

interface Signature {
  name: string;
  what: string;
  keys: string[];
  early?: boolean;
}

const SIGNATURES: Signature[] = [
  {
    name: 'MMRealSR',
    what: 'a degradation-aware RRDBNet',
    keys: ['conv_first.weight', 'body.0.rdb1.conv1.weight', 'am_list.0.fc.0.weight', 'de_net.conv_first.0.weight'],
    early: true,
  },
  {
    name: 'CodeFormer',
    what: 'a face restorer',
    keys: ['quantize.embedding.weight', 'position_emb', 'ft_layers.0.self_attn.in_proj_weight'],
  },
  {
    name: 'RestoreFormer',
    what: 'a face restorer',
    keys: ['quantize.embedding.weight', 'encoder.conv_in.weight', 'quant_conv.weight', 'decoder.conv_out.weight'],
  },
  {
    name: 'PLKSR',
    what: 'the original PLKSR, not RealPLKSR',
    keys: ['feats.0.weight', 'feats.1.channe_mixer.0.weight'],
  },
  { name: 'MoESR', what: 'a MoESR network', keys: ['in_to_dim.weight', 'blocks.0.blocks.0.fc1.weight'] },
  {
    name: 'Swin2SR',
    what: 'a Swin V2 transformer',
    keys: ['patch_embed.proj.weight', 'layers.0.residual_group.blocks.0.attn.logit_scale'],
  },
  {
    name: 'GRL',
    what: 'a GRL transformer',
    keys: ['norm_start.weight', 'layers.0.blocks.0.attn.window_attn.attn_transform.logit_scale'],
  },
  { name: 'SCUNet', what: 'a denoiser', keys: ['m_head.0.weight', 'm_tail.0.weight'] },
  { name: 'FBCNN', what: 'a JPEG artefact remover', keys: ['m_head.weight', 'qf_pred.0.res.0.weight'] },
  { name: 'DRUNet', what: 'a denoiser', keys: ['m_head.weight', 'm_body.0.res.0.weight', 'm_tail.weight'] },
  { name: 'NAFNet', what: 'a restoration U-Net', keys: ['intro.weight', 'ending.weight', 'middle_blks.0.beta'] },
  { name: 'KBNet', what: 'a restoration network', keys: ['intro.weight', 'encoders.0.0.attgamma'] },
  {
    name: 'Uformer',
    what: 'a restoration transformer',
    keys: ['input_proj.proj.0.weight', 'encoderlayer_0.blocks.0.norm1.weight'],
  },
  {
    name: 'SAFMN',
    what: 'a spatially-adaptive feature modulation network',
    keys: ['to_feat.weight', 'feats.0.safm.mfr.0.weight'],
  },
  { name: 'SeemoRe', what: 'a SeemoRe network', keys: ['conv_1.weight', 'body.0.local_block.norm_1.weight'] },
  { name: 'LaMa', what: 'an inpainting network', keys: ['model.model.1.bn_l.running_mean'] },
  { name: 'LaMa', what: 'an inpainting network', keys: ['generator.model.1.bn_l.running_mean'] },
];

function message(s: Signature): string {
  return `this is a ${s.name} checkpoint (${s.what}); ${s.name} is not supported`;
}

/** The refusal for a checkpoint of a known unsupported architecture, or null. `early`: only those entries. */
export function identifyUnsupported(dict: StateDict, opts: { early?: boolean } = {}): string | null {
  for (const s of SIGNATURES) {
    if (opts.early && !s.early) continue;
    if (s.keys.every((k) => dict.has(k))) return message(s);
  }
  return null;
}
