"""The shipped kernels' GPU `reference` hooks (what the GPU stage checks each TileLang kernel against), run on the
CPU at small sizes on their own `inputs`, against each kernel's formula written here in float64 loops:

- gemm: C[i, j] = sum_k A[i, k] B[k, j];
- flash_attention: O = softmax(Q K^T / sqrt(dim)) V per batch and head; causal as the kernel aligns it
  (workflow/kernels/flash_attention.py: q_idx = query + past_len, kept when q_idx >= k_idx, past_len = seq_kv -
  seq_q), so bottom-right: query i sees keys 0 .. i + seq_kv - seq_q, which for seq_q < seq_kv is not torch's
  top-left `is_causal`;
- rmsnorm: B[i, j] = A[i, j] / sqrt(mean_j(A[i, j]^2) + 1e-12), no weight (the kernel has none).
"""

from __future__ import annotations

import math

import pytest
import torch  # pinned in requirements.txt: its absence is an error, not a skip
from conftest import require_tilelang
from tilelang_churn.kernel import kernels

require_tilelang()  # the kernel files import tilelang.language


def hooks(name: str, **params):
    """(params, inputs, reference) of a shipped kernel: its defaults with PARAMS, inputs made on the CPU."""
    module = kernels.load_module(kernels.shipped(name))
    params = kernels.read_signature(kernels.shipped(name)).defaults() | params
    torch.manual_seed(0)
    inputs = module.inputs(params, "cpu")
    return params, inputs, module.reference(params, inputs)


def close(reference, expected, dtype):
    assert reference.dtype == dtype and reference.shape == expected.shape
    tolerance = {torch.float32: 1e-5, torch.float16: 2e-3}[dtype]
    torch.testing.assert_close(reference.double(), expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_gemm_reference_is_the_matrix_product(dtype):
    params, (a, b), reference = hooks("gemm", M=5, N=3, K=7, dtype=dtype)
    assert a.shape == (5, 7) and b.shape == (7, 3)
    expected = torch.zeros(5, 3, dtype=torch.float64)
    for i in range(5):
        for j in range(3):
            expected[i, j] = sum(float(a[i, k]) * float(b[k, j]) for k in range(7))
    close(reference, expected, getattr(torch, dtype))


def attention(q, k, v, causal: bool):
    """softmax(Q K^T / sqrt(dim)) V in float64 loops; causal: query i sees keys j <= i + seq_kv - seq_q."""
    batch, heads, seq_q, dim = q.shape
    seq_kv = k.shape[2]
    out = torch.zeros(batch, heads, seq_q, dim, dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            for i in range(seq_q):
                keys = range(i + seq_kv - seq_q + 1) if causal else range(seq_kv)
                scores = [sum(float(q[b, h, i, d]) * float(k[b, h, j, d]) for d in range(dim)) / math.sqrt(dim)
                          for j in keys]  # fmt: skip
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                for d in range(dim):
                    out[b, h, i, d] = sum(w * float(v[b, h, j, d]) for w, j in zip(weights, keys)) / sum(weights)
    return out


@pytest.mark.parametrize(
    "seq_q, seq_kv, causal",
    [(6, 6, False), (4, 9, False), (6, 6, True), (4, 9, True)],
    ids=["square", "longer_kv", "causal_square", "causal_longer_kv"],
)
def test_the_flash_attention_reference_is_softmax_attention_masked_as_the_kernel(seq_q, seq_kv, causal):
    params, (q, k, v), reference = hooks(
        "flash_attention", batch=2, heads=2, seq_q=seq_q, seq_kv=seq_kv, dim=8, is_causal=causal, dtype="float32"
    )
    assert q.shape == (2, 2, seq_q, 8) and k.shape == v.shape == (2, 2, seq_kv, 8)
    close(reference, attention(q, k, v, causal), torch.float32)
    if causal and seq_q < seq_kv:  # the alignment matters here: top-left would mask other keys
        top_left = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert not torch.allclose(reference, top_left, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_rmsnorm_reference_is_each_row_over_its_root_mean_square(dtype):
    params, (a,), reference = hooks("rmsnorm", M=4, N=7, dtype=dtype)
    assert a.shape == (4, 7)
    expected = torch.zeros(4, 7, dtype=torch.float64)
    for i in range(4):
        root = math.sqrt(sum(float(a[i, j]) ** 2 for j in range(7)) / 7 + 1e-12)
        for j in range(7):
            expected[i, j] = float(a[i, j]) / root
    close(reference, expected, getattr(torch, dtype))
