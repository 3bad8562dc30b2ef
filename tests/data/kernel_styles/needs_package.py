import einops  # the kernel's own need: a package the workflow's environment does not have
import numpy
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def transpose(M=128, N=64):
    sizes = einops.parse_shape(numpy.zeros((M, N)), "m n")  # the sizes read through the package

    @T.prim_func
    def main(A: T.Tensor((sizes["m"], sizes["n"]), "float16"), B: T.Tensor((sizes["n"], sizes["m"]), "float16")):
        with T.Kernel(T.ceildiv(sizes["m"], 32), threads=128) as bx:
            for i, j in T.Parallel(32, sizes["n"]):
                B[j, bx * 32 + i] = A[bx * 32 + i, j]

    return main
