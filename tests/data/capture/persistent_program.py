"""A program whose kernel is sized from the GPU (a test program of tilelang-churn's capture): one block per SM,
its problem made on cuda. Without a GPU it needs --device; with it, the capture records the kernel as built
for that GPU and the program goes on with the stand-in's output."""

import tilelang
import tilelang.language as T
import torch
from tilelang.carver.arch import driver


@tilelang.jit(out_idx=[-1])
def scale(M, N, block_M=64):
    sm_num = driver.get_num_sms()  # the line a machine without a GPU stops at, without --device
    tiles = T.ceildiv(M, block_M)

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(sm_num, threads=128) as bx:
            for w in T.serial(T.ceildiv(tiles, sm_num)):
                if w * sm_num + bx < tiles:
                    for i, j in T.Parallel(block_M, N):
                        C[(w * sm_num + bx) * block_M + i, j] = A[(w * sm_num + bx) * block_M + i, j] * T.float16(2)

    return main


if __name__ == "__main__":
    x = torch.randn(2048, 256, device="cuda", dtype=torch.float16)
    y = scale(*x.shape)(x)
    print(f"persistent_program: {torch.cuda.get_device_properties(0).multi_processor_count} SMs, out {tuple(y.shape)}")
