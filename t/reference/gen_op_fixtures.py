#!/usr/bin/env python3
"""Writes t/fixtures/ops/*.safetensors: small seeded inputs of the CPU
backend's ops and the outputs of transformers' Qwen3.5 functions on them, in
fp32.  Read by t/unit/test_cpu_ops.c.

    build/refenv/bin/python t/reference/gen_op_fixtures.py

Every tensor is stored as F32 (I32 for positions and lengths), C order, with
the shapes documented per fixture below.
"""

import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from transformers.models.qwen3_5 import modeling_qwen3_5 as qm
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "ops")


def save(name, tensors):
    path = os.path.join(OUT, name + ".safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path)
    print(f"{path}: {os.path.getsize(path)} bytes", file=sys.stderr)


def gdn(gen, T, hk=2, hv=4, dk=32, dv=16):
    """Gated delta rule over one sequence of T tokens.

    Inputs (post-conv, before any normalisation): q, k [T][hk][dk],
    v [T][hv][dv], b, a [T][hv], A_log, dt_bias [hv].
    Outputs: beta, g [T][hv]; chunk, recurrent [T][hv][dv] from
    torch_chunk_gated_delta_rule / torch_recurrent_gated_delta_rule with
    use_qk_l2norm_in_kernel=True (as Qwen3_5GatedDeltaNet calls them).
    """
    q = torch.randn(T, hk, dk, generator=gen)
    k = torch.randn(T, hk, dk, generator=gen)
    v = torch.randn(T, hv, dv, generator=gen)
    b = torch.randn(T, hv, generator=gen) * 2
    a = torch.randn(T, hv, generator=gen) * 2
    # decays from mild to strong, as A = U(0.01, 16) in the model's init
    A_log = torch.log(torch.linspace(0.05, 12.0, hv))
    dt_bias = torch.linspace(-2.0, 1.0, hv)

    beta = b.sigmoid()
    g = -A_log.exp() * F.softplus(a + dt_bias)
    args = dict(g=g[None], beta=beta[None], use_qk_l2norm_in_kernel=True)
    chunk, _ = qm.torch_chunk_gated_delta_rule(q[None], k[None], v[None], chunk_size=64, **args)
    rec, _ = qm.torch_recurrent_gated_delta_rule(q[None], k[None], v[None], **args)
    save(f"gdn_T{T}", dict(q=q, k=k, v=v, b=b, a=a, A_log=A_log, dt_bias=dt_bias,
                          beta=beta, g=g, chunk=chunk[0], recurrent=rec[0]))


def rope(gen, factor, theta, head_dim=64, hq=2, hkv=1):
    """Partial NeoX RoPE as Qwen3_5TextRotaryEmbedding + apply_rotary_pos_emb.

    q [P][hq][head_dim], k [P][hkv][head_dim] at positions pos [P] (I32);
    q_out, k_out; theta and factor as 1-element F32 tensors.
    """
    cfg = Qwen3_5TextConfig(head_dim=head_dim, hidden_size=hq * head_dim,
                            num_attention_heads=hq, num_key_value_heads=hkv,
                            rope_parameters={"rope_type": "default", "rope_theta": theta,
                                             "partial_rotary_factor": factor,
                                             "mrope_interleaved": True,
                                             "mrope_section": [11, 11, 10]})
    emb = qm.Qwen3_5TextRotaryEmbedding(cfg)
    pos = torch.tensor([0, 1, 2, 3, 7, 63, 64, 100, 511, 1000, 4095, 4096, 16383, 65535],
                       dtype=torch.int64)
    P = pos.numel()
    q = torch.randn(P, hq, head_dim, generator=gen)
    k = torch.randn(P, hkv, head_dim, generator=gen)
    # text-only: the 3 M-RoPE axes (plus the text axis) all carry the position
    cos, sin = emb(q, pos[None])
    qo, ko = qm.apply_rotary_pos_emb(q.transpose(0, 1)[None], k.transpose(0, 1)[None], cos, sin)
    save(f"rope_f{factor}", dict(q=q, k=k, pos=pos.to(torch.int32),
                                 q_out=qo[0].transpose(0, 1), k_out=ko[0].transpose(0, 1),
                                 theta=torch.tensor([theta], dtype=torch.float32),
                                 factor=torch.tensor([factor], dtype=torch.float32)))


def attention(gen, lens=(1, 70, 600), hq=4, hkv=2, hd=32):
    """Causal GQA softmax attention, eager_attention_forward, per record.

    q [T][hq][hd], k, v [T][hkv][hd] for the records packed one after
    another (lengths lens [R], I32); out [T][hq][hd], each record alone.
    """
    T = sum(lens)
    q = torch.randn(T, hq, hd, generator=gen) * 2
    k = torch.randn(T, hkv, hd, generator=gen) * 2
    v = torch.randn(T, hkv, hd, generator=gen)

    class Mod:
        num_key_value_groups = hq // hkv
        training = False

    outs, t0 = [], 0
    for L in lens:
        qs, ks, vs = (x[t0:t0 + L].transpose(0, 1)[None] for x in (q, k, v))
        mask = torch.full((L, L), float("-inf")).triu(1)[None, None]
        o, _ = qm.eager_attention_forward(Mod, qs, ks, vs, mask, scaling=hd ** -0.5)
        outs.append(o[0])
        t0 += L
    save("attention", dict(q=q, k=k, v=v, lens=torch.tensor(lens, dtype=torch.int32),
                           out=torch.cat(outs)))


def norms(gen, rows=5, dim=48):
    """Qwen3_5RMSNorm (1 + w) and Qwen3_5RMSNormGated (plain w, silu(z)).

    x, z [rows][dim]; w1p, wg [dim]; out_1p, out_gated [rows][dim].
    """
    x = torch.randn(rows, dim, generator=gen) * 3
    z = torch.randn(rows, dim, generator=gen) * 2
    w1p = torch.randn(dim, generator=gen) * 0.5
    wg = 1 + torch.randn(dim, generator=gen) * 0.5
    n1 = qm.Qwen3_5RMSNorm(dim, eps=1e-6)
    ng = qm.Qwen3_5RMSNormGated(dim, eps=1e-6)
    with torch.no_grad():
        n1.weight.copy_(w1p)
        ng.weight.copy_(wg)
        o1, og = n1(x), ng(x, z)
    save("norms", dict(x=x, z=z, w1p=w1p, wg=wg, out_1p=o1, out_gated=og))


def conv(gen, lens=(1, 3, 10), channels=24, kernel=4):
    """causal_conv1d_fn (depthwise, no bias, SiLU) over each record alone.

    x [T][channels] for the records packed; w [channels][kernel] (conv1d.weight
    squeezed); lens [R] (I32); out [T][channels].
    """
    T = sum(lens)
    x = torch.randn(T, channels, generator=gen)
    w = torch.randn(channels, kernel, generator=gen) * 0.5
    outs, t0 = [], 0
    for L in lens:
        o = qm.causal_conv1d_fn(x[t0:t0 + L].T[None], w, None, activation="silu")
        outs.append(o[0].T)
        t0 += L
    save("conv", dict(x=x, w=w, lens=torch.tensor(lens, dtype=torch.int32), out=torch.cat(outs)))


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(20240611)
    os.makedirs(OUT, exist_ok=True)
    with torch.no_grad():
        for T in (1, 63, 64, 65, 1000):
            gdn(gen, T)
        rope(gen, 0.25, 10000000.0)
        rope(gen, 0.5, 10000.0)
        attention(gen)
        norms(gen)
        conv(gen)


if __name__ == "__main__":
    main()
