// Twins of kernels/src/matmul/ (sizes: interface/src/matmul.rs): the SGEMM ladder and the
// tensor-core steps for mma.sync, one file per step in the ladder's order. The Hopper steps
// (matmul/wgmma.cu, which includes wgmma_fp8.cu: H1 to H4) are built apart, for sm_90a; split
// k's reduction, which step H3 shares with step 4d, is here (matmul/split_k.cu).
#include "matmul/naive.cu"
#include "matmul/tiled.cu"
#include "matmul/blocked.cu"
#include "matmul/vector_loads.cu"
#include "matmul/shared_layout.cu"
#include "matmul/double_buffer.cu"
#include "matmul/split_k.cu"  // step 4d, on step 4c's body; and the reduction
#include "matmul/cp_async.cu"
#include "matmul/warp_tiles.cu"
#include "matmul/scheduled.cu"
#include "matmul/split_async.cu"  // step 5d, on step 5c's body
#include "matmul/convert.cu"
#include "matmul/mma_ldmatrix.cu"  // includes mma_tf32.cu, step 6a
