"""A small model in the style of an inference stack's quantisation and FP8 GEMM wrappers, whose kernels take their
sizes from the tensors they are given (a test program of tilelang-churn's capture, scripts/capture_kernels.py).

    python3 model.py [--layers N] [--dim D] [--inter I] [--tokens T]

Runs on CPU tensors: every kernel it builds is sized by a wrapper from its input (``N = x.size(-1)``), and the
linear layers of different widths make different kernels; the token count is a symbolic extent of each kernel.
"""

import argparse

import tilelang
import tilelang.language as T
import torch

FP8 = "float8_e4m3fn"
BF16 = "bfloat16"
FP32 = "float32"
GROUP = 128  # elements per quantisation scale
PASS_CONFIGS = {tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}
SIZES = {"layers": 2, "dim": 256, "inter": 512, "tokens": 16}  # the command line's defaults


@tilelang.jit(pass_configs=PASS_CONFIGS)
def act_quant_kernel(N, in_dtype=BF16, out_dtype=FP8, scale_dtype=FP32, round_scale=False):
    M = T.symbolic("M")
    blk_m = 32

    @T.prim_func
    def act_quant_kernel_(
        X: T.Tensor[(M, N), in_dtype],
        Y: T.Tensor[(M, N), out_dtype],
        S: T.Tensor[(M, T.ceildiv(N, GROUP)), scale_dtype],
    ):
        with T.Kernel(T.ceildiv(M, blk_m), T.ceildiv(N, GROUP), threads=128) as (pid_m, pid_n):
            x_shared = T.alloc_shared((blk_m, GROUP), in_dtype)
            x_local = T.alloc_fragment((blk_m, GROUP), in_dtype)
            amax_local = T.alloc_fragment((blk_m,), scale_dtype)
            s_local = T.alloc_fragment((blk_m,), scale_dtype)
            y_local = T.alloc_fragment((blk_m, GROUP), out_dtype)
            y_shared = T.alloc_shared((blk_m, GROUP), out_dtype)
            T.copy(X[pid_m * blk_m, pid_n * GROUP], x_shared)
            T.copy(x_shared, x_local)
            T.reduce_absmax(x_local, amax_local, dim=1)
            for i in T.Parallel(blk_m):
                amax_local[i] = T.max(amax_local[i], 1e-4)
                if round_scale:
                    s_local[i] = T.exp2(T.ceil(T.log2(amax_local[i] / 448.0)))
                else:
                    s_local[i] = amax_local[i] / 448.0
            for i, j in T.Parallel(blk_m, GROUP):
                y_local[i, j] = T.clamp(x_local[i, j] / s_local[i], -448.0, 448.0)
            for i in T.Parallel(blk_m):
                S[pid_m * blk_m + i, pid_n] = s_local[i]
            T.copy(y_local, y_shared)
            T.copy(y_shared, Y[pid_m * blk_m, pid_n * GROUP])

    return act_quant_kernel_


def act_quant(x, scale_fmt=None):
    """x quantised to FP8 in groups of GROUP along its last dimension, and the groups' scales."""
    N = x.size(-1)
    y = torch.empty_like(x, dtype=torch.float8_e4m3fn)
    s = x.new_empty(*x.size()[:-1], N // GROUP, dtype=torch.float32)
    kernel = act_quant_kernel(N, round_scale=scale_fmt is not None)
    kernel(x.view(-1, N), y.view(-1, N), s.view(-1, N // GROUP))
    return y, s


@tilelang.jit(pass_configs=PASS_CONFIGS)
def fp8_gemm_kernel(N, K, out_dtype=BF16, accum_dtype=FP32):
    M = T.symbolic("M")
    block_M, block_N, block_K = 32, 128, 128

    @T.prim_func
    def fp8_gemm_kernel_(
        A: T.Tensor[(M, K), FP8],
        B: T.Tensor[(N, K), FP8],
        C: T.Tensor[(M, N), out_dtype],
        scales_a: T.Tensor[(M, T.ceildiv(K, GROUP)), FP32],
        scales_b: T.Tensor[(T.ceildiv(N, GROUP), T.ceildiv(K, GROUP)), FP32],
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), FP8)
            B_shared = T.alloc_shared((block_N, block_K), FP8)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)
            scale_c = T.alloc_shared((block_M,), FP32)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_accum = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_accum)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                scale_b = scales_b[bx * block_N // GROUP, k]
                for i in T.Parallel(block_M):
                    scale_c[i] = scales_a[by * block_M + i, k] * scale_b
                T.clear(C_local)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                for i, j in T.Parallel(block_M, block_N):
                    C_accum[i, j] += C_local[i, j] * scale_c[i]
            T.copy(C_accum, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return fp8_gemm_kernel_


def fp8_gemm(a, a_s, b, b_s):
    """a (FP8, scales a_s per GROUP) @ b.T (FP8, scales b_s per GROUP x GROUP block), in bfloat16."""
    K = a.size(-1)
    M = a.numel() // K
    N = b.size(0)
    c = a.new_empty(*a.size()[:-1], N, dtype=torch.bfloat16)
    kernel = fp8_gemm_kernel(N, K)
    kernel(a.view(M, K), b, c.view(M, N), a_s.view(M, -1), b_s)
    return c


class Linear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        weight = torch.randn(out_features, in_features) * 0.02
        self.weight = torch.nn.Parameter(weight.to(torch.float8_e4m3fn), requires_grad=False)
        scales = torch.ones(out_features // GROUP, in_features // GROUP)
        self.scale = torch.nn.Parameter(scales, requires_grad=False)

    def forward(self, x):
        y, s = act_quant(x)
        return fp8_gemm(y, s, self.weight, self.scale)


class MLP(torch.nn.Module):
    def __init__(self, dim, inter):
        super().__init__()
        self.up, self.down = Linear(dim, inter), Linear(inter, dim)

    def forward(self, x):
        return x + self.down(torch.nn.functional.silu(self.up(x)))


def main(argv=None):
    parser = argparse.ArgumentParser()
    for name, default in SIZES.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    args = parser.parse_args(argv)
    model = torch.nn.Sequential(*[MLP(args.dim, args.inter) for _ in range(args.layers)])
    x = torch.randn(2, args.tokens, args.dim, dtype=torch.bfloat16)
    with torch.no_grad():
        y = model(x)
    assert y.shape == x.shape and y.dtype == torch.bfloat16, (y.shape, y.dtype)
    print(f"model: {args.layers} layers, output {tuple(y.shape)}")


if __name__ == "__main__":
    main()
