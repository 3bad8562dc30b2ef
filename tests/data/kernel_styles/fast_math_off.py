import tilelang
import tilelang.language as T

BF16, FP32 = "bfloat16", "float32"

# written for TileLang 0.1.6, as model code pins it: a PassConfigKey later releases no longer have
pass_configs = {
    tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
    tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
    tilelang.PassConfigKey.TL_DISABLE_FAST_MATH: True,
}


@tilelang.jit(out_idx=[1], pass_configs=pass_configs)
def scale_kernel(N, block=128):
    M = T.symbolic("M")

    @T.prim_func
    def main(X: T.Tensor[(M, N), BF16], Y: T.Tensor[(M, N), FP32]):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            for i, j in T.Parallel(block, N):
                Y[bx * block + i, j] = T.cast(X[bx * block + i, j], FP32) * 2.0

    return main
